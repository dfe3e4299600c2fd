package executor

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
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/internal/netguard"
)

// Conn is one framed JSON-RPC connection to a host.
//
// Concurrency: Read is called from one goroutine at a time; Write may be called
// concurrently with Read but not with itself (the Server serialises writes); Close may be
// called at any time, from any goroutine, more than once, and makes blocked Reads and
// Writes return.
type Conn interface {
	// Read returns the next message. A message over protocol.MaxMessageBytes is read
	// through and discarded, and reported with an error wrapping ErrMessageTooLarge (see
	// TooLargePrefix); the connection stays usable. io.EOF means the peer closed it.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message; ctx's deadline bounds it.
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// tooLargeError is ErrMessageTooLarge with the first MaxMessageBytes of the message, from
// which the request id may still be read.
type tooLargeError struct{ prefix []byte }

func (e *tooLargeError) Error() string { return ErrMessageTooLarge.Error() }
func (e *tooLargeError) Unwrap() error { return ErrMessageTooLarge }

// TooLargePrefix returns the retained start of an over-long message from a Read error,
// or nil.
func TooLargePrefix(err error) []byte {
	var tl *tooLargeError
	if errors.As(err, &tl) {
		return tl.prefix
	}
	return nil
}

// idFromPrefix reads the top-level "id" of a JSON object that may be cut short, or
// returns nil when it cannot be read before the cut.
func idFromPrefix(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			return v
		}
	}
	return nil
}

// NewWebSocketConn adapts a coder/websocket connection: one message per text frame, each
// read under protocol.MaxMessageBytes (the connection's own limit is lifted so that a
// larger frame is streamed through and discarded rather than closing the connection). A
// binary frame closes the connection with status 1003.
func NewWebSocketConn(c *websocket.Conn) Conn {
	c.SetReadLimit(-1)
	return &wsConn{c: c, max: protocol.MaxMessageBytes}
}

type wsConn struct {
	c   *websocket.Conn
	max int64
}

func (w *wsConn) Read(ctx context.Context) ([]byte, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			return nil, io.EOF
		}
		return nil, err
	}
	if typ != websocket.MessageText {
		_ = w.c.Close(websocket.StatusUnsupportedData, "text messages only")
		return nil, ErrBinaryFrame
	}
	data, err := readBounded(r, int(w.max))
	if errors.Is(err, ErrMessageTooLarge) {
		// Keep the start (for the id) and stream the rest of the frame away.
		if _, derr := io.Copy(io.Discard, r); derr != nil {
			return nil, derr
		}
		return nil, &tooLargeError{prefix: data}
	}
	return data, err
}

