package threads_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/api/threads"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/protocol"
	"github.com/warden-mcp/warden/host/thread"
)

// rpcConn is a JSON-RPC client of a real api.Server served over an in-process pipe (the
// stdio framing: one message per line).
type rpcConn struct {
	t  *testing.T
	in *io.PipeWriter

	mu      sync.Mutex
	next    int
	waiting map[string]chan protocol.Response
	notes   []protocol.Notification
	noted   signal // a notification was appended to notes
	done    chan struct{}
}

func dialAPI(t *testing.T, b api.Backend) *rpcConn {
	t.Helper()
	srv := api.New(b, api.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(ctx, inR, outW) }()
	c := &rpcConn{t: t, in: inW, waiting: map[string]chan protocol.Response{}, done: make(chan struct{})}
	go c.read(outR)
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("ServeStdio did not return after its input closed")
			cancel()
			<-served
		}
		cancel()
		_ = outR.Close()
		<-c.done
	})
	return c
}

func (c *rpcConn) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var probe struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(line, &probe)
			c.mu.Lock()
			if probe.Method != "" && probe.ID == nil {
				var n protocol.Notification
				_ = json.Unmarshal(line, &n)
				c.notes = append(c.notes, n)
				c.noted.notify()
			} else {
				var resp protocol.Response
				_ = json.Unmarshal(line, &resp)
				if ch := c.waiting[string(resp.ID)]; ch != nil {
					ch <- resp
					delete(c.waiting, string(resp.ID))
				}
			}
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// call sends a request and waits for its response.
func (c *rpcConn) call(method string, params any) protocol.Response {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan protocol.Response, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("%s: write: %v", method, err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		c.t.Fatalf("%s: no response", method)
	}
	return protocol.Response{}
}

// result calls method and decodes its result into out (failing on an error response).
func (c *rpcConn) result(method string, params, out any) json.RawMessage {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s: error %d: %s", method, r.Error.Code, r.Error.Message)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero() // no stale map entries from an earlier decode
		if err := json.Unmarshal(r.Result, out); err != nil {
			c.t.Fatalf("%s: decoding %s: %v", method, r.Result, err)
		}
	}
	return r.Result
}

// failure calls method and checks the error code and message fragments.
func (c *rpcConn) failure(method string, params any, code int64, fragments ...string) *protocol.Error {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error == nil {
		c.t.Fatalf("%s: got result %s, want error %d", method, r.Result, code)
	}
	if r.Error.Code != code {
		c.t.Fatalf("%s: error %d (%s), want %d", method, r.Error.Code, r.Error.Message, code)
	}
	for _, f := range fragments {
		if !strings.Contains(r.Error.Message, f) {
			c.t.Errorf("%s: error %q lacks %q", method, r.Error.Message, f)
		}
	}
	return r.Error
}

