package executor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

var exampleBin, wardenBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, &wardenBin)) }

// testToken is the bearer token of the executors the tests start.
const testToken = "executor-test-token-0123456789abcdef"

// failBound bounds every wait of a test; it is a failure bound, never a pacing.
const failBound = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failBound)
	t.Cleanup(cancel)
	return ctx
}

// executorProc is a real `warden executor` process.
type executorProc struct {
	url    string
	pid    int
	stderr *testmain.SyncBuffer
	client *rpcClient // stdio only
}

// baseEnv is the environment of the executors the tests start: enough to run, plus extra.
func baseEnv(t *testing.T, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "WARDEN_HOME=" + t.TempDir(), "EXEC_TOKEN=" + testToken}
	return append(env, extra...)
}

// startWS starts `warden executor --listen ws://127.0.0.1:0` and reads its URL from the
// first line of stdout. The process is stopped with SIGTERM at cleanup.
func startWS(t *testing.T, env []string, args ...string) *executorProc {
	t.Helper()
	cmd := exec.Command(wardenBin, append([]string{"--log-level", "debug", "executor", "--listen", "ws://127.0.0.1:0", "--token-env", "EXEC_TOKEN"}, args...)...)
	cmd.Env = env
	stderr := &testmain.SyncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("executor stderr:\n%s", stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the executor's URL: %v\nstderr:\n%s", err, stderr.String())
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "ws://127.0.0.1:") || !strings.HasSuffix(url, "/") {
		t.Fatalf("first stdout line = %q, want ws://127.0.0.1:PORT/", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return &executorProc{url: url, pid: cmd.Process.Pid, stderr: stderr}
}

// startStdio starts `warden executor --listen stdio` and returns a client on its pipes.
func startStdio(t *testing.T, env []string, args ...string) *executorProc {
	t.Helper()
	cmd := exec.Command(wardenBin, append([]string{"--log-level", "debug", "executor", "--listen", "stdio"}, args...)...)
	cmd.Env = env
	stderr := &testmain.SyncBuffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, func(_ context.Context, b []byte) error {
		_, err := in.Write(append(b, '\n'))
		return err
	}, readLine(out))
	t.Cleanup(func() {
		_ = in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("executor over stdio exited with %v after stdin closed\nstderr:\n%s", err, stderr.String())
		}
		c.wait()
	})
	return &executorProc{pid: cmd.Process.Pid, stderr: stderr, client: c}
}

func readLine(r io.Reader) func() ([]byte, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	return func() ([]byte, error) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		return line, nil
	}
}

// dialWS connects to an executor's WebSocket endpoint.
func dialWS(t *testing.T, url, token string) *rpcClient {
	t.Helper()
	c, err := dialWSRaw(testCtx(t), url, token, "")
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(-1)
	return newClient(t, func(ctx context.Context, b []byte) error {
		return c.Write(ctx, websocket.MessageText, b)
	}, func() ([]byte, error) {
		_, b, err := c.Read(context.Background())
		return b, err
	}, func() { _ = c.CloseNow() })
}

func dialWSRaw(ctx context.Context, url, token, origin string) (*websocket.Conn, error) {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("status %d: %w", resp.StatusCode, err)
		}
		return nil, err
	}
	return c, nil
}

// rpcClient is a minimal JSON-RPC client of the executor protocol.
type rpcClient struct {
	t     *testing.T
	send  func(context.Context, []byte) error
	close func()

	mu      sync.Mutex
	next    int
	pending map[string]chan protocol.Message
	notes   []protocol.Message
	noteCh  chan struct{} // closed and replaced on every new notification
	readErr error
	done    chan struct{}
}

func newClient(t *testing.T, send func(context.Context, []byte) error, recv func() ([]byte, error), closers ...func()) *rpcClient {
	c := &rpcClient{t: t, send: send, pending: map[string]chan protocol.Message{}, noteCh: make(chan struct{}), done: make(chan struct{})}
	c.close = func() {
		for _, f := range closers {
			f()
		}
	}
	go c.readLoop(recv)
	t.Cleanup(func() { c.close(); c.wait() })
	return c
}

func (c *rpcClient) wait() {
	select {
	case <-c.done:
	case <-time.After(failBound):
		c.t.Error("rpc client read loop did not end")
	}
}

