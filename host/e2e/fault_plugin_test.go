package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// until polls cond (each poll may apply a refresh the watcher queued) until it holds,
// within a failure bound.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverState is one server's status in th ("" state when it is not listed).
func serverState(t *testing.T, ctx context.Context, th *thread.Thread, name string) thread.ServerStatus {
	t.Helper()
	st, err := th.StatusNow(ctx, name)
	if err != nil {
		t.Fatalf("thread %s: status: %v", th.ID(), err)
	}
	for _, s := range st {
		if s.Name == name {
			return s
		}
	}
	return thread.ServerStatus{}
}

// TestFaultPluginReplacedByBrokenOne: a plugin in a watched plugins dir is overwritten
// while threads use it. Its policy module replaced by garbage: the plugin's servers fail
// closed — disabled with a reason naming the plugin — in the running thread, the call in
// flight gets a result or an error naming the server, and the other plugin's servers, the
// host's server and the other threads keep working; the good module back, the servers come
// back under it. Its .mcp.json replaced by garbage: a thread selecting the plugin is refused
// with the file and the plugin named, the running thread keeps its servers under the
// plugin's policy (a server never outlives its policy), and the fixed file lets threads
// select the plugin again.
func TestFaultPluginReplacedByBrokenOne(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	events, evs := eventsFIFO(t)
	guard := testbuild.GoGuest(t, "../testdata/policies/guard")
	plugins := t.TempDir()
	brittle := filepath.Join(plugins, "brittle")
	brittleMCP := fmt.Sprintf(`{"mcpServers":{"brittle_srv":{"command":%q,"args":["--name","fault-brittle","--events",%q]}}}`, faultServerBin(t), events)
	testmain.WriteFile(t, filepath.Join(brittle, ".codex-plugin", "plugin.json"), `{"name":"brittle","version":"1"}`)
	testmain.WriteFile(t, filepath.Join(brittle, ".mcp.json"), brittleMCP)
	testmain.WriteFile(t, filepath.Join(brittle, "policy.wasm"), string(guard))
	sturdy := filepath.Join(plugins, "sturdy")
	testmain.WriteFile(t, filepath.Join(sturdy, ".codex-plugin", "plugin.json"), `{"name":"sturdy","version":"1"}`)
	testmain.WriteFile(t, filepath.Join(sturdy, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{"sturdy_srv":{"command":%q}}}`, exampleBin))
	h := newHost(t, newHome(t, fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", plugins)+serverTOML("steady", exampleBin, nil, "")))

	selecting := func(ids ...string) *thread.Thread {
		var sel []thread.SelectedRoot
		for _, id := range ids {
			sel = append(sel, thread.SelectedRoot{ID: id})
		}
		th, err := h.Threads().Start(ctx, thread.StartParams{SelectedRoots: sel})
		if err != nil {
			t.Fatalf("thread/start selecting %q: %v", ids, err)
		}
		return th
	}
	thA, thB, thC := selecting("brittle@1", "sturdy@1"), selecting("sturdy@1"), selecting()
	everyone := []*thread.Thread{thA, thB, thC}
	// The guard policy governs brittle's server: it rewrites echo's arguments.
	wantOK(t, call(t, ctx, thA, "brittle_srv", "echo", map[string]any{"text": "x"}), "brittle_srv/echo under its policy", "rewritten by guard")
	others := func() {
		t.Helper()
		alive(t, ctx, h, everyone, "steady")
		for _, th := range []*thread.Thread{thA, thB} {
			wantOK(t, call(t, ctx, th, "sturdy_srv", "echo", map[string]any{"text": "sturdy"}), "sturdy_srv/echo in thread "+th.ID(), "sturdy")
		}
	}

	// The policy module replaced by garbage, with a call in flight.
	gate := filepath.Join(t.TempDir(), "gate")
	inFlight := callAsync(ctx, thA, "brittle_srv", "until", map[string]any{"path": gate})
	waitEvent(t, ctx, evs, "call until")
	testmain.WriteFile(t, filepath.Join(brittle, "policy.wasm"), "this is not a WebAssembly module")
	until(t, "brittle_srv to fail closed", func() bool { return serverState(t, ctx, thA, "brittle_srv").Status == thread.StateDisabled })
	if s := serverState(t, ctx, thA, "brittle_srv"); !strings.Contains(s.ToolsError, `policy plugin "brittle@1"`) || len(s.Tools) != 0 {
		t.Errorf("brittle_srv = %+v, want disabled, no tools, a reason naming the plugin", s)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := await(t, ctx, inFlight, "the call in flight"); a.failure() != "" {
		wantErr(t, a, "the call in flight when the policy broke", "`brittle_srv/until`")
	} else {
		t.Logf("the call in flight when the policy broke finished: %q", textOf(a.res))
	}
	wantErr(t, call(t, ctx, thA, "brittle_srv", "echo", map[string]any{"text": "x"}), "brittle_srv/echo with a broken policy",
		"MCP tool `brittle_srv/echo` is not available", `policy plugin "brittle@1"`)
	others()

	// The good module back: the servers return under it.
	testmain.WriteFile(t, filepath.Join(brittle, "policy.wasm"), string(guard))
	until(t, "brittle_srv back", func() bool { return serverState(t, ctx, thA, "brittle_srv").Status == thread.StateReady })
	wantOK(t, call(t, ctx, thA, "brittle_srv", "echo", map[string]any{"text": "x"}), "brittle_srv/echo with its policy back", "rewritten by guard")

	// .mcp.json replaced by garbage.
	testmain.WriteFile(t, filepath.Join(brittle, ".mcp.json"), `{"mcpServers": {"brittle_srv": <html>`)
	until(t, "the watcher to see the broken plugin", func() bool {
		r := h.Roots().Get("brittle@1")
		return r != nil && r.Status == roots.StatusError
	})
	_, err := h.Threads().Start(ctx, thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "brittle@1"}}})
	if err == nil || !strings.Contains(err.Error(), `plugin "brittle@1"`) || !strings.Contains(err.Error(), ".mcp.json") {
		t.Errorf("thread/start selecting the broken plugin: %v, want an error naming the plugin and .mcp.json", err)
	} else {
		t.Logf("thread/start selecting the broken plugin: %v", err)
	}
	wantOK(t, call(t, ctx, thA, "brittle_srv", "echo", map[string]any{"text": "x"}), "brittle_srv/echo in the running thread, .mcp.json broken", "rewritten by guard")
	// A strict reload names the thread that cannot take the broken plugin, and refreshes none.
	if _, err := h.Threads().Reload(ctx, true); err == nil || !strings.Contains(err.Error(), thA.ID()) || !strings.Contains(err.Error(), ".mcp.json") {
		t.Errorf("strict reload with the plugin broken: %v, want an error naming thread %s and .mcp.json", err, thA.ID())
	} else {
		t.Logf("strict reload with the plugin broken: %v", err)
	}
	others()

	// Fixed: threads select it again.
	testmain.WriteFile(t, filepath.Join(brittle, ".mcp.json"), brittleMCP)
	until(t, "the watcher to see the fixed plugin", func() bool {
		r := h.Roots().Get("brittle@1")
		return r != nil && r.Status != roots.StatusError
	})
	thD := selecting("brittle@1")
	wantOK(t, call(t, ctx, thD, "brittle_srv", "echo", map[string]any{"text": "x"}), "brittle_srv/echo in a new thread", "rewritten by guard")
	alive(t, ctx, h, append(everyone, thD), "steady")
}
