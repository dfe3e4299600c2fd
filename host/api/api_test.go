package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/protocol"
)

const secret = "wrdn-SECRET-5b1d"

// sameJSON fails unless want and got are the same JSON value.
func sameJSON(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// wantError fails unless r is an error response with the code whose message contains
// every fragment.
func wantError(t *testing.T, r protocol.Response, code int64, fragments ...string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("want error %d, got result %s", code, r.Result)
	}
	if r.Error.Code != code {
		t.Fatalf("error code %d (%s), want %d", r.Error.Code, r.Error.Message, code)
	}
	for _, f := range fragments {
		if !strings.Contains(r.Error.Message, f) {
			t.Errorf("error message %q does not contain %q", r.Error.Message, f)
		}
	}
	if strings.Contains(r.Error.Message, secret) || strings.Contains(string(r.Error.Data), secret) {
		t.Errorf("error contains a param value: %s %s", r.Error.Message, r.Error.Data)
	}
}

// TestRouting sends every golden request of package protocol and expects the golden
// response, with the Backend receiving exactly the decoded golden params.
func TestRouting(t *testing.T) {
	gs := goldens(t)
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		var initGolden golden
		for _, g := range gs {
			types := map[string]any{
				protocol.MethodInitialize:          new(protocol.InitializeResponse),
				protocol.MethodThreadStart:         new(protocol.ThreadStartResponse),
				protocol.MethodThreadList:          new(protocol.ThreadListResponse),
				protocol.MethodMcpServerStatusList: new(protocol.ListMcpServerStatusResponse),
				protocol.MethodMcpServerToolCall:   new(mcp.CallToolResult),
				protocol.MethodMcpServerReload:     new(protocol.ReloadResponse),
				protocol.MethodMcpServerOauthLogin: new(protocol.McpServerOauthLoginResponse),
			}
			res, ok := types[g.method]
			if !ok {
				t.Fatalf("golden %s: method %q is not routed by this test", g.name, g.method)
			}
			var resp protocol.Response
			if err := json.Unmarshal(g.response, &resp); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(resp.Result, res); err != nil {
				t.Fatal(err)
			}
			b.canned[g.method] = res
			if g.method == protocol.MethodInitialize {
				initGolden = g
			}
		}
		if initGolden.request == nil {
			t.Fatal("no initialize golden")
		}

		c := dial()
		c.send(string(initGolden.request))
		sameJSON(t, initGolden.name, initGolden.response, c.recv())
		for _, g := range gs {
			if g.method == protocol.MethodInitialize {
				continue
			}
			c.send(string(g.request))
			sameJSON(t, g.name, g.response, c.recv())
		}

		// The Backend saw each method once, with the golden params decoded.
		calls := b.recorded()
		if len(calls) != len(gs) {
			t.Fatalf("backend saw %d calls, want %d", len(calls), len(gs))
		}
		for i, g := range gs {
			var req protocol.Request
			if err := json.Unmarshal(g.request, &req); err != nil {
				t.Fatal(err)
			}
			var got call
			for _, c := range calls {
				if c.method == g.method {
					got = c
				}
			}
			want := map[string]any{
				protocol.MethodInitialize:          new(protocol.InitializeParams),
				protocol.MethodThreadStart:         new(protocol.ThreadStartParams),
				protocol.MethodThreadList:          new(protocol.ThreadListParams),
				protocol.MethodMcpServerStatusList: new(protocol.ListMcpServerStatusParams),
				protocol.MethodMcpServerToolCall:   new(protocol.McpServerToolCallParams),
				protocol.MethodMcpServerReload:     new(protocol.ReloadParams),
				protocol.MethodMcpServerOauthLogin: new(protocol.McpServerOauthLoginParams),
			}[g.method]
			if err := protocol.DecodeParams(req.Params, want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got.params); d != "" {
				t.Errorf("call %d (%s): params (-want +got):\n%s", i, g.method, d)
			}
		}
	})
}