// readBounded reads r to EOF into a buffer that never grows past max+1 bytes (doubling,
// capped), so an oversized message costs at most about max. Past max it returns what it
// has (max bytes) and ErrMessageTooLarge.
func readBounded(r io.Reader, max int) ([]byte, error) {
	buf := make([]byte, 0, min(4096, max+1))
	for {
		if len(buf) == cap(buf) {
			if len(buf) > max {
				return buf[:max], ErrMessageTooLarge
			}
			grown := make([]byte, len(buf), min(2*cap(buf), max+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if len(buf) > max {
				return buf[:max], ErrMessageTooLarge
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (w *wsConn) Write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

func (w *wsConn) Close() error {
	return w.c.CloseNow()
}

// NewStdioConn frames messages as lines on r and w (one message per line, no embedded
// newlines; blank lines are skipped). A line over protocol.MaxMessageBytes is skipped
// through its newline. Writes use w's write deadline when it has one (a pipe or socket
// *os.File, a net.Conn); otherwise a write that outlives its context closes w. Close
// closes r and w when they are io.Closers.
func NewStdioConn(r io.Reader, w io.Writer) Conn {
	return &stdioConn{r: bufio.NewReaderSize(r, 64<<10), rc: r, w: w, max: protocol.MaxMessageBytes}
}

type stdioConn struct {
	r   *bufio.Reader
	rc  io.Reader
	w   io.Writer
	max int

	closeOnce sync.Once
}

func (c *stdioConn) Read(context.Context) ([]byte, error) {
	for {
		line, err := c.readLine()
		if err != nil || len(bytes.TrimSpace(line)) > 0 {
			return line, err
		}
	}
}

func (c *stdioConn) readLine() ([]byte, error) {
	var line []byte
	tooLarge := false
	for {
		chunk, err := c.r.ReadSlice('\n')
		if !tooLarge {
			if len(line)+len(chunk) > c.max+1 { // +1: the newline
				keep := min(c.max-len(line), len(chunk))
				line = append(line, chunk[:keep]...)
				tooLarge = true
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLarge {
				return nil, &tooLargeError{prefix: line}
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLarge:
			return nil, &tooLargeError{prefix: line} // the next Read reports err
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil // the next Read reports io.EOF
		default:
			return nil, err
		}
	}
}

type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

func (c *stdioConn) Write(ctx context.Context, msg []byte) error {
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	if wd, ok := c.w.(writeDeadliner); ok {
		dl, _ := ctx.Deadline()
		if err := wd.SetWriteDeadline(dl); err == nil {
			_, err := c.w.Write(b)
			return err
		}
	}
	// No deadline on w: write in the background and give up (closing w, which is what
	// ends a blocked write of a closable writer) when ctx ends first.
	done := make(chan error, 1)
	go func() {
		_, err := c.w.Write(b)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = c.Close()
		return fmt.Errorf("stdio write: %w", context.Cause(ctx))
	}
}

func (c *stdioConn) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		if rc, ok := c.rc.(io.Closer); ok {
			errs = append(errs, rc.Close())
		}
		if wc, ok := c.w.(io.Closer); ok && !sameValue(c.w, c.rc) {
			errs = append(errs, wc.Close())
		}
	})
	return errors.Join(errs...)
}

func sameValue(w io.Writer, r io.Reader) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // incomparable dynamic types
		}
	}()
	return any(w) == any(r)
}

// ServeStdio serves one connection on r and w (NewStdioConn) until r reaches EOF, the
// connection fails or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	return s.ServeConn(ctx, NewStdioConn(r, w))
}

// Handler returns the WebSocket endpoint guarded by g (netguard: a request without the
// bearer token is refused with 401) with coder/websocket's Origin check (an upgrade whose
// Origin does not match its Host is refused with 403). Each upgrade is served as one
// connection until the peer closes it or base ends.
func (s *Server) Handler(base context.Context, g netguard.Guard) http.Handler {
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "error", err)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(base, cancel)
		defer stop()
		if err := s.ServeConn(ctx, NewWebSocketConn(c)); err != nil {
			s.log.Debug("websocket connection ended", "remote", r.RemoteAddr, "error", err)
		}
	}), s.log)
}

// Listener is a bound WebSocket endpoint of Listen.
type Listener struct {
	s  *Server
	ln *netguard.Listener
	g  netguard.Guard
}

// Listen binds addr ("host:port"; "" is 127.0.0.1:0) for WebSocket connections that
// must present token as a bearer credential. An executor runs processes, so there is no
// listening without a token: "" is ErrTokenRequired, and one shorter than
// netguard.MinTokenBytes is refused.
func (s *Server) Listen(ctx context.Context, addr, token string) (*Listener, error) {
	if token == "" {
		return nil, fmt.Errorf("executor: listen %s: %w", addr, ErrTokenRequired)
	}
	g := netguard.Guard{Token: token}
	ln, err := netguard.Listen(ctx, addr, g)
	if err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	return &Listener{s: s, ln: ln, g: g}, nil
}

// URL is the endpoint, ws://HOST:PORT/.
func (l *Listener) URL() string { return l.ln.URL("ws") + "/" }

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases a listener whose Serve was never called.
func (l *Listener) Close() error { return l.ln.Close() }

// Serve accepts connections until ctx ends, then closes every open one, waits for them
// and returns nil; it returns an error if the listener fails first.
func (l *Listener) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	h := l.s.Handler(ctx, l.g)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			wg.Add(1)
			defer wg.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          l.s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	err := netguard.Serve(ctx, hs, l.ln, cancel)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("executor: serve %s: %w", l.URL(), err)
	}
	return nil
}
