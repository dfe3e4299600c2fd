package ui_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/exectest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/thread"
	"github.com/warden-mcp/warden/host/ui"
)

var exampleBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

// Test values, not secrets: the page's bearer token and the in-process executor's.
const (
	pageToken = "ui-test-listener-token-0123456789abcdef"
	execToken = "ui-test-executor-token-0123456789abcdef"
)

// fixture is a real host with a real operator policy that disables a server, a stdio server
// the test can make fail for good, a real executor, and the status page on loopback.
type fixture struct {
	h      *host.Host
	th     *thread.Thread
	url    string // the page's base URL
	gate   string // remove it and the flaky server cannot start again
	logs   *testmain.SyncBuffer
	stop   func() // stops the page's listener and waits for Serve
	served chan error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &fixture{logs: &testmain.SyncBuffer{}}

	execAddr := "127.0.0.1:" + strconv.Itoa(testmain.FreePort(t))
	t.Cleanup(exectest.Serve(t, execAddr, execToken))

	home := t.TempDir()
	testmain.WriteFile(t, filepath.Join(home, "policies", "allow-hosts.wasm"), string(testbuild.GoGuest(t, "../../examples/plugins/allow-hosts")))
	testmain.WriteFile(t, filepath.Join(home, "policies", "guard.wasm"), string(testbuild.GoGuest(t, "../testdata/policies/guard")))
	// flaky runs the example server while the gate file exists, and fails to start after.
	f.gate = filepath.Join(home, "flaky.gate")
	testmain.WriteFile(t, f.gate, "")
	script := filepath.Join(home, "flaky.sh")
	testmain.WriteFile(t, script, fmt.Sprintf("#!/bin/sh\n[ -f %q ] || { echo 'flaky: the gate is closed' >&2; exit 1; }\nexec %q --name ui-flaky\n", f.gate, exampleBin))
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	testmain.WriteFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf(`[[policies]]
path = "policies/allow-hosts.wasm"

[[policies]]
path = "policies/guard.wasm"

# allow-hosts disables an HTTP server whose host is not on its allow list.
[mcp_servers.remote]
url = "http://blocked.invalid/mcp?key=not-shown"

[mcp_servers.docs]
command = %q

[mcp_servers.flaky]
command = %q
`, exampleBin, script))
	testmain.WriteFile(t, filepath.Join(home, "environments.toml"), fmt.Sprintf(
		"[[environments]]\nid = \"exec-1\"\nurl = \"ws://%s/\"\ntoken_env = \"EXEC_TOKEN\"\n", execAddr))

	h, err := host.New(ctx, host.Options{
		Home:           home,
		PolicyCacheDir: testbuild.WazeroCache(t), // compiled once per test run, not per test
		Logger:         hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: f.logs}),
		LookupEnv: func(name string) (string, bool) {
			if name == "EXEC_TOKEN" {
				return execToken, true
			}
			return os.LookupEnv(name)
		},
	})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	f.h = h
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", f.logs.String())
		}
	})
	if f.th, err = h.Threads().Start(ctx, thread.StartParams{}); err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	if _, err := f.th.Status(ctx, "", false); err != nil { // every server started
		t.Fatalf("status: %v", err)
	}
	// One call that policy denies, for the page's recent denials.
	if _, err := f.th.CallTool(ctx, "docs", "add", []byte(`{"a":1,"b":2}`), "ui-test"); err == nil {
		t.Fatal("the guard policy let add through")
	}
	if _, err := f.th.CallTool(ctx, "docs", "echo", []byte(`{"text":"hello"}`), "ui-test"); err != nil {
		t.Fatalf("echo: %v", err)
	}

	page, err := ui.New(h, ui.Options{Token: pageToken, Version: "test",
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: f.logs, Name: "ui"})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := page.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.url = ln.URL()
	sctx, scancel := context.WithCancel(context.Background())
	f.served = make(chan error, 1)
	go func() { f.served <- ln.Serve(sctx) }()
	stopped := false
	f.stop = func() {
		if stopped {
			return
		}
		stopped = true
		scancel()
		select {
		case err := <-f.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5s of its context ending")
		}
	}
	t.Cleanup(f.stop)
	return f
}

