package interrupt

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// depthModule exercises the depth bound (see MaxStack). Global 0 ($n) is a
// counter; every function is () -> (i32):
//
//   - f0 recurses $n times (no tail call) and returns the depth;
//   - f1 sets $n = 10000 and calls f0 (a depth well inside the bound);
//   - f2 sets $n = 10^6 and calls f0 (beyond it: traps, $depth above
//     MaxStack);
//   - f3 tail-calls itself $n times, then returns 7; f4 sets $n = 10^6
//     and calls it (tail calls do not deepen the stack: no trap);
//   - f5 throws tag 0, f6 calls f5, f7 calls f6, each with 10000 locals
//     (a frame weight of ≈80 KB); f8 catches f7's exception (thrown through
//     the three frames) 100 times in a loop and returns 1: the depth is
//     restored where the exception lands, so it does not drift up by
//     ≈240 KB an iteration and trap;
//   - f9 does the same with the catch clause naming the loop itself, so
//     that the exception lands at the loop's start.
func depthModule() []byte {
	types := sec(1, vec(funcType(nil, []byte{0x7f}), funcType(nil, nil)))
	tags := sec(13, vec([]byte{0x00, 0x01})) // tag 0: () -> ()
	global := sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b}))
	heavy := cat(leb(1), leb(10000), []byte{0x7f}) // 10000 i32 locals
	setN := func(n uint32) []byte { return cat([]byte{0x41}, appendS32(nil, int32(n)), []byte{0x24, 0x00}) }
	bodies := [][]byte{
		fn( // f0
			0x23, 0x00, 0x45, // global.get $n; i32.eqz
			0x04, 0x7f, // if (result i32)
			0x41, 0x00, // i32.const 0
			0x05,                                     // else
			0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // $n = $n - 1
			0x10, 0x00, // call f0
			0x41, 0x01, 0x6a, // i32.const 1; i32.add
			0x0b, // end
			0x0b,
		),
		fn(cat(setN(10000), []byte{0x10, 0x00, 0x0b})...),   // f1
		fn(cat(setN(1000000), []byte{0x10, 0x00, 0x0b})...), // f2
		fn(
			0x23, 0x00, 0x45, // global.get $n; i32.eqz
			0x04, 0x40, // if
			0x41, 0x07, 0x0f, // i32.const 7; return
			0x0b,                                     // end
			0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // $n = $n - 1
			0x12, 0x03, // return_call f3
			0x0b,
		),
		fn(cat(setN(1000000), []byte{0x10, 0x03, 0x0b})...), // f4
		fnLocals(heavy, 0x08, 0x00, 0x0b),                   // f5: throw 0
		fnLocals(heavy, 0x10, 0x05, 0x0b),                   // f6: call f5
		fnLocals(heavy, 0x10, 0x06, 0x0b),                   // f7: call f6
		fn(cat(setN(100), []byte{
			0x03, 0x40, // loop
			0x02, 0x40, // block
			0x1f, 0x40, 0x01, 0x02, 0x00, // try_table (catch_all 0)
			0x10, 0x07, 0x1a, // call f7; drop
			0x0b,                                     // end try_table
			0x0b,                                     // end block: the exception lands here
			0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // $n = $n - 1
			0x23, 0x00, 0x0d, 0x00, // br_if 0 ($n != 0)
			0x0b,       // end loop
			0x41, 0x01, // i32.const 1
			0x0b,
		})...),
		fn(cat(setN(100), []byte{
			0x02, 0x40, // block $out
			0x03, 0x40, // loop $l
			0x23, 0x00, 0x45, 0x0d, 0x01, // br_if $out ($n == 0)
			0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // $n = $n - 1
			0x1f, 0x40, 0x01, 0x02, 0x00, // try_table (catch_all 0): lands at $l's start
			0x10, 0x07, 0x1a, // call f7; drop
			0x0b,       // end try_table
			0x0b,       // end loop
			0x0b,       // end block
			0x41, 0x01, // i32.const 1
			0x0b,
		})...),
	}
	return moduleWithTypes(types, bodies, tags, global)
}

