package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/thread"
)

// BenchmarkToolCallThroughExecutor measures thread.CallTool of the example server's echo
// (streamable HTTP on loopback) routed through a real `warden executor` process (WebSocket
// on loopback: the host's MCP client sends each HTTP request as http/request and reads the
// response from http/body notifications) against the same call on the same server made
// directly by the host. One host declares the server twice, once `environment_id =
// "local"` and once `environment_id = "exec-1"`, so both paths share the host, the thread,
// the policy phase and the server process; only the transport differs. Calls alternate
// between the two paths (one direct, one tunnelled, b.N of each), so a change of machine
// load during the run weighs on both alike; each path is warmed first. It reports:
//
//	p50-µs, p90-µs                 tunnelled call latency
//	direct-p50-µs, direct-p90-µs   direct call latency
//	x-direct-p50, x-direct-p90     their ratios
//	goal-x-direct-p50              the goal for x-direct-p50 (2.5)
//
// ns/op is the wall time of one direct plus one tunnelled call; B/op and allocs/op count
// the benchmark's whole process (the host and its MCP clients; the executor and the server
// are other processes). The goal is reported, never asserted.
func BenchmarkToolCallThroughExecutor(b *testing.B) {
	const goalXDirect = 2.5
	ctx := context.Background()
	srv := mcpservertest.StartHTTP(b, exampleBin, nil, "--log-level", "warn")
	ex := startExecutor(b, "", nil)

	b.Setenv("EXEC_TOKEN", execToken)
	home := newHome(b, fmt.Sprintf(`[mcp_servers.docs_local]
url = %q
environment_id = "local"

[mcp_servers.docs_exec]
url = %q
environment_id = "exec-1"
`, srv.URL, srv.URL))
	envTOML := fmt.Sprintf("[[environments]]\nid = \"exec-1\"\nurl = %q\ntoken_env = \"EXEC_TOKEN\"\n", ex.URL)
	if err := os.WriteFile(filepath.Join(home, "environments.toml"), []byte(envTOML), 0o600); err != nil {
		b.Fatal(err)
	}
	h := newHost(b, home)
	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		b.Fatal(err)
	}
	// The executor connects in the background; docs_exec joins the thread when it has.
	statusUntil(b, th, "docs_local and docs_exec ready", func(m map[string]thread.ServerStatus) bool {
		return m["docs_local"].Status == thread.StateReady && m["docs_exec"].Status == thread.StateReady
	})

	args := json.RawMessage(`{"text":"ping"}`)
	call := func(server string) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a failure bound
		defer cancel()
		t0 := time.Now()
		res, err := th.CallTool(cctx, server, "echo", args, "bench")
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("%s/echo: %w", server, err)
		}
		if res.IsError || textOf(res) != "ping" {
			return 0, fmt.Errorf("%s/echo: got %q (tool error %v), want %q", server, textOf(res), res.IsError, "ping")
		}
		return d, nil
	}
	for range 50 { // connections, sessions, the policy phase's memo
		for _, s := range []string{"docs_local", "docs_exec"} {
			if _, err := call(s); err != nil {
				b.Fatal(err)
			}
		}
	}

	b.Run("echo", func(b *testing.B) {
		direct := make([]time.Duration, 0, b.N)
		tunnel := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			d, err := call("docs_local")
			if err != nil {
				b.Fatal(err)
			}
			direct = append(direct, d)
			if d, err = call("docs_exec"); err != nil {
				b.Fatal(err)
			}
			tunnel = append(tunnel, d)
		}
		b.StopTimer()
		slices.Sort(direct)
		slices.Sort(tunnel)
		p50, p90 := quantileDur(tunnel, 0.5), quantileDur(tunnel, 0.9)
		d50, d90 := quantileDur(direct, 0.5), quantileDur(direct, 0.9)
		b.ReportMetric(us(p50), "p50-µs")
		b.ReportMetric(us(p90), "p90-µs")
		b.ReportMetric(us(d50), "direct-p50-µs")
		b.ReportMetric(us(d90), "direct-p90-µs")
		b.ReportMetric(float64(p50)/float64(d50), "x-direct-p50")
		b.ReportMetric(float64(p90)/float64(d90), "x-direct-p90")
		b.ReportMetric(goalXDirect, "goal-x-direct-p50")
	})

	// The tunnelled server really went through the executor: without it, it fails, naming
	// the executor, while the direct one still answers.
	ex.kill()
	st := statusUntil(b, th, "docs_exec failed", func(m map[string]thread.ServerStatus) bool {
		return m["docs_exec"].Status == thread.StateFailed
	})
	if e := st["docs_exec"].ToolsError; !strings.Contains(e, "exec-1") {
		b.Errorf("docs_exec toolsError after the executor exited = %q, want it to name exec-1", e)
	}
	if _, err := call("docs_local"); err != nil {
		b.Errorf("docs_local after the executor exited: %v", err)
	}
}

// quantileDur is the q-quantile (nearest rank) of sorted durations.
func quantileDur(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
