package interrupt

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// generous bounds an interrupt must land within: a failure means the guest
// was not interrupted at all, not that it was slow.
const (
	startTimeout     = time.Minute
	interruptTimeout = time.Minute
)

// instantiateWithStarted instruments wasm, compiles it and instantiates it
// in rt next to a host module "test" whose function "started" sends on the
// returned channel.
func instantiateWithStarted(t *testing.T, rt wazero.Runtime, wasm []byte) (api.Module, <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	started := make(chan struct{}, 1)
	_, err := rt.NewHostModuleBuilder("test").
		NewFunctionBuilder().
		WithFunc(func(context.Context) {
			select {
			case started <- struct{}{}:
			default:
			}
		}).
		Export("started").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, mustInstrument(t, wasm), wazero.NewModuleConfig().WithName("guest"))
	if err != nil {
		t.Fatalf("instantiate instrumented module: %v", err)
	}
	return mod, started
}

// flagOf returns the instance's interrupt flag, checking its type and
// initial value.
func flagOf(t *testing.T, mod api.Module) api.MutableGlobal {
	t.Helper()
	g := mod.ExportedGlobal(testExport)
	if g == nil {
		t.Fatalf("no exported global %q", testExport)
	}
	flag, ok := g.(api.MutableGlobal)
	if !ok {
		t.Fatalf("exported global %q is not mutable", testExport)
	}
	if flag.Type() != api.ValueTypeI32 || flag.Get() != 0 {
		t.Fatalf("flag: type %s value %d, want i32 0", api.ValueTypeName(flag.Type()), flag.Get())
	}
	return flag
}

// TestInterrupt runs guests that never return on their own and interrupts
// them through the flag from another goroutine.
func TestInterrupt(t *testing.T) {
	runaway, tailcall := watFile("testdata/runaway.wat"), watFile("testdata/tailcall.wat")
	tests := []struct {
		name     string
		wasm     func(t *testing.T) []byte
		export   string
		features api.CoreFeatures
	}{
		{"loop", runaway, "spin", api.CoreFeaturesV2},
		{"loop with br_if", runaway, "spin_if", api.CoreFeaturesV2},
		{"exponential recursion", runaway, "exp", api.CoreFeaturesV2},
		{"exponential recursion through call_indirect", runaway, "exp_indirect", api.CoreFeaturesV2},
		// wazero implements tail calls behind experimental.CoreFeaturesTailCall.
		{"tail-call loop", tailcall, "tail", api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall},
		// The budget is proportional to the code and the bytes moved: a
		// loop of 16 MiB memory.fill, a loop calling a 700 KB function.
		{"memory.fill loop", bulkWasm, "spin_fill", api.CoreFeaturesV2},
		{"huge function in a loop", bulkWasm, "spin_huge", api.CoreFeaturesV2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, tt.features)
			mod, started := instantiateWithStarted(t, rt, tt.wasm(t))
			flag := flagOf(t, mod)

			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction(tt.export).Call(context.Background())
				done <- err
			}()
			// The guest has passed its own entry check: only the checks in
			// its loop, in the functions it calls or before its bulk
			// operations can stop it now.
			select {
			case <-started:
			case err := <-done:
				t.Fatalf("%s returned before it started: %v", tt.export, err)
			case <-time.After(startTimeout):
				t.Fatalf("%s did not start", tt.export)
			}
			time.Sleep(10 * time.Millisecond) // let it run a little
			flag.Set(1)
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "unreachable") {
					t.Fatalf("%s returned %v, want an unreachable trap", tt.export, err)
				}
			case <-time.After(interruptTimeout):
				t.Fatalf("%s was not interrupted %v after the flag was set", tt.export, interruptTimeout)
			}
		})
	}
}

// trapsWithin calls call until it fails, at most budgetRefill+1 times:
// each call charges at least one byte (its entry check, or its first
// loop's), so with the flag set the budget runs out, $slow runs and the
// guest traps within that many calls. It fails the test unless the call
// traps with "unreachable", and returns how many calls it took.
func trapsWithin(t *testing.T, name string, call func() error) int {
	t.Helper()
	for i := 1; i <= budgetRefill+1; i++ {
		if err := call(); err != nil {
			if !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("%s with the flag set: %v, want an unreachable trap", name, err)
			}
			return i
		}
	}
	t.Fatalf("%s with the flag set: no trap after %d calls", name, budgetRefill+1)
	return 0
}