// TestInitializeGating: nothing but initialize is served before initialize succeeds,
// and initialize succeeds once.
func TestInitializeGating(t *testing.T) {
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		wantError(t, c.call(1, "thread/list", ""), protocol.CodeNotInitialized, "initialize")
		wantError(t, c.call(2, "mcpServer/tool/call", `{"threadId":"t","server":"s","tool":"x"}`), protocol.CodeNotInitialized)
		wantError(t, c.call(3, "no/such", ""), protocol.CodeMethodNotFound)
		// A notification before initialize gets no answer; the next message is the
		// answer to the next request.
		c.send(`{"jsonrpc":"2.0","method":"thread/start"}`)
		wantError(t, c.call(4, "initialize", `{"clientInfo":{"version":"1"}}`), protocol.CodeInvalidParams, `"clientInfo.name"`)
		wantError(t, c.call(5, "thread/list", ""), protocol.CodeNotInitialized)
		if n := len(b.recorded()); n != 0 {
			t.Fatalf("backend called %d times before initialize", n)
		}

		r := c.call(6, "initialize", `{"clientInfo":{"name":"codex","version":"1"},"capabilities":null}`)
		if r.Error != nil {
			t.Fatalf("initialize: %v", r.Error)
		}
		c.send(`{"jsonrpc":"2.0","method":"initialized"}`) // Codex sends it; accepted silently
		wantError(t, c.call(7, "initialize", `{"clientInfo":{"name":"codex","version":"1"}}`), protocol.CodeInvalidRequest, "already initialized")
		if r := c.call(8, "thread/list", ""); r.Error != nil {
			t.Fatalf("thread/list after initialize: %v", r.Error)
		}
		calls := b.recorded()
		if len(calls) != 2 || calls[0].method != "initialize" || calls[1].method != "thread/list" {
			t.Fatalf("backend calls = %v", calls)
		}
	})
}

