package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/thread"
)

// threadsN is how many threads share one server in TestThreads1000 and BenchmarkThreads1000.
const threadsN = 1000

// rssBudgetMB bounds the resident memory 1,000 threads add (the goal docs/performance.md
// records).
const rssBudgetMB = 300

// startThreads starts n threads on h, 16 at a time, and returns them.
func startThreads(tb testing.TB, ctx context.Context, h *host.Host, n int) []*thread.Thread {
	tb.Helper()
	out := make([]*thread.Thread, n)
	errs := make([]error, n)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = h.Threads().Start(ctx, thread.StartParams{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("thread %d: %v", i, err)
		}
	}
	return out
}

// closeThreads closes every thread.
func closeThreads(tb testing.TB, ts []*thread.Thread) {
	tb.Helper()
	for _, th := range ts {
		if err := th.Close(); err != nil {
			tb.Errorf("Thread.Close: %v", err)
		}
	}
}

// sharedServerHost is a host whose config declares the example server (stdio) as "docs",
// recording its requests in the returned count file.
func sharedServerHost(tb testing.TB) (*host.Host, string) {
	tb.Helper()
	count := filepath.Join(tb.TempDir(), "count")
	home := newHome(tb, serverTOML("docs", exampleBin, []string{"--count-file", count}, "required = true"))
	return newHost(tb, home), count
}

// checkOneSession fails tb unless the server saw exactly one MCP session: one handshake and
// one tools/list.
func checkOneSession(tb testing.TB, count string, threads int) {
	tb.Helper()
	if hs, tl := handshakes(tb, count), mcpservertest.Count(tb, count, "tools/list"); hs != 1 || tl != 1 {
		tb.Fatalf("%d threads sharing one server: the server saw %d handshakes (server/discover+initialize) and %d tools/list, want 1 and 1; methods %q",
			threads, hs, tl, mcpservertest.Methods(tb, count))
	}
}

// TestThreads1000 starts 1,000 threads over one configured server: they share one MCP
// session — the server sees one handshake and one tools/list — and every thread reads the
// shared catalog. (BenchmarkThreads1000 measures the memory they take.)
func TestThreads1000(t *testing.T) {
	h, count := sharedServerHost(t)
	ctx := testCtx(t)
	rss0 := rssMB(t)
	ts := startThreads(t, ctx, h, threadsN)
	defer closeThreads(t, ts)
	for _, th := range ts {
		st, err := th.StatusNow(ctx, "docs")
		if err != nil || len(st) != 1 || st[0].Status != thread.StateReady || len(st[0].Tools) == 0 {
			t.Fatalf("thread %s: status %+v, %v; want docs ready with tools", th.ID(), st, err)
		}
	}
	checkOneSession(t, count, threadsN)
	t.Logf("%d threads: 1 MCP session at the server; RSS growth %.1f MB", threadsN, rssMB(t)-rss0)
}

// BenchmarkThreads1000 starts 1,000 threads sharing one server per iteration (one more
// thread, started first, keeps the session alive across iterations) and reports:
//
//	sessions      MCP sessions the server saw over the whole run (must be 1)
//	rss-MB        the process's resident memory growth from before the first thread to the
//	              peak with 1,000 threads live (goal ≤ 300)
//	x-rss-budget  rss-MB / 300 (goal ≤ 1)
//	ms/thread     thread/start latency, amortised over 16 concurrent starts
func BenchmarkThreads1000(b *testing.B) {
	h, count := sharedServerHost(b)
	ctx := context.Background()
	rss0 := rssMB(b)
	anchor := startThreads(b, ctx, h, 1)
	defer closeThreads(b, anchor)
	peak := 0.0
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		ts := startThreads(b, ctx, h, threadsN)
		elapsed += time.Since(start)
		peak = max(peak, rssMB(b)-rss0)
		b.StopTimer()
		closeThreads(b, ts)
		b.StartTimer()
	}
	checkOneSession(b, count, threadsN)
	b.ReportMetric(1, "sessions")
	b.ReportMetric(peak, "rss-MB")
	b.ReportMetric(peak/rssBudgetMB, "x-rss-budget")
	b.ReportMetric(float64(elapsed.Microseconds())/1e3/float64(b.N*threadsN), "ms/thread")
}

// rssMB is the process's resident set size (VmRSS in /proc/self/status), in MB.
func rssMB(tb testing.TB) float64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("skipping: no /proc/self/status to read the resident set size from: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); n == 1 {
			return float64(kb) / 1024
		}
	}
	tb.Fatalf("no VmRSS line in /proc/self/status")
	return 0
}
