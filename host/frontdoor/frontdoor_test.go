package frontdoor_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

func TestToolNames(t *testing.T) {
	if got := frontdoor.ToolName("docs", "search"); got != "docs__search" {
		t.Errorf("ToolName = %q", got)
	}
	for _, c := range []struct {
		in, server, tool string
		ok               bool
	}{
		{"docs__search", "docs", "search", true},
		{"docs__deep__search", "docs", "deep__search", true}, // split at the first separator
		{"docs_search", "", "", false},
		{"__search", "", "", false},
		{"docs__", "", "", false},
	} {
		s, tl, ok := frontdoor.SplitToolName(c.in)
		if s != c.server || tl != c.tool || ok != c.ok {
			t.Errorf("SplitToolName(%q) = %q, %q, %v", c.in, s, tl, ok)
		}
	}
}

// frontDoor starts a FrontDoor over h, closed at cleanup (before the host).
func frontDoor(t *testing.T, h *host.Host, logs io.Writer) *frontdoor.FrontDoor {
	t.Helper()
	fd := frontdoor.New(h.Threads(), frontdoor.Options{
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "fd", Level: hclog.Debug, Output: logs}),
		Version: "test",
	})
	t.Cleanup(func() {
		if err := fd.Close(); err != nil {
			t.Errorf("FrontDoor.Close: %v", err)
		}
	})
	return fd
}

// serve serves l until the test ends.
func serve(t *testing.T, l *frontdoor.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return")
		}
	})
}

// The front door over streamable HTTP, in process: the namespaced tool set exactly as
// policy exposes it, calls through the tool_call hook, list_changed on upstream changes and
// on a reload, plugin isolation, and 404 for unknown or ended threads.
func TestHTTPFrontDoor(t *testing.T) {
	hm := newHome(t)
	h, logs := newHost(t, hm.dir)
	fd := frontDoor(t, h, logs)
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "guarded@1"}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l)
	if !strings.HasPrefix(l.URL(), "http://127.0.0.1:") || l.ThreadURL(th.ID()) != l.URL()+"/threads/"+th.ID()+"/mcp" {
		t.Errorf("URL %q, ThreadURL %q", l.URL(), l.ThreadURL(th.ID()))
	}

	changed := newListChanged()
	cs := connectHTTP(t, l.ThreadURL(th.ID()), nil, changed)
	if info := cs.InitializeResult(); info == nil || info.ServerInfo.Name != "warden" || info.ServerInfo.Version != "test" {
		t.Errorf("serverInfo = %+v", info)
	}
	exercise(t, cs, changed)

	// A reload adds a server: the thread's queued refresh is applied and the client told.
	writeFile(t, filepath.Join(hm.dir, "config.toml"), hm.config("[mcp_servers.added]\ncommand = "+quote(exampleBin)+"\n"))
	if _, err := h.Threads().Reload(testCtx(t), true); err != nil {
		t.Fatal(err)
	}
	changed.wait(t, "the reloaded server's tools", func() bool { return slices.Contains(toolNames(t, cs), "added__echo") })
	if r := callTool(t, cs, "added__echo", map[string]any{"text": "new"}); textOf(r) != "new" {
		t.Errorf("added__echo = %+v", r)
	}

	// A second thread that did not select the plugin sees none of it.
	other, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	cs2 := connectHTTP(t, l.ThreadURL(other.ID()), nil, newListChanged())
	if got := toolNames(t, cs2); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "guarded__") }) || !slices.Contains(got, "plain__echo") {
		t.Errorf("other thread's tools = %q", got)
	}

	// Unknown and ended threads are 404.
	client := httpClient(t, nil)
	if code := post(t, client, l.ThreadURL("thr_nope")); code != http.StatusNotFound {
		t.Errorf("unknown thread: %d, want 404", code)
	}
	if code := post(t, client, l.URL()+"/elsewhere"); code != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", code)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if code := post(t, client, l.ThreadURL(other.ID())); code != http.StatusNotFound {
		t.Errorf("ended thread: %d, want 404", code)
	}
	if _, err := cs2.ListTools(testCtx(t), nil); err == nil {
		t.Errorf("a session of an ended thread still answers")
	}
	if _, err := fd.Server("thr_nope"); !errors.Is(err, thread.ErrNotFound) {
		t.Errorf("Server(unknown) = %v, want ErrNotFound", err)
	}
}

