package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/leaktest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/thread"
)

// execToken is the bearer token of the test executors' listeners (the host reads it from
// EXEC_TOKEN, environments.toml's token_env).
const execToken = "executor-listener-token-0123456789"

// executorProc is a running `warden executor --listen ws://127.0.0.1:0`.
type executorProc struct {
	URL    string
	Stderr *leaktest.Buffer
	cmd    *exec.Cmd
	exited chan struct{}
}

// startExecutor starts a real executor whose home holds configTOML, with env (NAME=value)
// added to its environment, and returns it once it printed its URL.
func startExecutor(t testing.TB, configTOML string, env []string, flags ...string) *executorProc {
	t.Helper()
	return startExecutorAt(t, "ws://127.0.0.1:0", configTOML, env, flags...)
}

// startExecutorAt is startExecutor listening on addr.
func startExecutorAt(t testing.TB, addr, configTOML string, env []string, flags ...string) *executorProc {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(configTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	// Debug for tests (shown when they fail), warn for benchmarks (logLevel).
	args := append([]string{"--log-level", strings.ToLower(logLevel(t).String()), "executor", "--listen", addr, "--token-env", "EXEC_TOKEN"}, flags...)
	cmd := exec.Command(wardenBin(t), args...)
	cmd.Env = append(append(os.Environ(), "WARDEN_HOME="+home, "EXEC_TOKEN="+execToken), env...)
	p := &executorProc{Stderr: &leaktest.Buffer{}, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = p.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("executor stderr:\n%s", p.Stderr.String())
		}
	})
	select {
	case line, ok := <-first:
		if !ok || !strings.HasPrefix(line, "ws://") {
			t.Fatalf("warden executor printed %q, not its URL:\n%s", line, p.Stderr.String())
		}
		p.URL = line
	case <-time.After(30 * time.Second):
		t.Fatalf("warden executor printed no URL:\n%s", p.Stderr.String())
	}
	return p
}

func (p *executorProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// executorHost starts an in-process host over a home with these files (config.toml,
// environments.toml, requirements.toml, …), logging to the returned buffer.
func executorHost(t *testing.T, files map[string]string) (*host.Host, *leaktest.Buffer, string) {
	t.Helper()
	home := t.TempDir()
	files["config.toml"] += "\n[decision_log]\npath = \"decisions.jsonl\"\n"
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logs := &leaktest.Buffer{}
	h, err := host.New(testCtx(t), host.Options{
		Home:           home,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Debug, Output: logs}),
		PolicyCacheDir: testbuild.WazeroCache(t),
	})
	if err != nil {
		t.Fatalf("host.New: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host.Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return h, logs, home
}

// statusUntil polls a thread's status until cond holds (the executor connects in the
// background; its servers join the thread's plan when it does). The bound is a failure
// bound, not a measurement.
func statusUntil(t testing.TB, th *thread.Thread, what string, cond func(map[string]thread.ServerStatus) bool) map[string]thread.ServerStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := th.Status(testCtx(t), "", false)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		m := map[string]thread.ServerStatus{}
		for _, s := range st {
			m[s.Name] = s
		}
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; status %+v", what, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func toolText(t *testing.T, th *thread.Thread, server, tool string, args string) string {
	t.Helper()
	res, err := th.CallTool(testCtx(t), server, tool, json.RawMessage(args), "test")
	if err != nil {
		t.Fatalf("%s/%s: %v", server, tool, err)
	}
	if res.IsError {
		t.Fatalf("%s/%s: tool error %s", server, tool, textOf(res))
	}
	return textOf(res)
}

