package interrupt

import (
	"context"
	"math"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// TestImportedGlobals: the flag comes after the imported and the defined
// globals, and is distinct from all of them.
func TestImportedGlobals(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, api.CoreFeaturesV2)
	env, err := rt.InstantiateWithConfig(ctx, testbuild.WAT(t, "testdata/env.wat"), wazero.NewModuleConfig().WithName("env"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, mustInstrument(t, testbuild.WAT(t, "testdata/imports.wat")), wazero.NewModuleConfig().WithName("guest"))
	if err != nil {
		t.Fatal(err)
	}
	flag := flagOf(t, mod)
	use, d0, d1 := mod.ExportedFunction("use"), mod.ExportedFunction("d0"), mod.ExportedFunction("d1")
	g1 := env.ExportedGlobal("g1")
	for i, want := range []uint64{102, 106} { // d0 = 100 + 2*1, then + 2*2
		res, err := use.Call(ctx, uint64(i+1))
		if err != nil || res[0] != want {
			t.Fatalf("use(%d) = %v, %v; want %d", i+1, res, err, want)
		}
	}
	if g1.Get() != 2 || flag.Get() != 0 {
		t.Fatalf("after two calls: env.g1 = %d, flag = %d; want 2, 0", g1.Get(), flag.Get())
	}
	if res, err := d1.Call(ctx); err != nil || math.Float64frombits(res[0]) != 1.5 {
		t.Fatalf("d1() = %v, %v", res, err)
	}
	flag.Set(1)
	trapsWithin(t, "d0()", func() error { _, err := d0.Call(ctx); return err })
	if g1.Get() != 2 {
		t.Fatalf("setting the flag changed env.g1 to %d", g1.Get())
	}
	flag.Set(0)
	if res, err := d0.Call(ctx); err != nil || res[0] != 106 {
		t.Fatalf("d0() = %v, %v; want 106", res, err)
	}
}

// TestMissingSections: modules without a global or export section (or
// without code) get them at the right place; custom sections stay where
// they were.
func TestMissingSections(t *testing.T) {
	custom := func(name, data string) []byte { return sec(0, str(name), []byte(data)) }
	typ := sec(1, vec(funcType(nil, []byte{0x7f})))
	funcs := sec(3, vec(leb(0)))
	mem := sec(5, vec([]byte{0x00, 0x01}))
	code := sec(10, vec(fn(0x03, 0x40, 0x0b, 0x41, 0x2a, 0x0b))) // loop end; i32.const 42
	glob := sec(6, vec([]byte{0x7f, 0x00, 0x41, 0x05, 0x0b}))
	export := sec(7, vec(cat(str("f"), []byte{0x00}, leb(0))))
	tests := []struct {
		name  string
		wasm  []byte
		calls bool // it has an exported function f returning 42
	}{
		{"empty module", header, false},
		{"no code", cat(header, mem), false},
		{"no global, no export", cat(header, typ, funcs, code), false},
		{"global, no export", cat(header, typ, funcs, glob, code), false},
		{"export, no global", cat(header, typ, funcs, export, code), true},
		{"custom sections everywhere", cat(header,
			custom("a", "1"), typ, custom("b", "22"), funcs, custom("c", "333"),
			mem, custom("d", ""), export, custom("e", "x"), code, custom("name", "")), true},
		{"only custom sections", cat(header, custom("a", "1"), custom("b", "2")), false},
		{"tag section", cat(header,
			sec(1, vec(funcType(nil, []byte{0x7f}), funcType([]byte{0x7f}, nil))), funcs, mem,
			sec(13, vec([]byte{0x00, 0x01})), export, code), true},
		{"data count and data", cat(header, typ, funcs, mem, sec(12, leb(1)), code,
			sec(11, vec(cat([]byte{0x01}, str("abc")))), custom("trailing", "t")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			out := mustInstrument(t, tt.wasm)
			checkSections(t, tt.wasm, out)
			rt := newRuntime(t, allFeatures)
			if _, err := rt.CompileModule(ctx, tt.wasm); err != nil {
				t.Fatalf("the test module is invalid: %v", err)
			}
			mod, err := rt.Instantiate(ctx, out)
			if err != nil {
				t.Fatalf("wazero rejects the output: %v", err)
			}
			flag := flagOf(t, mod)
			if !tt.calls {
				return
			}
			f := mod.ExportedFunction("f")
			if res, err := f.Call(ctx); err != nil || res[0] != 42 {
				t.Fatalf("f() = %v, %v; want 42", res, err)
			}
			flag.Set(1)
			trapsWithin(t, "f()", func() error { _, err := f.Call(ctx); return err })
		})
	}
}