// TestErrors covers the JSON-RPC error cases and backend errors.
func TestErrors(t *testing.T) {
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		c.initialize()
		tests := []struct {
			name   string
			send   string
			id     string // the response's id, as JSON
			code   int64
			substr []string
		}{
			{"parse error", `{"jsonrpc":"2.0","id":1,"method":`, "null", protocol.CodeParseError, nil},
			{"parse error garbage", `hello ` + secret, "null", protocol.CodeParseError, nil},
			{"not an object", `"thread/list"`, "null", protocol.CodeInvalidRequest, nil},
			{"empty batch", `[]`, "null", protocol.CodeInvalidRequest, []string{"empty batch"}},
			{"missing method", `{"jsonrpc":"2.0","id":2}`, "2", protocol.CodeInvalidRequest, []string{`"method"`}},
			{"method not a string", `{"jsonrpc":"2.0","id":3,"method":7}`, "3", protocol.CodeInvalidRequest, []string{`"method"`}},
			{"wrong version", `{"jsonrpc":"1.0","id":4,"method":"thread/list"}`, "4", protocol.CodeInvalidRequest, []string{`"jsonrpc"`}},
			{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"thread/list"}`, "null", protocol.CodeInvalidRequest, []string{`"id"`}},
			{"unknown member", `{"jsonrpc":"2.0","id":5,"method":"thread/list","parms":{}}`, "5", protocol.CodeInvalidRequest, []string{`"parms"`}},
			{"params scalar", `{"jsonrpc":"2.0","id":6,"method":"thread/list","params":"` + secret + `"}`, "6", protocol.CodeInvalidRequest, []string{`"params"`}},
			{"unknown method", `{"jsonrpc":"2.0","id":7,"method":"turn/start"}`, "7", protocol.CodeMethodNotFound, []string{`"turn/start"`}},
			{"params array", `{"jsonrpc":"2.0","id":8,"method":"thread/list","params":["` + secret + `"]}`, "8", protocol.CodeInvalidParams, []string{"object"}},
			{"unknown param", `{"jsonrpc":"2.0","id":9,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"x","argumnts":{"token":"` + secret + `"}}}`, "9", protocol.CodeInvalidParams, []string{`unknown field "argumnts"`}},
			{"wrong-case param", `{"jsonrpc":"2.0","id":10,"method":"mcpServerStatus/list","params":{"threadID":"` + secret + `"}}`, "10", protocol.CodeInvalidParams, []string{`unknown field "threadID"`}},
			{"mistyped param", `{"jsonrpc":"2.0","id":11,"method":"thread/list","params":{"limit":"` + secret + `"}}`, "11", protocol.CodeInvalidParams, []string{`"limit"`}},
			{"missing param", `{"jsonrpc":"2.0","id":12,"method":"mcpServer/tool/call","params":{"threadId":"t","tool":"x"}}`, "12", protocol.CodeInvalidParams, []string{`missing field "server"`}},
			{"_meta not declared", `{"jsonrpc":"2.0","id":13,"method":"thread/start","params":{"_meta":{}}}`, "13", protocol.CodeInvalidParams, []string{`"_meta"`}},
			{"backend protocol error", `{"jsonrpc":"2.0","id":"s-14","method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"denied","arguments":{"q":"` + secret + `"}}}`, `"s-14"`, protocol.CodeToolDenied, []string{"not in reviewer threads"}},
			{"backend not supported", `{"jsonrpc":"2.0","id":15,"method":"mcpServer/oauth/login","params":{"name":"unsupported"}}`, "15", protocol.CodeNotSupported, []string{"OAuth login"}},
			{"backend plain error", `{"jsonrpc":"2.0","id":16,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"fail","arguments":{"q":"` + secret + `"}}}`, "16", protocol.CodeInternalError, []string{"upstream exploded"}},
			{"backend panic", `{"jsonrpc":"2.0","id":17,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"panic"}}`, "17", protocol.CodeInternalError, []string{"internal error"}},
			{"backend nil result", `{"jsonrpc":"2.0","id":18,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"nil"}}`, "18", protocol.CodeInternalError, []string{"no result"}},
		}
		for _, tt := range tests {
			c.send(tt.send)
			r := c.response()
			if string(r.ID) != tt.id {
				t.Errorf("%s: id %s, want %s", tt.name, r.ID, tt.id)
			}
			t.Run(tt.name, func(t *testing.T) { wantError(t, r, tt.code, tt.substr...) })
		}

		// The protocol error's data passes through.
		c.send(`{"jsonrpc":"2.0","id":20,"method":"mcpServer/tool/call","params":{"threadId":"t9","server":"s","tool":"denied"}}`)
		r := c.response()
		sameJSON(t, "error data", []byte(`{"threadId":"t9","server":"s","tool":"denied"}`), r.Error.Data)

		// Codex clients leave out "jsonrpc"; ids may be strings or null.
		for _, tt := range []struct{ send, id string }{
			{`{"id":21,"method":"thread/list"}`, "21"},
			{`{"jsonrpc":"2.0","id":"abc","method":"thread/list","params":null}`, `"abc"`},
			{`{"jsonrpc":"2.0","id":null,"method":"thread/list","params":{}}`, "null"},
		} {
			c.send(tt.send)
			r := c.response()
			if r.Error != nil || string(r.ID) != tt.id {
				t.Errorf("%s: got id %s error %v", tt.send, r.ID, r.Error)
			}
		}

		// Notifications never get an answer, not even an error.
		c.send(`{"jsonrpc":"2.0","method":"no/such"}`)
		c.send(`{"jsonrpc":"2.0","method":"thread/list","params":{"bogus":1}}`)
		c.send(``)
		if r := c.call(30, "thread/list", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
	})
}

