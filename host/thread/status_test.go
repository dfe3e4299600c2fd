package thread_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/thread"
)

// S6: mcpServerStatus/list with serverName and threadId reuses the thread's session (no new
// session-establishing request, no tools/list at the server); without threadId it connects
// to that server alone; an unknown name gives an empty result.
func TestS6StatusReusesThreadSession(t *testing.T) {
	dir := t.TempDir()
	alphaCount := filepath.Join(dir, "alpha.count")
	betaCount := filepath.Join(dir, "beta.count")
	f := newFixture(t,
		stdioServer("alpha", []string{"--count-file", alphaCount}, "")+
			stdioServer("beta", []string{"--count-file", betaCount}, ""), nil)

	// Without a thread: a discovery connection to alpha alone.
	st, err := f.m.DiscoverStatus(ctx(t), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Name != "alpha" || st[0].Status != thread.StateReady || len(st[0].Tools) == 0 {
		t.Fatalf("DiscoverStatus(alpha) = %+v, want alpha ready with tools", st)
	}
	if n := handshakes(t, alphaCount); n != 1 {
		t.Errorf("alpha saw %d session-establishing requests for one discovery, want 1", n)
	}
	if m := mcpservertest.Methods(t, betaCount); len(m) != 0 {
		t.Errorf("discovery of alpha reached beta: %q", m)
	}
	for _, unknown := range []string{"nope", "ALPHA"} {
		st, err := f.m.DiscoverStatus(ctx(t), unknown)
		if err != nil || len(st) != 0 {
			t.Errorf("DiscoverStatus(%q) = %+v, %v; want empty", unknown, st, err)
		}
	}

	// With a thread: its sessions and catalog, nothing new at the server.
	th := f.start(thread.StartParams{})
	full := status(t, th, "")
	if got := names(full); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("thread servers = %q", got)
	}
	hsAlpha, listAlpha := handshakes(t, alphaCount), mcpservertest.Count(t, alphaCount, "tools/list")
	hsBeta, listBeta := handshakes(t, betaCount), mcpservertest.Count(t, betaCount, "tools/list")
	for _, detail := range []bool{false, true} {
		st, err := th.Status(ctx(t), "alpha", detail)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 1 || st[0].Name != "alpha" || st[0].Status != thread.StateReady {
			t.Fatalf("Status(alpha, detail=%v) = %+v", detail, st)
		}
		echo := findTool(st[0].Tools, "echo")
		if echo == nil || echo.Description == "" || echo.InputSchema == nil {
			t.Fatalf("Status(alpha, detail=%v): echo tool metadata missing: %+v", detail, echo)
		}
		if st[0].PluginID != "" || st[0].AuthStatus != thread.AuthUnsupported || st[0].ToolsError != "" {
			t.Errorf("Status(alpha) = %+v", st[0])
		}
	}
	_ = status(t, th, "") // the full listing reuses the sessions too
	if n := handshakes(t, alphaCount); n != hsAlpha {
		t.Errorf("status reads made %d new session-establishing requests at alpha", n-hsAlpha)
	}
	if n := mcpservertest.Count(t, alphaCount, "tools/list"); n != listAlpha {
		t.Errorf("status reads made %d new tools/list at alpha", n-listAlpha)
	}
	if handshakes(t, betaCount) != hsBeta || mcpservertest.Count(t, betaCount, "tools/list") != listBeta {
		t.Errorf("status reads reached beta")
	}
	if st := status(t, th, "nope"); len(st) != 0 {
		t.Errorf("Status(nope) = %+v, want empty", st)
	}
}

func TestStatusEventsAndRequirements(t *testing.T) {
	f := newFixture(t,
		stdioServer("alpha", nil, "")+stdioServer("beta", nil, ""),
		map[string]string{"requirements.toml": "[mcp_servers.alpha.identity]\ncommand = \"" + exampleBin + "\"\n"})
	th := f.start(thread.StartParams{})
	st := byName(status(t, th, ""))
	if st["alpha"].Status != thread.StateReady {
		t.Errorf("alpha = %+v, want ready", st["alpha"])
	}
	beta := st["beta"]
	if beta.Status != thread.StateDisabled || len(beta.Tools) != 0 || !contains(beta.ToolsError, "blocked by requirements") {
		t.Errorf("beta = %+v, want disabled, blocked by requirements", beta)
	}
	// Notifications: alpha starting then ready, beta disabled, all for this thread.
	eventually(t, 10*time.Second, "alpha's ready event", func() bool {
		return slices.ContainsFunc(f.events.snapshot(), func(ev thread.Event) bool {
			s, ok := ev.(*thread.StartupStatus)
			return ok && s.Name == "alpha" && s.Status == thread.StateReady
		})
	})
	var seen []string
	for _, ev := range f.events.snapshot() {
		if s, ok := ev.(*thread.StartupStatus); ok {
			if s.ThreadID != th.ID() {
				t.Errorf("event for thread %q, want %q", s.ThreadID, th.ID())
			}
			seen = append(seen, s.Name+":"+string(s.Status))
		}
	}
	for _, want := range []string{"alpha:starting", "alpha:ready", "beta:disabled"} {
		if !slices.Contains(seen, want) {
			t.Errorf("events %q lack %q", seen, want)
		}
	}
	if i, j := slices.Index(seen, "alpha:starting"), slices.Index(seen, "alpha:ready"); i > j {
		t.Errorf("events out of order: %q", seen)
	}
}
