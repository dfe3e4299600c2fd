package policy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

// reportLatency adds p50 and p99 metrics (µs) computed from per-call
// durations. A native-baseline benchmark can call it too, so the two sets
// of metrics line up.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	us := func(q float64) float64 {
		return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(us(0.50), "p50-µs")
	b.ReportMetric(us(0.99), "p99-µs")
}

// BenchmarkServersHook runs a realistic Go example policy on a warm
// instance with a 20-server input (abitest.ServersInput20), memoisation off
// and wazero's interrupt checks on (WithCloseOnContextDone, always on in a
// Runtime). "call" is the raw ABI round trip (input already encoded:
// write input, call the hook, copy the output out); "typed" adds the host's
// encoding of the input and decoding of the output.
//
// "wat-fixed" is good.wat, which ignores its input and returns a constant:
// the host's own per-call cost (pool, deadline, interrupt goroutine, copying
// the input in and the output out) with a near-zero guest.
func BenchmarkServersHook(b *testing.B) {
	for _, name := range []string{"reviewer-no-stdio", "allow-hosts", "wat-fixed"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			rt := newRuntime(b, Config{PoolSize: 1, MaxInstances: 1, MemoEntries: -1})
			var wasm []byte
			if name == "wat-fixed" {
				wasm = wat(b, "good")
			} else {
				wasm = examplePolicy(b, name)
			}
			m := mustLoad(b, rt, LoadOptions{ID: name, Wasm: wasm})
			in := abitest.ServersInput20()
			enc := in.AppendTo(nil)
			// Warm up: the first calls grow the guest's heap and buffers.
			for range 100 {
				if _, err := m.Servers(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("call", func(b *testing.B) {
				d := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					if _, err := m.Call(ctx, abi.HookServers, enc); err != nil {
						b.Fatal(err)
					}
					d = append(d, time.Since(t0))
				}
				b.StopTimer()
				b.ReportMetric(float64(len(enc)), "input-bytes")
				reportLatency(b, d)
			})
			b.Run("typed", func(b *testing.B) {
				d := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					if _, err := m.Servers(ctx, in); err != nil {
						b.Fatal(err)
					}
					d = append(d, time.Since(t0))
				}
				b.StopTimer()
				reportLatency(b, d)
			})
		})
	}
}

// BenchmarkLoad loads the biggest example policy: "cold" with an empty
// on-disk compilation cache (a first start), "warm" with a populated one (a
// restart), and "compiled" into a Runtime that already holds the module (a
// reload of an unchanged plugin: validation and pool instantiation only).
// Only Load is timed; the metric ms/op is the same as ns/op, for reading.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	var name string
	var wasm []byte
	for _, n := range []string{"allow-hosts", "block-tool", "no-forwarding", "reviewer-no-stdio"} {
		if w := examplePolicy(b, n); len(w) > len(wasm) {
			name, wasm = n, w
		}
	}
	b.Logf("biggest example: %s (%d bytes)", name, len(wasm))
	newRT := func(b *testing.B, dir string) *Runtime {
		rt, err := NewRuntime(ctx, Config{CompilationCacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		return rt
	}
	b.Run("cold", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			b.StopTimer()
			rt := newRT(b, b.TempDir())
			b.StartTimer()
			t0 := time.Now()
			m, err := rt.Load(ctx, LoadOptions{ID: name, Wasm: wasm})
			total += time.Since(t0)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
			_ = rt.Close(ctx)
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/op")
	})
	b.Run("warm", func(b *testing.B) {
		dir := b.TempDir()
		rt := newRT(b, dir) // populate the cache
		if m, err := rt.Load(ctx, LoadOptions{ID: name, Wasm: wasm}); err != nil {
			b.Fatal(err)
		} else {
			_ = m.Close(ctx)
		}
		_ = rt.Close(ctx)
		b.ResetTimer()
		var total time.Duration
		for range b.N {
			b.StopTimer()
			rt := newRT(b, dir)
			b.StartTimer()
			t0 := time.Now()
			m, err := rt.Load(ctx, LoadOptions{ID: name, Wasm: wasm})
			total += time.Since(t0)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
			_ = rt.Close(ctx)
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/op")
	})
	b.Run("compiled", func(b *testing.B) {
		rt := newRT(b, "")
		defer rt.Close(ctx)
		held := mustLoad(b, rt, LoadOptions{ID: name + "-held", Wasm: wasm})
		defer held.Close(ctx)
		b.ResetTimer()
		var total time.Duration
		for range b.N {
			t0 := time.Now()
			m, err := rt.Load(ctx, LoadOptions{ID: fmt.Sprint(name, "-", b.N), Wasm: wasm})
			total += time.Since(t0)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			_ = m.Close(ctx)
			b.StartTimer()
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/op")
	})
}
