//go:build linux

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/thread"
)

// The soak's shape (issue 16, "Load"): threads × servers, callers through the front door.
const (
	soakThreads = 200
	soakServers = 5
	soakCallers = 32
	// soakDefaultDuration is the load phase unless SOAK_DURATION says otherwise.
	soakDefaultDuration = 60 * time.Second
	// soakTolerance is how far above the pre-load level goroutines and RSS may settle.
	soakTolerance = 0.10
	// soakSettle bounds the wait for the figures to come back after the load.
	soakSettle = 60 * time.Second
)

// TestSoak is `make soak`: a host in this process with five stdio servers (the example MCP
// server under five distinct declarations, so five sessions shared by every thread), 200
// threads, and 32 callers calling tools through the MCP front door over loopback streamable
// HTTP with go-sdk clients for SOAK_DURATION (60 s by default). It prints p50/p99 latency,
// throughput, RSS and goroutines before, during and after, and fails unless every call
// succeeded and, once the threads are closed, goroutines settle within 10% of the cold
// level and RSS within 10% of the level after a shorter warm-up round of the same shape
// (see the warm-up below for why).
//
// The host runs in-process so that its goroutines can be counted (runtime.NumGoroutine) and
// its RSS read from /proc/self/status; the figures thus include the test's own clients,
// which are all closed before the after-figures are taken. Without WARDEN_SOAK=1 it is
// skipped, saying so: `make test` does not run it.
func TestSoak(t *testing.T) {
	if os.Getenv("WARDEN_SOAK") != "1" {
		t.Skip("soak test not run: it loads the host for a minute; run it with `make soak` (WARDEN_SOAK=1, SOAK_DURATION=60s)")
	}
	duration := soakDefaultDuration
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 60s", v)
		}
		duration = d
	}
	if vmRSS() <= 0 {
		t.Fatal("cannot read VmRSS from /proc/self/status")
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()

	var cfg strings.Builder
	for i := 1; i <= soakServers; i++ {
		// --name makes each declaration distinct: sessions are shared by declaration.
		cfg.WriteString(serverTOML(fmt.Sprintf("s%d", i), exampleBin, []string{"--name", fmt.Sprintf("soak-%d", i), "--log-level", "warn"}, ""))
	}
	home := newHome(t, cfg.String())
	logs := &syncBuffer{}
	h, err := host.New(ctx, host.Options{
		Home:           home,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: logs}),
		PolicyCacheDir: testbuild.WazeroCache(t),
	})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	hostClosed := false
	defer func() {
		if !hostClosed {
			_ = h.Close()
		}
		if t.Failed() {
			t.Logf("host log (warnings and errors):\n%s", logs.String())
		}
	}()
	token, err := netguard.GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: logs})})
	ln, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(serveCtx) }()
	frontClosed := false
	closeFront := func() {
		if frontClosed {
			return
		}
		frontClosed = true
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("front door: %v", err)
		}
		_ = ln.Close()
		if err := fd.Close(); err != nil {
			t.Errorf("FrontDoor.Close: %v", err)
		}
	}
	defer closeFront()

	// Cold: one thread and a call to each server, closed again. Then a warm-up round of
	// the full shape. The pre-load level is read after it: a Go process keeps some of what
	// its first peak needed for good (goroutine descriptors, span metadata, the binary's
	// pages first touched by the load), which a cold reading would count against the load
	// although a second peak adds none of it. A leak, per thread, session or call, grows
	// every round, so the round measured after the warm-up still shows it.
	func() {
		th, sessions := soakOpen(t, ctx, h, ln, token, 1)
		for i := 1; i <= soakServers; i++ {
			if err := soakCall(ctx, sessions[0], i); err != nil {
				t.Fatalf("warm-up call to s%d: %v", i, err)
			}
		}
		soakClose(t, th, sessions)
	}()
	cold, err := soakSettled(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	warm := soakRound(t, ctx, h, ln, token, min(duration/4, 10*time.Second))
	before, err := soakSettled(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}

	r := soakRound(t, ctx, h, ln, token, duration)
	// RSS against the level after the warm-up; goroutines against the cold one, since
	// nothing of a round may keep a goroutine.
	target := before
	target.goroutines = cold.goroutines
	after, settleErr := soakSettled(ctx, &target)

	t.Logf("soak: %d threads x %d servers (%d upstream sessions), %d callers through the front door", soakThreads, soakServers, soakServers, soakCallers)
	t.Logf("soak: warm-up  %s", warm)
	t.Logf("soak: load     %s", r)
	t.Logf("soak: cold     %s", cold)
	t.Logf("soak: before   %s (after the warm-up round)", before)
	t.Logf("soak: during   %s", r.during)
	t.Logf("soak: after    %s (settled in %v)", after, after.settle.Round(time.Millisecond))
	for _, rr := range []soakResult{warm, r} {
		if rr.failures > 0 {
			t.Errorf("%d of %d calls failed; the first: %v", rr.failures, len(rr.lats), rr.firstErr)
		}
		if len(rr.lats) == 0 {
			t.Error("no call completed during a round of load")
		}
	}
	if settleErr != nil {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%v\ngoroutines now:\n%s", settleErr, dump.String())
	}
	closeFront()
	hostClosed = true
	if err := h.Close(); err != nil {
		t.Errorf("host.Close: %v", err)
	}
}