func statusJSON(t *testing.T, st map[string]thread.ServerStatus) string {
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// S1: executor-config servers. node_repl's token exists only in the executor's
// environment (the host holds a canary under the same name); requirements allow node_repl
// only. A tool call on node_repl succeeds with the executor's token; the status lists
// node_repl (no plugin) and policy_unlisted (no tools, blocked by requirements), and not
// the executor's stdio server.
func TestS1ExecutorConfigServers(t *testing.T) {
	c := leaktest.NewCanaries(t, "NODE_TOKEN_HOST", "NODE_TOKEN_EXEC")
	srv := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: c.Value("NODE_TOKEN_EXEC"), Identity: "node-repl"})
	unlisted := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{Identity: "unlisted"})
	ex := startExecutor(t, fmt.Sprintf(`
[mcp_servers.node_repl]
url = %q
bearer_token_env_var = "NODE_TOKEN"
required = true

[mcp_servers.ignored_stdio]
command = %q

[mcp_servers.policy_unlisted]
url = %q
`, srv.URL(), exampleBin, unlisted.URL()), []string{"NODE_TOKEN=" + c.Value("NODE_TOKEN_EXEC")})
	p := leaktest.NewProxy(t, ex.URL, leaktest.ProxyOptions{})

	t.Setenv("NODE_TOKEN", c.Value("NODE_TOKEN_HOST"))
	t.Setenv("EXEC_TOKEN", execToken)
	h, logs, home := executorHost(t, map[string]string{
		"config.toml":       "",
		"environments.toml": fmt.Sprintf("default = \"exec-1\"\ninclude_local = false\n\n[[environments]]\nid = \"exec-1\"\nurl = %q\ntoken_env = \"EXEC_TOKEN\"\n", p.URL()),
		"requirements.toml": fmt.Sprintf("[mcp_servers.node_repl.identity]\nurl = %q\n", srv.URL()),
	})
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	st := statusUntil(t, th, "node_repl ready", func(m map[string]thread.ServerStatus) bool {
		return m["node_repl"].Status == thread.StateReady
	})
	if got := toolText(t, th, "node_repl", "whoami", `{}`); got != "node-repl" {
		t.Errorf("node_repl/whoami = %q", got)
	}
	if s := st["node_repl"]; s.PluginID != "" {
		t.Errorf("node_repl plugin = %q, want none", s.PluginID)
	}
	if s, ok := st["policy_unlisted"]; !ok || s.Status != thread.StateDisabled || len(s.Tools) != 0 || !strings.Contains(s.ToolsError, "blocked by requirements") {
		t.Errorf("policy_unlisted = %+v, want listed with no tools, blocked by requirements", s)
	}
	if _, ok := st["ignored_stdio"]; ok {
		t.Errorf("the executor's stdio server is offered to the thread")
	}
	if got := srv.Authorizations(); !slices.Contains(got, "Bearer "+c.Value("NODE_TOKEN_EXEC")) {
		t.Errorf("node_repl never saw the executor's token (authorizations: %d)", len(got))
	}
	leaktest.AssertNoCanary(t, c.Only("NODE_TOKEN_HOST"), leaktest.RequestsSource(srv), leaktest.RequestsSource(unlisted))
	leaktest.AssertNoCanary(t, c,
		leaktest.FramesSource(p),
		leaktest.BufferSource("host log", logs),
		leaktest.FileSource("decision log", filepath.Join(home, "decisions.jsonl")),
		leaktest.TextSource("status", statusJSON(t, st)),
	)
	leaktest.AssertNoCanary(t, c.Only("NODE_TOKEN_HOST"), leaktest.BufferSource("executor log", ex.Stderr))
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// writePlugin writes a capability root (plugin.json and .mcp.json) into a new directory.
func writePlugin(t *testing.T, manifest, mcpJSON string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".codex-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".codex-plugin/plugin.json": manifest, ".mcp.json": mcpJSON} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func environmentsTOML(url string) string {
	return fmt.Sprintf("default = \"exec-1\"\ninclude_local = false\n\n[[environments]]\nid = \"exec-1\"\nurl = %q\ntoken_env = \"EXEC_TOKEN\"\n", url)
}

