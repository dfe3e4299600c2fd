package leaktest

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct {
	auth string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.auth)
	return b.next.RoundTrip(r)
}

// newTransport is a transport of the test's own, its idle connections closed at the end.
func newTransport(t *testing.T) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// get sends a GET with hdr and returns the status and body.
func get(t *testing.T, url string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: newTransport(t)}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func connectMCP(t *testing.T, url, auth string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "leaktest-client", Version: "v0"}, nil)
	return client.Connect(testCtx(t), &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearerTransport{auth, newTransport(t)}},
	}, nil)
}

func toolText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("call %s: %+v, want one text", name, res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content %T, want text", name, res.Content[0])
	}
	return tc.Text
}

func TestRecordingServerMCP(t *testing.T) {
	const token = "recording-token-0123456789abcdef"
	s := NewRecordingServer(t, RecordingOptions{RequireBearer: token, Identity: "executor-side"})
	cs, err := connectMCP(t, s.URL(), "Bearer "+token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	tools, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"echo", "whoami"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := toolText(t, cs, "echo", map[string]any{"text": "hello"}); got != "hello" {
		t.Errorf("echo = %q, want hello", got)
	}
	if got := toolText(t, cs, "whoami", map[string]any{}); got != "executor-side" {
		t.Errorf("whoami = %q, want executor-side", got)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	auths := s.Authorizations()
	if len(auths) < 4 { // initialize, initialized, tools/list, two calls (and the GET stream)
		t.Errorf("recorded %d requests, want at least 4", len(auths))
	}
	for i, a := range auths {
		if a != "Bearer "+token {
			t.Errorf("request %d Authorization %q, want the client's bearer", i, a)
		}
	}
	reqs := s.Requests()
	var sawCall bool
	for _, r := range reqs {
		if r.Path != MCPPath || r.Header.Get("Host") == "" {
			t.Errorf("request %+v, want path %s and its Host recorded", r, MCPPath)
		}
		if r.Method == http.MethodPost && strings.Contains(string(r.Body), `"tools/call"`) && strings.Contains(string(r.Body), "hello") {
			sawCall = true
		}
		if r.Status >= 400 {
			t.Errorf("request %s %s answered %d", r.Method, r.Path, r.Status)
		}
	}
	if !sawCall {
		t.Error("no recorded POST body carries the echo call")
	}

	// Another token is refused, and the refusal is recorded with the token it carried.
	if cs, err := connectMCP(t, s.URL(), "Bearer another-token-0123456789"); err == nil {
		_ = cs.Close()
		t.Fatal("connect with another token succeeded, want 401")
	}
	reqs = s.Requests()
	last := reqs[len(reqs)-1]
	if last.Status != http.StatusUnauthorized || last.Header.Get("Authorization") != "Bearer another-token-0123456789" {
		t.Errorf("last request %+v, want 401 with the other token recorded", last)
	}
}

func TestRecordingServerPlain(t *testing.T) {
	s := NewRecordingServer(t, RecordingOptions{})
	status, body := get(t, s.BaseURL()+"/plain?q=1", http.Header{"X-Api-Key": {"k1"}})
	if status != http.StatusOK || body != "leaktest: GET /plain\n" {
		t.Errorf("plain endpoint: %d %q", status, body)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/plain" || reqs[0].RawQuery != "q=1" || reqs[0].Header.Get("X-Api-Key") != "k1" || reqs[0].Status != 200 {
		t.Errorf("recorded %+v", reqs)
	}
	if a := s.Authorizations(); len(a) != 1 || a[0] != "" {
		t.Errorf("Authorizations = %q, want one empty", a)
	}
}
