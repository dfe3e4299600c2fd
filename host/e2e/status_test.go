package e2e_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/protocol"
)

// handshakes counts the session-establishing requests a server saw: server/discover and
// initialize (a 2026-07-28 client falling back to initialize sends both for one session).
func handshakes(t testing.TB, countPath string) int {
	t.Helper()
	return mcpservertest.Count(t, countPath, "server/discover") + mcpservertest.Count(t, countPath, "initialize")
}

// TestStatusReusesThreadSession: mcpServerStatus/list with a threadId, through the host API,
// is answered from the thread's session and cached catalog — the server sees no request at
// all (DESIGN.md §3, scenario S6), however often and however it is asked.
func TestStatusReusesThreadSession(t *testing.T) {
	count := filepath.Join(t.TempDir(), "count")
	home := newHome(t, serverTOML("docs", exampleBin, []string{"--count-file", count}, "required = true"))
	h := newHost(t, home)
	ctx := testCtx(t)
	c := dialAPI(t, h)
	id := c.startThread(ctx)
	if st := c.status(ctx, id, "docs"); len(st) != 1 || st[0].StartupStatus != protocol.StartupReady {
		t.Fatalf("status = %+v, want docs ready", st)
	}
	before := mcpservertest.Methods(t, count)
	if handshakes(t, count) != 1 || mcpservertest.Count(t, count, "tools/list") != 1 {
		t.Fatalf("starting the thread: methods %q, want one handshake and one tools/list", before)
	}

	toolsOnly := protocol.DetailToolsAndAuthOnly
	for i := 0; i < 10; i++ {
		for _, p := range []protocol.ListMcpServerStatusParams{
			{ThreadID: &id},
			{ThreadID: &id, ServerName: ptr("docs")},
			{ThreadID: &id, Detail: &toolsOnly},
			{ThreadID: &id, ServerName: ptr("unknown")},
		} {
			var res protocol.ListMcpServerStatusResponse
			if err := c.call(ctx, protocol.MethodMcpServerStatusList, p, &res); err != nil {
				t.Fatalf("mcpServerStatus/list: %v", err)
			}
			wantN := 1
			if p.ServerName != nil && *p.ServerName == "unknown" {
				wantN = 0
			}
			if len(res.Data) != wantN {
				t.Fatalf("mcpServerStatus/list %+v: %d entries, want %d", p, len(res.Data), wantN)
			}
			if wantN == 1 && len(res.Data[0].Tools) == 0 {
				t.Fatalf("mcpServerStatus/list %+v: docs has no tools", p)
			}
		}
	}
	if after := mcpservertest.Methods(t, count); !slices.Equal(after, before) {
		t.Fatalf("40 status reads with threadId sent %d requests to the server: %q (before: %q)",
			len(after)-len(before), after[len(before):], before)
	}
	t.Logf("extra server requests for 40 status reads with threadId: 0 (server saw %q)", before)
}

func ptr[T any](v T) *T { return &v }
