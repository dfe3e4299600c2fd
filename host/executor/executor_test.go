package executor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

func TestInitializeOverWebSocket(t *testing.T) {
	ctx := testCtx(t)
	env := baseEnv(t)
	home := strings.TrimPrefix(env[2], "WARDEN_HOME=")
	writeFile(t, filepath.Join(home, "config.toml"), `
[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
env_http_headers = { "X-Key" = "REMOTE_KEY" }

[mcp_servers.local]
command = "node"
args = ["server.js"]
env_vars = ["NODE_TOKEN"]
`)
	p := startWS(t, env)
	c := dialWS(t, p.url, testToken)
	r := c.initialize(ctx, "")
	if r.ProtocolVersion != protocol.Version || !strings.HasPrefix(r.SessionID, "ses_") || len(r.SessionID) != len("ses_")+32 || r.Resumed {
		t.Errorf("initialize = %+v", r)
	}
	if want := (protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true, FSRead: true}); r.Capabilities != want {
		t.Errorf("capabilities = %+v, want %+v", r.Capabilities, want)
	}
	if r.EnvironmentInfo.OS == "" || r.EnvironmentInfo.Arch == "" {
		t.Errorf("environmentInfo = %+v", r.EnvironmentInfo)
	}
	want := map[string]string{
		"remote": `{"bearer_token_env_var":"REMOTE_TOKEN","env_http_headers":{"X-Key":"REMOTE_KEY"},"url":"https://mcp.example.com/mcp"}`,
		"local":  `{"args":["server.js"],"command":"node","env_vars":["NODE_TOKEN"]}`,
	}
	if len(r.MCPServers) != len(want) {
		t.Errorf("mcpServers = %v", r.MCPServers)
	}
	for name, w := range want {
		if got := string(r.MCPServers[name]); got != w {
			t.Errorf("mcpServers[%s] = %s, want %s", name, got, w)
		}
	}
	// A second initialize on the same connection is refused; the connection stays.
	_, e := c.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1})
	wantCode(t, "second initialize", e, protocol.CodeInvalidRequest)
	// A session id that names nothing.
	c2 := dialWS(t, p.url, testToken)
	_, e = c2.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, ResumeSessionID: "ses_00000000000000000000000000000000"})
	wantCode(t, "resume unknown session", e, protocol.CodeSessionRetired)
	_, e = c2.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 0})
	wantCode(t, "protocol version 0", e, protocol.CodeInvalidParams)
}

func TestCapabilityFlags(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  protocol.Capabilities
	}{
		{"all", nil, protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true, FSRead: true}},
		{"no header env vars", []string{"--no-http-header-env-vars"}, protocol.Capabilities{Processes: true, FSRead: true}},
		{"none", []string{"--no-http-header-env-vars", "--no-processes", "--no-fs-read"}, protocol.Capabilities{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			p := startStdio(t, baseEnv(t, "EXEC_ONLY=x"), tt.flags...)
			c := p.client
			_, e := c.call(ctx, protocol.MethodFSRead, protocol.FSReadParams{Root: "/", Path: "x"})
			wantCode(t, "fs/read before initialize", e, protocol.CodeNotInitialized)
			r := c.initialize(ctx, "")
			if r.Capabilities != tt.want {
				t.Fatalf("capabilities = %+v, want %+v", r.Capabilities, tt.want)
			}
			// What is not announced is enforced.
			_, e = c.call(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "p", Argv: []string{"true"}})
			if !tt.want.Processes {
				wantCode(t, "process/start", e, protocol.CodeForbidden)
			} else if e != nil {
				t.Errorf("process/start: %v", e)
			}
			_, e = c.call(ctx, protocol.MethodFSRead, protocol.FSReadParams{Root: "/", Path: "no-such-file-here"})
			if !tt.want.FSRead {
				wantCode(t, "fs/read", e, protocol.CodeForbidden)
			} else {
				wantCode(t, "fs/read of a missing file", e, protocol.CodeNotFound)
			}
			_, e = c.call(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "r", Method: "GET", URL: "http://127.0.0.1:1/",
				Headers: []protocol.Header{{Name: "X", ValueEnvVar: "EXEC_ONLY"}}})
			if !tt.want.HTTPHeaderEnvVars {
				wantCode(t, "http/request with valueEnvVar", e, protocol.CodeForbidden)
			} else {
				wantCode(t, "http/request to a closed port", e, protocol.CodeFailed)
			}
		})
	}
}

