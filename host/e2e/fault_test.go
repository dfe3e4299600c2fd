package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/thread"
)

// The fault tests (fault_*_test.go) break one thing each with real processes — an MCP
// server that crashes, hangs, is slow or answers garbage, an executor that drops or comes
// back downgraded, a plugin replaced by a broken one, a reload under load — and check the
// same four things: every caller gets a result or an error naming the server, the tool and
// the cause, before its own deadline; no thread is lost; other servers keep working; and the
// host recovers once the fault is gone. Each test also checks that it leaked no goroutine.

// faultServerImport is the misbehaving MCP server the fault tests run (see its doc).
const faultServerImport = "github.com/warden-mcp/warden/host/internal/faultserver"

// faultServerBin builds host/internal/faultserver once per run (the shared build cache).
func faultServerBin(t testing.TB) string {
	t.Helper()
	bin, err := testbuild.Binary(faultServerImport, "warden-faultserver")
	if err != nil {
		t.Fatalf("building %s: %v", faultServerImport, err)
	}
	return bin
}

// faultLeaks fails the test if goroutines started during it outlive it. Call it first: its
// check runs as the last cleanup, after the host and the processes are gone.
func faultLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if t.Failed() {
			return // the failure is the story; a leak after it is noise
		}
		if err := goleak.Find(before); err != nil {
			t.Errorf("goroutines leaked: %v", err)
		}
	})
}

// answer is what one caller got.
type answer struct {
	res *mcp.CallToolResult
	err error
}

// failure is the text of a failed call (the error, or the tool error's text), "" when the
// call succeeded.
func (a answer) failure() string {
	switch {
	case a.err != nil:
		return a.err.Error()
	case a.res.IsError:
		return "tool error: " + textOf(a.res)
	}
	return ""
}

// callAsync calls a tool through th in a goroutine; the channel gets the answer.
func callAsync(ctx context.Context, th *thread.Thread, server, tool string, args any) <-chan answer {
	raw, _ := json.Marshal(args)
	ch := make(chan answer, 1)
	go func() {
		res, err := th.CallTool(ctx, server, tool, raw, "fault-test")
		ch <- answer{res, err}
	}()
	return ch
}

// call is callAsync waited for.
func call(t *testing.T, ctx context.Context, th *thread.Thread, server, tool string, args any) answer {
	t.Helper()
	return await(t, ctx, callAsync(ctx, th, server, tool, args), server+"/"+tool)
}

// await waits for a caller's answer; the test's context is the failure bound (an answer
// that never came is an error answer, so await may be used from any goroutine).
func await(t *testing.T, ctx context.Context, ch <-chan answer, what string) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-ctx.Done():
		return answer{err: fmt.Errorf("%s: the caller got no answer before the test's deadline: %w", what, ctx.Err())}
	}
}

