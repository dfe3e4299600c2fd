package frontdoor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

var (
	exampleBin string // the example MCP server
	wardenBin  string // the warden command (go build ./cmd/warden)
)

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, &wardenBin)) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return c
}

// writeFile writes a test file, creating its directories.
var writeFile = testmain.WriteFile

// home is a warden home for the front-door tests:
//
//   - plain: the example server, `slow` disabled in config;
//   - off: enabled = false (listed, disabled);
//   - bad__name: a name holding the separator, which is only a label: bad__name__echo;
//   - broken: a command that does not exist (failed);
//   - the plugin guarded@1 in the plugins dir: server "guarded" governed by the guard test
//     policy (denies the tool `fail`, denies calls of `add`, rewrites `echo`'s arguments).
type home struct {
	dir, plugins, root string
}

func (h home) config(extra string) string {
	return fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", h.plugins) +
		fmt.Sprintf("[mcp_servers.plain]\ncommand = %q\ndisabled_tools = [\"slow\"]\n\n", exampleBin) +
		"[mcp_servers.off]\ncommand = \"never-started\"\nenabled = false\n\n" +
		fmt.Sprintf("[mcp_servers.bad__name]\ncommand = %q\n\n", exampleBin) +
		"[mcp_servers.broken]\ncommand = \"/nonexistent/warden-no-such-server\"\nstartup_timeout_sec = 5\n\n" +
		extra
}

