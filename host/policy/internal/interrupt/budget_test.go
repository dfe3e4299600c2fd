package interrupt

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// bulkWasm is a module (importing test.started, like runaway.wat) whose
// exports never return and stress the budget's proportionality rather
// than the number of checks:
//
//   - spin_fill loops over a memory.fill of its whole 16 MiB memory: one
//     check per iteration, 16 MiB moved (charged 2 MiB by $charge);
//   - spin_huge loops over calls of $huge, a 700 KB straight-line function
//     (100000 × global.get; i32.const 1; i32.add; global.set, which the
//     compiler cannot drop): two checks per iteration, 700 KB of code.
func bulkWasm(*testing.T) []byte { return bulkModule() }

var bulkModule = sync.OnceValue(func() []byte {
	const hugeOps = 100_000
	huge := bytes.Repeat([]byte{0x23, 0x00, 0x41, 0x01, 0x6a, 0x24, 0x00}, hugeOps)
	huge = append(huge, 0x0b)
	bodies := [][]byte{
		fn(huge...),
		fn(
			0x10, 0x00, // call $started
			0x03, 0x40, // loop
			0x41, 0x00, 0x41, 0x00, 0x41, 0x80, 0x80, 0x80, 0x08, // i32.const 0, 0, 16 MiB
			0xfc, 0x0b, 0x00, // memory.fill
			0x0c, 0x00, // br 0
			0x0b, 0x0b,
		),
		fn(
			0x10, 0x00, // call $started
			0x03, 0x40, // loop
			0x10, 0x01, // call $huge
			0x0c, 0x00, // br 0
			0x0b, 0x0b,
		),
	}
	return cat(header,
		sec(1, vec(funcType(nil, nil))),
		sec(2, vec(cat(str("test"), str("started"), []byte{0x00}, leb(0)))),
		sec(3, vec(leb(0), leb(0), leb(0))),
		sec(5, vec(cat([]byte{0x01}, leb(256), leb(256)))), // 16 MiB, fixed
		sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		sec(7, vec(cat(str("spin_fill"), []byte{0x00}, leb(2)), cat(str("spin_huge"), []byte{0x00}, leb(3)))),
		sec(10, vec(bodies...)),
	)
})

// TestBulkStructure checks bulkWasm's instrumentation with wasm-objdump,
// and that it reuses the module's () -> () type for $slow.
func TestBulkStructure(t *testing.T) {
	in := bulkModule()
	out := mustInstrument(t, in)
	checkSections(t, in, out)
	st := checkStructure(t, in, out)
	if st.checks != 5 || st.elided != 0 || st.charges != 1 {
		t.Fatalf("%+v, want 5 checks (3 functions, 2 loops), none elided, 1 charge", st)
	}
	types := splitSections(t, out)[0]
	if want := sec(1, vec(funcType(nil, nil), funcType([]byte{0x7f}, []byte{0x7f}))); !bytes.Equal(types.bytes, want) {
		t.Fatalf("type section % x, want % x", types.bytes, want)
	}
}

// check is the budget check charging cost, for a module whose $budget is
// global 1 and $slow function 3 (TestInsertedCode).
func check(cost int32) []byte {
	return cat([]byte{0x23, 0x01, 0x41}, appendS32(nil, cost), []byte{
		0x6b,       // i32.sub
		0x24, 0x01, // global.set $budget
		0x23, 0x01, // global.get $budget
		0x41, 0x00, // i32.const 0
		0x48,       // i32.lt_s
		0x04, 0x40, // if
		0x10, 0x03, // call $slow
		0x0b, // end
	})
}

// enter is the depth bound's entry code for a function without try_table
// returning an i32, of frame weight w, for a module whose $depth is global
// 2 (TestInsertedCode).
func enter(w int32) []byte {
	return cat([]byte{
		0x23, 0x02, // global.get $depth
		0x41}, appendS32(nil, w), []byte{ // i32.const w
		0x6a,       // i32.add
		0x24, 0x02, // global.set $depth
		0x23, 0x02, // global.get $depth
		0x41}, appendS32(nil, MaxStack), []byte{ // i32.const MaxStack
		0x4b,                   // i32.gt_u
		0x04, 0x40, 0x00, 0x0b, // if; unreachable; end
		0x02, 0x7f, // block (result i32): the wrapper
	})
}

// leave ends the wrapper and takes the weight w off $depth, before the
// final end.
func leave(w int32) []byte {
	return cat([]byte{0x0b, 0x23, 0x02, 0x41}, appendS32(nil, w), []byte{0x6b, 0x24, 0x02})
}

