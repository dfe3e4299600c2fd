package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/protocol"
)

// everythingHome is a warden home declaring the npm reference server server-everything as
// the stdio server "everything" (NODE DIST/index.js stdio, NODE the node testdata/npm pins).
func everythingHome(t testing.TB) string {
	t.Helper()
	npm := npmPackage(t, everythingPkg, everythingVersion)
	script := npm.file(t, everythingPkg, "dist/index.js")
	// The timeouts are generous because node starts slowly on a loaded machine (failure
	// bounds only).
	return newHome(t, serverTOML("everything", npm.node, []string{script, "stdio"},
		"required = true\nstartup_timeout_sec = 120\ntool_timeout_sec = 120"))
}

// TestServerEverything drives the reference server-everything (a Node.js server warden did
// not write, from npm) through warden's two surfaces, on one thread: the host API
// (initialize, thread/start, mcpServerStatus/list, mcpServer/tool/call over a real
// api.Server) and the MCP front door (a go-sdk client over streamable HTTP, tools named
// everything__TOOL); then the same home through a built `warden mcp` over stdio.
func TestServerEverything(t *testing.T) {
	home := everythingHome(t)
	h := newHost(t, home)
	ctx := testCtx(t)
	c := dialAPI(t, h)
	id := c.startThread(ctx)
	t.Run("api", func(t *testing.T) { everythingAPI(t, c, id) })
	t.Run("frontdoor", func(t *testing.T) {
		everythingFrontDoor(t, connectMCP(t, testCtx(t), frontDoorHTTP(t, h)+frontdoor.ThreadPath(id)))
	})
	t.Run("warden-mcp", func(t *testing.T) {
		cmd := exec.Command(wardenBin(t), "--log-level", "debug", "mcp")
		cmd.Env = append(os.Environ(), "WARDEN_HOME="+home)
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("warden mcp stderr:\n%s", stderr.String())
			}
		})
		client := mcp.NewClient(&mcp.Implementation{Name: "warden-e2e", Version: "1"}, nil)
		cs, err := client.Connect(testCtx(t), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connecting to warden mcp: %v", err)
		}
		everythingFrontDoor(t, cs)
		if err := cs.Close(); err != nil {
			t.Errorf("closing warden mcp: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("warden mcp exited with %v", cmd.ProcessState)
		}
	})
}

func everythingAPI(t *testing.T, c *apiClient, id string) {
	ctx := testCtx(t)

	st := c.status(ctx, id, "")
	if len(st) != 1 || st[0].Name != "everything" {
		t.Fatalf("mcpServerStatus/list = %+v, want the one server everything", st)
	}
	s := st[0]
	if s.StartupStatus != protocol.StartupReady || s.ToolsError != nil || s.PluginID != nil {
		t.Fatalf("everything: startupStatus %q, toolsError %v, pluginId %v; want ready, null, null", s.StartupStatus, s.ToolsError, s.PluginID)
	}
	var names []string
	for name := range s.Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, want := range []string{"echo", "get-sum"} {
		if !slices.Contains(names, want) {
			t.Fatalf("everything's tools %q lack %q", names, want)
		}
	}
	t.Logf("server-everything %s tools: %q", everythingVersion, names)
	if s.Tools["echo"].InputSchema == nil {
		t.Errorf("echo has no input schema")
	}

	echo := c.callTool(ctx, id, "everything", "echo", map[string]any{"message": "hello from warden"})
	if echo.IsError || echo.text() != "Echo: hello from warden" {
		t.Errorf("echo = %+v, want the text %q", echo, "Echo: hello from warden")
	}
	sum := c.callTool(ctx, id, "everything", "get-sum", map[string]any{"a": 2, "b": 40})
	if sum.IsError || sum.text() != "The sum of 2 and 40 is 42." {
		t.Errorf("get-sum = %+v, want the text %q", sum, "The sum of 2 and 40 is 42.")
	}

	// A tool error at the server is a result, not a protocol error.
	bad := c.callTool(ctx, id, "everything", "get-sum", map[string]any{"a": "two"})
	if !bad.IsError {
		t.Errorf("get-sum with bad arguments = %+v, want isError", bad)
	}

	// The startup notification reached this connection (events are delivered
	// asynchronously, so wait for it; the context bounds the wait).
	c.waitNotification(ctx, func(n protocol.Notification) bool {
		var p protocol.McpServerStartupStatusUpdatedNotification
		return n.Method == protocol.NotifyMcpServerStartupStatusUpdated &&
			json.Unmarshal(n.Params, &p) == nil && p.ThreadID == id && p.Name == "everything" && p.Status == protocol.StartupReady
	})
}

// everythingFrontDoor checks a session to the front door of a thread with server-everything.
func everythingFrontDoor(t *testing.T, cs *mcp.ClientSession) {
	ctx := testCtx(t)
	if got := cs.InitializeResult().ServerInfo.Name; got != "warden" {
		t.Errorf("front door serverInfo.name = %q, want warden", got)
	}
	names := listToolNames(t, ctx, cs)
	for _, want := range []string{"everything__echo", "everything__get-sum"} {
		if !slices.Contains(names, want) {
			t.Fatalf("front door tools %q lack %q", names, want)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "everything__") {
			t.Errorf("front door tool %q is not namespaced everything__", n)
		}
	}
	if text, res := callText(t, ctx, cs, "everything__echo", map[string]any{"message": "through the front door"}); res.IsError || text != "Echo: through the front door" {
		t.Errorf("everything__echo = %q (isError %v), want %q", text, res.IsError, "Echo: through the front door")
	}
	if text, res := callText(t, ctx, cs, "everything__get-sum", map[string]any{"a": 1.5, "b": 2}); res.IsError || text != "The sum of 1.5 and 2 is 3.5." {
		t.Errorf("everything__get-sum = %q (isError %v), want %q", text, res.IsError, "The sum of 1.5 and 2 is 3.5.")
	}
}
