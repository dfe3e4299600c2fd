package leaktest

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// testToken is the upstream's bearer token in these tests.
const testToken = "leaktest-upstream-token-0123456789"

// upstream is a small JSON-RPC responder over coder/websocket standing for any upstream
// the proxy may sit in front of: it answers initialize with a full set of capabilities,
// test/result with its params as the result, and every other request with
// {"received": <the message as it arrived>}, so that a
// client sees exactly what reached the upstream. It records the Authorization header of
// every accepted upgrade and every message it received.
type upstream struct {
	url string

	mu       sync.Mutex
	auths    []string
	received []string
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{url: "ws://" + ln.Addr().String() + "/"}
	ctx, cancel := context.WithCancel(context.Background())
	var conns sync.WaitGroup
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+testToken)) != 1 {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			conns.Add(1)
			defer conns.Done()
			u.mu.Lock()
			u.auths = append(u.auths, r.Header.Get("Authorization"))
			u.mu.Unlock()
			u.serve(ctx, c)
		}),
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
		conns.Wait()
		<-served
	})
	return u
}

func (u *upstream) serve(ctx context.Context, c *websocket.Conn) {
	defer c.CloseNow()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		u.mu.Lock()
		u.received = append(u.received, string(data))
		u.mu.Unlock()
		var msg protocol.Message
		if err := json.Unmarshal(data, &msg); err != nil || msg.ID == nil {
			continue
		}
		var result any = map[string]json.RawMessage{"received": data}
		if msg.Method == "test/result" {
			result = msg.Params
		}
		if msg.Method == protocol.MethodInitialize {
			result = protocol.InitializeResult{
				ProtocolVersion: protocol.Version,
				SessionID:       "ses_test",
				Capabilities:    protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true, FSRead: true},
				EnvironmentInfo: protocol.EnvironmentInfo{OS: "linux", Arch: "amd64", Version: "0.0.0"},
				MCPServers:      map[string]json.RawMessage{"node_repl": json.RawMessage(`{"url":"http://127.0.0.1:9/mcp","bearer_token_env_var":"NODE_TOKEN"}`)},
			}
		}
		raw, err := json.Marshal(result)
		if err != nil {
			return
		}
		out, err := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: msg.ID, Result: raw})
		if err != nil {
			return
		}
		if err := c.Write(ctx, websocket.MessageText, out); err != nil {
			return
		}
	}
}

func (u *upstream) Auths() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auths...)
}

func (u *upstream) Received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.received...)
}

// testCtx bounds a test's blocking calls; the bound is a failure limit, not a pacing.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial connects a client to the proxy with the upstream's token.
func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(testCtx(t), url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(protocol.MaxMessageBytes)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// call sends one JSON text frame and returns the next frame read, decoded.
func call(t *testing.T, c *websocket.Conn, msg string) map[string]any {
	t.Helper()
	ctx := testCtx(t)
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read the answer to %s: %v", msg, err)
	}
	return decode(t, string(data))
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return m
}