// TestBatch: batches are answered with an array of the requests' responses.
func TestBatch(t *testing.T) {
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		// initialize inside a batch is handled first, in order, so the requests after it
		// in the same batch see the connection initialized.
		c.send(oneLine(t, `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"b","version":"1"}}},
			{"jsonrpc":"2.0","id":2,"method":"thread/list"}]`))
		got := batchResponses(t, c.recv())
		if len(got) != 2 || got["1"].Error != nil || got["2"].Error != nil {
			t.Fatalf("batch with initialize: %v", got)
		}

		c.send(oneLine(t, `[
			{"jsonrpc":"2.0","id":10,"method":"thread/list"},
			{"jsonrpc":"2.0","method":"thread/list"},
			5,
			{"jsonrpc":"2.0","id":11,"method":"no/such"},
			{"jsonrpc":"2.0","id":12,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"echo"}},
			{"jsonrpc":"2.0","id":13,"method":"thread/start","params":{"kind":"nope"}}
		]`))
		got = batchResponses(t, c.recv())
		if len(got) != 5 {
			t.Fatalf("batch: %d responses, want 5 (no answer to the notification): %v", len(got), got)
		}
		if got["10"].Error != nil || got["12"].Error != nil {
			t.Errorf("batch requests failed: %v %v", got["10"].Error, got["12"].Error)
		}
		if e := got["null"].Error; e == nil || e.Code != protocol.CodeInvalidRequest {
			t.Errorf("invalid element: %v", e)
		}
		if e := got["11"].Error; e == nil || e.Code != protocol.CodeMethodNotFound {
			t.Errorf("unknown method in batch: %v", e)
		}
		if e := got["13"].Error; e == nil || e.Code != protocol.CodeInvalidParams {
			t.Errorf("invalid params in batch: %v", e)
		}

		// A batch of notifications only gets no response at all.
		c.send(`[{"jsonrpc":"2.0","method":"thread/list"},{"jsonrpc":"2.0","method":"initialized"}]`)
		if r := c.call(20, "thread/list", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
	})
}

// oneLine compacts a JSON message: stdio carries one message per line.
func oneLine(t *testing.T, s string) string {
	t.Helper()
	return string(compact(t, []byte(s)))
}

func batchResponses(t *testing.T, msg []byte) map[string]protocol.Response {
	t.Helper()
	var rs []protocol.Response
	if err := json.Unmarshal(msg, &rs); err != nil {
		t.Fatalf("not a batch response: %s", msg)
	}
	out := map[string]protocol.Response{}
	for _, r := range rs {
		out[string(r.ID)] = r
	}
	return out
}

// TestConcurrency: a slow request does not hold up a fast one; responses come back in
// completion order.
func TestConcurrency(t *testing.T) {
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block","arguments":{"n":1}}}`)
		<-b.started
		if r := c.call(2, "thread/list", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
		b.release <- struct{}{}
		if r := c.response(); string(r.ID) != "1" || r.Error != nil {
			t.Fatalf("slow response: id %s, error %v", r.ID, r.Error)
		}
	})
}

// TestConcurrencyBound: a connection has at most MaxConcurrentRequests requests in
// flight; the next waits for a slot.
func TestConcurrencyBound(t *testing.T) {
	b := newBackend()
	s := api.New(b, api.Options{MaxConcurrentRequests: 2})
	waiting := make(chan string, 8)
	api.SetTestHooks(s, func(id string) { waiting <- id }, nil)
	c := stdioClient(t, s)
	c.initialize()
	for i := 1; i <= 3; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block","arguments":{"n":%d}}}`, i, i))
	}
	<-b.started
	<-b.started
	// The third request waits for a slot: both are held by blocked calls, so it cannot have
	// started.
	select {
	case id := <-waiting:
		if id != "3" {
			t.Fatalf("request %s waits for a slot, want 3", id)
		}
	case <-time.After(waitFor):
		t.Fatal("the third request never waited for a slot")
	}
	select {
	case id := <-b.started:
		t.Fatalf("a third request (%s) started beyond the bound of 2", id)
	default:
	}
	b.release <- struct{}{}
	c.response()
	select {
	case <-b.started:
	case <-time.After(waitFor):
		t.Fatal("the third request did not start after a slot freed")
	}
	b.release <- struct{}{}
	b.release <- struct{}{}
	c.response()
	c.response()
}