// wantOK fails unless the call succeeded with text want ("" accepts any).
func wantOK(t *testing.T, a answer, what, want string) {
	t.Helper()
	if f := a.failure(); f != "" {
		t.Errorf("%s failed: %s", what, f)
		return
	}
	if got := textOf(a.res); want != "" && got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// wantErr fails unless the call failed with an error (not a tool result) whose text holds
// every part, and returns the error.
func wantErr(t *testing.T, a answer, what string, parts ...string) error {
	t.Helper()
	if a.err == nil {
		t.Errorf("%s: got a result (%q, isError %v), want an error", what, textOf(a.res), a.res.IsError)
		return nil
	}
	for _, p := range parts {
		if !strings.Contains(a.err.Error(), p) {
			t.Errorf("%s: error %q does not say %q", what, a.err, p)
		}
	}
	t.Logf("%s: %v", what, a.err)
	return a.err
}

// eventsFIFO is a named pipe for the fault server's --events (methodFIFO's pipe: every
// process started with it writes there, restarts included) and the lines written to it.
func eventsFIFO(t *testing.T) (string, <-chan string) { return methodFIFO(t) }

// waitEvent waits for the line want on events.
func waitEvent(t *testing.T, ctx context.Context, events <-chan string, want string) {
	t.Helper()
	waitMethod(t, ctx, events, want, func(l string) bool { return l == want })
}

// startThread starts a thread with no selected roots.
func startThread(t *testing.T, ctx context.Context, h *host.Host) *thread.Thread {
	t.Helper()
	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	return th
}

// alive checks that no thread was lost: each is still listed by the manager and answers
// its status, and each named server answers echo in the first thread.
func alive(t *testing.T, ctx context.Context, h *host.Host, ths []*thread.Thread, servers ...string) {
	t.Helper()
	for _, th := range ths {
		if got, ok := h.Threads().Thread(th.ID()); !ok || got != th {
			t.Errorf("thread %s is no longer listed", th.ID())
			continue
		}
		if _, err := th.StatusNow(ctx, ""); err != nil {
			t.Errorf("thread %s: status: %v", th.ID(), err)
		}
	}
	for _, s := range servers {
		wantOK(t, call(t, ctx, ths[0], s, "echo", map[string]any{"text": "still here"}), s+"/echo", "still here")
	}
}

// recovers calls server's echo until it answers (the server restarting after its fault),
// within a failure bound; every failure on the way must name the server.
func recovers(t *testing.T, ctx context.Context, th *thread.Thread, server string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var failures []string
	for {
		a := call(t, ctx, th, server, "echo", map[string]any{"text": "back"})
		f := a.failure()
		if f == "" && textOf(a.res) == "back" {
			if len(failures) > 0 {
				t.Logf("%s recovered after %d failed calls, the first: %s", server, len(failures), failures[0])
			}
			return
		}
		if !strings.Contains(f, fmt.Sprintf("%q", server)) && !strings.Contains(f, "`"+server+"/") {
			t.Errorf("%s/echo while it recovers: %q does not name the server", server, f)
		}
		failures = append(failures, f)
		if time.Now().After(deadline) {
			t.Fatalf("%s did not recover within 30s; last failure: %s", server, f)
		}
		time.Sleep(20 * time.Millisecond) // a poll while the restart backoff runs
	}
}

// TestFaultServerCrashesMidCall: the server process exits while a call is in flight (and a
// second call waits on it). Both callers get an error naming the server, the call and the
// exit status; the thread stays, the other server keeps answering, and the server is
// restarted (mcpconn's backoff) so that a later call succeeds.
func TestFaultServerCrashesMidCall(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	events, evs := eventsFIFO(t)
	h := newHost(t, newHome(t, serverTOML("crashy", faultServerBin(t), []string{"--name", "fault-crashy", "--events", events}, "")+
		serverTOML("steady", exampleBin, nil, "")))
	th := startThread(t, ctx, h)

	gate := filepath.Join(t.TempDir(), "never")
	waiting := callAsync(ctx, th, "crashy", "until", map[string]any{"path": gate})
	waitEvent(t, ctx, evs, "call until")
	crashed := call(t, ctx, th, "crashy", "crash", nil)
	wantErr(t, crashed, "the crashing call", `MCP server "crashy"`, `tools/call "crash"`, "exit status 3")
	wantErr(t, await(t, ctx, waiting, "the waiting call"), "the call waiting when it crashed", `MCP server "crashy"`, `tools/call "until"`, "exit status 3")

	alive(t, ctx, h, []*thread.Thread{th}, "steady")
	recovers(t, ctx, th, "crashy")
}

// TestFaultServerHangs: the server never answers a call, not even its cancellation. The
// caller gets the tool timeout (tool_timeout_sec = 1) naming the server, the call and the
// limit, not its own deadline; a caller whose own deadline is shorter gets that instead.
// Meanwhile the other server and the hung server's other tools answer; afterwards the
// session still serves.
func TestFaultServerHangs(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	events, evs := eventsFIFO(t)
	h := newHost(t, newHome(t, serverTOML("hangs", faultServerBin(t), []string{"--name", "fault-hangs", "--events", events}, "tool_timeout_sec = 1")+
		serverTOML("steady", exampleBin, nil, "")))
	th := startThread(t, ctx, h)

	// The caller's own deadline is far beyond the tool timeout: the timeout must answer.
	callerCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hung := callAsync(callerCtx, th, "hangs", "hang", nil)
	waitEvent(t, ctx, evs, "call hang")
	// While it hangs: the other server, and the same server's other tools, answer.
	var wg sync.WaitGroup
	for _, s := range []string{"steady", "hangs", "steady", "hangs"} {
		wg.Go(func() {
			wantOK(t, call(t, ctx, th, s, "echo", map[string]any{"text": "meanwhile"}), s+"/echo while hangs/hang hangs", "meanwhile")
		})
	}
	wg.Wait()
	var a answer
	select {
	case a = <-hung:
		t.Log("the hung call timed out before the calls made meanwhile returned (a loaded machine)")
	default:
		a = await(t, ctx, hung, "the hung call")
	}
	if err := wantErr(t, a, "the hung call", `MCP server "hangs"`, `did not answer tools/call "hang" within 1s`); err != nil && !errors.Is(err, mcpconn.ErrToolTimeout) {
		t.Errorf("the hung call: %v is not an mcpconn.ErrToolTimeout", err)
	}
	if callerCtx.Err() != nil {
		t.Errorf("the caller's own deadline passed: the tool timeout did not answer first")
	}

	// A caller that gives up first is told so, naming the server and the call.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	wantErr(t, await(t, ctx, callAsync(short, th, "hangs", "hang", nil), "the impatient call"), "the impatient call", `MCP server "hangs"`, `tools/call "hang" abandoned`)

	alive(t, ctx, h, []*thread.Thread{th}, "steady", "hangs")
}

// TestFaultServerSlow: calls that take long (but less than the tool timeout) get their
// results, and callers of the same server — in the same thread and in another thread
// sharing the session — and of another server are not queued behind them: they answer
// while the slow calls are still held (the slow calls wait on a file the test creates only
// afterwards, so the check needs no clock).
func TestFaultServerSlow(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	events, evs := eventsFIFO(t)
	h := newHost(t, newHome(t, serverTOML("slowpoke", faultServerBin(t), []string{"--name", "fault-slowpoke", "--events", events}, "tool_timeout_sec = 60")+
		serverTOML("steady", exampleBin, nil, "")))
	th1, th2 := startThread(t, ctx, h), startThread(t, ctx, h)

	gate := filepath.Join(t.TempDir(), "gate")
	slow1 := callAsync(ctx, th1, "slowpoke", "until", map[string]any{"path": gate})
	slow2 := callAsync(ctx, th2, "slowpoke", "until", map[string]any{"path": gate})
	waitEvent(t, ctx, evs, "call until")
	waitEvent(t, ctx, evs, "call until")

	var wg sync.WaitGroup
	for i := range 16 {
		th, s := []*thread.Thread{th1, th2}[i%2], []string{"slowpoke", "steady"}[i/2%2]
		wg.Go(func() {
			want := fmt.Sprintf("caller %d", i)
			wantOK(t, call(t, ctx, th, s, "echo", map[string]any{"text": want}), fmt.Sprintf("%s/echo (thread %s) behind the slow calls", s, th.ID()), want)
		})
	}
	wg.Wait()
	for i, ch := range []<-chan answer{slow1, slow2} {
		select {
		case a := <-ch:
			t.Fatalf("slow call %d answered before its gate opened: %+v", i+1, a.failure())
		default:
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantOK(t, await(t, ctx, slow1, "slow call 1"), "slow call 1", "done")
	wantOK(t, await(t, ctx, slow2, "slow call 2"), "slow call 2", "done")
	wantOK(t, call(t, ctx, th1, "slowpoke", "slow", map[string]any{"ms": 300}), "slowpoke/slow 300ms", "done")
	alive(t, ctx, h, []*thread.Thread{th1, th2}, "steady", "slowpoke")
}

// htmlPage is what a misconfigured reverse proxy answers.
const htmlPage = "<!doctype html><html><body><h1>502 Bad Gateway</h1></body></html>\n"

// htmlServer is a loopback HTTP server that answers every request with an HTML page.
func htmlServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, htmlPage)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// htmlOnCallProxy fronts an MCP server over streamable HTTP and, while the returned switch
// is on, answers every tools/call with an HTML page instead of passing it on.
func htmlOnCallProxy(t *testing.T, upstream string) (string, *atomic.Bool) {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	var on atomic.Bool
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	rp.FlushInterval = -1 // SSE streams flow event by event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if on.Load() && bytes.Contains(body, []byte(`"tools/call"`)) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, htmlPage)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Host = target.Host
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + target.Path, &on
}

// TestFaultServerGarbage: servers that answer something other than JSON-RPC. A stdio
// server that answers a call with a result that is not a tool result, with a JSON object
// that is not JSON-RPC, or with a line of HTML, gives its callers an error naming the
// server and the call;
// an HTTP "server" that answers HTML is reported failed with the reason, and its tools are
// not available with it; an HTTP server whose calls are answered with HTML (a proxy in
// front of it) gives an error naming the server, and works again once the proxy stops. No
// panic, no thread lost, the other servers keep working, and the stdio server recovers.
func TestFaultServerGarbage(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	upstream := mcpservertest.StartHTTP(t, exampleBin, nil, "--name", "fault-behind-proxy")
	proxied, htmlOn := htmlOnCallProxy(t, upstream.URL)
	h := newHost(t, newHome(t, serverTOML("junk", faultServerBin(t), []string{"--name", "fault-junk"}, "tool_timeout_sec = 10")+
		fmt.Sprintf("[mcp_servers.html]\nurl = %q\nstartup_timeout_sec = 5\n\n", htmlServer(t))+
		fmt.Sprintf("[mcp_servers.proxied]\nurl = %q\ntool_timeout_sec = 10\n\n", proxied)+
		serverTOML("steady", exampleBin, nil, "")))
	th := startThread(t, ctx, h)

	st := statusUntil(t, th, "html failed, the others ready", func(m map[string]thread.ServerStatus) bool {
		return m["html"].Status == thread.StateFailed && m["junk"].Status == thread.StateReady && m["proxied"].Status == thread.StateReady
	})
	t.Logf("html: %s", st["html"].ToolsError)
	if e := st["html"].ToolsError; !strings.Contains(e, `MCP server "html"`) || !strings.Contains(e, `unsupported content type "text/html"`) {
		t.Errorf("html toolsError = %q, want it to name the server and the content type", e)
	}
	wantErr(t, call(t, ctx, th, "html", "echo", map[string]any{"text": "x"}), "html/echo", "MCP tool `html/echo` is not available", `MCP server "html"`, `unsupported content type "text/html"`)

	wantErr(t, call(t, ctx, th, "junk", "bad_result", nil), "junk/bad_result", `MCP server "junk"`, `tools/call "bad_result"`, "cannot unmarshal")
	alive(t, ctx, h, []*thread.Thread{th}, "steady")
	recovers(t, ctx, th, "junk")

	wantErr(t, call(t, ctx, th, "junk", "not_rpc", nil), "junk/not_rpc", `MCP server "junk"`, `tools/call "not_rpc"`)
	alive(t, ctx, h, []*thread.Thread{th}, "steady")
	recovers(t, ctx, th, "junk")

	wantErr(t, call(t, ctx, th, "junk", "garbage", nil), "junk/garbage", `MCP server "junk"`, `tools/call "garbage"`, "invalid character '<'")
	alive(t, ctx, h, []*thread.Thread{th}, "steady")
	recovers(t, ctx, th, "junk")

	htmlOn.Store(true)
	wantErr(t, call(t, ctx, th, "proxied", "echo", map[string]any{"text": "x"}), "proxied/echo answered with HTML", `MCP server "proxied"`, `tools/call "echo"`, `unsupported content type "text/html"`)
	alive(t, ctx, h, []*thread.Thread{th}, "steady")
	htmlOn.Store(false)
	recovers(t, ctx, th, "proxied")
}
