package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/thread"
)

var exampleBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// writeFile writes a test file, creating its directories.
var writeFile = testmain.WriteFile

func stdioServer(name, extra string) string {
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\n%s\n", name, strconv.Quote(exampleBin), extra)
}

// guardWasm is the test policy in testdata/policies/guard, built for wasip1.
func guardWasm(t *testing.T) []byte {
	t.Helper()
	return testbuild.GoGuest(t, "testdata/policies/guard")
}

// newHost starts a host over home, closing it at cleanup.
func newHost(t *testing.T, home string, o host.Options) (*host.Host, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.Home = home
	o.Logger = hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Trace, Output: logs})
	h, err := host.New(ctx(t), o)
	if err != nil {
		t.Fatalf("host.New: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return h, logs
}

func start(t *testing.T, h *host.Host, p thread.StartParams) *thread.Thread {
	t.Helper()
	th, err := h.Threads().Start(ctx(t), p)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return th
}

func status(t *testing.T, th *thread.Thread) map[string]thread.ServerStatus {
	t.Helper()
	st, err := th.Status(ctx(t), "", false)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	out := map[string]thread.ServerStatus{}
	for _, s := range st {
		out[s.Name] = s
	}
	return out
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
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

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An operator policy runs every hook over every thread: servers (hide, disable, tool deny
// list), credentials (a deny disables the server before it connects) and tool_call (deny
// with the policy's reason; rewrite). Every decision is logged.
func TestOperatorPolicyHooks(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "policies", "guard.wasm"), string(guardWasm(t)))
	writeFile(t, filepath.Join(home, "config.toml"), "[[policies]]\npath = \"policies/guard.wasm\"\n\n"+
		stdioServer("plain", "")+
		stdioServer("hidden_by_guard", "")+
		stdioServer("disabled_by_guard", "")+
		stdioServer("cred_denied", "env_vars = [\"GUARD_TEST_TOKEN\"]"))
	decisions := &syncBuffer{}
	h, _ := newHost(t, home, host.Options{
		DecisionLog: decisions,
		LookupEnv: func(name string) (string, bool) {
			if name == "GUARD_TEST_TOKEN" {
				return "t0ken", true
			}
			return os.LookupEnv(name)
		},
	})
	if err := h.ConfigErrors(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(home, "cache", "wazero")); err != nil || !fi.IsDir() {
		t.Errorf("default policy cache dir not created: %v", err)
	}
	th := start(t, h, thread.StartParams{})
	st := status(t, th)
	if _, ok := st["hidden_by_guard"]; ok {
		t.Errorf("a hidden server is listed")
	}
	if s := st["disabled_by_guard"]; s.Status != thread.StateDisabled || s.ToolsError != "disabled by guard" {
		t.Errorf("disabled_by_guard = %+v", s)
	}
	if s := st["cred_denied"]; s.Status != thread.StateDisabled || s.ToolsError != "guard denies the credentials of cred_denied" {
		t.Errorf("cred_denied = %+v", s)
	}
	plain := st["plain"]
	if plain.Status != thread.StateReady || slices.Contains(toolNames(plain.Tools), "fail") || !slices.Contains(toolNames(plain.Tools), "echo") {
		t.Errorf("plain = %+v (tools %q), want ready without fail", plain, toolNames(plain.Tools))
	}

	_, err := th.CallTool(ctx(t), "plain", "add", json.RawMessage(`{"a":1,"b":2}`), "test")
	var denied *thread.DeniedError
	if !errors.As(err, &denied) || denied.Reason != "guard blocks add" || denied.DecidedBy != "operator:guard" {
		t.Errorf("add: %v (%+v), want denied by operator:guard", err, denied)
	}
	res, err := th.CallTool(ctx(t), "plain", "echo", json.RawMessage(`{"text":"original"}`), "test")
	if err != nil || textOf(res) != "rewritten by guard" {
		t.Errorf("echo: %v, %v; want the rewritten arguments", res, err)
	}
	_, err = th.CallTool(ctx(t), "plain", "fail", nil, "test")
	if !errors.Is(err, thread.ErrToolNotAvailable) {
		t.Errorf("fail: %v, want not available", err)
	}
	log := decisions.String()
	for _, want := range []string{`"plugin":"guard"`, `"hook":"servers"`, `"hook":"credentials"`, `"hook":"tool_call"`} {
		if !strings.Contains(log, want) {
			t.Errorf("decision log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "t0ken") {
		t.Errorf("the decision log contains a credential value")
	}
}

// A policy module that fails to load fails closed for what it governs, with a reason naming
// the plugin and the load error: a plugin's policy governs its own servers only, an operator
// policy (here: a sha256 pin that does not match) every server.
func TestPolicyLoadFailureFailsClosed(t *testing.T) {
	home := t.TempDir()
	plugins := filepath.Join(home, "plugins")
	root := filepath.Join(plugins, "shaky")
	writeFile(t, filepath.Join(root, ".codex-plugin", "plugin.json"), `{"name":"shaky","version":"1"}`)
	writeFile(t, filepath.Join(root, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{"shaky_srv":{"command":%q}}}`, exampleBin))
	writeFile(t, filepath.Join(root, "policy.wasm"), "this is not wasm")
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", plugins)+stdioServer("host_srv", ""))
	h, _ := newHost(t, home, host.Options{PolicyCacheDir: "-"})
	th := start(t, h, thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "shaky@1"}}})
	st := status(t, th)
	if s := st["shaky_srv"]; s.Status != thread.StateDisabled || !strings.Contains(s.ToolsError, `policy plugin "shaky@1"`) || s.PluginID != "shaky@1" {
		t.Errorf("shaky_srv = %+v, want disabled naming the plugin", s)
	}
	if s := st["host_srv"]; s.Status != thread.StateReady {
		t.Errorf("host_srv = %+v: a plugin's broken policy must govern only its own servers", s)
	}

	// An operator policy whose pin does not match: every server fails closed.
	writeFile(t, filepath.Join(home, "policies", "guard.wasm"), string(guardWasm(t)))
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[plugins]\ndirs = [%q]\n\n[[policies]]\npath = \"policies/guard.wasm\"\nsha256 = %q\n\n",
		plugins, strings.Repeat("ab", 32))+stdioServer("host_srv", ""))
	if _, err := h.Threads().Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	st = status(t, th)
	if s := st["host_srv"]; s.Status != thread.StateDisabled || !strings.Contains(s.ToolsError, `"guard"`) || !strings.Contains(s.ToolsError, "sha256") {
		t.Errorf("host_srv = %+v, want disabled by the unloadable operator policy", s)
	}
}

// The roots watcher feeds the threads: a changed root queues a refresh of the threads that
// selected it — a new server appears, and a new policy module (a changed digest) is loaded
// and applied to the plugin's own servers.
func TestWatcherRefreshesThreads(t *testing.T) {
	home := t.TempDir()
	plugins := filepath.Join(home, "plugins")
	root := filepath.Join(plugins, "live")
	writeFile(t, filepath.Join(root, ".codex-plugin", "plugin.json"), `{"name":"live","version":"3"}`)
	mcpJSON := func(names ...string) string {
		m := map[string]any{}
		for _, n := range names {
			m[n] = map[string]any{"command": exampleBin}
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": m})
		return string(b)
	}
	writeFile(t, filepath.Join(root, ".mcp.json"), mcpJSON("live_a"))
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[plugins]\ndirs = [%q]\n", plugins)+stdioServer("host_srv", ""))
	guard := guardWasm(t)
	h, _ := newHost(t, home, host.Options{})
	th := start(t, h, thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "live@3"}}})
	other := start(t, h, thread.StartParams{})
	if s := status(t, th)["live_a"]; !slices.Contains(toolNames(s.Tools), "fail") {
		t.Fatalf("live_a = %+v", s)
	}

	writeFile(t, filepath.Join(root, ".mcp.json"), mcpJSON("live_a", "live_b"))
	eventually(t, 20*time.Second, "the new plugin server in the selecting thread", func() bool {
		return status(t, th)["live_b"].Status == thread.StateReady
	})
	if _, ok := status(t, other)["live_b"]; ok {
		t.Errorf("a thread that did not select the plugin got its new server")
	}

	writeFile(t, filepath.Join(root, "policy.wasm"), string(guard))
	eventually(t, 20*time.Second, "the plugin's new policy to apply", func() bool {
		s := status(t, th)["live_a"]
		return s.Status == thread.StateReady && !slices.Contains(toolNames(s.Tools), "fail")
	})
	// The plugin's policy governs only its own servers.
	if s := status(t, th)["host_srv"]; !slices.Contains(toolNames(s.Tools), "fail") {
		t.Errorf("the plugin's policy reached a host-config server: %q", toolNames(s.Tools))
	}
	_, err := th.CallTool(ctx(t), "live_a", "add", json.RawMessage(`{"a":1,"b":2}`), "test")
	var denied *thread.DeniedError
	if !errors.As(err, &denied) || denied.DecidedBy != "plugin:live@3" {
		t.Errorf("live_a/add: %v, want denied by plugin:live@3", err)
	}
	res, err := th.CallTool(ctx(t), "host_srv", "add", json.RawMessage(`{"a":1,"b":2}`), "test")
	if err != nil || res.IsError {
		t.Errorf("host_srv/add: %v %v", res, err)
	}

	// The root disappears: the thread keeps its servers (a reload reports it) — and they keep
	// their plugin's policy: a server never outlives it.
	if err := os.Rename(root, filepath.Join(t.TempDir(), "gone")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the watcher to drop the root", func() bool { return h.Roots().Get("live@3") == nil })
	_, err = th.CallTool(ctx(t), "live_a", "add", json.RawMessage(`{"a":1,"b":2}`), "test")
	if !errors.As(err, &denied) || denied.DecidedBy != "plugin:live@3" {
		t.Errorf("live_a/add after the root vanished: %v, want still denied by plugin:live@3", err)
	}
	if _, err := h.Threads().Reload(ctx(t), true); err == nil || !strings.Contains(err.Error(), th.ID()) {
		t.Errorf("strict reload with the selected root gone: %v", err)
	}
}

// A config with errors still loads its valid part; strict reload refuses a broken config,
// best-effort uses its valid part. A reload that changes the plugins dirs re-points the
// watcher.
func TestConfigErrorsAndPluginDirsChange(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), stdioServer("good", "")+
		"[mcp_servers.bad]\ncommand = \"x\"\nurl = \"http://127.0.0.1:9/mcp\"\n")
	h, _ := newHost(t, home, host.Options{})
	if err := h.ConfigErrors(); err == nil || !strings.Contains(err.Error(), "mcp_servers.bad") {
		t.Errorf("ConfigErrors = %v", err)
	}
	th := start(t, h, thread.StartParams{})
	st := status(t, th)
	if _, ok := st["bad"]; ok || st["good"].Status != thread.StateReady {
		t.Errorf("servers = %+v", st)
	}
	if _, err := h.Threads().Reload(ctx(t), true); err == nil || !strings.Contains(err.Error(), "mcp_servers.bad") {
		t.Errorf("strict reload of a broken config: %v", err)
	}

	newDir := filepath.Join(t.TempDir(), "more-plugins")
	root := filepath.Join(newDir, "late")
	writeFile(t, filepath.Join(root, ".mcp.json"), fmt.Sprintf(`{"late_srv":{"command":%q}}`, exampleBin))
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", newDir)+stdioServer("good", ""))
	res, err := h.Threads().Reload(ctx(t), false)
	if err != nil || res.ConfigErr != nil {
		t.Fatalf("Reload = %+v, %v", res, err)
	}
	if h.ConfigErrors() != nil || h.Roots().Get("late") == nil {
		t.Fatalf("after reload: config errors %v, roots %v", h.ConfigErrors(), h.Roots().Roots())
	}
	th2 := start(t, h, thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "late"}}})
	if s := status(t, th2)["late_srv"]; s.Status != thread.StateReady || s.PluginID != "late" {
		t.Errorf("late_srv = %+v", s)
	}
	// The new dir is watched: a change there reaches the selecting thread.
	writeFile(t, filepath.Join(root, ".mcp.json"), fmt.Sprintf(`{"late_srv":{"command":%q},"later_srv":{"command":%q}}`, exampleBin, exampleBin))
	eventually(t, 20*time.Second, "the watcher of the new plugins dir", func() bool {
		return status(t, th2)["later_srv"].Status == thread.StateReady
	})
}

// New releases what it provisioned when it fails half-way (goleak in TestMain checks the
// goroutines), and returns no host.
func TestNewFailureCleansUp(t *testing.T) {
	home := t.TempDir()
	blocker := filepath.Join(home, "not-a-dir")
	writeFile(t, blocker, "")
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[decision_log]\npath = %q\n", filepath.Join(blocker, "decisions.jsonl")))
	h, err := host.New(ctx(t), host.Options{Home: home})
	if err == nil || h != nil || !strings.Contains(err.Error(), "decision log") {
		t.Fatalf("New = %v, %v; want a decision log error", h, err)
	}

	// The decision log from the config is opened, appended to and closed by Close.
	path := filepath.Join(home, "logs", "decisions.jsonl")
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[decision_log]\npath = %q\n\n", path)+stdioServer("one", ""))
	h2, _ := newHost(t, home, host.Options{})
	_ = status(t, start(t, h2, thread.StartParams{}))
	if err := h2.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"hook":"servers"`) {
		t.Errorf("decision log: %v\n%s", err, data)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("decision log mode %v, want 0600", fi.Mode().Perm())
	}
}