// S2: a legacy executor (no httpHeaderEnvVars; the proxy strips it and every valueEnvVar).
// A host-config server routed to the executor with a host token works (the operator
// routed it); the executor's literal-header server works; a plugin located in the executor
// with a literal header works; the plugin's env-bearer server is listed without tools and
// the Codex error text, and the host's value of its variable is never sent; the executor's
// unreachable required env-bearer server neither blocks the thread nor appears.
func TestS2LegacyExecutor(t *testing.T) {
	c := leaktest.NewCanaries(t, "PLUGIN_TOKEN_HOST", "PLUGIN_TOKEN_EXEC", "ROUTED_HOST")
	hostOnly := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: "host-only-token", Identity: "host-only"})
	// host_remote's token is a host value the operator routed to the executor: it must
	// cross, and the harness must see it cross.
	routed := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: c.Value("ROUTED_HOST"), Identity: "host-routed"})
	public := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: "plugin-public-token", Identity: "plugin-public"})
	ex := startExecutor(t, fmt.Sprintf(`
[mcp_servers.node_repl]
url = "http://127.0.0.1:9/mcp"
bearer_token_env_var = "NODE_REPL_AUTH_TOKEN"
required = true
startup_timeout_sec = 1

[mcp_servers.executor_public]
url = %q
http_headers = { Authorization = "Bearer host-only-token" }
required = true
`, hostOnly.URL()), []string{"PLUGIN_TOKEN=" + c.Value("PLUGIN_TOKEN_EXEC"), "NODE_REPL_AUTH_TOKEN=x"})
	p := leaktest.NewProxy(t, ex.URL, leaktest.ProxyOptions{
		ToUpstream:   leaktest.StripHeaderEnvVars,
		ToDownstream: leaktest.Downgrade,
	})
	plugin := writePlugin(t, `{"name":"legacy-plugin","version":"1"}`, fmt.Sprintf(`{"mcpServers":{
		"plugin_public": {"url": %q, "http_headers": {"Authorization": "Bearer plugin-public-token"}},
		"plugin_sensitive": {"url": %q, "environment_id": "local", "bearer_token_env_var": "PLUGIN_TOKEN"}}}`, public.URL(), public.URL()))

	t.Setenv("PLUGIN_TOKEN", c.Value("PLUGIN_TOKEN_HOST"))
	t.Setenv("HOST_MCP_TEST_TOKEN", c.Value("ROUTED_HOST"))
	t.Setenv("EXEC_TOKEN", execToken)
	h, logs, home := executorHost(t, map[string]string{
		"config.toml": fmt.Sprintf("[mcp_servers.host_remote]\nurl = %q\nenvironment_id = \"exec-1\"\nbearer_token_env_var = \"HOST_MCP_TEST_TOKEN\"\nrequired = true\n",
			routed.URL()),
		"environments.toml": environmentsTOML(p.URL()),
	})
	// The plugin's root is read through the executor, so the thread starts once it is up.
	if err := p.Wait(testCtx(t), func() bool { return p.Initializes() > 0 }); err != nil {
		t.Fatal(err)
	}
	var th *thread.Thread
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		th, err = h.Threads().Start(testCtx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{
			ID: "legacy-plugin@1", Location: thread.Location{Type: thread.LocationEnvironment, EnvironmentID: "exec-1", Path: plugin}}}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread/start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := statusUntil(t, th, "host_remote, executor_public and plugin_public ready", func(m map[string]thread.ServerStatus) bool {
		return m["host_remote"].Status == thread.StateReady && m["executor_public"].Status == thread.StateReady && m["plugin_public"].Status == thread.StateReady
	})
	if _, ok := st["node_repl"]; ok {
		t.Errorf("node_repl (needs executor-side resolution the legacy executor lacks) is listed: %+v", st["node_repl"])
	}
	if s := st["plugin_public"]; s.PluginID != "legacy-plugin@1" {
		t.Errorf("plugin_public plugin = %q", s.PluginID)
	}
	s := st["plugin_sensitive"]
	if s.PluginID != "legacy-plugin@1" || len(s.Tools) != 0 || !strings.Contains(s.ToolsError, "requires executor-side environment credential resolution") {
		t.Errorf("plugin_sensitive = %+v, want listed, no tools, the Codex error text", s)
	}
	for server, want := range map[string]string{"host_remote": "host-routed", "executor_public": "host-only", "plugin_public": "plugin-public"} {
		if got := toolText(t, th, server, "whoami", `{}`); got != want {
			t.Errorf("%s/whoami = %q, want %q", server, got, want)
		}
	}
	// Both literal tokens crossed (host_remote's because the operator routed it there).
	var requests []string
	for _, f := range p.Frames() {
		if strings.Contains(f.Text, `"http/request"`) {
			requests = append(requests, f.Text)
		}
	}
	for _, tok := range []string{"plugin-public-token"} {
		if !slices.ContainsFunc(requests, func(r string) bool { return strings.Contains(r, tok) }) {
			t.Errorf("no http/request through the executor carried %s", tok)
		}
	}
	// The harness catches a host value crossing to the executor: here the one the
	// operator asked for.
	if n := leaktest.Count(c.Only("ROUTED_HOST"), leaktest.FramesSource(p)); n <= 0 {
		t.Errorf("the routed host token was not seen in the frames (count %d): the harness would miss a leak", n)
	}
	leaktest.AssertNoCanary(t, c.Only("PLUGIN_TOKEN_HOST", "PLUGIN_TOKEN_EXEC"), leaktest.FramesSource(p), leaktest.RequestsSource(hostOnly), leaktest.RequestsSource(public), leaktest.RequestsSource(routed))
	leaktest.AssertNoCanary(t, c, leaktest.BufferSource("host log", logs), leaktest.FileSource("decision log", filepath.Join(home, "decisions.jsonl")),
		leaktest.TextSource("status", statusJSON(t, st)), leaktest.BufferSource("executor log", ex.Stderr))
}

