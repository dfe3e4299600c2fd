package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// Values of NODE_TOKEN: the executor's own (set only in the executor's environment) and
// the host's canary (set in the test process), which must never reach a server.
const (
	execValue   = "executor-owned-value-7f3a"
	canaryValue = "HOST-CANARY-must-not-leak-91c2"
)

// executorHome writes a config.toml declaring one executor-config server and returns the
// WARDEN_HOME entry for the executor's environment.
func executorHome(t *testing.T) string {
	home := t.TempDir()
	testmain.WriteFile(t, filepath.Join(home, "config.toml"), `
[mcp_servers.node_repl]
url = "https://node.invalid/mcp"
bearer_token_env_var = "NODE_TOKEN"
`)
	return "WARDEN_HOME=" + home
}

// dialKinds dials a WebSocket executor and a stdio (Program) executor with the same
// environment, for the tests that must hold over both.
func dialKinds(t *testing.T, extraEnv ...string) map[string]*Client {
	t.Helper()
	env := append(baseEnv(t, extraEnv...), executorHome(t))
	log, _ := testLogger(t)
	ws := startExecutor(t, "ws://127.0.0.1:0", env)
	out := map[string]*Client{}
	for name, cfg := range map[string]Config{
		"websocket": {Name: "ws-env", URL: ws.URL, Token: execToken},
		"stdio":     {Name: "stdio-env", Program: wardenBin, Args: []string{"executor", "--listen", "stdio"}, Env: env},
	} {
		cfg.Logger, cfg.Backoff = log, fastBackoff
		c, err := Dial(testCtx(t), cfg)
		if err != nil {
			t.Fatalf("Dial %s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		out[name] = c
	}
	return out
}

func TestDialRealExecutor(t *testing.T) {
	for kind, c := range dialKinds(t) {
		t.Run(kind, func(t *testing.T) {
			want := protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true, FSRead: true}
			if got := c.Capabilities(); got != want {
				t.Errorf("Capabilities = %+v, want %+v", got, want)
			}
			var decl map[string]any
			if err := json.Unmarshal(c.Servers()["node_repl"], &decl); err != nil {
				t.Fatalf("Servers()[node_repl] = %s: %v", c.Servers()["node_repl"], err)
			}
			if decl["url"] != "https://node.invalid/mcp" || decl["bearer_token_env_var"] != "NODE_TOKEN" {
				t.Errorf("node_repl declaration = %v", decl)
			}
			if info := c.EnvironmentInfo(); info.OS == "" || info.Arch == "" {
				t.Errorf("EnvironmentInfo = %+v", info)
			}
		})
	}
}

// recordingServer is a loopback go-sdk streamable HTTP MCP server recording each request's
// method and Authorization header.
type recordingServer struct {
	srv     *mcp.Server
	url     string
	mu      sync.Mutex
	auth    []string
	gets    int
	getSeen chan struct{}
}

func newRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{getSeen: make(chan struct{})}
	rs.srv = mcp.NewServer(&mcp.Implementation{Name: "recording", Version: "v1"}, nil)
	mcp.AddTool(rs.srv, &mcp.Tool{Name: "greet"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Name string `json:"name"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return rs.srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.auth = append(rs.auth, r.Header.Get("Authorization"))
		if r.Method == http.MethodGet {
			if rs.gets++; rs.gets == 1 {
				close(rs.getSeen)
			}
		}
		rs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	rs.url = ts.URL + "/mcp"
	return rs
}

func (rs *recordingServer) authorizations() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.auth...)
}

// TestStreamableHTTPThroughExecutor: the go-sdk's streamable HTTP client runs unchanged
// over the RoundTripper, the Authorization header is resolved in the executor from its own
// NODE_TOKEN, and the host's value of the same variable never reaches the server. The GET
// SSE stream works: a tools/list_changed the server sends on it arrives.
func TestStreamableHTTPThroughExecutor(t *testing.T) {
	t.Setenv("NODE_TOKEN", canaryValue)
	for kind, c := range dialKinds(t, "NODE_TOKEN="+execValue) {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			rs := newRecordingServer(t)
			rt := c.RoundTripper([]protocol.Header{{Name: "Authorization", ValueEnvVar: "NODE_TOKEN", ValuePrefix: "Bearer "}})
			changed := make(chan struct{}, 8)
			mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rs.url, HTTPClient: &http.Client{Transport: rt}}, nil)
			if err != nil {
				t.Fatalf("Connect through the executor: %v", err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "greet" {
				t.Fatalf("ListTools = %+v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "executor"}})
			if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello executor" {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			select {
			case <-rs.getSeen:
			case <-ctx.Done():
				t.Fatal("the client's GET SSE stream never reached the server")
			}
			mcp.AddTool(rs.srv, &mcp.Tool{Name: "later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("notifications/tools/list_changed did not arrive over the GET stream")
			}
			auths := rs.authorizations()
			if len(auths) < 3 {
				t.Errorf("server saw %d requests, want at least initialize, tools/list, tools/call", len(auths))
			}
			for _, a := range auths {
				if a != "Bearer "+execValue {
					t.Errorf("server saw Authorization %q, want the executor's value", a)
				}
				if strings.Contains(a, canaryValue) {
					t.Errorf("the host's canary reached the server: %q", a)
				}
			}
		})
	}
}

// TestCommandTransportThroughExecutor: the example MCP server runs inside the executor
// over CommandTransport and sees the executor's value of an envVars name.
func TestCommandTransportThroughExecutor(t *testing.T) {
	t.Setenv("NODE_TOKEN", canaryValue)
	for kind, c := range dialKinds(t, "NODE_TOKEN="+execValue) {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			tr := c.CommandTransport(protocol.ProcessStartParams{Argv: []string{exampleBin}, EnvVars: []string{"NODE_TOKEN"}, Env: map[string]string{"MODE": "ro"}})
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatalf("Connect over CommandTransport: %v", err)
			}
			defer cs.Close()
			for _, tt := range []struct{ name, want string }{
				{"NODE_TOKEN", execValue},
				{"MODE", "ro"},
			} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "env", Arguments: map[string]any{"name": tt.name}})
				if err != nil {
					t.Fatalf("CallTool env %s: %v", tt.name, err)
				}
				var out struct {
					Set   bool   `json:"set"`
					Value string `json:"value"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(b, &out); err != nil || !out.Set || out.Value != tt.want {
					t.Errorf("env %s in the executor's process = %s, want %q", tt.name, b, tt.want)
				}
			}
		})
	}
}

