package interrupt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// TestThreadingRandom generates modules of Go-shaped functions (a dispatch
// loop over a chain of blocks, jumps as `i32.const K; local.set $pc; br`)
// with random forward and backward jumps, conditional or not, nested in
// blocks or not, to targets inside and past the br_table, and from entry
// segments chosen by the argument; then checks that instrumented and
// original modules compute the same (TestEquivalence's harness) and that
// the rewrite is the one the objdump model expects (TestStructure's).
func TestThreadingRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	dir := t.TempDir()
	threaded := 0
	for m := range 40 {
		var b strings.Builder
		b.WriteString("(module\n")
		for f := range 6 {
			writeDispatchFunc(&b, rng, fmt.Sprintf("f%d", f))
		}
		b.WriteString(")\n")
		path := filepath.Join(dir, fmt.Sprintf("m%d.wat", m))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		wasm := testbuild.WAT(t, path)
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			equivalence(t, wasm, api.CoreFeaturesV2)
			threaded += checkStructure(t, wasm, mustInstrument(t, wasm)).threaded
		})
	}
	t.Logf("%d branches threaded", threaded)
	if threaded == 0 {
		t.Fatal("no branch was threaded: the generator does not exercise the rewrite")
	}
}

// writeDispatchFunc writes one exported function (param $x i32) (result
// i32) in the Go compiler's shape. It always ends: every segment counts a
// step, and past 40 steps jumps to the exit segment.
func writeDispatchFunc(b *strings.Builder, rng *rand.Rand, name string) {
	n := 2 + rng.IntN(7) // segments 0..n-1; segment n exits
	fmt.Fprintf(b, "  (func (export %q) (param $x i32) (result i32)\n", name)
	b.WriteString("    (local $pc i32) (local $acc i32) (local $steps i32)\n")
	if rng.IntN(2) == 0 { // enter at a segment chosen by the argument
		fmt.Fprintf(b, "    local.get $x\n    i32.const %d\n    i32.rem_u\n    local.set $pc\n", n+2)
	}
	b.WriteString("    loop $d\n")
	for range n + 1 {
		b.WriteString("      block\n")
	}
	// The table: one label per segment and the exit, maybe fewer (the
	// rest take the default, the exit).
	b.WriteString("        local.get $pc\n        br_table")
	labels := 1 + rng.IntN(n+1)
	for i := range labels {
		fmt.Fprintf(b, " %d", i)
	}
	fmt.Fprintf(b, " %d\n", n)
	// jump writes a jump to segment k from code inside depth frames
	// (blocks of the chain and nesting) below the loop.
	jump := func(k, depth int) {
		fmt.Fprintf(b, "        i32.const %d\n        local.set $pc\n        br %d\n", k, depth)
	}
	for i := range n {
		fmt.Fprintf(b, "      end ;; segment %d\n", i)
		base := n - i // the loop's depth from this segment's top level
		fmt.Fprintf(b, "        local.get $acc\n        i32.const 31\n        i32.mul\n        i32.const %d\n        i32.add\n        local.set $acc\n", i+1)
		b.WriteString("        local.get $steps\n        i32.const 1\n        i32.add\n        local.tee $steps\n        i32.const 40\n        i32.gt_u\n        if\n")
		jump(n, base+1)
		b.WriteString("        end\n")
		for range rng.IntN(3) {
			target := rng.IntN(n + 3) // past n: the default
			switch rng.IntN(3) {
			case 0: // conditional
				fmt.Fprintf(b, "        local.get $acc\n        i32.const %d\n        i32.shr_u\n        i32.const 1\n        i32.and\n        if\n", rng.IntN(8))
				jump(target, base+1)
				b.WriteString("        end\n")
			case 1: // inside a nested block, conditional
				fmt.Fprintf(b, "        block\n        local.get $acc\n        i32.const %d\n        i32.and\n        br_if 0\n", 1+rng.IntN(15))
				jump(target, base+1)
				b.WriteString("        end\n")
			default: // unconditional: ends the segment
				jump(target, base)
			}
		}
	}
	fmt.Fprintf(b, "      end ;; segment %d: exit\n", n)
	b.WriteString("      local.get $acc\n      local.get $steps\n      i32.const 16\n      i32.shl\n      i32.xor\n      return\n")
	b.WriteString("    end\n    unreachable)\n")
}