func TestListenGuard(t *testing.T) {
	p := startWS(t, baseEnv(t))
	tests := []struct {
		name, token, origin string
		want                int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"wrong token", "wrong-token-0123456789abcdef", "", http.StatusUnauthorized},
		{"foreign origin", testToken, "https://evil.example", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dialWSRaw(testCtx(t), p.url, tt.token, tt.origin)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("status %d", tt.want)) {
				t.Fatalf("dial = %v, want status %d", err, tt.want)
			}
		})
	}
	// The refused dials did not stop it.
	dialWS(t, p.url, testToken).initialize(testCtx(t), "")
}

func TestExecutorRefusesToListenWithoutToken(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no --token-env", nil, []string{"--listen", "ws://127.0.0.1:0"}, "listens only with a bearer token"},
		{"unset variable", nil, []string{"--listen", "ws://127.0.0.1:0", "--token-env", "EXEC_NO_SUCH"}, "EXEC_NO_SUCH is unset or empty"},
		{"short token", []string{"SHORT=abc"}, []string{"--listen", "ws://127.0.0.1:0", "--token-env", "SHORT"}, "shorter than 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := execCommand(append([]string{"executor"}, tt.args...), baseEnv(t, tt.env...))
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Fatalf("err = %v, output %q; want a failure saying %q", err, out, tt.want)
			}
		})
	}
}

// recordingServer records the headers of every request it gets.
type recordingServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Clone())
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello from upstream")
	}))
	t.Cleanup(rs.Close)
	return rs
}

func TestHTTPHeaderFromExecutorEnvironment(t *testing.T) {
	ctx := testCtx(t)
	const secret = "executor-only-secret-value"
	if _, ok := os.LookupEnv("EXEC_SECRET"); ok {
		t.Fatal("EXEC_SECRET is set in the test process; it must exist in the executor only")
	}
	rs := newRecordingServer(t)
	p := startWS(t, baseEnv(t, "EXEC_SECRET="+secret))
	c := dialWS(t, p.url, testToken)
	c.initialize(ctx, "")

	var res protocol.HTTPRequestResult
	c.mustCall(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "r1", Method: "POST", URL: rs.URL + "/mcp?x=1",
		Headers: []protocol.Header{{Name: "Authorization", ValueEnvVar: "EXEC_SECRET", ValuePrefix: "Bearer "}, {Name: "X-Literal", Value: "lit"}},
		Body:    []byte(`{"jsonrpc":"2.0"}`)}, &res)
	if res.Status != 200 {
		t.Fatalf("status = %d", res.Status)
	}
	from := 0
	var body bytes.Buffer
	for {
		m := c.waitNote(ctx, &from, func(m protocol.Message) bool {
			return m.Method == protocol.NotifyHTTPBody || m.Method == protocol.NotifyHTTPEnd
		})
		if m.Method == protocol.NotifyHTTPEnd {
			var end protocol.HTTPEnd
			_ = json.Unmarshal(m.Params, &end)
			if end.RequestID != "r1" || end.Error != "" {
				t.Fatalf("http/end = %+v", end)
			}
			break
		}
		var b protocol.HTTPBody
		_ = json.Unmarshal(m.Params, &b)
		body.Write(b.Data)
	}
	if body.String() != "hello from upstream" {
		t.Errorf("body = %q", body.String())
	}
	rs.mu.Lock()
	got := rs.seen[0]
	rs.mu.Unlock()
	if got.Get("Authorization") != "Bearer "+secret || got.Get("X-Literal") != "lit" {
		t.Errorf("upstream saw Authorization %q, X-Literal %q", got.Get("Authorization"), got.Get("X-Literal"))
	}

	// An unset variable fails naming the variable; the URL's query is not repeated.
	_, e := c.call(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "r2", Method: "GET", URL: rs.URL + "/mcp?token=query-secret",
		Headers: []protocol.Header{{Name: "Authorization", ValueEnvVar: "EXEC_UNSET"}}})
	wantCode(t, "unset valueEnvVar", e, protocol.CodeFailed)
	if !strings.Contains(e.Message, "EXEC_UNSET") || strings.Contains(e.Message, "query-secret") {
		t.Errorf("error = %q; want it to name EXEC_UNSET and not the query", e.Message)
	}
	// A request that cannot be made: the URL is redacted.
	_, e = c.call(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "r3", Method: "GET", URL: "http://user:pw-secret@127.0.0.1:1/p?q=query-secret"})
	wantCode(t, "connection refused", e, protocol.CodeFailed)
	if strings.Contains(e.Message, "secret") || !strings.Contains(e.Message, "http://127.0.0.1:1/p") {
		t.Errorf("error = %q; want the redacted URL", e.Message)
	}
	if strings.Contains(p.stderr.String(), secret) {
		t.Error("the executor logged the secret")
	}
}

