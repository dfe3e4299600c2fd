package authtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EchoMCP serves, on loopback, a go-sdk MCP server with one tool — echo {text} answers
// "echo: TEXT" — behind s as a protected resource requiring scopes, and returns the
// Resource and the MCP endpoint's URL. The server and its sessions close when tb ends.
func (s *Server) EchoMCP(tb testing.TB, scopes ...string) (*Resource, string) {
	tb.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	res := s.Resource(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), scopes...)
	hs := httptest.NewServer(res)
	tb.Cleanup(func() {
		hs.Close()
		// A session whose client vanished without DELETE lives on in the handler.
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return res, hs.URL + "/mcp"
}
