package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/exectest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/metrics"
	"github.com/warden-mcp/warden/host/thread"
)

var exampleBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

// execToken is the bearer token of the in-process executor (a test value, not a secret).
const execToken = "metrics-test-executor-token-0123456789"

// A new registry exposes warden's series and the runtime's, and nothing from the
// process-global default registry.
func TestNewRegistry(t *testing.T) {
	sessions := 3
	m := metrics.New(metrics.Options{OpenSessions: func() int { return sessions }})
	m.Decision("servers", "expose")
	m.ToolCall("docs", "ok")
	m.PolicyCall("demo@1", "servers", 40*time.Microsecond)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	for _, want := range []string{"warden_decisions_total", "warden_tool_calls_total", "warden_policy_latency_seconds",
		"warden_open_sessions", "warden_threads", "go_goroutines", "process_resident_memory_bytes"} {
		if !names[want] {
			t.Errorf("series %s missing; have %v", want, names)
		}
	}
	if n := testutil.CollectAndCount(m.Registry(), "warden_open_sessions"); n != 1 {
		t.Errorf("warden_open_sessions: %d series, want 1", n)
	}
}

// After real activity — a thread under a real operator policy, tool calls of every outcome,
// an upstream server killed and restarted, an executor that drops and comes back — a
// scrape of the handler has every series, with the values that activity implies.
func TestScrapeAfterActivity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A real executor in this process, on a fixed loopback port so that a second one can
	// take its place.
	port := testmain.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	stopExec := exectest.Serve(t, addr, execToken)

	home := t.TempDir()
	writeFile(t, filepath.Join(home, "policies", "guard.wasm"), string(testbuild.GoGuest(t, "../testdata/policies/guard")))
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf(
		"[[policies]]\npath = \"policies/guard.wasm\"\n\n[mcp_servers.docs]\ncommand = %q\nargs = [\"--name\", \"metrics-docs\"]\n\n[mcp_servers.disabled_by_guard]\ncommand = %q\n",
		exampleBin, exampleBin))
	writeFile(t, filepath.Join(home, "environments.toml"), fmt.Sprintf(
		"[[environments]]\nid = \"exec-1\"\nurl = \"ws://%s/\"\ntoken_env = \"EXEC_TOKEN\"\n", addr))
	logs := &testmain.SyncBuffer{}
	h, err := host.New(ctx, host.Options{
		Home:           home,
		PolicyCacheDir: testbuild.WazeroCache(t),
		Logger:         hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs}),
		LookupEnv: func(name string) (string, bool) {
			if name == "EXEC_TOKEN" {
				return execToken, true
			}
			return os.LookupEnv(name)
		},
	})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	}()

	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	if _, err := th.Status(ctx, "", false); err != nil {
		t.Fatalf("status: %v", err)
	}
	call := func(tool, args string) {
		_, _ = th.CallTool(ctx, "docs", tool, json.RawMessage(args), "metrics-test")
	}
	call("echo", `{"text":"hi"}`)             // ok (the guard rewrites it)
	call("echo", `{"text":"again"}`)          // ok
	call("add", `{"a":1,"b":2}`)              // denied by the guard's tool_call
	call("set_tools", `{"tools":["nope"]}`)   // tool_error: the server refuses unknown names
	call("no_such_tool", `{}`)                // failed: not in the catalog
	call("fail", `{"message":"deny-listed"}`) // failed: the guard's deny list
	// A server name the thread does not list is the caller's word: one label for all.
	_, _ = th.CallTool(ctx, "made-up-server", "echo", json.RawMessage(`{}`), "metrics-test")

	// Kill the server: the connection restarts it on its own.
	pid := sessionPID(t, h, "docs")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	waitFor(t, ctx, "the killed server to be restarted", func() bool {
		for _, s := range h.Status().Sessions {
			if s.Server == "docs" && s.Restarts > 0 && s.State == "ready" && s.PID != pid {
				return true
			}
		}
		return false
	})

	// Drop the executor and bring up another on the same address: the client reconnects.
	waitFor(t, ctx, "the executor to connect", func() bool { return executorConnected(h) })
	stopExec()
	waitFor(t, ctx, "the executor to be seen disconnected", func() bool { return !executorConnected(h) })
	stopExec = exectest.Serve(t, addr, execToken)
	defer stopExec()
	waitFor(t, ctx, "the executor to reconnect", func() bool {
		for _, e := range h.Status().Executors {
			if e.ID == "exec-1" && e.Connected && e.Reconnects == 1 {
				return true
			}
		}
		return false
	})

	// Scrape through the HTTP handler, as Prometheus does, and parse the text format.
	srv := httptest.NewServer(h.Metrics().Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, body)
	}
	value := func(family string, labels map[string]string) float64 {
		t.Helper()
		f := fams[family]
		if f == nil {
			t.Errorf("no series %s in the scrape", family)
			return -1
		}
	next:
		for _, m := range f.Metric {
			for k, v := range labels {
				if !hasLabel(m, k, v) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Errorf("series %s%v not in the scrape", family, labels)
		return -1
	}
	for outcome, want := range map[string]float64{"ok": 2, "denied": 1, "tool_error": 1, "failed": 2} {
		if got := value("warden_tool_calls_total", map[string]string{"server": "docs", "outcome": outcome}); got != want {
			t.Errorf("warden_tool_calls_total{server=docs,outcome=%s} = %v, want %v", outcome, got, want)
		}
	}
	if got := value("warden_tool_calls_total", map[string]string{"server": "(unlisted)", "outcome": "failed"}); got != 1 {
		t.Errorf("warden_tool_calls_total{server=(unlisted),outcome=failed} = %v, want 1", got)
	}
	if strings.Contains(string(body), "made-up-server") {
		t.Error("a server name only a caller sent became a label")
	}
	if got := value("warden_decisions_total", map[string]string{"hook": "tool_call", "outcome": "deny"}); got < 1 {
		t.Errorf("tool_call deny decisions = %v, want ≥ 1", got)
	}
	if got := value("warden_decisions_total", map[string]string{"hook": "servers", "outcome": "disable"}); got < 1 {
		t.Errorf("servers disable decisions = %v, want ≥ 1", got)
	}
	if got := value("warden_decisions_total", map[string]string{"hook": "servers", "outcome": "expose"}); got < 1 {
		t.Errorf("servers expose decisions = %v, want ≥ 1", got)
	}
	// Every servers decision and every call that reached tool_call ran the guard once: its
	// histograms count them.
	if got := value("warden_policy_latency_seconds", map[string]string{"plugin": "guard", "hook": "tool_call"}); got != 4 {
		t.Errorf("guard tool_call latency samples = %v, want 4 (echo, echo, add, set_tools; the rest never reach policy)", got)
	}
	if got := value("warden_policy_latency_seconds", map[string]string{"plugin": "guard", "hook": "servers"}); got < 1 {
		t.Errorf("guard servers latency samples = %v, want ≥ 1", got)
	}
	if got := value("warden_upstream_restarts_total", map[string]string{"server": "docs"}); got < 1 {
		t.Errorf("warden_upstream_restarts_total{server=docs} = %v, want ≥ 1", got)
	}
	if got := value("warden_executor_reconnects_total", map[string]string{"environment": "exec-1"}); got != 1 {
		t.Errorf("warden_executor_reconnects_total{environment=exec-1} = %v, want 1", got)
	}
	if got := value("warden_open_sessions", nil); got != 1 {
		t.Errorf("warden_open_sessions = %v, want 1 (docs; disabled_by_guard never connects)", got)
	}
	if got := value("warden_threads", nil); got != 1 {
		t.Errorf("warden_threads = %v, want 1", got)
	}
	if strings.Contains(string(body), execToken) {
		t.Error("the scrape holds the executor's token")
	}

	// The status's latency summary agrees with the histogram.
	for _, p := range h.Status().Policies {
		if p.ID != "guard" {
			continue
		}
		for _, l := range p.Latency {
			if l.Hook == "tool_call" && (l.Calls != 4 || l.P50 <= 0 || l.P99 < l.P50) {
				t.Errorf("guard tool_call latency summary = %+v, want 4 calls, 0 < p50 ≤ p99", l)
			}
		}
	}
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

func executorConnected(h *host.Host) bool {
	for _, e := range h.Status().Executors {
		if e.ID == "exec-1" {
			return e.Connected
		}
	}
	return false
}

func sessionPID(t *testing.T, h *host.Host, server string) int {
	t.Helper()
	for _, s := range h.Status().Sessions {
		if s.Server == server && s.PID > 0 {
			return s.PID
		}
	}
	t.Fatalf("no session of %s with a process: %+v", server, h.Status().Sessions)
	return 0
}

// waitFor polls cond until it holds, failing the test at ctx's deadline.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func writeFile(t *testing.T, path, content string) { testmain.WriteFile(t, path, content) }
