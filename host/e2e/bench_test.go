package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

// BenchmarkToolCall measures a tools/call of the example server's echo made by a go-sdk
// client through warden's MCP front door (streamable HTTP on loopback; the front door calls
// the example server over streamable HTTP on loopback) against the same call made by the
// same client straight to the example server — the baseline, measured in the same
// sub-benchmark run (two interleaved rounds) with the same number of calls and the same
// concurrency, on a warm session each. At concurrency 1 and 32 (one client session, that
// many calls in flight) it reports:
//
//	p50-ms, direct-p50-ms    median call latency through warden and direct
//	x-direct-p50             their ratio (goal ≤ 2.2)
//	calls/s, direct-calls/s  throughput through warden and direct
//	x-direct-throughput      their ratio (goal ≥ 0.45)
//
// ns/op is the front door's wall time per call; B/op and allocs/op count the whole process
// while the front door is measured: the client, the front door, the host and its upstream
// client. Goals are reported, never asserted (a loaded machine must not fail a run).
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	p := mcpservertest.StartHTTP(b, exampleBin, nil, "--log-level", "warn")
	direct := connectMCP(b, ctx, p.URL)

	h := newHost(b, newHome(b, fmt.Sprintf("[mcp_servers.docs]\nurl = %q\nrequired = true\n", p.URL)))
	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		b.Fatal(err)
	}
	front := connectMCP(b, ctx, frontDoorHTTP(b, h)+frontdoor.ThreadPath(th.ID()))

	directCall := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}
	frontCall := &mcp.CallToolParams{Name: frontdoor.ToolName("docs", "echo"), Arguments: map[string]any{"text": "ping"}}
	for _, conc := range []int{1, 32} {
		// Warm both paths (connections, the front door's thread server) before measuring.
		for _, s := range []struct {
			cs *mcp.ClientSession
			p  *mcp.CallToolParams
		}{{direct, directCall}, {front, frontCall}} {
			var warm calls
			if err := warm.run(ctx, s.cs, s.p, 4*conc, conc); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			// Two rounds of direct-then-front-door calls, b.N calls per path in all, so that
			// a change of machine load during the run weighs on both paths alike.
			b.StopTimer()
			var base, got calls
			for round := range 2 {
				n := b.N / 2
				if round == 1 {
					n = b.N - n
				}
				if err := base.run(ctx, direct, directCall, n, conc); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				err := got.run(ctx, front, frontCall, n, conc)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(ms(got.p50()), "p50-ms")
			b.ReportMetric(ms(base.p50()), "direct-p50-ms")
			b.ReportMetric(float64(got.p50())/float64(base.p50()), "x-direct-p50")
			b.ReportMetric(got.perSec(), "calls/s")
			b.ReportMetric(base.perSec(), "direct-calls/s")
			b.ReportMetric(got.perSec()/base.perSec(), "x-direct-throughput")
		})
	}
}

// calls accumulates the latencies and wall time of rounds of calls.
type calls struct {
	lat  []time.Duration
	wall time.Duration
}

// run makes n calls of p on cs from conc goroutines. A protocol error or a tool error fails
// it.
func (c *calls) run(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams, n, conc int) error {
	if n == 0 {
		return nil
	}
	lat := make([]time.Duration, n)
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				res, err := cs.CallTool(ctx, p)
				lat[i] = time.Since(t0)
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: tool error %v", p.Name, res.Content)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	c.wall += time.Since(start)
	c.lat = append(c.lat, lat...)
	return errors.Join(errs...)
}

// p50 is the median latency.
func (c *calls) p50() time.Duration {
	s := slices.Clone(c.lat)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// perSec is the throughput: calls per second of wall time.
func (c *calls) perSec() float64 { return float64(len(c.lat)) / c.wall.Seconds() }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
