package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/netguard"
)

// ErrTokenRequired is returned by Listen for a non-loopback address without a bearer token.
var ErrTokenRequired = errors.New("a bearer token is required to listen on a non-loopback address")

// PathPattern is the route of a thread's MCP endpoint in Handler.
const PathPattern = "/threads/{id}/mcp"

// ThreadPath is the path of a thread's MCP endpoint: /threads/ID/mcp.
func ThreadPath(threadID string) string { return "/threads/" + threadID + "/mcp" }

// Handler serves every thread at /threads/{id}/mcp over MCP streamable HTTP (stateful
// sessions: GET for the server-to-client stream, POST for messages, DELETE to end a
// session). An unknown thread is 404.
//
// Handler does not authenticate: Listen adds the bearer-token and loopback-Host rules.
// Mounted in your own server, put it behind your own authentication. It keeps the MCP
// SDK's DNS-rebinding protection (a request that arrived on a loopback address must name a
// loopback Host) and refuses cross-origin browser requests (http.CrossOriginProtection).
func (f *FrontDoor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathPattern, func(w http.ResponseWriter, r *http.Request) {
		ts, err := f.serverFor(r.PathValue("id"))
		if err != nil {
			http.Error(w, "thread not found", http.StatusNotFound)
			return
		}
		ts.http.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(mux)
}

// authorize wraps h with the listener rules: with a token every request must carry
// "Authorization: Bearer TOKEN" (constant-time compare; 401 otherwise); without one the
// request's Host must be a loopback name or address (403 otherwise), which defeats DNS
// rebinding against a local warden. These are host/api's rules for its WebSocket listener.
func authorize(h http.Handler, token string, log hclog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" {
			if !netguard.ValidBearer(r.Header.Get("Authorization"), token) {
				log.Debug("request refused: missing or wrong bearer token", "remote", r.RemoteAddr)
				w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		} else if !netguard.IsLoopbackHost(netguard.HostOnly(r.Host)) {
			log.Debug("request refused: non-loopback Host without a token", "remote", r.RemoteAddr)
			http.Error(w, "forbidden: this server accepts only loopback Host names", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Listener is a bound front-door HTTP endpoint; see FrontDoor.Listen.
type Listener struct {
	f     *FrontDoor
	ln    net.Listener
	url   string
	token string
}

// Listen binds addr ("host:port"; "" means 127.0.0.1:0, an ephemeral loopback port) for the
// front door. Without a token it accepts only loopback addresses (127.0.0.0/8, ::1,
// localhost) and otherwise fails with ErrTokenRequired, checking the bound address too. With
// a token every request must carry "Authorization: Bearer TOKEN". Start serving with Serve.
func (f *FrontDoor) Listen(addr, token string) (*Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("frontdoor: listen %q: %w", addr, err)
	}
	if token == "" && !netguard.IsLoopbackHost(host) {
		return nil, fmt.Errorf("frontdoor: listen %s: %w", addr, ErrTokenRequired)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok || (token == "" && !ta.IP.IsLoopback()) {
		_ = ln.Close()
		return nil, fmt.Errorf("frontdoor: listen %s (bound %s): %w", addr, ln.Addr(), ErrTokenRequired)
	}
	urlHost := ta.IP.String()
	if ta.IP.IsUnspecified() {
		urlHost = host
		if urlHost == "" {
			urlHost = "0.0.0.0"
		}
	}
	return &Listener{f: f, ln: ln, token: token, url: "http://" + net.JoinHostPort(urlHost, strconv.Itoa(ta.Port))}, nil
}

// URL is the bound base URL, e.g. http://127.0.0.1:41234. For a wildcard address it names
// the wildcard as given to Listen, with the bound port.
func (l *Listener) URL() string { return l.url }

// ThreadURL is a thread's MCP endpoint on this listener: URL + /threads/ID/mcp.
func (l *Listener) ThreadURL(threadID string) string { return l.url + ThreadPath(threadID) }

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases the listener of a Listener whose Serve was never called. To stop a running
// Serve, cancel its context.
func (l *Listener) Close() error { return l.ln.Close() }

// Serve serves the front door until ctx is done, then stops accepting, ends the open
// requests (server-to-client streams included) and returns nil. It returns an error if the
// listener fails first. The MCP sessions themselves live on in the FrontDoor until it is
// closed (or they time out). Call it once.
func (l *Listener) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{
		Handler:           authorize(l.f.Handler(), l.token, l.f.log),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          l.f.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel() // ends hanging streams: their request contexts derive from ctx
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		_ = hs.Close()
	}
	if err == nil {
		err = <-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("frontdoor: serve %s: %w", l.url, err)
}

// ListenAndServe binds addr with token (see Listen), logs the URL, passes it to ready (if
// not nil; e.g. to print it) and serves until ctx is done (see Listener.Serve).
func (f *FrontDoor) ListenAndServe(ctx context.Context, addr, token string, ready func(url string)) error {
	l, err := f.Listen(addr, token)
	if err != nil {
		return err
	}
	f.log.Info("MCP front door listening", "url", l.URL()+PathPattern, "token", token != "")
	if ready != nil {
		ready(l.URL())
	}
	return l.Serve(ctx)
}
