package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/netguard"
)

// Errors of Listen; they are netguard's, so errors.Is works across warden's listeners.
var (
	// ErrTokenRequired: a TCP address without Options.Token and without Options.NoAuth.
	ErrTokenRequired = netguard.ErrTokenRequired
	// ErrNoAuthNotLoopback: Options.NoAuth on an address that is not loopback.
	ErrNoAuthNotLoopback = netguard.ErrNoAuthNotLoopback
	// ErrTokenTooShort: an Options.Token shorter than MinTokenBytes.
	ErrTokenTooShort = netguard.ErrTokenTooShort
)

// MinTokenBytes is the shortest Options.Token Listen accepts.
const MinTokenBytes = netguard.MinTokenBytes

// Handler returns an http.Handler that upgrades every request to a WebSocket and serves
// it as one connection, one JSON-RPC message per text frame (a binary frame closes the
// connection with status 1003; a message over Options.MaxMessageBytes with 1009).
//
// Before upgrading it checks, in order:
//   - with Options.Token set: the Authorization header must be "Bearer TOKEN"
//     (constant-time compare), else 401;
//   - without a token: the request's Host must be a loopback name or address
//     (localhost, 127.0.0.0/8, ::1), else 403 — this defeats DNS rebinding against a
//     local warden (a request over a Unix socket is exempt: no browser reaches one);
//   - a browser Origin must match the Host or Options.OriginPatterns, else 403.
//
// Mounted in your own server without a token, it lets every local user in: Listen is what
// requires a token (or a Unix socket) by default.
//
// Connections live until the client closes them or the request's context ends; note that
// http.Server.Shutdown does not close upgraded connections. Listener.Serve does.
func (s *Server) Handler() http.Handler {
	return s.wsHandler(context.Background(), nil)
}

func (s *Server) wsHandler(base context.Context, t *connTracker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.guard.Allow(w, r, s.log) {
			return
		}
		if t != nil {
			if !t.add() {
				http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
				return
			}
			defer t.done()
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.origins})
		if err != nil {
			// Accept has written the HTTP error (bad handshake, or a foreign Origin).
			s.log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "error", err)
			return
		}
		c.SetReadLimit(s.maxMsg)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(base, cancel)
		defer stop()
		s.log.Debug("websocket connection", "remote", r.RemoteAddr)
		if err := s.ServeConn(ctx, &wsConn{c: c}); err != nil && ctx.Err() == nil {
			s.log.Debug("websocket connection ended", "remote", r.RemoteAddr, "error", err)
		}
	})
}

// wsConn adapts a coder/websocket connection to Conn.
type wsConn struct {
	c *websocket.Conn
}

func (w *wsConn) Read(ctx context.Context) ([]byte, error) {
	typ, b, err := w.c.Read(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			return nil, io.EOF
		}
		return nil, err
	}
	if typ != websocket.MessageText {
		_ = w.c.Close(websocket.StatusUnsupportedData, "text messages only")
		return nil, errors.New("binary WebSocket message")
	}
	return b, nil
}

func (w *wsConn) Write(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

func (w *wsConn) Close() error {
	return w.c.Close(websocket.StatusNormalClosure, "")
}

// Listener is a bound WebSocket endpoint; see Server.Listen.
type Listener struct {
	s  *Server
	ln *netguard.Listener
}

// Listen binds addr for WebSocket connections: "host:port" ("" means 127.0.0.1:0, an
// ephemeral loopback port) or "unix:///path" (a Unix-domain socket). Start serving with
// Serve.
//
// A TCP address requires Options.Token (at least MinTokenBytes; shorter is
// ErrTokenTooShort on every address) unless Options.NoAuth is set, which only a loopback
// address accepts (127.0.0.0/8, ::1, localhost; the bound address is checked too):
// ErrTokenRequired, ErrNoAuthNotLoopback. A Unix socket is created mode 0600 whatever the
// umask, so it needs no token (one that is set is still checked); a stale socket at the
// path is replaced, anything else there is refused, and the file is removed on close.
func (s *Server) Listen(addr string) (*Listener, error) {
	ln, err := netguard.Listen(context.Background(), addr, s.guard)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	return &Listener{s: s, ln: ln}, nil
}

// URL is the bound endpoint, e.g. ws://127.0.0.1:41234, or unix:///path for a Unix
// socket (dial it with an http.Client whose transport dials the path). For a wildcard
// address (0.0.0.0, ::) it names the wildcard as given to Listen, with the bound port.
func (l *Listener) URL() string { return l.ln.URL("ws") }

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases the listener of a Listener whose Serve was never called (removing its
// Unix socket). To stop a running Serve, cancel its context.
func (l *Listener) Close() error { return l.ln.Close() }

// Serve serves WebSocket connections (Handler) until ctx is done, then stops accepting,
// closes every open connection (cancelling their in-flight requests), waits for them
// and returns nil. It returns an error if the listener fails first. Call it once.
func (l *Listener) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &connTracker{}
	hs := &http.Server{
		Handler:           l.s.wsHandler(ctx, t),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          l.s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	err := netguard.Serve(ctx, hs, l.ln, cancel) // cancel ends every upgraded connection
	t.closeAndWait()
	if err != nil {
		return fmt.Errorf("api: serve %s: %w", l.URL(), err)
	}
	return nil
}

// ListenAndServe binds addr (see Listen), logs the URL at info level, passes it to ready
// (if not nil; e.g. to print it), and serves until ctx is done (see Listener.Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(url string)) error {
	l, err := s.Listen(addr)
	if err != nil {
		return err
	}
	s.log.Info("listening", "url", l.URL(), "token", s.guard.Token != "")
	if ready != nil {
		ready(l.URL())
	}
	return l.Serve(ctx)
}

// connTracker counts a Listener's upgraded connections, which http.Server no longer
// tracks once hijacked, so that Serve can wait for them.
type connTracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (t *connTracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *connTracker) done() { t.wg.Done() }

func (t *connTracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}