// TestDisconnectWhileSaturated: with every concurrency slot taken and more requests
// waiting, a disconnect still cancels the requests in flight.
func TestDisconnectWhileSaturated(t *testing.T) {
	served := make(chan struct{}, 1)
	setup := func(s *api.Server) {
		api.SetTestHooks(s, nil, func() {
			select {
			case served <- struct{}{}:
			default: // one signal pending is enough
			}
		})
	}
	transportsWith(t, api.Options{MaxConcurrentRequests: 1}, setup, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		c.initialize()
		for i := 1; i <= 3; i++ {
			c.send(fmt.Sprintf(`{"id":%d,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block","arguments":{"n":%d}}}`, i, i))
		}
		first := <-b.started
		c.close()
		select {
		case id := <-b.cancelled:
			if id != first {
				t.Errorf("cancelled %s, want %s", id, first)
			}
		case <-time.After(waitFor):
			t.Fatal("in-flight request not cancelled after disconnect")
		}
		// Once the connection is served to its end, no request of it can start any more.
		select {
		case <-served:
		case <-time.After(waitFor):
			t.Fatal("ServeConn did not return after the disconnect")
		}
		select {
		case id := <-b.started:
			t.Errorf("request %s started after the disconnect", id)
		default:
		}
	})
}

// TestNotifications: the Backend's notifications reach every initialized connection
// over both transports, minus the methods a connection opted out of, and none before
// initialize.
func TestNotifications(t *testing.T) {
	b := newBackend()
	s := api.New(b, api.Options{NoAuth: true})
	url := wsServer(t, s, "127.0.0.1:0")

	a := stdioClient(t, s)
	a.initialize()
	w, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.call(0, "initialize", `{"clientInfo":{"name":"w","version":"1"},"capabilities":{"optOutNotificationMethods":["mcpServer/tools/updated"]}}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	idle := stdioClient(t, s) // never initialized
	b.waitSubscribers(t, 2)

	errText := "did not start within 1s"
	b.emit(protocol.NotifyMcpServerStartupStatusUpdated, &protocol.McpServerStartupStatusUpdatedNotification{
		ThreadID: "t1", Name: "node_repl", Status: protocol.StartupFailed, Error: &errText})
	b.emit(protocol.NotifyMcpServerToolsUpdated, protocol.McpServerToolsUpdatedNotification{ThreadID: "t1", Name: "docs"})

	wantStatus := []byte(`{"jsonrpc":"2.0","method":"mcpServer/startupStatus/updated","params":{"threadId":"t1","name":"node_repl","status":"failed","error":"did not start within 1s"}}`)
	wantTools := []byte(`{"jsonrpc":"2.0","method":"mcpServer/tools/updated","params":{"threadId":"t1","name":"docs"}}`)
	sameJSON(t, "stdio status", wantStatus, a.recv())
	sameJSON(t, "stdio tools", wantTools, a.recv())
	sameJSON(t, "websocket status", wantStatus, w.recv())
	// w opted out of tools/updated: its next message is the answer to its next request.
	if r := w.call(1, "thread/list", ""); r.Error != nil {
		t.Fatal(r.Error)
	}
	// idle got nothing: its first message is the answer to its first request.
	wantError(t, idle.call(1, "thread/list", ""), protocol.CodeNotInitialized)

	// Closing a connection unsubscribes it.
	a.close()
	a.closed()
	w.close()
	w.closed()
	b.waitSubscribers(t, 0)
}

// TestNotificationQueueOverflow: a client that does not read its notifications is
// disconnected once its queue is full, instead of blocking the Backend.
func TestNotificationQueueOverflow(t *testing.T) {
	b := newBackend()
	s := api.New(b, api.Options{NotificationQueue: 2})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(context.Background(), inR, outW) }()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}`+"\n")
	}()
	buf := make([]byte, 4096)
	if _, err := outR.Read(buf); err != nil { // the initialize response; then stop reading
		t.Fatal(err)
	}
	b.waitSubscribers(t, 1)
	for i := 0; i < 10; i++ { // never blocks
		b.emit(protocol.NotifyMcpServerToolsUpdated, protocol.McpServerToolsUpdatedNotification{ThreadID: "t", Name: "s"})
	}
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "notification queue full") {
			t.Fatalf("ServeStdio = %v, want a queue-full error", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the connection was not closed")
	}
	_ = inW.Close()
	_ = outR.Close()
	if n := b.subscribers(); n != 0 {
		t.Errorf("%d subscribers left", n)
	}
}

