package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/mcpconn"
)

// wire carries whole JSON-RPC messages. read is called by one goroutine; write is
// serialized by the conn; close may be called concurrently with both and unblocks them.
type wire interface {
	read(ctx context.Context) ([]byte, error)
	write(ctx context.Context, msg []byte) error
	close() error
}

// conn is one connection's JSON-RPC state: its pending calls and its HTTP bodies (which
// end with the connection; process streams are the Client's).
type conn struct {
	c *Client
	w wire

	sem     chan struct{} // one slot per pending call
	writeMu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *protocol.Message
	bodies  map[string]*stream // by requestId
	err     error

	done     chan struct{} // closed by fail
	finished chan struct{} // closed when the read loop has returned and the wire is closed
	failOnce sync.Once
}

func newConn(c *Client, w wire) *conn {
	cn := &conn{
		c:        c,
		w:        w,
		sem:      make(chan struct{}, c.cfg.MaxPending),
		pending:  map[int64]chan *protocol.Message{},
		bodies:   map[string]*stream{},
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	go cn.readLoop()
	return cn
}

// fail ends the connection with cause: the wire is closed, pending calls and bodies fail.
func (cn *conn) fail(cause error) {
	cn.failOnce.Do(func() {
		cn.mu.Lock()
		cn.err = cause
		bodies := cn.bodies
		cn.bodies = map[string]*stream{}
		cn.mu.Unlock()
		close(cn.done)
		_ = cn.w.close()
		err := fmt.Errorf("executor %q: %w: %w", cn.c.cfg.Name, ErrDisconnected, cause)
		if errors.Is(cause, ErrClosed) {
			err = fmt.Errorf("executor %q: %w", cn.c.cfg.Name, ErrClosed)
		}
		for _, s := range bodies {
			s.fail(err)
		}
	})
}

func (cn *conn) cause() error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.err
}

// failedErr is the error of a call that the connection's end interrupted.
func (cn *conn) failedErr(method string) error {
	cause := cn.cause()
	if errors.Is(cause, ErrClosed) {
		return fmt.Errorf("executor %q: %s: %w", cn.c.cfg.Name, method, ErrClosed)
	}
	return fmt.Errorf("executor %q: %s: %w: %w", cn.c.cfg.Name, method, ErrDisconnected, cause)
}

func (cn *conn) readLoop() {
	defer close(cn.finished)
	// fail closes the wire, which unblocks the read.
	ctx := context.Background()
	for {
		b, err := cn.w.read(ctx)
		if err != nil {
			cn.fail(fmt.Errorf("read: %w", err))
			return
		}
		var m protocol.Message
		if err := json.Unmarshal(b, &m); err != nil {
			cn.c.log.Warn("executor sent malformed JSON; ignored", "error", err)
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			// The executor does not call the host; say so rather than leave it waiting.
			cn.reply(m.ID, &protocol.Error{Code: protocol.CodeMethodNotFound, Message: "the host offers no method " + strconv.Quote(m.Method)})
		case m.Method != "":
			cn.notify(&m)
		case len(m.ID) > 0:
			id, err := strconv.ParseInt(string(m.ID), 10, 64)
			if err != nil {
				cn.c.log.Debug("executor response with a foreign id; ignored", "id", string(m.ID))
				continue
			}
			cn.mu.Lock()
			ch := cn.pending[id]
			delete(cn.pending, id)
			cn.mu.Unlock()
			if ch != nil {
				ch <- &m // buffered: never blocks
			}
		}
	}
}

func (cn *conn) reply(id json.RawMessage, e *protocol.Error) {
	b, err := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: id, Error: e})
	if err == nil {
		_ = cn.send(b) // from the read loop: a peer that floods requests is paced by its own reading
	}
}

// notify routes a notification to its body or process. It never blocks: a stream that
// would overflow is failed instead (see stream.push).
func (cn *conn) notify(m *protocol.Message) {
	switch m.Method {
	case protocol.NotifyHTTPBody:
		var p protocol.HTTPBody
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		cn.mu.Lock()
		s := cn.bodies[p.RequestID]
		cn.mu.Unlock()
		if s != nil && !s.push(p.Data) {
			cn.c.cleanup(cn, protocol.MethodHTTPCancel, protocol.HTTPCancelParams{RequestID: p.RequestID})
		}
	case protocol.NotifyHTTPEnd:
		var p protocol.HTTPEnd
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		cn.mu.Lock()
		s := cn.bodies[p.RequestID]
		delete(cn.bodies, p.RequestID)
		cn.mu.Unlock()
		if s == nil {
			return
		}
		if p.Error != "" {
			s.fail(fmt.Errorf("executor %q: http/end: %s", cn.c.cfg.Name, p.Error))
		} else {
			s.fail(io.EOF)
		}
	case protocol.NotifyProcessOutput:
		var p protocol.ProcessOutput
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		if ps := cn.c.proc(p.ProcessID); ps != nil {
			ps.output(cn, p.Stream, p.Data)
		}
	case protocol.NotifyProcessExited:
		var p protocol.ProcessExited
		if json.Unmarshal(m.Params, &p) != nil {
			return
		}
		if ps := cn.c.proc(p.ProcessID); ps != nil {
			ps.exited(p)
		}
	default:
		cn.c.log.Debug("executor notification ignored", "method", m.Method)
	}
}

