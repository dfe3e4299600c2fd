package thread_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/thread"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func findTool(tools []*mcp.Tool, name string) *mcp.Tool {
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	return nil
}

// Two threads with the same server share one MCP session; tools/list_changed refreshes both
// threads' catalogs and notifies both.
func TestSessionsShared(t *testing.T) {
	count := filepath.Join(t.TempDir(), "shared.count")
	f := newFixture(t, stdioServer("shared", []string{"--count-file", count}, ""), nil)
	a := f.start(thread.StartParams{})
	b := f.start(thread.StartParams{Kind: thread.KindSubagent})
	if a.ID() == b.ID() || !strings.HasPrefix(a.ID(), "thr_") || len(a.ID()) != 36 {
		t.Fatalf("thread ids %q, %q", a.ID(), b.ID())
	}
	for _, th := range []*thread.Thread{a, b} {
		if st := status(t, th, "shared"); len(st) != 1 || st[0].Status != thread.StateReady {
			t.Fatalf("thread %s: %+v", th.ID(), st)
		}
	}
	if n := handshakes(t, count); n != 1 {
		t.Errorf("two threads made %d sessions, want 1 shared", n)
	}
	if n := mcpservertest.Count(t, count, "tools/list"); n != 1 {
		t.Errorf("two threads made %d tools/list, want 1", n)
	}
	if got := f.m.List(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("List() = %v", got)
	}

	call(t, a, "shared", "set_tools", `{"tools":["echo","set_tools"]}`)
	for _, th := range []*thread.Thread{a, b} {
		eventually(t, 10*time.Second, "the new catalog in thread "+th.ID(), func() bool {
			st := status(t, th, "shared")
			return slices.Equal(toolNames(st[0].Tools), []string{"echo", "set_tools"})
		})
		eventually(t, 10*time.Second, "a ToolsChanged event for "+th.ID(), func() bool {
			return slices.ContainsFunc(f.events.snapshot(), func(ev thread.Event) bool {
				tc, ok := ev.(*thread.ToolsChanged)
				return ok && tc.ThreadID == th.ID() && tc.Server == "shared"
			})
		})
	}
	if n := handshakes(t, count); n != 1 {
		t.Errorf("after list_changed: %d sessions, want 1", n)
	}

	// Closing one thread keeps the shared session for the other.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	call(t, b, "shared", "echo", `{"text":"still here"}`)
	if _, err := a.Status(ctx(t), "", false); !errors.Is(err, thread.ErrClosed) {
		t.Errorf("Status on a closed thread: %v", err)
	}
	if _, ok := f.m.Thread(a.ID()); ok {
		t.Errorf("closed thread still listed")
	}
}

// A required server that fails makes Start fail with an error naming it (and the thread is
// not leaked); a non-required failing server is reported failed with toolsError.
func TestRequiredServerFailure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-server")
	f := newFixture(t,
		stdioServer("ok", nil, "")+
			"[mcp_servers.broken]\ncommand = \""+missing+"\"\nrequired = true\n\n"+
			"[mcp_servers.slow]\ncommand = \""+exampleBin+"\"\nargs = [\"--startup-delay\", \"30s\"]\nstartup_timeout_sec = 1\n", nil)
	_, err := f.m.Start(ctx(t), thread.StartParams{})
	var rs *thread.RequiredServerError
	if !errors.As(err, &rs) || rs.Server != "broken" || !strings.Contains(err.Error(), `required MCP server "broken" failed to start`) {
		t.Fatalf("Start error = %v, want a required-server failure naming broken", err)
	}
	if got := f.m.List(); len(got) != 0 {
		t.Errorf("a failed Start left threads behind: %v", got)
	}

	// Not required: the thread starts; the server is failed with a reason.
	f.writeConfig(stdioServer("ok", nil, "") +
		"[mcp_servers.broken]\ncommand = \"" + missing + "\"\n\n" +
		"[mcp_servers.slow]\ncommand = \"" + exampleBin + "\"\nargs = [\"--startup-delay\", \"30s\"]\nstartup_timeout_sec = 1\n")
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	th := f.start(thread.StartParams{})
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("Start waited %s for servers that are not required", d)
	}
	st := byName(status(t, th, ""))
	if st["ok"].Status != thread.StateReady {
		t.Errorf("ok = %+v", st["ok"])
	}
	for _, name := range []string{"broken", "slow"} {
		if s := st[name]; s.Status != thread.StateFailed || s.ToolsError == "" || len(s.Tools) != 0 {
			t.Errorf("%s = %+v, want failed with toolsError", name, s)
		}
	}
	if !strings.Contains(st["slow"].ToolsError, "did not start within 1s") {
		t.Errorf("slow toolsError = %q", st["slow"].ToolsError)
	}
	_, err = th.CallTool(ctx(t), "broken", "echo", nil, "test")
	unavailable(t, err, "MCP tool `broken/echo` is not available: ")
}