// S3 and the drop/restart behaviour: a running thread uses the executor's node_repl with
// the executor's token. Killing the executor turns node_repl failed with a clear error;
// an executor restarted on the same address brings it back without restarting the thread;
// restarted *downgraded* (no httpHeaderEnvVars) node_repl is no longer available — a call
// fails with Codex's text — and the host's value of its variable is never sent.
func TestS3ExecutorDropRestartDowngrade(t *testing.T) {
	c := leaktest.NewCanaries(t, "NODE_TOKEN_HOST", "NODE_TOKEN_EXEC")
	srv := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: c.Value("NODE_TOKEN_EXEC"), Identity: "node-repl"})
	cfg := fmt.Sprintf("[mcp_servers.node_repl]\nurl = %q\nbearer_token_env_var = \"NODE_TOKEN\"\n", srv.URL())
	execEnv := []string{"NODE_TOKEN=" + c.Value("NODE_TOKEN_EXEC")}
	ex := startExecutor(t, cfg, execEnv)

	t.Setenv("NODE_TOKEN", c.Value("NODE_TOKEN_HOST"))
	t.Setenv("EXEC_TOKEN", execToken)
	h, logs, _ := executorHost(t, map[string]string{"config.toml": "", "environments.toml": environmentsTOML(ex.URL)})
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	statusUntil(t, th, "node_repl ready", func(m map[string]thread.ServerStatus) bool { return m["node_repl"].Status == thread.StateReady })
	if got := toolText(t, th, "node_repl", "whoami", `{}`); got != "node-repl" {
		t.Fatalf("node_repl/whoami = %q", got)
	}

	ex.kill()
	st := statusUntil(t, th, "node_repl failed", func(m map[string]thread.ServerStatus) bool { return m["node_repl"].Status == thread.StateFailed })
	if e := st["node_repl"].ToolsError; !strings.Contains(e, "exec-1") || !strings.Contains(e, "not connected") {
		t.Errorf("node_repl toolsError = %q, want it to name the executor and say it is not connected", e)
	}

	addr := strings.TrimSuffix(ex.URL, "/")
	ex = startExecutorAt(t, addr, cfg, execEnv)
	statusUntil(t, th, "node_repl ready again", func(m map[string]thread.ServerStatus) bool { return m["node_repl"].Status == thread.StateReady })
	if got := toolText(t, th, "node_repl", "whoami", `{}`); got != "node-repl" {
		t.Fatalf("node_repl/whoami after the restart = %q", got)
	}

	ex.kill()
	statusUntil(t, th, "node_repl failed", func(m map[string]thread.ServerStatus) bool { return m["node_repl"].Status == thread.StateFailed })
	startExecutorAt(t, addr, cfg, execEnv, "--no-http-header-env-vars")
	st = statusUntil(t, th, "node_repl gone after the downgrade", func(m map[string]thread.ServerStatus) bool { _, ok := m["node_repl"]; return !ok })
	_, err = th.CallTool(testCtx(t), "node_repl", "whoami", json.RawMessage(`{}`), "test")
	if err == nil || !strings.Contains(err.Error(), "MCP tool `node_repl/whoami` is not available") {
		t.Errorf("node_repl/whoami after the downgrade: %v, want the not-available error", err)
	}
	leaktest.AssertNoCanary(t, c.Only("NODE_TOKEN_HOST"), leaktest.RequestsSource(srv))
	leaktest.AssertNoCanary(t, c, leaktest.BufferSource("host log", logs), leaktest.TextSource("status", statusJSON(t, st)))
}

