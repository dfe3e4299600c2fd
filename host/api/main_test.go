package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/protocol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const waitFor = 10 * time.Second

// ----- the Backend at the package boundary -----

// backend records every call and answers with canned protocol values. A few tool
// names select other behaviour: "block" waits for a release or its context, "fail"
// returns a plain error, "denied" a wrapped protocol error, "panic" panics.
type backend struct {
	canned map[string]any // method → result

	mu      sync.Mutex
	calls   []call
	subs    map[int]func(string, any)
	next    int
	changed chan struct{} // closed (and replaced) whenever subs changes

	started   chan string   // a "block" call started (its id argument)
	release   chan struct{} // one send releases one "block" call
	cancelled chan string   // a "block" call saw its context end
}

type call struct {
	method string
	params any
}

func newBackend() *backend {
	return &backend{
		canned:    map[string]any{},
		subs:      map[int]func(string, any){},
		changed:   make(chan struct{}),
		started:   make(chan string, 64),
		release:   make(chan struct{}),
		cancelled: make(chan string, 64),
	}
}

func (b *backend) record(method string, p any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, call{method, p})
}

func (b *backend) recorded() []call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]call(nil), b.calls...)
}

func cannedOr[T any](b *backend, method string, def *T) *T {
	if v, ok := b.canned[method]; ok {
		return v.(*T)
	}
	return def
}

func (b *backend) Initialize(_ context.Context, p *protocol.InitializeParams) (*protocol.InitializeResponse, error) {
	b.record(protocol.MethodInitialize, p)
	return cannedOr(b, protocol.MethodInitialize, &protocol.InitializeResponse{
		ServerInfo: protocol.ServerInfo{Name: "warden", Version: "test"}}), nil
}

func (b *backend) StartThread(_ context.Context, p *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error) {
	b.record(protocol.MethodThreadStart, p)
	return cannedOr(b, protocol.MethodThreadStart, &protocol.ThreadStartResponse{
		Thread: protocol.Thread{ID: "t1", Kind: protocol.ThreadKindInteractive}}), nil
}

func (b *backend) ListThreads(_ context.Context, p *protocol.ThreadListParams) (*protocol.ThreadListResponse, error) {
	b.record(protocol.MethodThreadList, p)
	return cannedOr(b, protocol.MethodThreadList, &protocol.ThreadListResponse{}), nil
}

func (b *backend) ListMcpServerStatus(_ context.Context, p *protocol.ListMcpServerStatusParams) (*protocol.ListMcpServerStatusResponse, error) {
	b.record(protocol.MethodMcpServerStatusList, p)
	return cannedOr(b, protocol.MethodMcpServerStatusList, &protocol.ListMcpServerStatusResponse{}), nil
}

func (b *backend) CallTool(ctx context.Context, p *protocol.McpServerToolCallParams) (*mcp.CallToolResult, error) {
	b.record(protocol.MethodMcpServerToolCall, p)
	switch p.Tool {
	case "block":
		id := string(p.Arguments)
		b.started <- id
		select {
		case <-b.release:
		case <-ctx.Done():
			b.cancelled <- id
			return nil, ctx.Err()
		}
	case "fail":
		return nil, errors.New("upstream exploded")
	case "denied":
		return nil, fmt.Errorf("policy: %w", protocol.ToolDenied(p.ThreadID, p.Server, p.Tool, "not in reviewer threads"))
	case "panic":
		panic("boom")
	case "nil":
		return nil, nil
	}
	return cannedOr(b, protocol.MethodMcpServerToolCall, &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}), nil
}

func (b *backend) Reload(_ context.Context, p *protocol.ReloadParams) (*protocol.ReloadResponse, error) {
	b.record(protocol.MethodMcpServerReload, p)
	return cannedOr(b, protocol.MethodMcpServerReload, &protocol.ReloadResponse{}), nil
}

func (b *backend) OauthLogin(_ context.Context, p *protocol.McpServerOauthLoginParams) (*protocol.McpServerOauthLoginResponse, error) {
	b.record(protocol.MethodMcpServerOauthLogin, p)
	if p.Name == "unsupported" {
		return nil, protocol.NotSupported("OAuth login")
	}
	return cannedOr(b, protocol.MethodMcpServerOauthLogin, &protocol.McpServerOauthLoginResponse{}), nil
}

func (b *backend) Subscribe(fn func(string, any)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = fn
	b.subsChangedLocked()
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
		b.subsChangedLocked()
	}
}

func (b *backend) subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// subsChangedLocked wakes waitSubscribers; b.mu is held.
func (b *backend) subsChangedLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// waitSubscribers waits until b has exactly n subscribers.
func (b *backend) waitSubscribers(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		b.mu.Lock()
		got, changed := len(b.subs), b.changed
		b.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting for %d subscribers (have %d)", n, got)
		}
	}
}

func (b *backend) emit(method string, params any) {
	b.mu.Lock()
	fns := make([]func(string, any), 0, len(b.subs))
	for _, fn := range b.subs {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn(method, params)
	}
}

// ----- clients over the two transports -----

// client is one connection as a test sees it: raw messages in and out.
type client struct {
	t     *testing.T
	msgs  chan []byte
	send_ func(string) error
	close func()
}

func (c *client) send(raw string) {
	c.t.Helper()
	if err := c.send_(raw); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// recv returns the next message from the server.
func (c *client) recv() []byte {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatal("connection closed while waiting for a message")
		}
		return m
	case <-time.After(waitFor):
		c.t.Fatal("timed out waiting for a message")
	}
	return nil
}

