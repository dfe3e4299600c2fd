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

	directCall := callOp(direct, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}})
	frontCall := callOp(front, &mcp.CallToolParams{Name: frontdoor.ToolName("docs", "echo"), Arguments: map[string]any{"text": "ping"}})
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			got, base := versus(b, ctx, conc, directCall, frontCall)
			b.ReportMetric(ms(got.p50()), "p50-ms")
			b.ReportMetric(ms(base.p50()), "direct-p50-ms")
			b.ReportMetric(float64(got.p50())/float64(base.p50()), "x-direct-p50")
			b.ReportMetric(got.perSec(), "calls/s")
			b.ReportMetric(base.perSec(), "direct-calls/s")
			b.ReportMetric(got.perSec()/base.perSec(), "x-direct-throughput")
		})
	}
}

// BenchmarkResourceRead measures a resources/read of the example server's
// docs://example/readme (--items) made by a go-sdk client through warden's MCP front door
// against the same read made straight to the example server, as BenchmarkToolCall does for
// tools/call: streamable HTTP on loopback on both legs, the baseline measured in the same
// sub-benchmark run, interleaved, at concurrency 1 and 32. It reports:
//
//	p50-ms, direct-p50-ms    median read latency through warden and direct
//	x-frontdoor-read         their ratio (no goal of its own; tools/call's is ≤ 2.2)
//	reads/s, direct-reads/s  throughput through warden and direct
//
// The front door's read passes the server's resource lists and the resource_read hook
// (no policy here: the baseline's list check only), as tools/call passes tool_call.
func BenchmarkResourceRead(b *testing.B) {
	ctx := context.Background()
	p := mcpservertest.StartHTTP(b, exampleBin, nil, "--items", "--log-level", "warn")
	direct := connectMCP(b, ctx, p.URL)

	h := newHost(b, newHome(b, fmt.Sprintf("[mcp_servers.docs]\nurl = %q\nrequired = true\n", p.URL)))
	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		b.Fatal(err)
	}
	front := connectMCP(b, ctx, frontDoorHTTP(b, h)+frontdoor.ThreadPath(th.ID()))

	// One server: the front door serves its resource under the upstream URI.
	const uri = "docs://example/readme"
	directRead, frontRead := readOp(direct, uri), readOp(front, uri)
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			got, base := versus(b, ctx, conc, directRead, frontRead)
			b.ReportMetric(ms(got.p50()), "p50-ms")
			b.ReportMetric(ms(base.p50()), "direct-p50-ms")
			b.ReportMetric(float64(got.p50())/float64(base.p50()), "x-frontdoor-read")
			b.ReportMetric(got.perSec(), "reads/s")
			b.ReportMetric(base.perSec(), "direct-reads/s")
		})
	}
}

// op is one measured request; an error fails the run.
type op func(context.Context) error

// callOp calls a tool on cs; a tool error is an error.
func callOp(cs *mcp.ClientSession, p *mcp.CallToolParams) op {
	return func(ctx context.Context) error {
		res, err := cs.CallTool(ctx, p)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: tool error %v", p.Name, res.Content)
		}
		return err
	}
}

// readOp reads a resource on cs; an answer without contents is an error.
func readOp(cs *mcp.ClientSession, uri string) op {
	return func(ctx context.Context) error {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err == nil && (len(res.Contents) == 0 || res.Contents[0].Text == "") {
			err = fmt.Errorf("%s: no contents", uri)
		}
		return err
	}
}

// versus warms both paths (connections, the front door's thread server), then measures
// b.N requests of each, concurrency conc, in two rounds of direct-then-front-door, so that a
// change of machine load during the run weighs on both paths alike. Only the front door's
// requests are timed by b.
func versus(b *testing.B, ctx context.Context, conc int, direct, front op) (got, base calls) {
	b.Helper()
	b.StopTimer()
	for _, o := range []op{direct, front} {
		var warm calls
		if err := warm.run(ctx, o, 4*conc, conc); err != nil {
			b.Fatal(err)
		}
	}
	for round := range 2 {
		n := b.N / 2
		if round == 1 {
			n = b.N - n
		}
		if err := base.run(ctx, direct, n, conc); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		err := got.run(ctx, front, n, conc)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
	}
	return got, base
}

// calls accumulates the latencies and wall time of rounds of calls.
type calls struct {
	lat  []time.Duration
	wall time.Duration
}

// run makes n requests o from conc goroutines. An error fails it.
func (c *calls) run(ctx context.Context, o op, n, conc int) error {
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
				err := o(ctx)
				lat[i] = time.Since(t0)
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