// addBody registers the body stream of requestId before the request is sent, so that no
// http/body that follows its response can be missed.
func (cn *conn) addBody(id string, s *stream) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return false
	}
	cn.bodies[id] = s
	return true
}

func (cn *conn) removeBody(id string) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	delete(cn.bodies, id)
}

func (cn *conn) send(b []byte) error {
	cn.writeMu.Lock()
	defer cn.writeMu.Unlock()
	// Not the caller's ctx: abandoning a write half-way would corrupt the framing.
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := cn.w.write(ctx, b); err != nil {
		cn.fail(fmt.Errorf("write: %w", err))
		return err
	}
	return nil
}

// call sends a request and waits for its response, decoding the result into result
// (which may be nil).
func (cn *conn) call(ctx context.Context, method string, params, result any) error {
	select {
	case cn.sem <- struct{}{}:
		defer func() { <-cn.sem }()
	case <-ctx.Done():
		return fmt.Errorf("executor %q: %s: %w", cn.c.cfg.Name, method, ctx.Err())
	case <-cn.done:
		return cn.failedErr(method)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("executor %q: %s: encoding params: %w", cn.c.cfg.Name, method, err)
	}
	ch := make(chan *protocol.Message, 1)
	cn.mu.Lock()
	if cn.err != nil {
		cn.mu.Unlock()
		return cn.failedErr(method)
	}
	cn.nextID++
	id := cn.nextID
	cn.pending[id] = ch
	cn.mu.Unlock()
	defer func() {
		cn.mu.Lock()
		delete(cn.pending, id)
		cn.mu.Unlock()
	}()
	b, err := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw})
	if err != nil {
		return fmt.Errorf("executor %q: %s: %w", cn.c.cfg.Name, method, err)
	}
	if len(b) > protocol.MaxMessageBytes {
		return fmt.Errorf("executor %q: %s: %w: %d bytes (the limit is %d)", cn.c.cfg.Name, method, ErrTooLarge, len(b), protocol.MaxMessageBytes)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("executor %q: %s: %w", cn.c.cfg.Name, method, err)
	}
	if err := cn.send(b); err != nil {
		return cn.failedErr(method)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return cn.c.rpcErr(method, m.Error)
		}
		if result == nil {
			return nil
		}
		if len(m.Result) == 0 {
			return fmt.Errorf("executor %q: %s: %w: a response without result", cn.c.cfg.Name, method, ErrProtocol)
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("executor %q: %s: %w: decoding the result: %w", cn.c.cfg.Name, method, ErrProtocol, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("executor %q: %s: %w", cn.c.cfg.Name, method, ctx.Err())
	case <-cn.done:
		return cn.failedErr(method)
	}
}

// rpcErr wraps an executor's error with the sentinel its code maps to.
func (c *Client) rpcErr(method string, e *protocol.Error) error {
	var sentinel error
	switch e.Code {
	case protocol.CodeNotFound:
		sentinel = ErrNotFound
	case protocol.CodeForbidden:
		sentinel = ErrForbidden
	case protocol.CodeFailed:
		sentinel = ErrFailed
	case protocol.CodeSessionRetired:
		sentinel = ErrSessionRetired
	}
	if sentinel == nil {
		return fmt.Errorf("executor %q: %s: %w (code %d)", c.cfg.Name, method, e, e.Code)
	}
	return fmt.Errorf("executor %q: %s: %w: %w", c.cfg.Name, method, sentinel, e)
}

// --- WebSocket ---

type wsWire struct{ c *websocket.Conn }