// TestInsertedCode compares a whole instrumented module with the bytes the
// package documentation describes: the new sections and entries, the
// costs (body size at entry, loop length, the body size on the first loop
// of an elided entry), `call $charge`, the depth bound's code, and $slow's
// and $charge's bodies. Then it runs it.
func TestInsertedCode(t *testing.T) {
	f0 := []byte{0x41, 0x2a, 0x0b}                                     // i32.const 42
	f1 := []byte{0x02, 0x7f, 0x03, 0x7f, 0x41, 0x07, 0x0b, 0x0b, 0x0b} // block; loop: the entry check is elided
	f2 := []byte{
		0x41, 0x00, 0x1a, // i32.const 0; drop: the entry check stays
		0x03, 0x40, 0x0b, // loop end
		0x41, 0x00, 0x41, 0x00, 0x41, 0x08, 0xfc, 0x0b, 0x00, // memory.fill
		0x41, 0x00, 0x0b,
	}
	in := simpleModule([][]byte{fn(f0...), fn(f1...), fn(f2...)})
	out := mustInstrument(t, in)

	body := func(code ...[]byte) []byte { // no locals
		b := cat(append([][]byte{{0x00}}, code...)...)
		return cat(leb(uint32(len(b))), b)
	}
	weight := func(f []byte) int32 { return int32(32 + 8 + (len(f)+1)/8) } // no parameters or locals
	slow := body([]byte{
		0x23, 0x00, 0x04, 0x40, 0x00, 0x0b, // global.get $flag; if; unreachable; end
		0x41, 0x80, 0x80, 0xc0, 0x00, 0x24, 0x01, // i32.const 1<<20; global.set $budget
		0xd0, 0x70, 0x41, 0x00, 0xfc, 0x0f, 0x00, 0x1a, // ref.null func; i32.const 0; table.grow $yield; drop
		0x0b,
	})
	charge := body([]byte{
		0x23, 0x01, 0x20, 0x00, 0x41, 0x03, 0x76, 0x6b, 0x24, 0x01, // $budget -= n >> 3
		0x23, 0x01, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10, 0x03, 0x0b, // if $budget < 0: call $slow
		0x20, 0x00, 0x0b, // n
	})

	want := cat(header,
		sec(1, vec(funcType(nil, []byte{0x7f}), funcType(nil, nil), funcType([]byte{0x7f}, []byte{0x7f}))),
		sec(3, vec(leb(0), leb(0), leb(0), leb(1), leb(2))),
		sec(4, vec([]byte{0x70, 0x00, 0x00})),
		sec(5, vec([]byte{0x00, 0x01})),
		sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b}, []byte{0x7f, 0x01, 0x41, 0x80, 0x80, 0xc0, 0x00, 0x0b}, []byte{0x7f, 0x01, 0x41, 0x00, 0x0b})),
		sec(7, vec(
			cat(str("f0"), []byte{0x00}, leb(0)), cat(str("f1"), []byte{0x00}, leb(1)), cat(str("f2"), []byte{0x00}, leb(2)),
			cat(str(testExport), []byte{0x03}, leb(0)), cat(str(testExport+DepthSuffix), []byte{0x03}, leb(2)))),
		sec(10, vec(
			body(enter(weight(f0)), check(int32(len(f0)+1)), f0[:len(f0)-1], leave(weight(f0)), []byte{0x0b}),
			body(enter(weight(f1)), f1[:4], check(int32(len(f1)+1)), f1[4:len(f1)-1], leave(weight(f1)), []byte{0x0b}),
			body(enter(weight(f2)), check(int32(len(f2)+1)), f2[:5], check(3), f2[5:12], []byte{0x10, 0x04}, f2[12:len(f2)-1], leave(weight(f2)), []byte{0x0b}),
			slow, charge)),
	)
	if !bytes.Equal(out, want) {
		t.Fatalf("instrumented module:\n got % x\nwant % x", out, want)
	}

	ctx := context.Background()
	mod, err := newRuntime(t, api.CoreFeaturesV2).Instantiate(ctx, out)
	if err != nil {
		t.Fatalf("wazero rejects the output: %v", err)
	}
	for i, w := range []uint64{42, 7, 0} {
		f := mod.ExportedFunction([]string{"f0", "f1", "f2"}[i])
		if res, err := f.Call(ctx); err != nil || res[0] != w {
			t.Fatalf("f%d() = %v, %v; want %d", i, res, err, w)
		}
	}
	flagOf(t, mod).Set(1)
	f2fn := mod.ExportedFunction("f2")
	// The calls so far charged 4, 10, then 19 + 3 + 1 (8 bytes filled):
	// f2's sites charge 19, 3, 1 per call, and $slow runs (and traps) at
	// the first site that takes the budget below 0.
	budget, calls := budgetRefill-4-10-23, 0
	for calls = 1; ; calls++ {
		for _, c := range []int{19, 3, 1} {
			budget -= c
		}
		if budget < 0 {
			break
		}
	}
	if n := trapsWithin(t, "f2()", func() error { _, err := f2fn.Call(ctx); return err }); n != calls {
		t.Fatalf("f2() trapped at call %d, want %d", n, calls)
	}
}
