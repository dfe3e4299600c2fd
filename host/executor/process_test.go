package executor_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/executor"
	"github.com/warden-mcp/warden/host/executor/protocol"
)

func exitedNote(t *testing.T, c *rpcClient, ctx context.Context, from *int, id string) protocol.ProcessExited {
	t.Helper()
	m := c.waitNote(ctx, from, func(m protocol.Message) bool {
		var ex protocol.ProcessExited
		return m.Method == protocol.NotifyProcessExited && json.Unmarshal(m.Params, &ex) == nil && ex.ProcessID == id
	})
	var ex protocol.ProcessExited
	_ = json.Unmarshal(m.Params, &ex)
	return ex
}

func TestProcessRunsExampleServerWithExecutorEnv(t *testing.T) {
	ctx := testCtx(t)
	const value = "value-only-in-the-executor"
	if _, ok := os.LookupEnv("EXEC_ONLY_VAR"); ok {
		t.Fatal("EXEC_ONLY_VAR is set in the test process")
	}
	p := startWS(t, baseEnv(t, "EXEC_ONLY_VAR="+value, "EXEC_NOT_PASSED=nope"))
	c := dialWS(t, p.url, testToken)
	c.initialize(ctx, "")

	// A missing binary fails, and the executor keeps serving.
	_, e := c.call(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "x", Argv: []string{"warden-no-such-binary"}})
	wantCode(t, "missing binary", e, protocol.CodeFailed)
	if !strings.Contains(e.Message, "warden-no-such-binary") {
		t.Errorf("error = %q", e.Message)
	}

	var st protocol.ProcessStartResult
	c.mustCall(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "mcp", Argv: []string{exampleBin, "--stdio"}, EnvVars: []string{"EXEC_ONLY_VAR", "EXEC_UNSET_VAR"}}, &st)
	if st.PID <= 0 {
		t.Fatalf("pid = %d", st.PID)
	}
	write := func(msg string) {
		c.mustCall(ctx, protocol.MethodProcessWrite, protocol.ProcessWriteParams{ProcessID: "mcp", Data: []byte(msg + "\n")}, nil)
	}
	from := 0
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.processOutput(ctx, &from, "mcp", func(s string) bool { return strings.Contains(s, `"id":1`) && strings.HasSuffix(s, "\n") })
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(id, name string) map[string]any {
		write(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"env","arguments":{"name":"` + name + `"}}}`)
		out := c.processOutput(ctx, &from, "mcp", func(s string) bool { return strings.Contains(s, `"id":`+id) && strings.HasSuffix(s, "\n") })
		var resp struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &resp); err != nil {
			t.Fatalf("tools/call response %q: %v", out, err)
		}
		return resp.Result.StructuredContent
	}
	if got := call("2", "EXEC_ONLY_VAR"); got["value"] != value || got["set"] != true {
		t.Errorf("env EXEC_ONLY_VAR = %v, want the executor's value", got)
	}
	if got := call("3", "EXEC_NOT_PASSED"); got["set"] != false {
		t.Errorf("env EXEC_NOT_PASSED = %v; only named variables are passed", got)
	}

	c.mustCall(ctx, protocol.MethodProcessTerminate, protocol.ProcessRef{ProcessID: "mcp"}, nil)
	ex := exitedNote(t, c, ctx, &from, "mcp")
	if ex.ExitCode == 0 && ex.Signal == "" {
		// The example server exits 0 on SIGTERM; either is a reported exit.
		t.Logf("exited cleanly: %+v", ex)
	}
	_, e = c.call(ctx, protocol.MethodProcessWrite, protocol.ProcessWriteParams{ProcessID: "mcp", Data: []byte("x")})
	wantCode(t, "write after exit", e, protocol.CodeNotFound)
}

func TestProcessTerminateKillsAfterGrace(t *testing.T) {
	ctx := testCtx(t)
	p := startStdio(t, baseEnv(t))
	c := p.client
	c.initialize(ctx, "")
	// A shell that ignores SIGTERM: terminate must end it with SIGKILL.
	c.mustCall(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "stubborn", Argv: []string{"sh", "-c", "trap '' TERM; echo ready; while :; do read x || exit 3; done"}}, nil)
	from := 0
	c.processOutput(ctx, &from, "stubborn", func(s string) bool { return strings.Contains(s, "ready") })
	c.mustCall(ctx, protocol.MethodProcessTerminate, protocol.ProcessRef{ProcessID: "stubborn"}, nil)
	if ex := exitedNote(t, c, ctx, &from, "stubborn"); ex.Signal != "SIGKILL" {
		t.Errorf("exited = %+v, want SIGKILL", ex)
	}
	// closeStdin ends a reader; the exit code is reported.
	c.mustCall(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "cat", Argv: []string{"sh", "-c", "cat; exit 7"}}, nil)
	c.mustCall(ctx, protocol.MethodProcessWrite, protocol.ProcessWriteParams{ProcessID: "cat", Data: []byte("a")}, nil)
	c.mustCall(ctx, protocol.MethodProcessWrite, protocol.ProcessWriteParams{ProcessID: "cat", Data: []byte("b")}, nil)
	c.mustCall(ctx, protocol.MethodProcessCloseStdin, protocol.ProcessRef{ProcessID: "cat"}, nil)
	if out := c.processOutput(ctx, &from, "cat", func(s string) bool { return len(s) >= 2 }); out != "ab" {
		t.Errorf("output = %q", out)
	}
	if ex := exitedNote(t, c, ctx, &from, "cat"); ex.ExitCode != 7 {
		t.Errorf("exited = %+v, want code 7", ex)
	}
}

func TestFSRead(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(root, ".codex-plugin", "plugin.json"), `{"name":"demo"}`)
	writeFile(t, filepath.Join(root, "big"), strings.Repeat("x", 100))
	writeFile(t, filepath.Join(outside, "secret"), "outside")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "big"), filepath.Join(root, "inner-link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startStdio(t, baseEnv(t))
	c := p.client
	c.initialize(ctx, "")
	tests := []struct {
		name     string
		root     string
		path     string
		maxBytes int64
		code     int
		want     string
	}{
		{"inside", root, ".codex-plugin/plugin.json", 0, 0, `{"name":"demo"}`},
		{"symlink inside", root, "inner-link", 0, 0, strings.Repeat("x", 100)},
		{"dot-dot", root, "../x", 0, protocol.CodeForbidden, ""},
		{"inner dot-dot", root, ".codex-plugin/../../x", 0, protocol.CodeForbidden, ""},
		{"absolute path", root, filepath.Join(outside, "secret"), 0, protocol.CodeForbidden, ""},
		{"symlink outside", root, "escape", 0, protocol.CodeForbidden, ""},
		{"fifo", root, "fifo", 0, protocol.CodeForbidden, ""},
		{"directory", root, ".codex-plugin", 0, protocol.CodeForbidden, ""},
		{"relative root", "rel", "x", 0, protocol.CodeForbidden, ""},
		{"missing", root, "nope.json", 0, protocol.CodeNotFound, ""},
		{"over maxBytes", root, "big", 10, protocol.CodeFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, e := c.call(ctx, protocol.MethodFSRead, protocol.FSReadParams{Root: tt.root, Path: tt.path, MaxBytes: tt.maxBytes})
			if tt.code != 0 {
				wantCode(t, "fs/read "+tt.path, e, tt.code)
				if strings.Contains(e.Message, "outside\"") {
					t.Errorf("error leaks content: %q", e.Message)
				}
				return
			}
			if e != nil {
				t.Fatalf("fs/read: %d %s", e.Code, e.Message)
			}
			var r protocol.FSReadResult
			if err := json.Unmarshal(res, &r); err != nil {
				t.Fatal(err)
			}
			if string(r.Data) != tt.want || r.Size != int64(len(tt.want)) {
				t.Errorf("fs/read = %q (%d)", r.Data, r.Size)
			}
		})
	}
}

func TestHostileInput(t *testing.T) {
	ctx := testCtx(t)
	p := startWS(t, baseEnv(t))
	c := dialWS(t, p.url, testToken)
	c.initialize(ctx, "")

	m := c.sendRaw(ctx, "null", []byte(`{"jsonrpc":"2.0","id":5,"method":`))
	wantCode(t, "malformed JSON", m.Error, protocol.CodeParseError)
	_, e := c.call(ctx, "no/such", struct{}{})
	wantCode(t, "unknown method", e, protocol.CodeMethodNotFound)
	_, e = c.call(ctx, protocol.MethodProcessStart, map[string]any{"processId": 5})
	wantCode(t, "bad params", e, protocol.CodeInvalidParams)
	if !strings.Contains(e.Message, "processId") {
		t.Errorf("bad params error %q does not name the field", e.Message)
	}

	// A 64 MiB frame, streamed: answered -32600 with its id, memory bounded, connection kept.
	raw, err := dialWSRaw(ctx, p.url, testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.CloseNow()
	big := newClient(t, func(ctx context.Context, b []byte) error {
		if !json.Valid(b) { // the marker of the big frame below
			return nil
		}
		return raw.Write(ctx, websocket.MessageText, b)
	}, func() ([]byte, error) { _, b, err := raw.Read(context.Background()); return b, err })
	big.initialize(ctx, "")
	// The bound is on growth, under the frame's 64 MiB: reading up to the 16 MiB limit
	// costs about 20 MiB (50 under -race, whose shadow memory RSS counts), buffering the
	// frame at least 64. The binary's own footprint is not what this checks.
	before := peakRSS(t, p.pid)
	ch := big.expect("77")
	w, err := raw.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("a", 1<<20))
	if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":77,"method":"fs/read","params":{"root":"`)); err != nil {
		t.Fatal(err)
	}
	for range 64 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write([]byte(`"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ch:
		wantCode(t, "64 MiB frame", m.Error, protocol.CodeInvalidRequest)
		if !strings.Contains(m.Error.Message, "16777216") {
			t.Errorf("error = %q", m.Error.Message)
		}
	case <-ctx.Done():
		t.Fatal("no answer to the 64 MiB frame")
	}
	_, e = big.call(ctx, "no/such", struct{}{})
	wantCode(t, "after the big frame", e, protocol.CodeMethodNotFound)
	if hwm := peakRSS(t, p.pid); hwm-before > 60<<20 {
		t.Errorf("executor peak RSS grew %d bytes (to %d) with a 64 MiB frame: the frame was buffered", hwm-before, hwm)
	}
}

// peakRSS reads VmHWM of a process (Linux).
func peakRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Logf("no /proc: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// logWatch is an hclog sink a test can wait on.
type logWatch struct {
	lines chan string
}

func (w *logWatch) Write(p []byte) (int, error) {
	select {
	case w.lines <- string(p):
	default:
	}
	return len(p), nil
}

func (w *logWatch) waitFor(t *testing.T, ctx context.Context, substr string) {
	t.Helper()
	for {
		select {
		case l := <-w.lines:
			if strings.Contains(l, substr) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("log line %q not seen: %v", substr, ctx.Err())
		}
	}
}

// inProcess serves an executor.Server on a loopback WebSocket listener.
func inProcess(t *testing.T, opts executor.Options) (string, *logWatch) {
	watch := &logWatch{lines: make(chan string, 1024)}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: watch})
	if opts.Capabilities == (protocol.Capabilities{}) {
		opts.Capabilities = protocol.Capabilities{Processes: true}
	}
	srv, err := executor.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen(context.Background(), "127.0.0.1:0", testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		_ = srv.Close()
	})
	return ln.URL(), watch
}

func TestResumeReplaysBufferedOutput(t *testing.T) {
	ctx := testCtx(t)
	url, watch := inProcess(t, executor.Options{})
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c1 := dialWS(t, url, testToken)
	sess := c1.initialize(ctx, "").SessionID
	c1.mustCall(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "p", Argv: []string{"sh", "-c", `read x < "$0"; echo "late $x"`, fifo}}, nil)
	c1.close()
	watch.waitFor(t, ctx, "session detached")
	// Let the process speak while no host is attached.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("output\n")
	_ = f.Close()
	watch.waitFor(t, ctx, "buffering process output")

	c2 := dialWS(t, url, testToken)
	r := c2.initialize(ctx, sess)
	if !r.Resumed || r.SessionID != sess {
		t.Fatalf("resume = %+v", r)
	}
	from := 0
	if out := c2.processOutput(ctx, &from, "p", func(s string) bool { return strings.HasSuffix(s, "\n") }); out != "late output\n" {
		t.Errorf("replayed output = %q", out)
	}
	if ex := exitedNote(t, c2, ctx, &from, "p"); ex.ExitCode != 0 {
		t.Errorf("exited = %+v", ex)
	}
}

func TestResumeWindowExpiryRetiresSession(t *testing.T) {
	ctx := testCtx(t)
	url, watch := inProcess(t, executor.Options{ResumeWindow: time.Millisecond})
	c1 := dialWS(t, url, testToken)
	sess := c1.initialize(ctx, "").SessionID
	var st protocol.ProcessStartResult
	c1.mustCall(ctx, protocol.MethodProcessStart, protocol.ProcessStartParams{ProcessID: "p", Argv: []string{"sleep", "600"}}, &st)
	c1.close()
	watch.waitFor(t, ctx, "resume window expired")
	c2 := dialWS(t, url, testToken)
	_, e := c2.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: 1, ResumeSessionID: sess})
	wantCode(t, "resume of an expired session", e, protocol.CodeSessionRetired)
}

func TestStalledHostIsDisconnected(t *testing.T) {
	ctx := testCtx(t)
	url, watch := inProcess(t, executor.Options{WriteTimeout: 200 * time.Millisecond, OutputBuffer: 64 << 10})
	// A raw connection whose reader the test controls: it stops reading while the
	// process floods.
	raw, err := dialWSRaw(ctx, url, testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.CloseNow()
	raw.SetReadLimit(-1)
	send := func(b string) {
		if err := raw.Write(ctx, websocket.MessageText, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"t"}}}`)
	_, b, err := raw.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		Result protocol.InitializeResult `json:"result"`
	}
	_ = json.Unmarshal(b, &init)
	send(`{"jsonrpc":"2.0","id":2,"method":"process/start","params":{"processId":"flood","argv":["sh","-c","yes flood-flood-flood-flood"]}}`)
	// Not reading: the executor's writes stall, hit the deadline, and it hangs up.
	watch.waitFor(t, ctx, "write to host failed: disconnecting")
	// Draining what the socket buffers hold ends in an error, not an endless flood.
	for {
		if _, _, err := raw.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("the executor kept the stalled connection")
			}
			break
		}
	}
	// The session is kept: a new connection resumes it and ends the flood.
	c := dialWS(t, url, testToken)
	if r := c.initialize(ctx, init.Result.SessionID); !r.Resumed {
		t.Fatal("not resumed")
	}
	c.mustCall(ctx, protocol.MethodProcessTerminate, protocol.ProcessRef{ProcessID: "flood"}, nil)
	from := 0
	if ex := exitedNote(t, c, ctx, &from, "flood"); ex.Signal != "SIGTERM" {
		t.Errorf("exited = %+v", ex)
	}
}
