package thread_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/thread"
)

// S7: strict reload fails naming the thread whose configuration fails to load (its selected
// plugin root is now broken) and changes nothing; best-effort reload refreshes every other
// thread and reports the failed one, which keeps its servers.
func TestS7StrictAndBestEffortReload(t *testing.T) {
	f := newFixture(t, stdioServer("base", nil, ""), nil)
	// A root outside the plugins dirs, selected by path: only a reload re-reads it.
	rootDir := filepath.Join(t.TempDir(), "fragile")
	plugin(t, rootDir, `{"name":"fragile","version":"1"}`, map[string]any{"fragile_srv": stdioJSON()})

	broken := f.start(thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "fragile@1", Location: thread.Location{Type: thread.LocationLocal, Path: rootDir}}}})
	healthy := f.start(thread.StartParams{})
	if got := names(status(t, broken, "")); !slices.Equal(got, []string{"base", "fragile_srv"}) {
		t.Fatalf("selecting thread's servers = %q", got)
	}

	// Break the root and add a host server.
	writeFile(t, filepath.Join(rootDir, ".codex-plugin", "plugin.json"), `{"name": "fragile",`)
	f.writeConfig(stdioServer("base", nil, "") + stdioServer("added", nil, ""))

	_, err := f.m.Reload(ctx(t), true)
	var re *thread.ReloadError
	if !errors.As(err, &re) || re.ThreadID != broken.ID() || !strings.Contains(err.Error(), "thread "+broken.ID()) ||
		!strings.Contains(err.Error(), `capability root "fragile@1"`) {
		t.Fatalf("strict reload error = %v, want one naming thread %s and its root", err, broken.ID())
	}
	if healthy.RefreshPending() || broken.RefreshPending() {
		t.Errorf("a failed strict reload queued refreshes")
	}
	if got := names(status(t, healthy, "")); !slices.Equal(got, []string{"base"}) {
		t.Errorf("after a failed strict reload the other thread has %q", got)
	}
	if _, err := f.m.Start(ctx(t), thread.StartParams{}); err != nil {
		t.Fatal(err)
	} else if got := f.m.Snapshot().Home.Config.Servers; len(got) != 1 {
		t.Errorf("a failed strict reload changed the configuration: %d servers", len(got))
	}

	res, err := f.m.Reload(ctx(t), false)
	if err != nil {
		t.Fatalf("best-effort reload: %v", err)
	}
	if len(res.Failed) != 1 || res.Failed[0].ThreadID != broken.ID() {
		t.Errorf("Failed = %v, want thread %s", res.Failed, broken.ID())
	}
	if !slices.Contains(res.Refreshed, healthy.ID()) || slices.Contains(res.Refreshed, broken.ID()) {
		t.Errorf("Refreshed = %q", res.Refreshed)
	}
	st := byName(status(t, healthy, ""))
	if st["added"].Status != thread.StateReady {
		t.Errorf("best-effort reload did not add the new server to the healthy thread: %+v", st)
	}
	// The failed thread keeps what it had.
	if got := names(status(t, broken, "")); !slices.Equal(got, []string{"base", "fragile_srv"}) {
		t.Errorf("failed thread's servers = %q, want its old set", got)
	}
	if got := call(t, broken, "fragile_srv", "echo", `{"text":"kept"}`); got["text"] != "kept" {
		t.Errorf("fragile_srv/echo = %v", got)
	}

	// Repair the root: the next reload refreshes both.
	writeFile(t, filepath.Join(rootDir, ".codex-plugin", "plugin.json"), `{"name":"fragile","version":"1"}`)
	res, err = f.m.Reload(ctx(t), true)
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("strict reload after repair: %+v, %v", res, err)
	}
	if got := names(status(t, broken, "")); !slices.Equal(got, []string{"added", "base", "fragile_srv"}) {
		t.Errorf("repaired thread's servers = %q", got)
	}
}

// A reload keeps the sessions of unchanged servers and releases removed ones.
func TestReloadKeepsUnchangedSessions(t *testing.T) {
	dir := t.TempDir()
	keepCount := filepath.Join(dir, "keep.count")
	f := newFixture(t, stdioServer("keep", []string{"--count-file", keepCount}, "")+stdioServer("drop", nil, ""), nil)
	th := f.start(thread.StartParams{})
	_ = status(t, th, "")
	f.writeConfig(stdioServer("keep", []string{"--count-file", keepCount}, "disabled_tools = [\"fail\"]\n"))
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	st := status(t, th, "")
	if got := names(st); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("servers after reload = %q", got)
	}
	if findTool(st[0].Tools, "fail") != nil {
		t.Errorf("the reloaded tool filter is not applied")
	}
	if n := handshakes(t, keepCount); n != 1 {
		t.Errorf("keep was reconnected by the reload: %d sessions", n)
	}
	eventually(t, 10*time.Second, "a ToolsChanged event for the new filter", func() bool {
		return slices.ContainsFunc(f.events.snapshot(), func(ev thread.Event) bool {
			tc, ok := ev.(*thread.ToolsChanged)
			return ok && tc.ThreadID == th.ID() && tc.Server == "keep"
		})
	})
	_, err := th.CallTool(ctx(t), "drop", "echo", nil, "test")
	unavailable(t, err, "MCP tool `drop/echo` is not available")
}