// The status page of one real host: its access rules over plain HTTP, the page in a real
// headless Chromium, and the live stream's end at shutdown. One host serves the three (its
// policies compile once); the Chromium part makes a server fail, so it runs after the access
// checks.
func TestStatusPage(t *testing.T) {
	f := newFixture(t)
	t.Run("Access", func(t *testing.T) { testAccess(t, f) })
	t.Run("Chromium", func(t *testing.T) { testChromium(t, f) })
	t.Run("EventsEndOnShutdown", func(t *testing.T) { testEventsEndOnShutdown(t, f) })
}

// In a real headless Chromium the page opens with the token, which the redirect drops from
// the URL; it shows the server policy disabled with the policy's reason; it updates without
// a reload when a server fails; and it holds no secret.
func testChromium(t *testing.T, f *fixture) {
	browser := chromium(t)

	ctx, cancel := context.WithTimeout(browser, 45*time.Second)
	defer cancel()
	do(t, ctx, "open the page with the token",
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(f.url+"/?token="+pageToken),
	)
	loc := value(t, ctx, "the page's location", chromedp.Location())
	if loc != f.url+"/" {
		t.Errorf("after the redirect the page is at %q, want %q (the token dropped)", loc, f.url+"/")
	}
	waitDOM(t, ctx, "the disabled server's reason",
		`(() => { const r = document.querySelector('tr.server[data-server="remote"]');
		  return r && r.dataset.status === "disabled" && r.querySelector("td.reason").textContent.includes("host blocked.invalid is not in the allow list") })()`)
	waitDOM(t, ctx, "the live stream", `document.getElementById("live").dataset.state === "live"`)
	waitDOM(t, ctx, "flaky ready", `(() => { const r = document.querySelector('tr.server[data-server="flaky"]'); return r && r.dataset.status === "ready" })()`)
	waitDOM(t, ctx, "the denied call in the recent denials",
		`[...document.querySelectorAll('tr.denial[data-hook="tool_call"]')].some(r => r.textContent.includes("guard blocks add"))`)
	value(t, ctx, "mark the document", chromedp.Evaluate[int](`window.wardenMarker = 42`))

	// The flaky server fails for good: its gate is closed and its process killed.
	if err := os.Remove(f.gate); err != nil {
		t.Fatal(err)
	}
	pid := 0
	for _, s := range f.h.Status().Sessions {
		if s.Server == "flaky" {
			pid = s.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no process for flaky in %+v", f.h.Status().Sessions)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	waitDOM(t, ctx, "flaky failed, without a reload",
		`(() => { const r = document.querySelector('tr.server[data-server="flaky"]'); return r && r.dataset.status === "failed" })()`)
	marker := value(t, ctx, "the document's mark", chromedp.Evaluate[int](`window.wardenMarker || 0`))
	cookie := value(t, ctx, "the document's cookies", chromedp.Evaluate[string](`document.cookie`))
	html := value(t, ctx, "the document", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if marker != 42 {
		t.Error("the page was reloaded: the update should have come over the live stream")
	}
	if cookie != "" {
		t.Errorf("document.cookie = %q: the session cookie must be HttpOnly", cookie)
	}
	for _, secret := range []string{pageToken, execToken, "not-shown"} {
		if strings.Contains(html, secret) {
			t.Errorf("the page holds a secret value (%d bytes)", len(secret))
		}
	}
	if !strings.Contains(html, "exec-1") {
		t.Error("the page does not list the executor exec-1")
	}

	if path := os.Getenv("WARDEN_SCREENSHOT"); path != "" {
		png := value(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s (%d bytes)", path, len(png))
	}
}

// Without the token or the session cookie every path is 401 with no page content; the token
// in the URL sets an HttpOnly, SameSite=Strict cookie that is not the token and redirects to
// the URL without it; the cookie and the Authorization header both open the page.
func testAccess(t *testing.T, f *fixture) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, f.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/", "/?token=wrong-token-of-enough-length", "/?token=", "/events", "/metrics", "/status.json", "/static/app.js"} {
		resp, body := get(path)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %s, want 401", path, resp.Status)
		}
		for _, leak := range []string{"<html", "remote", "flaky", "thr_", "warden_"} {
			if strings.Contains(body, leak) {
				t.Errorf("GET %s without the token answers with page content (%q): %q", path, leak, body)
			}
		}
	}
	_, body := get("/", "Authorization", "Bearer wrong-token-of-enough-length")
	if strings.Contains(body, "<html") {
		t.Error("a wrong bearer token got the page")
	}

	resp, _ := get("/?token=" + pageToken + "&x=1")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?x=1" {
		t.Fatalf("GET /?token=…: %s to %q, want 303 to /?x=1", resp.Status, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies = %d, want 1", len(cookies))
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("cookie %s: HttpOnly=%v SameSite=%v Path=%q, want HttpOnly, Strict, /", c.Name, c.HttpOnly, c.SameSite, c.Path)
	}
	if c.Value == pageToken || strings.Contains(c.Value, pageToken) {
		t.Error("the cookie carries the listener's token")
	}

	resp, body = get("/", "Cookie", c.Name+"="+c.Value)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-server="remote"`) {
		t.Fatalf("GET / with the cookie: %s\n%s", resp.Status, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != ui.ContentSecurityPolicy {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "style=") || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Error("the page has inline script or style, or loads something from elsewhere")
	}
	resp, _ = get("/", "Cookie", c.Name+"=forged-"+c.Value)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET / with a forged cookie: %s, want 401", resp.Status)
	}
	resp, body = get("/metrics", "Authorization", "Bearer "+pageToken)
	if resp.StatusCode != 200 || !strings.Contains(body, "warden_decisions_total") || !strings.Contains(body, `warden_policy_latency_seconds_count{hook="servers",plugin="allow-hosts"}`) {
		t.Errorf("GET /metrics with the token: %s\n%.2000s", resp.Status, body)
	}
	resp, body = get("/status.json", "Authorization", "Bearer "+pageToken)
	if resp.StatusCode != 200 || !strings.Contains(body, "host blocked.invalid is not in the allow list") {
		t.Errorf("GET /status.json with the token: %s\n%.2000s", resp.Status, body)
	}
	if strings.Contains(body, "not-shown") {
		t.Error("status.json holds the server URL's query string")
	}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer "+pageToken)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /: %s, want 405", resp.Status)
		}
	}
}

// The live stream sends the rendered content at once and ends when the listener stops.
func testEventsEndOnShutdown(t *testing.T, f *fixture) {
	req, _ := http.NewRequest(http.MethodGet, f.url+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+pageToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sawEvent, sawData := false, false
	for sc.Scan() && !(sawEvent && sawData) {
		line := sc.Text()
		sawEvent = sawEvent || line == "event: status"
		sawData = sawData || (sawEvent && strings.Contains(line, `data-server="remote"`))
	}
	if !sawEvent || !sawData {
		t.Fatalf("no status event with the content: %v", sc.Err())
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	f.stop()
	select {
	case err := <-ended:
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Logf("stream ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end within 5s of the listener stopping")
	}
}

// chromium starts one headless browser for the test (closed at cleanup) and returns its
// context. Without chromium the test fails: `make tools` installs Debian's package.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROME_PATH")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Fatal("no Chromium found (looked for $CHROME_PATH, chromium, chromium-browser, google-chrome, headless-shell on $PATH): run `make tools`, which installs Debian's chromium package")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	// Start the browser now, so that one that cannot start fails here. The first run's
	// context is the browser's lifetime (chromedp.Run): it is bounded by a timer instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	select {
	case err := <-started:
		if err != nil {
			bcancel()
			acancel()
			t.Fatalf("starting %s: %v", path, err)
		}
	case <-time.After(30 * time.Second):
		bcancel()
		acancel()
		<-started
		t.Fatalf("%s did not start within 30s", path)
	}
	t.Cleanup(func() {
		bcancel() // closes the browser's tab and the browser
		acancel() // waits for the process to exit
	})
	return bctx
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// waitDOM waits, in the page, until the JavaScript expression is true, at most 15 s.
func waitDOM(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("content").innerText`))
		t.Fatalf("waiting for %s: %v\npage content:\n%s", what, err, text)
	}
}