// post sends an MCP initialize and returns the HTTP status.
func post(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The listener's rules: a token is required on TCP unless NoAuth, which only loopback
// accepts; a short token is refused; with a token every request must carry it (401
// otherwise); without one (NoAuth), a non-loopback Host is refused (DNS rebinding).
func TestListenerAuth(t *testing.T) {
	hm := newHome(t)
	h, logs := newHost(t, hm.dir)
	fd := frontDoor(t, h, logs)
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		addr string
		o    frontdoor.ListenOptions
		want error
	}{
		{"127.0.0.1:0", frontdoor.ListenOptions{}, frontdoor.ErrTokenRequired},
		{"", frontdoor.ListenOptions{}, frontdoor.ErrTokenRequired},
		{"0.0.0.0:0", frontdoor.ListenOptions{}, frontdoor.ErrTokenRequired},
		{"0.0.0.0:0", frontdoor.ListenOptions{NoAuth: true}, frontdoor.ErrNoAuthNotLoopback},
		{"[::]:0", frontdoor.ListenOptions{NoAuth: true}, frontdoor.ErrNoAuthNotLoopback},
		{"example.com:0", frontdoor.ListenOptions{NoAuth: true}, frontdoor.ErrNoAuthNotLoopback},
		{"127.0.0.1:0", frontdoor.ListenOptions{Token: "fifteen-bytes!!"}, frontdoor.ErrTokenTooShort},
		{"unix://" + t.TempDir() + "/s.sock", frontdoor.ListenOptions{Token: "fifteen-bytes!!"}, frontdoor.ErrTokenTooShort},
	} {
		if l, err := fd.Listen(c.addr, c.o); !errors.Is(err, c.want) {
			if l != nil {
				_ = l.Close()
			}
			t.Errorf("Listen(%q, %+v) = %v, want %v", c.addr, c.o, err, c.want)
		}
	}
	wild, err := fd.Listen("0.0.0.0:0", frontdoor.ListenOptions{Token: "a-token-of-16-bytes"})
	if err != nil {
		t.Fatalf("Listen(0.0.0.0:0) with a token: %v", err)
	}
	_ = wild.Close()

	const token = "fd-test-token-7c1e"
	l, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l)
	url := l.ThreadURL(th.ID())
	for name, hdr := range map[string]http.Header{
		"missing": nil,
		"wrong":   {"Authorization": {"Bearer not-" + token}},
		"scheme":  {"Authorization": {"Basic " + token}},
	} {
		c := httpClient(t, hdr)
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(`{}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s token: %d %q, want 401 with WWW-Authenticate", name, resp.StatusCode, body)
		}
		if strings.Contains(string(body), token) {
			t.Errorf("%s token: the response body contains the token", name)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "no-token", Version: "1"}, nil)
	if cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(t, nil)}, nil); err == nil {
		_ = cs.Close()
		t.Errorf("an MCP client without the token connected")
	}
	cs := connectHTTP(t, url, http.Header{"Authorization": {"Bearer " + token}}, newListChanged())
	if got := toolNames(t, cs); !slices.Contains(got, "plain__echo") {
		t.Errorf("tools with the token = %q", got)
	}

	// Without a token (NoAuth), only loopback Host names are served.
	open, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, open)
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, open.ThreadURL(th.ID()), strings.NewReader(`{}`))
	req.Host = "attacker.example"
	resp, err := httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("non-loopback Host without a token: %d, want 403", resp.StatusCode)
	}
}

// The front door over a Unix socket: the file is 0600, a thread is served without a token
// (the mode is the authentication), and the file is removed when Serve returns.
func TestUnixSocketListener(t *testing.T) {
	hm := newHome(t)
	h, logs := newHost(t, hm.dir)
	fd := frontDoor(t, h, logs)
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "guarded@1"}}})
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/mcp.sock"
	l, err := fd.Listen("unix://"+path, frontdoor.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v (%v), want a 0600 socket", fi, err)
	}
	// Cleanups run last-registered first: this one after serve's has stopped the listener.
	t.Cleanup(func() {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket outlived Serve: %v", err)
		}
	})
	serve(t, l)
	cs := connectHTTP(t, l.ThreadURL(th.ID()), nil, newListChanged())
	if got := toolNames(t, cs); !slices.Equal(got, wantTools()) {
		t.Errorf("tools over the Unix socket = %q, want %q", got, wantTools())
	}
}

// Serve runs one session over any transport and returns when the client ends it; Close
// ends the sessions still open.
func TestServeInMemory(t *testing.T) {
	hm := newHome(t)
	h, logs := newHost(t, hm.dir)
	fd := frontDoor(t, h, logs)
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{SelectedRoots: []thread.SelectedRoot{{Location: thread.Location{Path: hm.root}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fd.Serve(testCtx(t), "thr_nope", &mcp.InMemoryTransport{}); !errors.Is(err, thread.ErrNotFound) {
		t.Errorf("Serve(unknown thread) = %v", err)
	}
	ct, st := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- fd.Serve(context.Background(), th.ID(), st) }()
	changed := newListChanged()
	client := mcp.NewClient(&mcp.Implementation{Name: "mem", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: changed.handler})
	cs, err := client.Connect(testCtx(t), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, cs, changed)
	_ = cs.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v after the client closed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after the client closed")
	}
}
