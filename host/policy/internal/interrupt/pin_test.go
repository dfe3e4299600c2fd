package interrupt

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// TestPin runs testdata/pin.wat's exports instrumented and not (the same
// results and memory), checks which functions pin rewrote, and that a
// stack moved across a call without a resume point traps.
func TestPin(t *testing.T) {
	wasm := testbuild.WAT(t, "testdata/pin.wat")
	equivalence(t, wasm, api.CoreFeaturesV2, "moved")

	out := mustInstrument(t, wasm)
	// $leaf (1), $f (6), $moved (7), $cached (8) and $regs (9) are
	// Go-shaped; $morestack and the others are not.
	if got, want := pinnedBodies(t, wasm, out), []int{1, 6, 7, 8, 9}; !equalInts(got, want) {
		t.Errorf("pinned bodies %v, want %v", got, want)
	}
	if got := pinnedBodies(t, wasm, mustInstrumentNoPin(t, wasm)); len(got) != 0 {
		t.Errorf("without pin, pinned bodies %v", got)
	}

	ctx := context.Background()
	rt := newRuntime(t, api.CoreFeaturesV2)
	for _, c := range []struct {
		name string
		wasm []byte
		trap bool
	}{{"original", wasm, false}, {"instrumented", out, true}} {
		mod, err := rt.InstantiateWithConfig(ctx, c.wasm, wazero.NewModuleConfig().WithName(c.name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = mod.ExportedFunction("moved").Call(ctx, 0)
		if trapped := err != nil && strings.Contains(err.Error(), "unreachable"); trapped != c.trap {
			t.Errorf("%s: moved() = %v, want a trap: %v", c.name, err, c.trap)
		}
	}
}

// TestPinGuests checks that pin rewrites most functions of a Go guest.
func TestPinGuests(t *testing.T) {
	for _, g := range guests() {
		if g.name == "conformance-c" {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			in := g.wasm(t)
			n := len(pinnedBodies(t, in, mustInstrument(t, in)))
			total := bodyCount(t, in)
			t.Logf("%d of %d functions pinned", n, total)
			if n < total/2 {
				t.Errorf("%d of %d functions pinned, want at least half", n, total)
			}
		})
	}
}

// pinnedBodies returns the indexes of the function bodies that got one
// more local declaration group in out than in in: pin's $e.
func pinnedBodies(t *testing.T, in, out []byte) []int {
	t.Helper()
	a, b := declCounts(t, in), declCounts(t, out)
	var pinned []int
	for i := range a {
		if b[i] == a[i]+1 {
			pinned = append(pinned, i)
		}
	}
	return pinned
}

func bodyCount(t *testing.T, wasm []byte) int { return len(declCounts(t, wasm)) }

// declCounts returns the local declaration count of every function body
// of wasm.
func declCounts(t *testing.T, wasm []byte) []uint32 {
	t.Helper()
	pos := 8
	for pos < len(wasm) {
		id := wasm[pos]
		size, body, _ := readU32(wasm, pos+1)
		end := body + int(size)
		if id == secCode {
			n, p, _ := readU32(wasm, body)
			counts := make([]uint32, n)
			for i := range counts {
				bsize, start, _ := readU32(wasm, p)
				counts[i], _, _ = readU32(wasm, start)
				p = start + int(bsize)
			}
			return counts
		}
		pos = end
	}
	t.Fatal("no code section")
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