// TestFlag checks that a flag left at 0 changes nothing, that a set flag
// stops repeated calls of a short function within the budget, and that
// clearing it makes the instance usable again.
func TestFlag(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, api.CoreFeaturesV2)
	mod, _ := instantiateWithStarted(t, rt, testbuild.WAT(t, "testdata/runaway.wat"))
	flag := flagOf(t, mod)
	finite := mod.ExportedFunction("finite")

	for range 3000 { // 3000 calls of a 1000-iteration loop: many trips to $slow
		if res, err := finite.Call(ctx); err != nil || res[0] != 1000 {
			t.Fatalf("finite() = %v, %v; want 1000", res, err)
		}
	}
	flag.Set(1)
	n := trapsWithin(t, "finite()", func() error { _, err := finite.Call(ctx); return err })
	t.Logf("finite() trapped at call %d after the flag was set", n)
	flag.Set(0)
	if res, err := finite.Call(ctx); err != nil || res[0] != 1000 {
		t.Fatalf("finite() after clearing the flag = %v, %v; want 1000", res, err)
	}
}

// equivalence instantiates wasm and its instrumented copy side by side and
// checks that every exported function but those in skip gives the same
// results (or the same trap) for the same arguments, and that the memories
// end up equal. The modules may import test.started (a no-op here).
func equivalence(t *testing.T, wasm []byte, features api.CoreFeatures, skip ...string) {
	t.Helper()
	ctx := context.Background()
	rt := newRuntime(t, features)
	_, err := rt.NewHostModuleBuilder("test").
		NewFunctionBuilder().WithFunc(func(context.Context) {}).Export("started").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := mustInstrument(t, wasm)
	orig, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("orig"))
	if err != nil {
		t.Fatalf("instantiate original: %v", err)
	}
	inst, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName("inst"))
	if err != nil {
		t.Fatalf("instantiate instrumented: %v", err)
	}
	flagOf(t, inst)

	defs := orig.ExportedFunctionDefinitions()
	names := make([]string, 0, len(defs))
	for name := range defs {
		if !slices.Contains(skip, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names) // calls may change state: same order for both
	if len(names) == 0 {
		t.Fatal("no exported functions")
	}
	args := []uint64{0, 1, 2, 3, 7, 31, 100, 0xffffffff}
	for _, name := range names {
		var calls [][]uint64
		switch n := len(defs[name].ParamTypes()); n {
		case 0:
			calls = [][]uint64{nil}
		case 1:
			for _, a := range args {
				calls = append(calls, []uint64{a})
			}
		default:
			t.Fatalf("%s takes %d parameters; the test passes 0 or 1", name, n)
		}
		for _, a := range calls {
			want, werr := orig.ExportedFunction(name).Call(ctx, a...)
			got, gerr := inst.ExportedFunction(name).Call(ctx, a...)
			if firstLine(werr) != firstLine(gerr) || !slices.Equal(got, want) {
				t.Errorf("%s%v: instrumented = %v, %v; original = %v, %v", name, a, got, firstLine(gerr), want, firstLine(werr))
			}
		}
	}
	if len(orig.ExportedMemoryDefinitions()) > 0 {
		om, im := orig.Memory(), inst.Memory()
		ob, _ := om.Read(0, om.Size())
		ib, _ := im.Read(0, im.Size())
		if !bytes.Equal(ob, ib) {
			t.Errorf("memories differ after the calls")
		}
	}
}

// firstLine is the first line of an error (wazero appends a stack trace
// that names the module), or "" for nil.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// TestEquivalence: with the flag at 0, instrumented modules compute what the
// originals compute.
func TestEquivalence(t *testing.T) {
	tests := []struct {
		name     string
		wasm     func(t *testing.T) []byte
		features api.CoreFeatures
		skip     []string // exports that never return (TestInterrupt runs them)
	}{
		{"features", watFile("testdata/features.wat"), api.CoreFeaturesV2, nil},
		{"dispatch loops", watFile("testdata/dispatch.wat"), api.CoreFeaturesV2, nil},
		{"runaway (finite part)", watFile("testdata/runaway.wat"), api.CoreFeaturesV2,
			[]string{"spin", "spin_if", "exp", "exp_indirect"}},
		{"atomics", watFile("testdata/atomics.wat"), api.CoreFeaturesV2 | experimental.CoreFeaturesThreads, nil},
		{"tail calls", watFile("testdata/tailcall.wat"), api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall, []string{"tail"}},
		{"exception handling", func(*testing.T) []byte { return ehModule() }, api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling, nil},
		{"typed function references", func(*testing.T) []byte { return typedRefsModule() },
			api.CoreFeaturesV2 | experimental.CoreFeaturesTypedFunctionReferences | experimental.CoreFeaturesTailCall, nil},
		{"non-minimal encodings", func(*testing.T) []byte { return paddedModule() }, api.CoreFeaturesV2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			equivalence(t, tt.wasm(t), tt.features, tt.skip...)
		})
	}
}

func watFile(path string) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return testbuild.WAT(t, path) }
}