func TestDepthBound(t *testing.T) {
	ctx := context.Background()
	features := api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExceptionHandling
	out := mustInstrument(t, depthModule())
	rt := newRuntime(t, features)
	inst := func(t *testing.T) api.Module {
		mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatalf("wazero rejects the output: %v", err)
		}
		t.Cleanup(func() { _ = mod.Close(ctx) })
		return mod
	}
	for _, tc := range []struct {
		name string
		fn   string
		want uint64
	}{
		{"recursion inside the bound", "f1", 10000},
		{"tail calls", "f4", 7},
		{"exceptions caught in a loop", "f8", 1},
		{"exceptions caught at a loop's start", "f9", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod := inst(t)
			for range 2 { // and again on the same instance: nothing drifted
				res, err := mod.ExportedFunction(tc.fn).Call(ctx)
				if err != nil || res[0] != tc.want {
					t.Fatalf("%s() = %v, %v; want %d", tc.fn, res, err, tc.want)
				}
			}
			if d := mod.ExportedGlobal(testExport + DepthSuffix).Get(); d != 0 {
				t.Fatalf("depth = %d after a normal return, want 0", d)
			}
		})
	}
	t.Run("recursion beyond the bound", func(t *testing.T) {
		mod := inst(t)
		_, err := mod.ExportedFunction("f2").Call(ctx)
		if err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("f2() = %v, want the depth bound's trap", err)
		}
		if d := mod.ExportedGlobal(testExport + DepthSuffix).Get(); d <= MaxStack {
			t.Fatalf("depth = %d after the depth trap, want more than MaxStack (%d)", d, MaxStack)
		}
	})
}

// TestDepthBoundCatchAtFunctionLabel: an exception caught by a catch clause
// naming the function's own label lands at the end of the wrapper block,
// where the function's depth is restored from $saved: g1 catches g0's
// exception that way, 100 times, g0 weighing ≈80 KB (10000 locals).
func TestDepthBoundCatchAtFunctionLabel(t *testing.T) {
	ctx := context.Background()
	heavy := cat(leb(1), leb(10000), []byte{0x7f})
	wasm := cat(header,
		sec(1, vec(funcType(nil, []byte{0x7f}), funcType(nil, nil))),
		sec(3, vec(leb(1), leb(1), leb(0))), // g0, g1: () -> (); f0: () -> (i32)
		sec(13, vec([]byte{0x00, 0x01})),    // tag 0: () -> ()
		sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		sec(7, vec(cat(str("f0"), []byte{0x00}, leb(2)))),
		sec(10, vec(
			fnLocals(heavy, 0x08, 0x00, 0x0b), // g0: throw 0
			fn(
				0x1f, 0x40, 0x01, 0x02, 0x00, // try_table (catch_all 0): the function's label
				0x10, 0x00, // call g0
				0x0b, // end try_table
				0x0b,
			),
			fn(
				0x41, 0xe4, 0x00, 0x24, 0x00, // $n = 100
				0x03, 0x40, // loop
				0x10, 0x01, // call g1
				0x23, 0x00, 0x41, 0x01, 0x6b, 0x24, 0x00, // $n = $n - 1
				0x23, 0x00, 0x0d, 0x00, // br_if 0 ($n != 0)
				0x0b,       // end loop
				0x41, 0x01, // i32.const 1
				0x0b,
			),
		)),
	)
	out := mustInstrument(t, wasm)
	rt := newRuntime(t, api.CoreFeaturesV2|experimental.CoreFeaturesExceptionHandling)
	mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("wazero rejects the output: %v", err)
	}
	defer mod.Close(ctx)
	if res, err := mod.ExportedFunction("f0").Call(ctx); err != nil || res[0] != 1 {
		t.Fatalf("f0() = %v, %v; want 1", res, err)
	}
	if d := mod.ExportedGlobal(testExport + DepthSuffix).Get(); d != 0 {
		t.Fatalf("depth = %d after a normal return, want 0", d)
	}
}