// soakResult is one round of load.
type soakResult struct {
	opened, closed time.Duration // how long opening and closing the threads took
	elapsed        time.Duration
	lats           []time.Duration // sorted
	failures       int64
	firstErr       any
	during         soakFigures
}

func (r soakResult) String() string {
	if len(r.lats) == 0 {
		return "no calls"
	}
	return fmt.Sprintf("%d calls in %v: %.0f calls/s, latency p50 %v p99 %v max %v (%d failed); threads opened in %v, closed in %v",
		len(r.lats), r.elapsed.Round(time.Millisecond), float64(len(r.lats))/r.elapsed.Seconds(),
		soakQuantile(r.lats, 0.50), soakQuantile(r.lats, 0.99), r.lats[len(r.lats)-1].Round(time.Microsecond),
		r.failures, r.opened.Round(time.Millisecond), r.closed.Round(time.Millisecond))
}

// soakRound opens soakThreads threads with a front-door session each, runs soakCallers
// callers for d (each call: a random thread's session, a random server's echo), reads the
// figures halfway through, and closes everything again.
func soakRound(t *testing.T, ctx context.Context, h *host.Host, ln *frontdoor.Listener, token string, d time.Duration) soakResult {
	t.Helper()
	var r soakResult
	t0 := time.Now()
	threads, sessions := soakOpen(t, ctx, h, ln, token, soakThreads)
	r.opened = time.Since(t0)
	var (
		failures atomic.Int64
		firstErr atomic.Value
		lats     = make([][]time.Duration, soakCallers)
		wg       sync.WaitGroup
	)
	loadCtx, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	start := time.Now()
	for c := range soakCallers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), uint64(start.UnixNano())))
			for loadCtx.Err() == nil {
				cs := sessions[rng.IntN(len(sessions))]
				server := 1 + rng.IntN(soakServers)
				t0 := time.Now()
				err := soakCall(loadCtx, cs, server)
				if loadCtx.Err() != nil {
					return // the call the end of the round interrupted is not counted
				}
				lats[c] = append(lats[c], time.Since(t0))
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("s%d: %v", server, err))
				}
			}
		})
	}
	// "During": read halfway through the round, as it runs (no forced collection).
	select {
	case <-time.After(d / 2):
	case <-loadCtx.Done():
	}
	r.during = soakRead()
	wg.Wait()
	r.elapsed = time.Since(start)
	t0 = time.Now()
	soakClose(t, threads, sessions)
	r.closed = time.Since(t0)
	r.lats = slices.Concat(lats...)
	slices.Sort(r.lats)
	r.failures, r.firstErr = failures.Load(), firstErr.Load()
	return r
}

// soakOpen starts n threads and connects one go-sdk client session to each through the
// front door, each client with its own HTTP transport carrying the bearer token.
func soakOpen(t *testing.T, ctx context.Context, h *host.Host, ln *frontdoor.Listener, token string, n int) ([]*thread.Thread, []*soakSession) {
	t.Helper()
	threads := make([]*thread.Thread, n)
	sessions := make([]*soakSession, n)
	for i := range n {
		th, err := h.Threads().Start(ctx, thread.StartParams{Kind: thread.KindInteractive})
		if err != nil {
			t.Fatalf("thread %d of %d: %v", i+1, n, err)
		}
		threads[i] = th
		tr := &http.Transport{MaxIdleConnsPerHost: 8}
		// No client capability (the go-sdk declares roots by default): a thread whose client
		// declares roots, sampling or elicitation gets upstream sessions of its own
		// (thread.SetClient), and the soak is of the shared shape, five sessions for all.
		client := mcp.NewClient(&mcp.Implementation{Name: "warden-soak", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ln.ThreadURL(th.ID()),
			HTTPClient: &http.Client{Transport: bearer{token: token, next: tr}}}, nil)
		if err != nil {
			t.Fatalf("connecting to thread %d of %d: %v", i+1, n, err)
		}
		sessions[i] = &soakSession{cs: cs, tr: tr}
	}
	return threads, sessions
}

