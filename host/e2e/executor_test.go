package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/leaktest"
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
func startExecutor(t *testing.T, configTOML string, env []string, flags ...string) *executorProc {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(configTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--log-level", "debug", "executor", "--listen", "ws://127.0.0.1:0", "--token-env", "EXEC_TOKEN"}, flags...)
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
		PolicyCacheDir: "-",
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
func statusUntil(t *testing.T, th *thread.Thread, what string, cond func(map[string]thread.ServerStatus) bool) map[string]thread.ServerStatus {
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