func (c *rpcClient) readLoop(recv func() ([]byte, error)) {
	defer close(c.done)
	for {
		b, err := recv()
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			close(c.noteCh)
			c.noteCh = make(chan struct{})
			c.mu.Unlock()
			return
		}
		var m protocol.Message
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Errorf("executor sent invalid JSON %q: %v", b, err)
			continue
		}
		c.mu.Lock()
		if m.Method != "" {
			c.notes = append(c.notes, m)
			close(c.noteCh)
			c.noteCh = make(chan struct{})
		} else if ch, ok := c.pending[string(m.ID)]; ok {
			delete(c.pending, string(m.ID))
			ch <- m
		} else {
			c.t.Errorf("unexpected response %s", b)
		}
		c.mu.Unlock()
	}
}

// expect registers a wait for the response with id.
func (c *rpcClient) expect(id string) chan protocol.Message {
	ch := make(chan protocol.Message, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	return ch
}

// sendRaw sends b and waits for the response with id (as JSON text, e.g. "null").
func (c *rpcClient) sendRaw(ctx context.Context, id string, b []byte) protocol.Message {
	c.t.Helper()
	ch := c.expect(id)
	if err := c.send(ctx, b); err != nil {
		c.t.Fatalf("send: %v", err)
	}
	select {
	case m := <-ch:
		return m
	case <-ctx.Done():
		c.t.Fatalf("no response with id %s: %v", id, ctx.Err())
	}
	return protocol.Message{}
}

// call sends a request and returns its result, or its error.
func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, *protocol.Error) {
	c.t.Helper()
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	c.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		c.t.Fatal(err)
	}
	b, _ := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: p})
	m := c.sendRaw(ctx, id, b)
	return m.Result, m.Error
}

// mustCall is call that fails the test on an error and decodes the result into out.
func (c *rpcClient) mustCall(ctx context.Context, method string, params, out any) {
	c.t.Helper()
	res, e := c.call(ctx, method, params)
	if e != nil {
		c.t.Fatalf("%s: error %d %q", method, e.Code, e.Message)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			c.t.Fatalf("%s: decoding %s: %v", method, res, err)
		}
	}
}

func (c *rpcClient) initialize(ctx context.Context, resume string) protocol.InitializeResult {
	c.t.Helper()
	var r protocol.InitializeResult
	c.mustCall(ctx, protocol.MethodInitialize, protocol.InitializeParams{ProtocolVersion: protocol.Version, ClientInfo: protocol.Info{Name: "test"}, ResumeSessionID: resume}, &r)
	return r
}

// waitNote waits for the first notification from index *from on that satisfies pred and
// advances *from past it.
func (c *rpcClient) waitNote(ctx context.Context, from *int, pred func(protocol.Message) bool) protocol.Message {
	c.t.Helper()
	for {
		c.mu.Lock()
		for ; *from < len(c.notes); *from++ {
			if m := c.notes[*from]; pred(m) {
				*from++
				c.mu.Unlock()
				return m
			}
		}
		ch, rerr := c.noteCh, c.readErr
		c.mu.Unlock()
		if rerr != nil {
			c.t.Fatalf("connection ended while waiting for a notification: %v", rerr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			c.t.Fatalf("notification not received: %v", ctx.Err())
		}
	}
}

// processOutput collects a process's stdout until pred holds on everything so far.
func (c *rpcClient) processOutput(ctx context.Context, from *int, id string, pred func(string) bool) string {
	c.t.Helper()
	var out bytes.Buffer
	for !pred(out.String()) {
		m := c.waitNote(ctx, from, func(m protocol.Message) bool { return m.Method == protocol.NotifyProcessOutput })
		var o protocol.ProcessOutput
		if err := json.Unmarshal(m.Params, &o); err != nil {
			c.t.Fatal(err)
		}
		if o.ProcessID == id && o.Stream == protocol.StreamStdout {
			out.Write(o.Data)
		}
	}
	return out.String()
}

func wantCode(t *testing.T, what string, e *protocol.Error, code int) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: succeeded, want error %d", what, code)
	}
	if e.Code != code {
		t.Fatalf("%s: error %d %q, want %d", what, e.Code, e.Message, code)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	testmain.WriteFile(t, path, content)
}

func execCommand(args []string, env []string) *exec.Cmd {
	cmd := exec.Command(wardenBin, args...)
	cmd.Env = env
	return cmd
}