// closed waits for the server to end the connection, skipping messages.
func (c *client) closed() {
	c.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case _, ok := <-c.msgs:
			if !ok {
				return
			}
		case <-deadline:
			c.t.Fatal("timed out waiting for the connection to close")
		}
	}
}

// response reads the next message as a single response.
func (c *client) response() protocol.Response {
	c.t.Helper()
	m := c.recv()
	var r protocol.Response
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.JSONRPC != "2.0" {
		c.t.Fatalf("not a response: %s (%v)", m, err)
	}
	return r
}

// call sends a request and reads its response (the next message).
func (c *client) call(id int, method, params string) protocol.Response {
	c.t.Helper()
	if params == "" {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method))
	} else {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	}
	r := c.response()
	if string(r.ID) != fmt.Sprint(id) {
		c.t.Fatalf("response id %s, want %d", r.ID, id)
	}
	return r
}

func (c *client) initialize() {
	c.t.Helper()
	if r := c.call(0, "initialize", `{"clientInfo":{"name":"test","version":"1"}}`); r.Error != nil {
		c.t.Fatalf("initialize: %v", r.Error)
	}
}

func newClient(t *testing.T) *client {
	return &client{t: t, msgs: make(chan []byte, 256)}
}

// drain consumes messages until the channel closes, so the transport's reader is never
// stuck on a test that stopped reading.
func (c *client) drain() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range c.msgs {
		}
		close(done)
	}()
	return done
}

// stdioClient serves a connection over two io.Pipes.
func stdioClient(t *testing.T, s *api.Server) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeStdio(ctx, inR, outW) }()

	c := newClient(t)
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				c.msgs <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				close(c.msgs)
				return
			}
		}
	}()
	c.send_ = func(raw string) error {
		_, err := io.WriteString(inW, raw+"\n")
		return err
	}
	c.close = func() { _ = inW.Close() }
	t.Cleanup(func() {
		_ = inW.Close()
		drained := c.drain()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("ServeStdio: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("ServeStdio did not return after its input closed")
			cancel()
			<-served
		}
		cancel()
		_ = outR.Close()
		<-drained
	})
	return c
}

// wsServer serves s on addr until the test ends; it returns the URL.
func wsServer(t *testing.T, s *api.Server, addr string) string {
	t.Helper()
	l, err := s.Listen(addr)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("Serve did not return")
		}
	})
	return l.URL()
}

// dialWS opens a WebSocket client connection; header may be nil. A unix:///path URL is
// dialled over that Unix socket.
func dialWS(t *testing.T, url string, header http.Header) (*client, error) {
	t.Helper()
	ctx := context.Background()
	opts := &websocket.DialOptions{HTTPHeader: header}
	if path, ok := strings.CutPrefix(url, "unix://"); ok {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		t.Cleanup(tr.CloseIdleConnections)
		opts.HTTPClient = &http.Client{Transport: tr}
		url = "ws://localhost/"
	}
	conn, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	c := newClient(t)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.msgs)
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			c.msgs <- b
		}
	}()
	c.send_ = func(raw string) error { return conn.Write(ctx, websocket.MessageText, []byte(raw)) }
	c.close = func() { _ = conn.Close(websocket.StatusNormalClosure, "") }
	t.Cleanup(func() {
		drained := c.drain()
		_ = conn.CloseNow()
		<-readDone
		<-drained
	})
	return c, nil
}

func wsClient(t *testing.T, s *api.Server) *client {
	t.Helper()
	c, err := dialWS(t, wsServer(t, s, "127.0.0.1:0"), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

// transports runs f once per transport, each with a fresh Server on b.
func transports(t *testing.T, o api.Options, f func(t *testing.T, b *backend, dial func() *client)) {
	transportsWith(t, o, nil, f)
}

// transportsWith is transports with setup (if not nil) run on each fresh Server before it
// serves.
func transportsWith(t *testing.T, o api.Options, setup func(*api.Server), f func(t *testing.T, b *backend, dial func() *client)) {
	for _, tr := range []struct {
		name string
		dial func(*testing.T, *api.Server) *client
	}{{"stdio", stdioClient}, {"websocket", wsClient}} {
		t.Run(tr.name, func(t *testing.T) {
			b := newBackend()
			o := o
			o.NoAuth = true // these tests are about the protocol, not the listener's rules
			s := api.New(b, o)
			if setup != nil {
				setup(s)
			}
			var url string
			dial := func() *client {
				if tr.name == "stdio" {
					return tr.dial(t, s)
				}
				if url == "" {
					url = wsServer(t, s, "127.0.0.1:0")
				}
				c, err := dialWS(t, url, nil)
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				return c
			}
			f(t, b, dial)
		})
	}
}

// ----- goldens from package protocol -----

type golden struct {
	name     string
	request  []byte
	response []byte
	method   string
}

func goldens(t *testing.T) []golden {
	t.Helper()
	dir := filepath.Join("..", "protocol", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "*.request.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens in %s: %v", dir, err)
	}
	var out []golden
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".request.json")
		req, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := os.ReadFile(filepath.Join(dir, base+".response.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r protocol.Request
		if err := json.Unmarshal(req, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, golden{base, compact(t, req), compact(t, resp), r.Method})
	}
	return out
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ----- logs -----

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

func debugLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "warden", Level: hclog.Debug, Output: w})
}