func TestCommandTransportMissingBinary(t *testing.T) {
	c := dialKinds(t)["websocket"]
	_, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(testCtx(t),
		c.CommandTransport(protocol.ProcessStartParams{Argv: []string{"no-such-binary-warden-test"}}), nil)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "no-such-binary-warden-test") {
		t.Errorf("Connect of a missing binary: %v, want ErrFailed naming it", err)
	}
}

func TestReadFile(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	testmain.WriteFile(t, filepath.Join(root, ".codex-plugin", "plugin.json"), `{"name":"demo"}`)
	testmain.WriteFile(t, filepath.Join(outside, "secret.txt"), "outside")
	testmain.WriteFile(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 100))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	c := dialKinds(t)["websocket"]
	tests := []struct {
		path    string
		max     int64
		want    string
		wantErr error
	}{
		{".codex-plugin/plugin.json", 1 << 20, `{"name":"demo"}`, nil},
		{"missing.json", 0, "", ErrNotFound},
		{"../" + filepath.Base(outside) + "/secret.txt", 0, "", ErrForbidden},
		{"escape", 0, "", ErrForbidden},
		{filepath.Join(outside, "secret.txt"), 0, "", ErrForbidden},
		{".codex-plugin", 0, "", ErrForbidden},
		{"big.bin", 10, "", ErrFailed},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := c.ReadFile(testCtx(t), root, tt.path, tt.max)
			if !errors.Is(err, tt.wantErr) || string(got) != tt.want {
				t.Errorf("ReadFile(%q) = %q, %v; want %q, %v", tt.path, got, err, tt.want, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
}

// TestResponseBodyCancel: closing a streaming body early cancels the request in the
// executor, and the RoundTripper keeps working.
func TestResponseBodyCancel(t *testing.T) {
	c := dialKinds(t)["websocket"]
	release := make(chan struct{})
	canceled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			close(canceled)
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	hc := &http.Client{Transport: c.RoundTripper(nil)}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, srv.URL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), "data: first") {
		t.Fatalf("first SSE event = %q, %v", buf[:n], err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("Read after Close succeeded")
	}
	select {
	case <-canceled:
	case <-req.Context().Done():
		t.Fatal("closing the body did not cancel the request in the executor")
	}
}

// TestResponseBodyOverflow: a body nobody reads while the server keeps sending fails with
// ErrStreamOverflow once StreamBuffer bytes are unread, and the request is canceled in the
// executor (the upstream handler sees its request end) instead of being buffered.
func TestResponseBodyOverflow(t *testing.T) {
	ex := startExecutor(t, "ws://127.0.0.1:0", baseEnv(t))
	log, _ := testLogger(t)
	c, err := Dial(testCtx(t), Config{Name: "small", URL: ex.URL, Token: execToken, Logger: log, StreamBuffer: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	canceled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("y", 32<<10))
		for range 64 { // 2 MiB
			if _, err := w.Write(chunk); err != nil {
				break
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		close(canceled)
	}))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, srv.URL, nil)
	resp, err := (&http.Client{Transport: c.RoundTripper(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	select {
	case <-canceled:
	case <-req.Context().Done():
		t.Fatal("an overflowing body was not canceled in the executor")
	}
	if _, err := io.Copy(io.Discard, resp.Body); !errors.Is(err, ErrStreamOverflow) {
		t.Errorf("reading the overflowed body: %v, want ErrStreamOverflow", err)
	}
}