// TestDisconnectCancels: closing the connection cancels the context of requests in
// flight.
func TestDisconnectCancels(t *testing.T) {
	transports(t, api.Options{}, func(t *testing.T, b *backend, dial func() *client) {
		c := dial()
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block","arguments":{"n":1}}}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block","arguments":{"n":2}}}`)
		<-b.started
		<-b.started
		c.close()
		for i := 0; i < 2; i++ {
			select {
			case <-b.cancelled:
			case <-time.After(waitFor):
				t.Fatal("in-flight request not cancelled after disconnect")
			}
		}
	})
}

// TestServeStdioContext: cancelling ctx ends ServeStdio, cancels requests in flight and
// closes both pipes.
func TestServeStdioContext(t *testing.T) {
	b := newBackend()
	s := api.New(b, api.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(ctx, inR, outW) }()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	_, _ = io.WriteString(inW, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"x","version":"1"}}}`+"\n")
	_, _ = io.WriteString(inW, `{"id":2,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block"}}`+"\n")
	<-b.started
	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio = %v, want context.Canceled", err)
		}
	case <-time.After(waitFor):
		t.Fatal("ServeStdio did not return")
	}
	<-b.cancelled
	if _, err := io.WriteString(inW, "{}\n"); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("input still open: %v", err)
	}
}

