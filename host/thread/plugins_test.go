package thread_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/thread"
)

// S5, local parts: a plugin's servers exist only in the thread that selected it and report
// the id the client selected; a disabled host-config entry masks the plugin's same-name
// server (listed, no plugin id, disabled); a reload adds a newly configured host server to
// the running thread.
func TestS5PluginIsolationMaskingAndReload(t *testing.T) {
	f := newFixture(t, stdioServer("masked", nil, "enabled = false\n"), nil)
	// A manifest without a version, selected as "demo-plugin@1" (Codex's legacy-plugin@1 case).
	plugin(t, filepath.Join(f.plugins, "demo"), `{"name":"demo-plugin"}`, map[string]any{
		"demo_echo": stdioJSON(),
		"masked":    stdioJSON(),
	})
	// The fixture's snapshot was taken before the plugin existed: adopt it.
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}

	selected := f.start(thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "demo-plugin@1"}}})
	owners := map[string]string{}
	for _, s := range status(t, selected, "") {
		owners[s.Name] = s.PluginID
	}
	if diff := cmp.Diff(map[string]string{"demo_echo": "demo-plugin@1", "masked": ""}, owners); diff != "" {
		t.Errorf("selected thread's servers and plugin ids (-want +got):\n%s", diff)
	}
	st := byName(status(t, selected, ""))
	if m := st["masked"]; m.Status != thread.StateDisabled || m.ToolsError != decision.ReasonDisabledInConfig || len(m.Tools) != 0 {
		t.Errorf("masked = %+v, want the disabled host-config entry", m)
	}
	if got := call(t, selected, "demo_echo", "echo", `{"text":"hi"}`); got["text"] != "hi" {
		t.Errorf("demo_echo/echo = %v", got)
	}

	// Selecting by path works too, and reports the root's own id when no id is given.
	byPath := f.start(thread.StartParams{Cwd: f.plugins, SelectedRoots: []thread.SelectedRoot{{Location: thread.Location{Path: "demo"}}}})
	if st := status(t, byPath, "demo_echo"); len(st) != 1 || st[0].PluginID != "demo-plugin" {
		t.Errorf("selected by path: %+v", st)
	}

	// Isolation: a thread that did not select the plugin sees none of its servers.
	other := f.start(thread.StartParams{})
	if got := names(status(t, other, "")); !slices.Equal(got, []string{"masked"}) {
		t.Errorf("unselected thread's servers = %q, want only the host-config entry", got)
	}
	_, err := other.CallTool(ctx(t), "demo_echo", "echo", nil, "test")
	if err == nil || err.Error() != "MCP tool `demo_echo/echo` is not available" {
		t.Errorf("unselected plugin's tool: %v", err)
	}

	// Reload adds a newly configured host server to the running thread.
	f.writeConfig(stdioServer("masked", nil, "enabled = false\n") + stdioServer("refresh_probe", nil, ""))
	res, err := f.m.Reload(ctx(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refreshed) != 3 || len(res.Failed) != 0 {
		t.Errorf("Reload = %+v", res)
	}
	if !selected.RefreshPending() {
		t.Errorf("no refresh pending after reload")
	}
	if got := call(t, selected, "refresh_probe", "echo", `{"text":"refresh applied"}`); got["text"] != "refresh applied" {
		t.Errorf("refresh_probe/echo = %v", got)
	}
	owners = map[string]string{}
	for _, s := range status(t, selected, "") {
		owners[s.Name] = s.PluginID
	}
	if diff := cmp.Diff(map[string]string{"demo_echo": "demo-plugin@1", "masked": "", "refresh_probe": ""}, owners); diff != "" {
		t.Errorf("after reload (-want +got):\n%s", diff)
	}
}

// A plugin root whose policy cannot run (here: no policy runtime at all) fails closed: its
// servers are disabled with a reason naming the plugin; other servers are unaffected.
func TestPluginPolicyFailsClosedWithoutRuntime(t *testing.T) {
	f := newFixture(t, stdioServer("host_srv", nil, ""), nil)
	dir := filepath.Join(f.plugins, "guarded")
	plugin(t, dir, `{"name":"guarded","version":"2"}`, map[string]any{"guarded_srv": stdioJSON()})
	writeFile(t, filepath.Join(dir, "policy.wasm"), "\x00asm\x01\x00\x00\x00")
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	th := f.start(thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "guarded@2"}}})
	st := byName(status(t, th, ""))
	g := st["guarded_srv"]
	if g.Status != thread.StateDisabled || !strings.Contains(g.ToolsError, `policy plugin "guarded@2"`) {
		t.Errorf("guarded_srv = %+v, want disabled naming the plugin", g)
	}
	if st["host_srv"].Status != thread.StateReady {
		t.Errorf("host_srv = %+v", st["host_srv"])
	}
}

// S4, the part that does not need an executor: executor-config declarations, injected
// through the thread layer's executor seam (Options.Executors), are not discovered by a
// reviewer thread — even a required, unreachable one — and never block thread start.
func TestS4ReviewerSeesNoExecutorConfigServers(t *testing.T) {
	exec := thread.Environment{
		ID: "exec-1", Connected: true, HTTPHeaderEnvVars: true, Processes: true,
		Servers: []config.ServerDecl{
			{Name: "unavailable_browser", URL: "http://127.0.0.1:9/mcp", Enabled: true, Required: true, StartupTimeout: 1e9},
			{Name: "executor_stdio", Command: "executor-local-command", Enabled: true},
		},
	}
	f := newFixture(t, stdioServer("host_srv", nil, ""), nil, withExecutors(exec))

	reviewer := f.start(thread.StartParams{Kind: thread.KindReviewer})
	if got := names(status(t, reviewer, "")); !slices.Equal(got, []string{"host_srv"}) {
		t.Errorf("reviewer thread servers = %q, want no executor-config server", got)
	}

	// An interactive thread does see the executor's HTTP server (not its stdio one); the
	// required-but-unreachable executor-config server fails alone (here the Manager has no
	// way to reach exec-1 at all).
	inter := f.start(thread.StartParams{})
	st := byName(status(t, inter, ""))
	if _, ok := st["executor_stdio"]; ok {
		t.Errorf("executor-config stdio server offered to a thread")
	}
	b, ok := st["unavailable_browser"]
	if !ok || b.Status != thread.StateFailed || b.PluginID != "" {
		t.Errorf("unavailable_browser = %+v, want listed and failed", b)
	}
	if !strings.Contains(b.ToolsError, `"exec-1"`) {
		t.Errorf("unavailable_browser toolsError = %q", b.ToolsError)
	}
}