// S4: a reviewer thread with a required, unreachable executor-config server starts and
// lists no executor server; an interactive thread lists it failed, alone.
func TestS4ReviewerWithUnreachableExecutorServer(t *testing.T) {
	ex := startExecutor(t, "[mcp_servers.unavailable_browser]\nurl = \"http://127.0.0.1:9/mcp\"\nrequired = true\nstartup_timeout_sec = 1\n", nil)
	t.Setenv("EXEC_TOKEN", execToken)
	h, _, _ := executorHost(t, map[string]string{
		"config.toml":       fmt.Sprintf("[mcp_servers.host_srv]\ncommand = %q\nenvironment_id = \"local\"\n", exampleBin),
		"environments.toml": fmt.Sprintf("[[environments]]\nid = \"exec-1\"\nurl = %q\ntoken_env = \"EXEC_TOKEN\"\n", ex.URL),
	})
	inter, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	st := statusUntil(t, inter, "unavailable_browser failed", func(m map[string]thread.ServerStatus) bool {
		return m["unavailable_browser"].Status == thread.StateFailed
	})
	if st["host_srv"].Status != thread.StateReady {
		t.Errorf("host_srv = %+v: an unreachable executor server must fail alone", st["host_srv"])
	}
	reviewer, err := h.Threads().Start(testCtx(t), thread.StartParams{Kind: thread.KindReviewer})
	if err != nil {
		t.Fatalf("reviewer thread/start: %v", err)
	}
	rs, err := reviewer.Status(testCtx(t), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Name != "host_srv" {
		t.Errorf("reviewer servers = %+v, want only host_srv", rs)
	}
}

// S5 without its OAuth parts, over an executor the host spawns (environments.toml
// `program =`, stdio): a plugin located in the executor, selected by one thread. Its stdio
// server runs in the executor and sees the executor's value of its env_vars; its HTTP
// server works with the executor's token; a disabled executor-config entry masks the
// plugin's same-name server; a reload adds a newly configured host server to the running
// thread; a second thread that did not select the plugin sees none of it.
func TestS5ExecutorLocatedPlugin(t *testing.T) {
	c := leaktest.NewCanaries(t, "SECRET_HOST", "SECRET_EXEC", "WEB_HOST", "WEB_EXEC")
	web := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: c.Value("WEB_EXEC"), Identity: "plugin-web"})
	// p_web's host exists only on the executor's network: its HTTP_PROXY (which the host
	// does not have) forwards it to the recording server.
	egress := newForwardProxy(t, web.BaseURL())
	plugin := writePlugin(t, `{"name":"executor-demo","version":"1"}`, fmt.Sprintf(`{"mcpServers":{
		"p_stdio": {"command": %q, "args": ["--name", "p-stdio", "--tools", "env"], "env_vars": ["PLUGIN_SECRET"]},
		"p_web": {"url": "http://plugin-web.invalid/mcp", "bearer_token_env_var": "WEB_TOKEN"},
		"masked": {"url": %q}}}`, exampleBin, web.URL()))

	execHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(execHome, "config.toml"), []byte("[mcp_servers.masked]\nurl = \"http://127.0.0.1:9/mcp\"\nenabled = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PLUGIN_SECRET", c.Value("SECRET_HOST"))
	t.Setenv("WEB_TOKEN", c.Value("WEB_HOST"))
	envTOML := fmt.Sprintf(`default = "local"

[[environments]]
id = "exec-2"
program = %q
args = ["--log-level", "debug", "executor", "--listen", "stdio"]
[environments.env]
WARDEN_HOME = %q
PLUGIN_SECRET = %q
WEB_TOKEN = %q
HTTP_PROXY = %q
`, wardenBin(t), execHome, c.Value("SECRET_EXEC"), c.Value("WEB_EXEC"), egress.URL)
	h, logs, home := executorHost(t, map[string]string{
		"config.toml":       fmt.Sprintf("[mcp_servers.host_srv]\ncommand = %q\n", exampleBin),
		"environments.toml": envTOML,
	})
	sel := []thread.SelectedRoot{{ID: "executor-demo@1", Location: thread.Location{Type: thread.LocationEnvironment, EnvironmentID: "exec-2", Path: plugin}}}
	th := startSelecting(t, h, sel)
	st := statusUntil(t, th, "the plugin's servers ready", func(m map[string]thread.ServerStatus) bool {
		return m["p_stdio"].Status == thread.StateReady && m["p_web"].Status == thread.StateReady
	})
	if got := toolText(t, th, "p_stdio", "env", `{"name":"PLUGIN_SECRET"}`); got != "PLUGIN_SECRET="+c.Value("SECRET_EXEC") {
		t.Errorf("p_stdio sees %s, want the executor's value", c.Redact(got))
	}
	if got := toolText(t, th, "p_web", "whoami", `{}`); got != "plugin-web" {
		t.Errorf("p_web/whoami = %q", got)
	}
	if hosts := egress.hosts(); !slices.Contains(hosts, "plugin-web.invalid") {
		t.Errorf("the executor's proxy saw hosts %q, want plugin-web.invalid: p_web was not reached from the executor's network", hosts)
	}
	if m := st["masked"]; m.PluginID != "" || m.Status != thread.StateDisabled {
		t.Errorf("masked = %+v, want the executor's disabled entry (no plugin), not the plugin's", m)
	}
	for _, name := range []string{"p_stdio", "p_web"} {
		if st[name].PluginID != "executor-demo@1" {
			t.Errorf("%s plugin = %q", name, st[name].PluginID)
		}
	}

	// A reload adds a host server to the running thread.
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[mcp_servers.host_srv]\ncommand = %q\n\n[mcp_servers.added]\ncommand = %q\n\n[decision_log]\npath = \"decisions.jsonl\"\n", exampleBin, exampleBin)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Threads().Reload(testCtx(t), true); err != nil {
		t.Fatal(err)
	}
	statusUntil(t, th, "added ready", func(m map[string]thread.ServerStatus) bool { return m["added"].Status == thread.StateReady })

	other, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	os2, err := other.Status(testCtx(t), "", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range os2 {
		if strings.HasPrefix(s.Name, "p_") || s.PluginID != "" {
			t.Errorf("a thread that did not select the plugin sees %s (%s)", s.Name, s.PluginID)
		}
	}
	leaktest.AssertNoCanary(t, c.Only("SECRET_HOST", "WEB_HOST"), leaktest.RequestsSource(web))
	leaktest.AssertNoCanary(t, c, leaktest.BufferSource("host log", logs),
		leaktest.FileSource("decision log", filepath.Join(home, "decisions.jsonl")),
		leaktest.TextSource("status", statusJSON(t, st)))
}

// startSelecting starts a thread selecting roots located in an executor, retrying while
// the executor (which the host dials in the background) has not connected yet.
func startSelecting(t *testing.T, h *host.Host, sel []thread.SelectedRoot) *thread.Thread {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		th, err := h.Threads().Start(testCtx(t), thread.StartParams{SelectedRoots: sel})
		if err == nil {
			return th
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread/start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forwardProxy is an HTTP forward proxy on loopback that sends every request, whatever its
// host, to one upstream, and records the hosts asked for.
type forwardProxy struct {
	URL string
	mu  sync.Mutex
	got []string
}

func newForwardProxy(t *testing.T, upstream string) *forwardProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	fp := &forwardProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // SSE streams flow event by event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp.mu.Lock()
		fp.got = append(fp.got, r.URL.Hostname())
		fp.mu.Unlock()
		r.Host = target.Host
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	fp.URL = srv.URL
	return fp
}

func (fp *forwardProxy) hosts() []string {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return slices.Compact(slices.Clone(fp.got))
}
