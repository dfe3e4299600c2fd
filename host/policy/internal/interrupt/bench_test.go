package interrupt

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// BenchmarkInstrument instruments the example policies and conformance
// guests (the Go ones are about 2 MB) and the 700 KB straight-line
// function of bulkWasm; MB/s is module bytes per second, growth-% what the
// inserted code and the new entries add to the module.
func BenchmarkInstrument(b *testing.B) {
	gs := append(guests(), guest{"bulk", func(testing.TB) []byte { return bulkModule() }})
	for _, g := range gs {
		b.Run(g.name, func(b *testing.B) {
			wasm := g.wasm(b)
			b.SetBytes(int64(len(wasm)))
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				var err error
				if out, err = Instrument(wasm, testExport); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(100*float64(len(out)-len(wasm))/float64(len(wasm)), "growth-%")
		})
	}
}

// BenchmarkGuestCall measures what the checks cost at run time: one
// warden_servers call (20 servers) on the original module, on the
// instrumented one (both with wazero's WithCloseOnContextDone(false)), and
// on the original with WithCloseOnContextDone(true), what Instrument
// replaces.
func BenchmarkGuestCall(b *testing.B) {
	in := abitest.ServersInput20().AppendTo(nil)
	for _, g := range guests() {
		if g.name != "conformance-go" && g.name != "conformance-c" && g.name != "allow-hosts" {
			continue
		}
		for _, variant := range []string{"original", "instrumented", "closeOnContextDone"} {
			b.Run(g.name+"/"+variant, func(b *testing.B) {
				ctx := context.Background()
				wasm := g.wasm(b)
				rt := newRuntime(b, api.CoreFeaturesV2)
				switch variant {
				case "instrumented":
					wasm = mustInstrument(b, wasm)
				case "closeOnContextDone":
					rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
					b.Cleanup(func() { _ = rt.Close(ctx) })
				}
				wasi_snapshot_preview1.MustInstantiate(ctx, rt)
				if _, err := rt.NewHostModuleBuilder("warden").
					NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32) {}).Export("log").
					Instantiate(ctx); err != nil {
					b.Fatal(err)
				}
				cm, err := rt.CompileModule(ctx, wasm)
				if err != nil {
					b.Fatal(err)
				}
				cfg := wazero.NewModuleConfig().WithStartFunctions()
				if _, ok := cm.ExportedFunctions()["_initialize"]; ok {
					cfg = cfg.WithStartFunctions("_initialize")
				}
				mod, err := rt.InstantiateModule(ctx, cm, cfg)
				if err != nil {
					b.Fatal(err)
				}
				alloc, hook := mod.ExportedFunction("warden_alloc"), mod.ExportedFunction("warden_servers")
				for b.Loop() {
					res, err := alloc.Call(ctx, uint64(len(in)))
					if err != nil {
						b.Fatal(err)
					}
					mod.Memory().Write(uint32(res[0]), in)
					if _, err := hook.Call(ctx, res[0], uint64(len(in))); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTightLoop is the worst case for the checks: 1e6 iterations of a
// loop with three additions in it (testdata/tight.wat), a budget check per
// iteration and a trip to Go every 2^20 / 25 iterations. ns/op / 1e6 is
// the time per iteration.
func BenchmarkTightLoop(b *testing.B) {
	for _, variant := range []string{"original", "instrumented", "closeOnContextDone"} {
		b.Run(variant, func(b *testing.B) {
			ctx := context.Background()
			wasm := testbuild.WAT(b, "testdata/tight.wat")
			rt := newRuntime(b, api.CoreFeaturesV2)
			switch variant {
			case "instrumented":
				wasm = mustInstrument(b, wasm)
			case "closeOnContextDone":
				rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
				b.Cleanup(func() { _ = rt.Close(ctx) })
			}
			mod, err := rt.Instantiate(ctx, wasm)
			if err != nil {
				b.Fatal(err)
			}
			count := mod.ExportedFunction("count")
			for b.Loop() {
				if _, err := count.Call(ctx, 1_000_000); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
