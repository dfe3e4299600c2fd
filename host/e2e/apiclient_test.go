package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/protocol"
)

// apiClient is a minimal JSON-RPC client of the host API, connected to a real api.Server
// (ServeStdio, the MCP stdio framing) over in-process pipes.
type apiClient struct {
	t  testing.TB
	in *io.PipeWriter // to the server

	mu      sync.Mutex
	nextID  int
	pending map[string]chan message
	notes   []protocol.Notification

	served chan error // ServeStdio's result
	read   chan struct{}
}

// message is any message from the server: a response (id) or a notification (method).
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *protocol.Error `json:"error"`
}

// dialAPI serves h's Backend with a real api.Server over pipes and returns a client of it,
// already past initialize. Cleanup closes the connection and waits for the server.
func dialAPI(t testing.TB, h *host.Host) *apiClient {
	t.Helper()
	logs := &syncBuffer{}
	srv := api.New(h.Backend(), api.Options{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &apiClient{t: t, in: inW, pending: map[string]chan message{}, served: make(chan error, 1), read: make(chan struct{})}
	go func() { c.served <- srv.ServeStdio(context.Background(), inR, outW) }()
	go c.readLoop(outR)
	t.Cleanup(func() {
		_ = inW.Close() // EOF: the server ends the connection and closes outW
		if err := <-c.served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		<-c.read
		if t.Failed() {
			t.Logf("api log:\n%s", logs.String())
		}
	})
	var init protocol.InitializeResponse
	if err := c.call(testCtx(t), protocol.MethodInitialize, protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "warden-e2e", Version: "1"}}, &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if init.ServerInfo.Name != "warden" {
		t.Fatalf("initialize: serverInfo = %+v, want name warden", init.ServerInfo)
	}
	return c
}

func (c *apiClient) readLoop(r io.Reader) {
	defer close(c.read)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			c.t.Errorf("host API sent invalid JSON %q: %v", sc.Text(), err)
			continue
		}
		c.mu.Lock()
		if m.ID == nil || string(m.ID) == "null" {
			c.notes = append(c.notes, protocol.Notification{Method: m.Method, Params: m.Params})
		} else if ch, ok := c.pending[string(m.ID)]; ok {
			delete(c.pending, string(m.ID))
			ch <- m
		} else {
			c.t.Errorf("host API answered unknown id %s", m.ID)
		}
		c.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// call sends one request and decodes its result into out (nil: discard). A JSON-RPC error is
// returned as a *protocol.Error.
func (c *apiClient) call(ctx context.Context, method string, params, out any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	req, err := json.Marshal(protocol.Request{JSONRPC: protocol.Version, ID: json.RawMessage(id), Method: method, Params: p})
	if err != nil {
		return err
	}
	if _, err := c.in.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("%s: writing: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("%s: decoding result %s: %w", method, m.Result, err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// notifications returns the notifications received so far.
func (c *apiClient) notifications() []protocol.Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]protocol.Notification(nil), c.notes...)
}

// waitNotification waits until a received notification satisfies match, failing the test
// when ctx ends first.
func (c *apiClient) waitNotification(ctx context.Context, match func(protocol.Notification) bool) {
	c.t.Helper()
	for {
		for _, n := range c.notifications() {
			if match(n) {
				return
			}
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("no matching notification among %+v: %v", c.notifications(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// startThread runs thread/start and returns the thread id.
func (c *apiClient) startThread(ctx context.Context) string {
	c.t.Helper()
	var res protocol.ThreadStartResponse
	if err := c.call(ctx, protocol.MethodThreadStart, protocol.ThreadStartParams{}, &res); err != nil {
		c.t.Fatalf("thread/start: %v", err)
	}
	if res.Thread.ID == "" {
		c.t.Fatal("thread/start returned no thread id")
	}
	return res.Thread.ID
}

// status runs mcpServerStatus/list with threadId (and serverName when not "").
func (c *apiClient) status(ctx context.Context, threadID, server string) []protocol.McpServerStatus {
	c.t.Helper()
	p := protocol.ListMcpServerStatusParams{ThreadID: &threadID}
	if server != "" {
		p.ServerName = &server
	}
	var res protocol.ListMcpServerStatusResponse
	if err := c.call(ctx, protocol.MethodMcpServerStatusList, p, &res); err != nil {
		c.t.Fatalf("mcpServerStatus/list: %v", err)
	}
	return res.Data
}

// callTool runs mcpServer/tool/call and returns the raw CallToolResult.
func (c *apiClient) callTool(ctx context.Context, threadID, server, tool string, args any) toolResult {
	c.t.Helper()
	p := protocol.McpServerToolCallParams{ThreadID: threadID, Server: server, Tool: tool, Arguments: mustJSON(c.t, args)}
	var res toolResult
	if err := c.call(ctx, protocol.MethodMcpServerToolCall, p, &res); err != nil {
		c.t.Fatalf("mcpServer/tool/call %s/%s: %v", server, tool, err)
	}
	return res
}

// toolResult is a CallToolResult as it appears on the wire.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text joins the text content blocks.
func (r toolResult) text() string {
	s := ""
	for _, c := range r.Content {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}