// TestMessageTooLarge: on stdio an oversized line is refused and the connection goes
// on; on a WebSocket the connection is closed with 1009.
func TestMessageTooLarge(t *testing.T) {
	o := api.Options{MaxMessageBytes: 256, NoAuth: true}
	t.Run("stdio", func(t *testing.T) {
		c := stdioClient(t, api.New(newBackend(), o))
		c.initialize()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"thread/list","params":{"cursor":"` + strings.Repeat("x", 1000) + `"}}`)
		r := c.response()
		if string(r.ID) != "null" {
			t.Errorf("id %s, want null", r.ID)
		}
		wantError(t, r, protocol.CodeInvalidRequest, "exceeds 256 bytes")
		if r := c.call(2, "thread/list", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
	})
	t.Run("websocket", func(t *testing.T) {
		url := wsServer(t, api.New(newBackend(), o), "127.0.0.1:0")
		conn, _, err := websocket.Dial(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		_ = conn.Write(context.Background(), websocket.MessageText, []byte(strings.Repeat(" ", 1000)))
		_, _, err = conn.Read(context.Background())
		if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Fatalf("read after an oversized message: %v, want close 1009", err)
		}
	})
}

// TestWebSocketBinary: a binary frame closes the connection with 1003.
func TestWebSocketBinary(t *testing.T) {
	url := wsServer(t, api.New(newBackend(), api.Options{NoAuth: true}), "")
	conn, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	_ = conn.Write(context.Background(), websocket.MessageBinary, []byte(`{"id":1,"method":"thread/list"}`))
	_, _, err = conn.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusUnsupportedData {
		t.Fatalf("read after a binary message: %v, want close 1003", err)
	}
}

// TestListenSecurity: a TCP listener needs a token, or the explicit NoAuth that only a
// loopback address accepts; a token shorter than MinTokenBytes is refused everywhere; with
// a token any address may be bound, and every upgrade must present it.
func TestListenSecurity(t *testing.T) {
	sock := "unix://" + t.TempDir() + "/api.sock"
	for _, c := range []struct {
		o     api.Options
		addrs []string
		want  error
	}{
		{api.Options{}, []string{"", "127.0.0.1:0", "localhost:0", "0.0.0.0:0", ":0", "[::]:0", "example.com:0"}, api.ErrTokenRequired},
		{api.Options{NoAuth: true}, []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:0"}, api.ErrNoAuthNotLoopback},
		{api.Options{Token: secret[:api.MinTokenBytes-1]}, []string{"127.0.0.1:0", "0.0.0.0:0", sock}, api.ErrTokenTooShort},
	} {
		s := api.New(newBackend(), c.o)
		for _, addr := range c.addrs {
			l, err := s.Listen(addr)
			if !errors.Is(err, c.want) {
				if l != nil {
					_ = l.Close()
				}
				t.Errorf("Listen(%q) with %+v = %v, want %v", addr, c.o, err, c.want)
			}
		}
	}
	open := api.New(newBackend(), api.Options{NoAuth: true})
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0"} {
		l, err := open.Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q) with NoAuth: %v", addr, err)
			continue
		}
		if !strings.HasPrefix(l.URL(), "ws://127.0.0.1:") {
			t.Errorf("Listen(%q).URL() = %q", addr, l.URL())
		}
		_ = l.Close()
	}

	const token = "tok-" + secret
	guarded := api.New(newBackend(), api.Options{Token: token})
	url := wsServer(t, guarded, "0.0.0.0:0")
	if !strings.HasPrefix(url, "ws://0.0.0.0:") {
		t.Fatalf("URL = %q", url)
	}
	loop := strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
	for name, h := range map[string]http.Header{
		"no header":    nil,
		"wrong token":  {"Authorization": {"Bearer tok-wrong"}},
		"prefix":       {"Authorization": {"Bearer " + token[:len(token)-1]}},
		"wrong scheme": {"Authorization": {"Basic " + token}},
	} {
		_, resp, err := websocket.Dial(context.Background(), loop, &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: dial = %v (%v), want 401", name, err, resp)
		}
	}
	c, err := dialWS(t, loop, http.Header{"Authorization": {"bearer " + token}})
	if err != nil {
		t.Fatalf("dial with the token: %v", err)
	}
	c.initialize()

	// A token is required on loopback too once it is set.
	url = wsServer(t, guarded, "127.0.0.1:0")
	if _, resp, err := websocket.Dial(context.Background(), url, nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("loopback dial without the token = %v, want 401", err)
	}
}

// TestWebSocketHostAndOrigin: without a token (NoAuth), a request naming a non-loopback
// Host (DNS rebinding) or carrying a foreign browser Origin is refused.
func TestWebSocketHostAndOrigin(t *testing.T) {
	url := wsServer(t, api.New(newBackend(), api.Options{NoAuth: true}), "")
	_, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{Host: "attacker.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: dial = %v, want 403", err)
	}
	_, resp, err = websocket.Dial(context.Background(), url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {"https://attacker.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: dial = %v, want 403", err)
	}
	host := strings.TrimPrefix(url, "ws://")
	c, err := dialWS(t, url, http.Header{"Origin": {"http://" + host}})
	if err != nil {
		t.Fatalf("same-origin dial: %v", err)
	}
	c.initialize()
}

// TestListenAndServe: the helper reports the bound URL, serves, and on cancellation
// closes open connections and returns nil.
func TestListenAndServe(t *testing.T) {
	b := newBackend()
	s := api.New(b, api.Options{NoAuth: true})
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe(ctx, "127.0.0.1:0", func(u string) { urls <- u }) }()
	url := <-urls
	c, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.initialize()
	c.send(`{"id":1,"method":"mcpServer/tool/call","params":{"threadId":"t","server":"s","tool":"block"}}`)
	<-b.started
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ListenAndServe = %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("ListenAndServe did not return")
	}
	<-b.cancelled
	c.closed()
	if err := s.ListenAndServe(context.Background(), "0.0.0.0:0", nil); !errors.Is(err, api.ErrNoAuthNotLoopback) {
		t.Errorf("ListenAndServe on 0.0.0.0 with NoAuth = %v", err)
	}
}

// TestRequestLog: one debug line per request with method, id, latency and code; never
// params.
func TestRequestLog(t *testing.T) {
	logs := &syncBuffer{}
	s := api.New(newBackend(), api.Options{Logger: debugLogger(logs)})
	c := stdioClient(t, s)
	c.initialize()
	c.call(7, "mcpServer/tool/call", `{"threadId":"t","server":"s","tool":"echo","arguments":{"token":"`+secret+`"}}`)
	c.call(8, "mcpServer/tool/call", `{"threadId":"t","server":"s","tool":"denied","arguments":{"token":"`+secret+`"}}`)
	c.call(9, "thread/list", `{"cursor":{"bad":"`+secret+`"}}`)
	c.close()
	c.closed()
	out := logs.String()
	for _, want := range []string{
		"[DEBUG] warden.api: request: method=mcpServer/tool/call id=7 latency=",
		"code=0",
		"id=8 latency=",
		fmt.Sprintf("code=%d", protocol.CodeToolDenied),
		fmt.Sprintf("code=%d", protocol.CodeInvalidParams),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("log contains a param value:\n%s", out)
	}
}

// TestHandler: the handler serves in a caller's own http.Server, with the same checks.
func TestHandler(t *testing.T) {
	b := newBackend()
	hs := httptest.NewServer(api.New(b, api.Options{}).Handler())
	t.Cleanup(hs.Close)
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	c, err := dialWS(t, url+"/any/path", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.initialize()
	if r := c.call(1, "thread/start", `{"kind":"reviewer"}`); r.Error != nil {
		t.Fatal(r.Error)
	}
	_, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{Host: "rebound.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: dial = %v, want 403", err)
	}
	c.close()
	c.closed()
}

// TestUnixSocket: the host API over a Unix socket: the file is 0600, a JSON-RPC round trip
// works without a token (the mode is the authentication), a configured token is still
// required, and the file is gone once Serve has returned.
func TestUnixSocket(t *testing.T) {
	for _, c := range []struct {
		name  string
		token string
	}{{"no token", ""}, {"token", "tok-" + secret}} {
		t.Run(c.name, func(t *testing.T) {
			path := t.TempDir() + "/api.sock"
			// Cleanups run last-registered first: this one after wsServer's has stopped Serve.
			t.Cleanup(func() {
				if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the socket outlived Serve: %v", err)
				}
			})
			url := wsServer(t, api.New(newBackend(), api.Options{Token: c.token}), "unix://"+path)
			if url != "unix://"+path {
				t.Errorf("URL = %q", url)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
				t.Fatalf("socket %v (%v), want a 0600 socket", fi, err)
			}
			if c.token != "" {
				if _, err := dialWS(t, url, nil); err == nil || !strings.Contains(err.Error(), "401") {
					t.Errorf("dial without the configured token = %v, want 401", err)
				}
			}
			h := http.Header{}
			if c.token != "" {
				h.Set("Authorization", "Bearer "+c.token)
			}
			cl, err := dialWS(t, url, h)
			if err != nil {
				t.Fatalf("dial %s: %v", url, err)
			}
			cl.initialize()
			if r := cl.call(1, "thread/start", `{"kind":"reviewer"}`); r.Error != nil {
				t.Fatal(r.Error)
			}
		})
	}
}