func (c *Client) dialWebSocket(ctx context.Context) (wire, error) {
	h := http.Header{}
	if c.cfg.Token != "" {
		h.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	ws, resp, err := websocket.Dial(ctx, c.cfg.URL, &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("websocket %s: %w", c.cfg.URL, err)
	}
	ws.SetReadLimit(protocol.MaxMessageBytes)
	return &wsWire{c: ws}, nil
}

func (w *wsWire) read(ctx context.Context) ([]byte, error) {
	typ, b, err := w.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		_ = w.c.Close(websocket.StatusUnsupportedData, "text frames only")
		return nil, errors.New("the executor sent a binary frame")
	}
	return b, nil
}

func (w *wsWire) write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

func (w *wsWire) close() error { return w.c.CloseNow() }

// --- stdio (a spawned executor) ---

type stdioWire struct {
	cmd    *exec.Cmd
	stdin  *os.File // deadlines work: os.Pipe files are pollable
	stdout *os.File
	r      *bufio.Reader
	exited chan struct{}
	once   sync.Once
	log    hclog.Logger
}

func (c *Client) spawn(ctx context.Context) (wire, error) {
	cmd := exec.Command(c.cfg.Program, c.cfg.Args...)
	cmd.Dir = c.cfg.Dir
	cmd.Env = childEnv(c.cfg.Env)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	log := c.log.Named("executor")
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Stderr = &lineLogger{log: log, max: 4096}
	// Grandchildren holding stderr open must not keep Wait (and Close) forever.
	cmd.WaitDelay = cleanupTimeout
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting %s: %w", c.cfg.Program, err)
	}
	inR.Close()
	outW.Close()
	w := &stdioWire{cmd: cmd, stdin: inW, stdout: outR, r: bufio.NewReaderSize(outR, 64<<10), exited: make(chan struct{}), log: log}
	go func() {
		err := cmd.Wait()
		log.Debug("executor process exited", "error", err)
		close(w.exited)
	}()
	_ = ctx // the handshake that follows is bounded by ctx
	return w, nil
}

// childEnv is the host's minimal base environment plus extra ("NAME=value"; extra wins).
func childEnv(extra []string) []string {
	seen := map[string]bool{}
	for _, kv := range extra {
		if k, _, ok := strings.Cut(kv, "="); ok {
			seen[k] = true
		}
	}
	var env []string
	for _, k := range mcpconn.BaseEnvVars() {
		if v, ok := os.LookupEnv(k); ok && !seen[k] {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

func (w *stdioWire) read(context.Context) ([]byte, error) {
	var line []byte
	tooLarge := false
	for {
		chunk, err := w.r.ReadSlice('\n')
		if !tooLarge {
			if len(line)+len(chunk) > protocol.MaxMessageBytes+1 {
				tooLarge, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil && tooLarge:
			return nil, fmt.Errorf("%w: a line over %d bytes", ErrTooLarge, protocol.MaxMessageBytes)
		case err == nil:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

func (w *stdioWire) write(ctx context.Context, msg []byte) error {
	if d, ok := ctx.Deadline(); ok {
		_ = w.stdin.SetWriteDeadline(d)
	}
	b := make([]byte, 0, len(msg)+1)
	_, err := w.stdin.Write(append(append(b, msg...), '\n'))
	return err
}

// close ends the executor: EOF on its stdin asks it to exit; SIGTERM and then SIGKILL
// follow if it does not. It waits until the process is reaped.
func (w *stdioWire) close() error {
	w.once.Do(func() {
		_ = w.stdin.Close()
		_ = w.stdout.Close()
		for _, sig := range []os.Signal{nil, syscall.SIGTERM, os.Kill} {
			if sig != nil {
				_ = w.cmd.Process.Signal(sig)
			}
			t := time.NewTimer(2 * time.Second)
			select {
			case <-w.exited:
				t.Stop()
				return
			case <-t.C:
			}
		}
		<-w.exited
	})
	return nil
}

// lineLogger logs what is written to it line by line, cutting lines at max bytes so that
// a peer that never writes a newline costs bounded memory.
type lineLogger struct {
	log  hclog.Logger
	max  int
	mu   sync.Mutex
	buf  []byte
	args []any
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		seg, rest, newline := p, []byte(nil), false
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			seg, rest, newline = p[:i], p[i+1:], true
		}
		for len(l.buf)+len(seg) > l.max {
			room := l.max - len(l.buf)
			l.buf = append(l.buf, seg[:room]...)
			l.flush()
			seg = seg[room:]
		}
		l.buf = append(l.buf, seg...)
		if newline {
			l.flush()
		}
		p = rest
	}
	return n, nil
}

func (l *lineLogger) flush() {
	if line := strings.TrimRight(string(l.buf), "\r"); line != "" {
		l.log.Info("stderr", append([]any{"line", line}, l.args...)...)
	}
	l.buf = l.buf[:0]
}
