package interrupt

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

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
				rt, wasm := variantRuntime(b, variant, g.wasm(b))
				addPolicyImports(b, rt)
				mod := instantiateGuest(b, rt, wasm, g.name)
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
			rt, wasm := variantRuntime(b, variant, testbuild.WAT(b, "testdata/tight.wat"))
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

// variantRuntime returns the runtime and module bytes of a benchmark
// variant: "original" (warden's runtime settings, the module as built),
// "instrumented" (the same, the module instrumented) or
// "closeOnContextDone" (the module as built, on a runtime with wazero's own
// interrupt checks, what Instrument replaces).
func variantRuntime(b *testing.B, variant string, wasm []byte) (wazero.Runtime, []byte) {
	switch variant {
	case "instrumented":
		return newRuntime(b, api.CoreFeaturesV2), mustInstrument(b, wasm)
	case "closeOnContextDone":
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
		b.Cleanup(func() { _ = rt.Close(ctx) })
		return rt, wasm
	}
	return newRuntime(b, api.CoreFeaturesV2), wasm
}