func newHome(t *testing.T) home {
	t.Helper()
	dir := t.TempDir()
	h := home{dir: filepath.Join(dir, "home"), plugins: filepath.Join(dir, "plugins")}
	h.root = filepath.Join(h.plugins, "guarded")
	writeFile(t, filepath.Join(h.dir, "config.toml"), h.config(""))
	writeFile(t, filepath.Join(h.root, ".codex-plugin", "plugin.json"), `{"name":"guarded","version":"1"}`)
	writeFile(t, filepath.Join(h.root, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{"guarded":{"command":%q}}}`, exampleBin))
	writeFile(t, filepath.Join(h.root, "policy.wasm"), string(testbuild.GoGuest(t, "../testdata/policies/guard")))
	return h
}

// newHost starts a host over the home, closed at cleanup.
func newHost(t *testing.T, dir string) (*host.Host, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	h, err := host.New(testCtx(t), host.Options{
		Home:           dir,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Debug, Output: logs}),
		PolicyCacheDir: testbuild.WazeroCache(t),
	})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return h, logs
}

// wantTools is the tool list a thread of the home shows through the front door: every
// example tool of bad__name, of plain but slow, of guarded but fail; nothing of off or
// broken.
func wantTools() []string {
	all := []string{"add", "echo", "env", "fail", "header_digest", "headers", "set_tools", "slow"}
	var out []string
	for _, tl := range all {
		out = append(out, "bad__name__"+tl)
	}
	for _, tl := range all {
		if tl != "fail" {
			out = append(out, "guarded__"+tl)
		}
	}
	for _, tl := range all {
		if tl != "slow" {
			out = append(out, "plain__"+tl)
		}
	}
	return out
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// listChanged counts notifications/tools/list_changed a client received.
type listChanged struct {
	ch chan struct{}
}

func newListChanged() *listChanged { return &listChanged{ch: make(chan struct{}, 64)} }

func (l *listChanged) handler(context.Context, *mcp.ToolListChangedRequest) {
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

// wait waits for a list_changed after which cond holds.
func (l *listChanged) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-l.ch:
			if cond() {
				return
			}
		case <-deadline:
			t.Fatalf("no notifications/tools/list_changed leading to %s", what)
		}
	}
}

// exercise runs the checks every transport must pass on a session of a thread of the home.
func exercise(t *testing.T, cs *mcp.ClientSession, changed *listChanged) {
	t.Helper()
	if got, want := toolNames(t, cs), wantTools(); !slices.Equal(got, want) {
		t.Fatalf("tools/list =\n%q\nwant\n%q", got, want)
	}
	// Definitions are the upstream's.
	res, err := cs.ListTools(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "plain__echo" {
			in, _ := json.Marshal(tl.InputSchema)
			out, _ := json.Marshal(tl.OutputSchema)
			if tl.Description != "Echo the given text back." || !strings.Contains(string(in), `"text"`) || !strings.Contains(string(out), `"server"`) {
				t.Errorf("plain__echo = %+v (input %s, output %s)", tl, in, out)
			}
		}
	}

	echo := callTool(t, cs, "plain__echo", map[string]any{"text": "hello"})
	if echo.IsError || textOf(echo) != "hello" || structured(t, echo)["text"] != "hello" || structured(t, echo)["server"] == nil {
		t.Errorf("plain__echo = %+v", echo)
	}
	failed := callTool(t, cs, "plain__fail", map[string]any{"message": "upstream says no"})
	if !failed.IsError || textOf(failed) != "upstream says no" {
		t.Errorf("plain__fail = %+v, want the upstream tool error unchanged", failed)
	}
	// The tool_call hook runs: a denial is a tool error with the policy's reason, a rewrite
	// changes the arguments.
	denied := callTool(t, cs, "guarded__add", map[string]any{"a": 1, "b": 2})
	if !denied.IsError || !strings.Contains(textOf(denied), "guard blocks add") || !strings.Contains(textOf(denied), "guarded__add") {
		t.Errorf("guarded__add = %+v, want a tool error with the policy's reason", denied)
	}
	if r := callTool(t, cs, "guarded__echo", map[string]any{"text": "original"}); textOf(r) != "rewritten by guard" {
		t.Errorf("guarded__echo = %q, want the arguments rewritten by the policy", textOf(r))
	}
	if _, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "plain__slow", Arguments: map[string]any{"ms": 1}}); err == nil {
		t.Errorf("plain__slow (disabled in config) was callable")
	}
	if _, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "guarded__fail", Arguments: map[string]any{"message": "x"}}); err == nil {
		t.Errorf("guarded__fail (denied by policy) was callable")
	}

	// The upstream server changes its tools: the client is told, and the list follows.
	callTool(t, cs, "plain__set_tools", map[string]any{"tools": []string{"echo", "set_tools"}})
	changed.wait(t, "plain's new tools", func() bool {
		got := toolNames(t, cs)
		return !slices.Contains(got, "plain__add") && slices.Contains(got, "plain__echo") && slices.Contains(got, "guarded__add")
	})
	callTool(t, cs, "plain__set_tools", map[string]any{"tools": []string{"echo", "add", "env", "fail", "header_digest", "headers", "set_tools", "slow"}})
	changed.wait(t, "plain's tools restored", func() bool { return slices.Equal(toolNames(t, cs), wantTools()) })
}

// httpClient returns a client with its own transport (closed at cleanup, so no idle
// connection outlives the test) adding header to every request.
func httpClient(t *testing.T, header http.Header) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: headerRT{base: tr, h: header}}
}

type headerRT struct {
	base http.RoundTripper
	h    http.Header
}

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range rt.h {
		r.Header[k] = slices.Clone(vs)
	}
	return rt.base.RoundTrip(r)
}

// unixHTTP maps a front-door URL on a Unix socket (unix:///path/threads/ID/mcp) to an
// http://localhost URL and a client that dials the socket; other URLs pass through.
func unixHTTP(t *testing.T, url string, header http.Header) (string, *http.Client) {
	rest, ok := strings.CutPrefix(url, "unix://")
	if !ok {
		return url, httpClient(t, header)
	}
	sock, path, _ := strings.Cut(rest, "/threads/")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return "http://localhost/threads/" + path, &http.Client{Transport: headerRT{base: tr, h: header}}
}

// connectHTTP connects an MCP client to a front-door thread URL (http:// or unix://).
func connectHTTP(t *testing.T, url string, header http.Header, changed *listChanged) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "frontdoor-test", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: changed.handler})
	endpoint, hc := unixHTTP(t, url, header)
	cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func quote(s string) string { return strconv.Quote(s) }