// sseServer sends one event, waits for release (or the request's end), then sends a
// second one.
func sseServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: second\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func bodyNote(t *testing.T, m protocol.Message) protocol.HTTPBody {
	var b protocol.HTTPBody
	if err := json.Unmarshal(m.Params, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTTPStreamsEventByEvent(t *testing.T) {
	ctx := testCtx(t)
	release := make(chan struct{})
	srv := sseServer(t, release)
	p := startStdio(t, baseEnv(t))
	c := p.client
	c.initialize(ctx, "")
	var res protocol.HTTPRequestResult
	c.mustCall(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "sse", Method: "GET", URL: srv.URL}, &res)
	if len(res.Headers) == 0 || !strings.Contains(fmt.Sprint(res.Headers), "text/event-stream") {
		t.Errorf("headers = %+v", res.Headers)
	}
	from := 0
	isBody := func(m protocol.Message) bool { return m.Method == protocol.NotifyHTTPBody }
	if b := bodyNote(t, c.waitNote(ctx, &from, isBody)); string(b.Data) != "data: first\n\n" {
		t.Fatalf("first chunk = %q", b.Data)
	}
	close(release) // only now does the server send the second event
	if b := bodyNote(t, c.waitNote(ctx, &from, isBody)); string(b.Data) != "data: second\n\n" {
		t.Fatalf("second chunk = %q", b.Data)
	}
	m := c.waitNote(ctx, &from, func(m protocol.Message) bool { return m.Method == protocol.NotifyHTTPEnd })
	var end protocol.HTTPEnd
	_ = json.Unmarshal(m.Params, &end)
	if end.Error != "" {
		t.Errorf("http/end error = %q", end.Error)
	}
}

func TestHTTPCancel(t *testing.T) {
	ctx := testCtx(t)
	srv := sseServer(t, make(chan struct{})) // never released
	p := startStdio(t, baseEnv(t))
	c := p.client
	c.initialize(ctx, "")
	c.mustCall(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "s", Method: "GET", URL: srv.URL}, nil)
	from := 0
	c.waitNote(ctx, &from, func(m protocol.Message) bool { return m.Method == protocol.NotifyHTTPBody })
	c.mustCall(ctx, protocol.MethodHTTPCancel, protocol.HTTPCancelParams{RequestID: "s"}, nil)
	m := c.waitNote(ctx, &from, func(m protocol.Message) bool { return m.Method == protocol.NotifyHTTPEnd })
	var end protocol.HTTPEnd
	_ = json.Unmarshal(m.Params, &end)
	if end.RequestID != "s" || end.Error != "canceled" {
		t.Errorf("http/end = %+v, want error canceled", end)
	}
	_, e := c.call(ctx, protocol.MethodHTTPCancel, protocol.HTTPCancelParams{RequestID: "s"})
	wantCode(t, "cancel of an ended request", e, protocol.CodeNotFound)
}

func TestHTTPProxyFromExecutorEnvironment(t *testing.T) {
	ctx := testCtx(t)
	var (
		mu    sync.Mutex
		lines []string
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lines = append(lines, r.Method+" "+r.RequestURI)
		mu.Unlock()
		fmt.Fprint(w, "via proxy")
	}))
	t.Cleanup(proxy.Close)
	for _, v := range []string{"HTTP_PROXY", "http_proxy"} {
		if os.Getenv(v) != "" {
			t.Fatalf("%s is set in the test process", v)
		}
	}
	p := startWS(t, baseEnv(t, "HTTP_PROXY="+proxy.URL, "NO_PROXY=other.invalid"))
	c := dialWS(t, p.url, testToken)
	c.initialize(ctx, "")
	var res protocol.HTTPRequestResult
	c.mustCall(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "p", Method: "GET", URL: "http://only-executor.invalid/mcp"}, &res)
	if res.Status != 200 {
		t.Fatalf("status = %d", res.Status)
	}
	mu.Lock()
	got := strings.Join(lines, "\n")
	mu.Unlock()
	if got != "GET http://only-executor.invalid/mcp" {
		t.Errorf("proxy saw %q", got)
	}
	// NO_PROXY is honoured: the name is not resolvable without the proxy.
	_, e := c.call(ctx, protocol.MethodHTTPRequest, protocol.HTTPRequestParams{RequestID: "q", Method: "GET", URL: "http://other.invalid/"})
	wantCode(t, "NO_PROXY host", e, protocol.CodeFailed)
}
