package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/netguard"
)

// ErrTokenRequired is returned by Listen for a non-loopback address when the Server has
// no Options.Token.
var ErrTokenRequired = errors.New("a bearer token (Options.Token) is required to listen on a non-loopback address")

// Handler returns an http.Handler that upgrades every request to a WebSocket and serves
// it as one connection, one JSON-RPC message per text frame (a binary frame closes the
// connection with status 1003; a message over Options.MaxMessageBytes with 1009).
//
// Before upgrading it checks, in order:
//   - with Options.Token set: the Authorization header must be "Bearer TOKEN"
//     (constant-time compare), else 401;
//   - without a token: the request's Host must be a loopback name or address
//     (localhost, 127.0.0.0/8, ::1), else 403 — this defeats DNS rebinding against a
//     local warden;
//   - a browser Origin must match the Host or Options.OriginPatterns, else 403.
//
// Connections live until the client closes them or the request's context ends; note that
// http.Server.Shutdown does not close upgraded connections. Listener.Serve does.
func (s *Server) Handler() http.Handler {
	return s.wsHandler(context.Background(), nil)
}

func (s *Server) wsHandler(base context.Context, t *connTracker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorize(w, r) {
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

// authorize applies the token or loopback-Host rule and writes the refusal.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	if s.token != "" {
		if netguard.ValidBearer(r.Header.Get("Authorization"), s.token) {
			return true
		}
		s.log.Debug("websocket upgrade refused: missing or wrong bearer token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}
	if !netguard.IsLoopbackHost(netguard.HostOnly(r.Host)) {
		s.log.Debug("websocket upgrade refused: non-loopback Host without a token", "remote", r.RemoteAddr)
		http.Error(w, "forbidden: this server accepts only loopback Host names", http.StatusForbidden)
		return false
	}
	return true
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
	s   *Server
	ln  net.Listener
	url string
}

// Listen binds addr ("host:port"; "" means 127.0.0.1:0, an ephemeral loopback port)
// for WebSocket connections. Without Options.Token it accepts only loopback addresses
// (127.0.0.0/8, ::1, localhost) and otherwise fails with ErrTokenRequired, before and
// after binding (the bound address is checked too). Start serving with Serve.
func (s *Server) Listen(addr string) (*Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen %q: %w", addr, err)
	}
	if s.token == "" && !netguard.IsLoopbackHost(host) {
		return nil, fmt.Errorf("api: listen %s: %w", addr, ErrTokenRequired)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok || (s.token == "" && !ta.IP.IsLoopback()) {
		_ = ln.Close()
		return nil, fmt.Errorf("api: listen %s (bound %s): %w", addr, ln.Addr(), ErrTokenRequired)
	}
	urlHost := ta.IP.String()
	if ta.IP.IsUnspecified() {
		// A wildcard bind: name the wildcard as the caller wrote it (Go reports a
		// dual-stack "::" for "0.0.0.0"); clients use one of the machine's addresses.
		urlHost = host
		if urlHost == "" {
			urlHost = "0.0.0.0"
		}
	}
	return &Listener{
		s:   s,
		ln:  ln,
		url: "ws://" + net.JoinHostPort(urlHost, strconv.Itoa(ta.Port)),
	}, nil
}

// URL is the bound endpoint, e.g. ws://127.0.0.1:41234. For a wildcard address
// (0.0.0.0, ::) it names the wildcard as given to Listen, with the bound port.
func (l *Listener) URL() string { return l.url }

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases the listener of a Listener whose Serve was never called. To stop a
// running Serve, cancel its context.
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
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l.ln) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel() // ends every upgraded connection
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		_ = hs.Close()
	}
	if err == nil {
		err = <-errc
	}
	t.closeAndWait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("api: serve %s: %w", l.url, err)
}

// ListenAndServe binds addr (see Listen), logs the URL at info level, passes it to ready
// (if not nil; e.g. to print it), and serves until ctx is done (see Listener.Serve).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(url string)) error {
	l, err := s.Listen(addr)
	if err != nil {
		return err
	}
	s.log.Info("listening", "url", l.URL(), "token", s.token != "")
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