// A stdio server gets the minimal environment plus its env and env_vars: never the rest of
// the host's environment.
func TestStdioMinimalEnvironment(t *testing.T) {
	t.Setenv("WARDEN_THREAD_TEST_CANARY", "host-secret")
	f := newFixture(t, stdioServer("docs", nil, "env = { MODE = \"ro\" }\nenv_vars = [\"DOCS_TOKEN\"]\n"), nil,
		withEnv(map[string]string{"DOCS_TOKEN": "docs-token", "OTHER_TOKEN": "other"}))
	th := f.start(thread.StartParams{})
	check := func(name string, set bool, value string) {
		t.Helper()
		got := call(t, th, "docs", "env", `{"name":"`+name+`"}`)
		if got["set"] != set || (set && value != "" && got["value"] != value) {
			t.Errorf("env %s = %v, want set=%v value=%q", name, got, set, value)
		}
	}
	check("DOCS_TOKEN", true, "docs-token")
	check("MODE", true, "ro")
	check("PATH", true, "")
	check("WARDEN_THREAD_TEST_CANARY", false, "")
	check("OTHER_TOKEN", false, "")
}

// A missing credential fails the server (naming the variable, not leaking values) without
// failing the thread.
func TestMissingCredential(t *testing.T) {
	f := newFixture(t, "[mcp_servers.remote]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env_var = \"WARDEN_THREAD_TEST_UNSET\"\n", nil)
	th := f.start(thread.StartParams{})
	st := status(t, th, "remote")
	if len(st) != 1 || st[0].Status != thread.StateFailed || !strings.Contains(st[0].ToolsError, "WARDEN_THREAD_TEST_UNSET") ||
		st[0].AuthStatus != thread.AuthBearerToken {
		t.Fatalf("remote = %+v", st)
	}
}

// The effective tool filter applies to the catalog and to calls; unknown, hidden and
// disabled servers and unknown tools are "not available".
func TestToolAvailability(t *testing.T) {
	f := newFixture(t,
		stdioServer("tools", nil, "enabled_tools = [\"echo\", \"fail\", \"add\"]\ndisabled_tools = [\"fail\"]\n")+
			stdioServer("off", nil, "enabled = false\n"), nil)
	th := f.start(thread.StartParams{})
	st := byName(status(t, th, ""))
	if got := toolNames(st["tools"].Tools); !slices.Equal(got, []string{"add", "echo"}) {
		t.Errorf("filtered tools = %q, want [add echo]", got)
	}
	if off := st["off"]; off.Status != thread.StateDisabled || off.ToolsError != "disabled in config" {
		t.Errorf("off = %+v", off)
	}
	if got := call(t, th, "tools", "add", `{"a":1,"b":2}`); got["sum"] != 3.0 {
		t.Errorf("add = %v", got)
	}
	_, err := th.CallTool(ctx(t), "tools", "fail", nil, "test")
	unavailable(t, err, "MCP tool `tools/fail` is not available: the tool is disabled on this server")
	_, err = th.CallTool(ctx(t), "tools", "slow", nil, "test")
	unavailable(t, err, "is not in the server's allowed tools")
	_, err = th.CallTool(ctx(t), "nope", "echo", nil, "test")
	unavailable(t, err, "MCP tool `nope/echo` is not available")
	if err.Error() != "MCP tool `nope/echo` is not available" {
		t.Errorf("unknown server error = %q, want no reason", err)
	}
	_, err = th.CallTool(ctx(t), "off", "echo", nil, "test")
	unavailable(t, err, `MCP server "off" is disabled: disabled in config`)
	_, err = th.CallTool(ctx(t), "tools", "echo", []byte(`[1]`), "test")
	if !errors.Is(err, thread.ErrInvalidParams) {
		t.Errorf("array arguments: %v", err)
	}
}

func TestStartParams(t *testing.T) {
	f := newFixture(t, "", nil)
	_, err := f.m.Start(ctx(t), thread.StartParams{Kind: "wizard"})
	if !errors.Is(err, thread.ErrInvalidParams) {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = f.m.Start(ctx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{
		ID: "demo@1", Location: thread.Location{Type: thread.LocationEnvironment, EnvironmentID: "exec-1", Path: "/srv/demo"}}}})
	var re *thread.RootError
	if !errors.As(err, &re) || !errors.Is(err, thread.ErrNeedsExecutor) || !strings.Contains(err.Error(), "not yet supported") {
		t.Errorf("environment location: %v", err)
	}
	_, err = f.m.Start(ctx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "ghost@1"}}})
	if !errors.Is(err, thread.ErrRootNotFound) || !strings.Contains(err.Error(), `capability root "ghost@1"`) {
		t.Errorf("unknown root: %v", err)
	}
	_, err = f.m.Start(ctx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{Location: thread.Location{Path: t.TempDir()}}}})
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not a capability root") {
		t.Errorf("empty dir as root: %v", err)
	}
	if len(f.m.List()) != 0 {
		t.Errorf("failed starts left threads")
	}
}
