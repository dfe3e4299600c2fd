package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/host/protocol"
	"github.com/warden-mcp/warden/host/thread"
)

// reloadCalls is how many calls are in flight during each reload.
const reloadCalls = 100

// TestFaultReloadDuringInFlightCalls: config/mcpServer/reload (the host API) while 100
// calls are in flight at the server, spread over 10 threads. A reload that leaves the
// server's declaration alone (it adds another server) keeps its session: every call gets
// its result. A reload that changes the declaration replaces the session: every call gets
// its result or an error naming the server and the refresh. Either way no thread is lost
// and, afterwards, every thread calls the server — its new session — and the added server.
func TestFaultReloadDuringInFlightCalls(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	events, evs := eventsFIFO(t)
	bin := faultServerBin(t)
	busy := func(name string) string {
		return serverTOML("busy", bin, []string{"--name", name, "--events", events}, "tool_timeout_sec = 60")
	}
	home := newHome(t, busy("fault-busy-1")+serverTOML("steady", exampleBin, nil, ""))
	h := newHost(t, home)
	ths := make([]*thread.Thread, 10)
	for i := range ths {
		ths[i] = startThread(t, ctx, h)
	}
	rewrite := func(config string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// inFlight starts reloadCalls calls that answer once gate exists, and returns once the
	// server has every one of them.
	inFlight := func(gate string) []<-chan answer {
		t.Helper()
		chs := make([]<-chan answer, reloadCalls)
		for i := range chs {
			chs[i] = callAsync(ctx, ths[i%len(ths)], "busy", "until", map[string]any{"path": gate})
		}
		for range chs {
			waitEvent(t, ctx, evs, "call until")
		}
		return chs
	}
	// reload sends config/mcpServer/reload through the host API, then applies each
	// thread's refresh (a reload only queues it, for the thread's next use) while the calls
	// are still held.
	api := dialAPI(t, h)
	reload := func() {
		t.Helper()
		var res protocol.ReloadResponse
		if err := api.call(ctx, protocol.MethodMcpServerReload, protocol.ReloadParams{Mode: protocol.ReloadStrict}, &res); err != nil || len(res.Failed) != 0 || len(res.Refreshed) != len(ths) {
			t.Fatalf("config/mcpServer/reload: %+v, %v; want the %d threads refreshed", res, err, len(ths))
		}
		for _, th := range ths {
			if _, err := th.StatusNow(ctx, ""); err != nil {
				t.Fatalf("thread %s after the reload: %v", th.ID(), err)
			}
		}
	}

	// The declaration unchanged (a server added): the session stays, every call answers.
	gate1 := filepath.Join(t.TempDir(), "gate1")
	calls := inFlight(gate1)
	rewrite(busy("fault-busy-1") + serverTOML("steady", exampleBin, nil, "") + serverTOML("added", exampleBin, nil, ""))
	reload()
	if err := os.WriteFile(gate1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, ch := range calls {
		wantOK(t, await(t, ctx, ch, "call"), fmt.Sprintf("call %d across a reload that kept its server", i), "done")
	}

	// The declaration changed: the session is replaced under the calls.
	gate2 := filepath.Join(t.TempDir(), "gate2")
	calls = inFlight(gate2)
	rewrite(busy("fault-busy-2") + serverTOML("steady", exampleBin, nil, "") + serverTOML("added", exampleBin, nil, ""))
	reload()
	if err := os.WriteFile(gate2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	results, failures := 0, map[string]int{}
	for i, ch := range calls {
		a := await(t, ctx, ch, "call")
		f := a.failure()
		switch {
		case f == "" && textOf(a.res) == "done":
			results++
		case a.err != nil && strings.Contains(f, "`busy/until`") && strings.Contains(f, `MCP server "busy"`):
			failures[f]++
		default:
			t.Errorf("call %d across a reload that replaced its server: %q, want done or an error naming busy/until", i, f)
		}
	}
	t.Logf("across the replacing reload: %d results, %d errors: %v", results, reloadCalls-results, failures)
	newestChild(t, bin, "fault-busy-2") // the new declaration runs

	alive(t, ctx, h, ths, "busy", "steady", "added")
	for _, th := range ths {
		wantOK(t, call(t, ctx, th, "busy", "echo", map[string]any{"text": th.ID()}), "busy/echo in "+th.ID(), th.ID())
	}
}