// waitNote waits for a notification of method whose params contain every fragment.
func (c *rpcConn) waitNote(method string, fragments ...string) {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		noted := c.noted.next()
		c.mu.Lock()
		for _, n := range c.notes {
			if n.Method != method {
				continue
			}
			ok := true
			for _, f := range fragments {
				ok = ok && strings.Contains(string(n.Params), f)
			}
			if ok {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		select {
		case <-noted:
		case <-timeout:
			c.t.Fatalf("no %s notification with %q", method, fragments)
		}
	}
}

// signal broadcasts "something changed" to waiters: next returns a channel that the next
// notify closes. Take it before checking the condition, so a change between the check and
// the wait is not missed. The zero value is ready to use.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// apiFixture is a real host (the example MCP server declared in config.toml; a plugin root
// whose policy is the guard test policy) served through the real API.
type apiFixture struct {
	home, root            string
	plainCount, sideCount string
	h                     *host.Host
	c                     *rpcConn
}

func (f *apiFixture) config(extra string) string {
	return stdioServer("plain", fmt.Sprintf("args = [\"--count-file\", %q]\ndisabled_tools = [\"slow\"]", f.plainCount)) +
		stdioServer("side", fmt.Sprintf("args = [\"--count-file\", %q]", f.sideCount)) +
		"[mcp_servers.off]\ncommand = \"never-started\"\nenabled = false\n\n" + extra
}

func newAPIFixture(t *testing.T) *apiFixture {
	t.Helper()
	dir := t.TempDir()
	f := &apiFixture{
		home:       filepath.Join(dir, "home"),
		root:       filepath.Join(dir, "guarded"),
		plainCount: filepath.Join(dir, "plain.count"),
		sideCount:  filepath.Join(dir, "side.count"),
	}
	writeFile(t, filepath.Join(f.home, "config.toml"), f.config(""))
	writeFile(t, filepath.Join(f.root, ".codex-plugin", "plugin.json"), `{"name":"guarded","version":"1"}`)
	writeFile(t, filepath.Join(f.root, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{"guarded":{"command":%q}}}`, exampleBin))
	writeFile(t, filepath.Join(f.root, "policy.wasm"), string(guardWasm(t)))
	f.h, _ = newHost(t, f.home, host.Options{PolicyCacheDir: testbuild.WazeroCache(t)})
	f.c = dialAPI(t, threads.NewBackend(f.h.Threads(), threads.Options{Version: "9.9.9-test"}))
	return f
}

// The host API end to end: initialize, discovery without a thread (S6), thread/start with
// a plugin root, mcpServerStatus/list with a thread (S6 shape, sessions reused), paging,
// tool calls and their error codes, thread/list, notifications, reload and OAuth.
func TestBackendOverAPI(t *testing.T) {
	f := newAPIFixture(t)
	c := f.c

	var init protocol.InitializeResponse
	c.result(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "backend-test", "version": "1"}}, &init)
	if init.ServerInfo.Name != "warden" || init.ServerInfo.Version != "9.9.9-test" || !init.Capabilities.OauthLogin {
		t.Errorf("initialize = %+v", init)
	}

	// Without a thread (S6): the named server alone, through a discovery connection.
	var page protocol.ListMcpServerStatusResponse
	c.result(protocol.MethodMcpServerStatusList, map[string]any{"serverName": "plain"}, &page)
	if len(page.Data) != 1 || page.Data[0].Name != "plain" || page.Data[0].StartupStatus != protocol.StartupReady ||
		page.Data[0].Tools["echo"] == nil || page.Data[0].Tools["slow"] != nil || page.NextCursor != nil {
		t.Fatalf("discover plain = %s", mustJSON(t, page))
	}
	if n := handshakeCount(t, f.plainCount); n != 1 {
		t.Errorf("discovery made %d session-establishing requests at plain, want 1", n)
	}
	if m := mcpservertest.Methods(t, f.sideCount); len(m) != 0 {
		t.Errorf("discovery of plain reached side: %q", m)
	}
	raw := c.result(protocol.MethodMcpServerStatusList, map[string]any{"serverName": "nope"}, nil)
	sameJSONValue(t, "unknown server name", `{"data":[],"nextCursor":null}`, raw)
	// Without a thread or a name: the whole inventory of a default thread (no plugin).
	c.result(protocol.MethodMcpServerStatusList, map[string]any{}, &page)
	if got := statusNames(page); !slices.Equal(got, []string{"off", "plain", "side"}) {
		t.Errorf("inventory = %q", got)
	}

	// An environment-located root is read through its executor: one that is not
	// configured (or not connected) refuses the selection, naming the root and the
	// environment.
	c.failure(protocol.MethodThreadStart, map[string]any{"selectedCapabilityRoots": []any{map[string]any{
		"id": "remote@1", "location": map[string]any{"type": "environment", "environmentId": "exec-1", "path": "/srv/p"}}}},
		protocol.CodeInvalidParams, `"remote@1"`, `"exec-1"`)
	c.failure(protocol.MethodThreadStart, map[string]any{"selectedCapabilityRoots": []any{map[string]any{
		"id": "missing@1", "location": map[string]any{"type": "local", "path": filepath.Join(f.root, "nope")}}}},
		protocol.CodeInvalidParams, `"missing@1"`)

	var started protocol.ThreadStartResponse
	c.result(protocol.MethodThreadStart, map[string]any{"kind": "interactive", "selectedCapabilityRoots": []any{map[string]any{
		"id": "guarded@1", "location": map[string]any{"type": "local", "path": f.root}}}}, &started)
	tid := started.Thread.ID
	if !strings.HasPrefix(tid, "thr_") || started.Thread.Kind != protocol.ThreadKindInteractive {
		t.Fatalf("thread/start = %+v", started)
	}
	c.waitNote(protocol.NotifyMcpServerStartupStatusUpdated, tid, `"name":"guarded"`, `"status":"ready"`, `"error":null`)
	c.waitNote(protocol.NotifyMcpServerStartupStatusUpdated, tid, `"name":"off"`, `"status":"disabled"`)

	// With the thread: the S6 shape, every member present.
	raw = c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid}, &page)
	if got := statusNames(page); !slices.Equal(got, []string{"guarded", "off", "plain", "side"}) {
		t.Fatalf("thread servers = %q", got)
	}
	var wire struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		t.Fatal(err)
	}
	for _, s := range wire.Data {
		for _, k := range []string{"name", "pluginId", "tools", "toolsError", "authStatus", "startupStatus"} {
			if _, ok := s[k]; !ok {
				t.Errorf("status entry %s lacks %q", s["name"], k)
			}
		}
	}
	byName := map[string]protocol.McpServerStatus{}
	for _, s := range page.Data {
		byName[s.Name] = s
	}
	if g := byName["guarded"]; g.PluginID == nil || *g.PluginID != "guarded@1" || g.Tools["echo"] == nil || g.Tools["fail"] != nil || g.ToolsError != nil {
		t.Errorf("guarded = %s (want plugin guarded@1, echo, no fail: the plugin policy denies it)", mustJSON(t, g))
	}
	if p := byName["plain"]; p.PluginID != nil || p.Tools["slow"] != nil || p.Tools["fail"] == nil || p.AuthStatus != protocol.AuthUnsupported {
		t.Errorf("plain = %s (want no plugin, no slow, fail kept: the plugin policy governs its own servers only)", mustJSON(t, p))
	}
	if o := byName["off"]; o.StartupStatus != protocol.StartupDisabled || o.ToolsError == nil || len(o.Tools) != 0 {
		t.Errorf("off = %s", mustJSON(t, o))
	}
	if echo := byName["plain"].Tools["echo"]; echo == nil || echo.Description == "" || echo.InputSchema == nil {
		t.Errorf("plain echo tool metadata = %+v", echo)
	}
	// S6: status reads with the thread reuse its session and catalog.
	hs, lists := handshakeCount(t, f.plainCount), mcpservertest.Count(t, f.plainCount, "tools/list")
	c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "serverName": "plain"}, &page)
	c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "detail": "toolsAndAuthOnly"}, nil)
	if len(page.Data) != 1 || page.Data[0].Name != "plain" {
		t.Errorf("status of plain in the thread = %s", mustJSON(t, page))
	}
	if handshakeCount(t, f.plainCount) != hs || mcpservertest.Count(t, f.plainCount, "tools/list") != lists {
		t.Errorf("status reads with a threadId reached the server: %q", mcpservertest.Methods(t, f.plainCount))
	}
	raw = c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "serverName": "nope"}, nil)
	sameJSONValue(t, "unknown server name in a thread", `{"data":[],"nextCursor":null}`, raw)

	// Paging.
	var names []string
	var cursor *string
	for i := 0; ; i++ {
		params := map[string]any{"threadId": tid, "limit": 3}
		if cursor != nil {
			params["cursor"] = *cursor
		}
		c.result(protocol.MethodMcpServerStatusList, params, &page)
		names = append(names, statusNames(page)...)
		if cursor = page.NextCursor; cursor == nil || i > 5 {
			break
		}
	}
	if !slices.Equal(names, []string{"guarded", "off", "plain", "side"}) {
		t.Errorf("paged names = %q", names)
	}
	c.failure(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "cursor": "not-a-cursor"}, protocol.CodeInvalidParams, "cursor")

	// Tool calls.
	var res mcp.CallToolResult
	raw = c.result(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "plain", "tool": "echo", "arguments": map[string]any{"text": "hi"}}, nil)
	var echoed struct {
		Content           []map[string]any `json:"content"`
		StructuredContent map[string]any   `json:"structuredContent"`
		IsError           bool             `json:"isError"`
	}
	if err := json.Unmarshal(raw, &echoed); err != nil {
		t.Fatal(err)
	}
	if echoed.IsError || len(echoed.Content) != 1 || echoed.Content[0]["text"] != "hi" || echoed.StructuredContent["text"] != "hi" || echoed.StructuredContent["server"] == nil {
		t.Errorf("echo = %s", raw)
	}
	c.result(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "plain", "tool": "fail", "arguments": map[string]any{"message": "on purpose"}}, &res)
	if !res.IsError || !strings.Contains(fmt.Sprint(mustJSON(t, res.Content)), "on purpose") {
		t.Errorf("fail = %s, want an isError result", mustJSON(t, res))
	}
	perr := c.failure(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "guarded", "tool": "add", "arguments": map[string]any{"a": 1, "b": 2}},
		protocol.CodeToolDenied, "guard blocks add", `"add"`, `"guarded"`)
	sameJSONValue(t, "denied data", fmt.Sprintf(`{"threadId":%q,"server":"guarded","tool":"add"}`, tid), perr.Data)
	c.failure(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "plain", "tool": "slow", "arguments": map[string]any{"ms": 1}},
		protocol.CodeServerNotAvailable, "MCP tool `plain/slow` is not available")
	c.failure(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "off", "tool": "echo"},
		protocol.CodeServerNotAvailable, "MCP tool `off/echo` is not available", "disabled")
	c.failure(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "hidden", "tool": "echo"},
		protocol.CodeServerNotAvailable, "MCP tool `hidden/echo` is not available")
	c.failure(protocol.MethodMcpServerToolCall, map[string]any{"threadId": "thr_nope", "server": "plain", "tool": "echo"},
		protocol.CodeThreadNotFound, `"thr_nope"`)
	c.failure(protocol.MethodMcpServerStatusList, map[string]any{"threadId": "thr_nope"}, protocol.CodeThreadNotFound, `"thr_nope"`)

	// A catalog change at the server is a mcpServer/tools/updated notification.
	c.result(protocol.MethodMcpServerToolCall, map[string]any{"threadId": tid, "server": "side", "tool": "set_tools",
		"arguments": map[string]any{"tools": []string{"echo", "set_tools"}}}, &res)
	c.waitNote(protocol.NotifyMcpServerToolsUpdated, tid, `"name":"side"`)
	c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "serverName": "side"}, &page)
	if len(page.Data) != 1 || len(page.Data[0].Tools) != 2 {
		t.Errorf("side after set_tools = %s", mustJSON(t, page))
	}

	// thread/list pages oldest first.
	var second protocol.ThreadStartResponse
	c.result(protocol.MethodThreadStart, map[string]any{"kind": "reviewer"}, &second)
	var tl protocol.ThreadListResponse
	c.result(protocol.MethodThreadList, map[string]any{"limit": 1}, &tl)
	if len(tl.Data) != 1 || tl.Data[0].ID != tid || tl.NextCursor == nil {
		t.Fatalf("thread/list page 1 = %s", mustJSON(t, tl))
	}
	c.result(protocol.MethodThreadList, map[string]any{"limit": 1, "cursor": *tl.NextCursor}, &tl)
	if len(tl.Data) != 1 || tl.Data[0].ID != second.Thread.ID || tl.Data[0].Kind != protocol.ThreadKindReviewer || tl.NextCursor != nil {
		t.Fatalf("thread/list page 2 = %s", mustJSON(t, tl))
	}

	// Reload: strict adds a newly configured server to the running threads.
	writeFile(t, filepath.Join(f.home, "config.toml"), f.config(stdioServer("added", "")))
	var rl protocol.ReloadResponse
	c.result(protocol.MethodMcpServerReload, map[string]any{"mode": "strict"}, &rl)
	if !slices.Contains(rl.Refreshed, tid) || !slices.Contains(rl.Refreshed, second.Thread.ID) || len(rl.Failed) != 0 {
		t.Errorf("strict reload = %+v", rl)
	}
	c.result(protocol.MethodMcpServerStatusList, map[string]any{"threadId": tid, "serverName": "added"}, &page)
	if len(page.Data) != 1 || page.Data[0].StartupStatus != protocol.StartupReady {
		t.Errorf("added after reload = %s", mustJSON(t, page))
	}
	// The plugin root breaks: strict fails naming the thread that selected it; best-effort
	// refreshes the other thread and reports this one.
	writeFile(t, filepath.Join(f.root, ".mcp.json"), `{"mcpServers": `)
	perr = c.failure(protocol.MethodMcpServerReload, nil, protocol.CodeReloadFailed, tid)
	sameJSONValue(t, "reload failure data", fmt.Sprintf(`{"threadId":%q}`, tid), perr.Data)
	c.result(protocol.MethodMcpServerReload, map[string]any{"mode": "bestEffort"}, &rl)
	if !slices.Equal(rl.Refreshed, []string{second.Thread.ID}) || len(rl.Failed) != 1 || rl.Failed[0].ThreadID != tid || rl.Failed[0].Error == "" {
		t.Errorf("best-effort reload = %+v", rl)
	}

	// OAuth is for streamable HTTP servers; the login itself is tested in host/oauth and e2e.
	c.failure(protocol.MethodMcpServerOauthLogin, map[string]any{"name": "plain"}, protocol.CodeServerNotAvailable, `"plain" does not use OAuth: it is a stdio server`)
	c.failure(protocol.MethodMcpServerOauthLogin, map[string]any{"name": "nope"}, protocol.CodeServerNotAvailable, `no such MCP server named "nope"`)
	c.failure(protocol.MethodMcpServerOauthLogin, map[string]any{"name": "plain", "threadId": "thr_missing"}, protocol.CodeThreadNotFound, "thr_missing")
}

// Subscribe forwards events until cancel; after cancel returns nothing more is delivered.
// A second subscription that stays open marks how far delivery has got: the thread layer
// delivers each event to every subscriber before the next, so once it has seen an event
// that follows a second thread's ready notification, that thread's every notification has
// been offered to the cancelled subscription too.
func TestBackendSubscribeCancel(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), stdioServer("one", ""))
	h, _ := newHost(t, home, host.Options{})
	b := threads.NewBackend(h.Threads(), threads.Options{})
	var mu sync.Mutex
	var got, all []string
	var changed signal // got or all grew
	cancel := b.Subscribe(func(method string, params any) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, method+" "+mustJSON(t, params))
		changed.notify()
	})
	cancelAll := b.Subscribe(func(method string, params any) {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, method+" "+mustJSON(t, params))
		changed.notify()
	})
	defer cancelAll()
	seen := func(in *[]string, th *thread.Thread, status string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(*in, func(s string) bool {
				return strings.Contains(s, protocol.NotifyMcpServerStartupStatusUpdated) && strings.Contains(s, th.ID()) &&
					(status == "" || strings.Contains(s, `"status":"`+status+`"`))
			})
		}
	}
	th := start(t, h, thread.StartParams{})
	eventually(t, 20*time.Second, &changed, "the ready notification", seen(&got, th, "ready"))
	cancel()
	cancel() // idempotent
	mu.Lock()
	n := len(got)
	mu.Unlock()
	second := start(t, h, thread.StartParams{})
	eventually(t, 20*time.Second, &changed, "the second thread's ready notification", seen(&all, second, "ready"))
	third := start(t, h, thread.StartParams{})
	eventually(t, 20*time.Second, &changed, "a notification of a third thread", seen(&all, third, ""))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n {
		t.Errorf("notifications after cancel: %q", got[n:])
	}
}

// eventually waits until cond holds, checking it again at each change sig announces,
// failing the test after within.
func eventually(t *testing.T, within time.Duration, sig *signal, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(within)
	for {
		changed := sig.next()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
	}
}

func handshakeCount(t *testing.T, countPath string) int {
	t.Helper()
	return mcpservertest.Count(t, countPath, "server/discover") + mcpservertest.Count(t, countPath, "initialize")
}

func statusNames(p protocol.ListMcpServerStatusResponse) []string {
	var out []string
	for _, s := range p.Data {
		out = append(out, s.Name)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSONValue(t *testing.T, what, want string, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	wb, _ := json.Marshal(w)
	gb, _ := json.Marshal(g)
	if !bytes.Equal(wb, gb) {
		t.Errorf("%s = %s, want %s", what, gb, wb)
	}
}