// soakClose closes every client session (which ends its front-door session) and every
// thread (which releases the shared server sessions).
func soakClose(t *testing.T, threads []*thread.Thread, sessions []*soakSession) {
	t.Helper()
	for _, s := range sessions {
		if err := s.cs.Close(); err != nil {
			t.Errorf("closing a front-door session: %v", err)
		}
		s.tr.CloseIdleConnections()
	}
	for _, th := range threads {
		if err := th.Close(); err != nil {
			t.Errorf("closing thread %s: %v", th.ID(), err)
		}
	}
}

type soakSession struct {
	cs *mcp.ClientSession
	tr *http.Transport
}

// bearer adds the front door's bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// soakCall calls server sN's echo tool and checks that the answer came from that server.
func soakCall(ctx context.Context, s *soakSession, server int) error {
	text := "soak-" + strconv.Itoa(server)
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("s%d__echo", server), Arguments: map[string]any{"text": text}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool error: %v", res.Content)
	}
	if len(res.Content) == 0 {
		return fmt.Errorf("empty result")
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != text {
		return fmt.Errorf("result %v, want text %q", res.Content, text)
	}
	return nil
}

// soakFigures is one reading of the process.
type soakFigures struct {
	goroutines int
	rssKiB     int64
	heapKiB    uint64
	settle     time.Duration // for the after-figures: how long they took to settle
}

func (f soakFigures) String() string {
	return fmt.Sprintf("goroutines %d, RSS %.1f MiB, Go heap in use %.1f MiB", f.goroutines, float64(f.rssKiB)/1024, float64(f.heapKiB)/1024)
}

// soakRead reads the figures as they are.
func soakRead() soakFigures {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return soakFigures{goroutines: runtime.NumGoroutine(), rssKiB: vmRSS(), heapKiB: ms.HeapInuse / 1024}
}

// soakSettled reads the figures after a collection that also returns freed memory to the
// OS: what RSS then holds is live memory, not pages the allocator kept for reuse after a
// burst, so a leak shows and the allocator's retention does not. With a target (the
// pre-load figures) it polls, bounded by soakSettle, until goroutines and RSS are within
// soakTolerance of it; without one, until two readings in a row agree on the goroutine
// count (nothing is still winding down).
func soakSettled(ctx context.Context, target *soakFigures) (soakFigures, error) {
	start := time.Now()
	deadline := start.Add(soakSettle)
	var prev soakFigures
	for i := 0; ; i++ {
		runtime.GC()
		debug.FreeOSMemory()
		f := soakRead()
		f.settle = time.Since(start)
		switch {
		case target == nil && i > 0 && f.goroutines == prev.goroutines:
			return f, nil
		case target != nil && soakWithin(f.goroutines, target.goroutines) && soakWithin(int(f.rssKiB), int(target.rssKiB)):
			return f, nil
		case time.Now().After(deadline):
			if target == nil {
				return f, fmt.Errorf("the figures did not settle within %v before the load (last: %s)", soakSettle, f)
			}
			return f, fmt.Errorf("after the load, goroutines and RSS did not return within %.0f%% of the pre-load level (%d goroutines, RSS %.1f MiB) in %v: after %s",
				soakTolerance*100, target.goroutines, float64(target.rssKiB)/1024, soakSettle, f)
		}
		prev = f
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func soakWithin(now, before int) bool { return float64(now) <= float64(before)*(1+soakTolerance) }

// soakQuantile is the q-quantile of sorted latencies.
func soakQuantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q * float64(len(sorted)-1))
	return sorted[i].Round(time.Microsecond)
}

// vmRSS is this process's resident set size in KiB, from /proc/self/status.
func vmRSS() int64 {
	f, err := os.Open(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}
