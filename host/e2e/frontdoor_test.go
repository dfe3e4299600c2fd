package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
)

// frontDoorHTTP serves h's threads through the MCP front door (frontdoor.Handler) on a
// loopback httptest server and returns its base URL (thread endpoints are
// base+frontdoor.ThreadPath(id)). Cleanup stops the server, then the front door.
func frontDoorHTTP(t testing.TB, h *host.Host) string {
	t.Helper()
	logs := &syncBuffer{}
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: hclog.New(&hclog.LoggerOptions{Level: logLevel(t), Output: logs})})
	srv := httptest.NewServer(fd.Handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := fd.Close(); err != nil {
			t.Errorf("FrontDoor.Close: %v", err)
		}
		if t.Failed() {
			t.Logf("front door log:\n%s", logs.String())
		}
	})
	return srv.URL
}

// connectMCP connects a go-sdk client to a streamable HTTP endpoint, with its own
// http.Transport (so its idle connections close with the session), closing it at cleanup.
func connectMCP(t testing.TB, ctx context.Context, endpoint string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := mcp.NewClient(&mcp.Implementation{Name: "warden-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the MCP session to %s: %v", endpoint, err)
		}
		tr.CloseIdleConnections()
	})
	return cs
}

// listToolNames lists every tool of a session (following pagination).
func listToolNames(t testing.TB, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// callText calls a tool and returns its joined text content, failing on a protocol error.
func callText(t testing.TB, ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res
}
