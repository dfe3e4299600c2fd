package frontdoor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/netguard"
)

// Errors of Listen; they are netguard's, so errors.Is works across warden's listeners.
var (
	// ErrTokenRequired: a TCP address without ListenOptions.Token and without NoAuth.
	ErrTokenRequired = netguard.ErrTokenRequired
	// ErrNoAuthNotLoopback: ListenOptions.NoAuth on an address that is not loopback.
	ErrNoAuthNotLoopback = netguard.ErrNoAuthNotLoopback
	// ErrTokenTooShort: a ListenOptions.Token shorter than MinTokenBytes.
	ErrTokenTooShort = netguard.ErrTokenTooShort
)

// MinTokenBytes is the shortest ListenOptions.Token Listen accepts.
const MinTokenBytes = netguard.MinTokenBytes

// ListenOptions is the access rule of a front-door listener.
type ListenOptions struct {
	// Token, when set, is the bearer token every request must present
	// ("Authorization: Bearer TOKEN"), compared in constant time; at least MinTokenBytes.
	Token string
	// NoAuth is the explicit opt-out of the token on a TCP listener, accepted only on a
	// loopback address: then any local user can call the threads' tools.
	NoAuth bool
}

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

// Listener is a bound front-door HTTP endpoint; see FrontDoor.Listen.
type Listener struct {
	f     *FrontDoor
	ln    *netguard.Listener
	guard netguard.Guard
}

// Listen binds addr for the front door: "host:port" ("" means 127.0.0.1:0, an ephemeral
// loopback port) or "unix:///path" (a Unix-domain socket). Start serving with Serve.
//
// A TCP address requires o.Token (at least MinTokenBytes; shorter is ErrTokenTooShort on
// every address) unless o.NoAuth is set, which only a loopback address accepts
// (127.0.0.0/8, ::1, localhost; the bound address is checked too): ErrTokenRequired,
// ErrNoAuthNotLoopback. Without a token a request must name a loopback Host, which defeats
// DNS rebinding. A Unix socket is created mode 0600 whatever the umask, so it needs no
// token (one that is set is still checked); it is removed on close. These are host/api's
// rules for its WebSocket listener.
func (f *FrontDoor) Listen(addr string, o ListenOptions) (*Listener, error) {
	g := netguard.Guard{Token: o.Token, NoAuth: o.NoAuth}
	ln, err := netguard.Listen(context.Background(), addr, g)
	if err != nil {
		return nil, fmt.Errorf("frontdoor: %w", err)
	}
	return &Listener{f: f, ln: ln, guard: g}, nil
}

// URL is the bound base URL, e.g. http://127.0.0.1:41234, or unix:///path for a Unix
// socket (its requests' paths are the same). For a wildcard address it names the wildcard
// as given to Listen, with the bound port.
func (l *Listener) URL() string { return l.ln.URL("http") }

// ThreadURL is a thread's MCP endpoint on this listener: URL + /threads/ID/mcp (for a Unix
// socket, the socket's URL followed by the request path).
func (l *Listener) ThreadURL(threadID string) string { return l.URL() + ThreadPath(threadID) }

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
		Handler:           l.guard.Handler(l.f.Handler(), l.f.log),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          l.f.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	// cancel ends hanging streams: their request contexts derive from ctx.
	if err := netguard.Serve(ctx, hs, l.ln, cancel); err != nil {
		return fmt.Errorf("frontdoor: serve %s: %w", l.URL(), err)
	}
	return nil
}

// ListenAndServe binds addr with o (see Listen), logs the URL, passes it to ready (if not
// nil; e.g. to print it) and serves until ctx is done (see Listener.Serve).
func (f *FrontDoor) ListenAndServe(ctx context.Context, addr string, o ListenOptions, ready func(url string)) error {
	l, err := f.Listen(addr, o)
	if err != nil {
		return err
	}
	f.log.Info("MCP front door listening", "url", l.URL()+PathPattern, "token", o.Token != "")
	if ready != nil {
		ready(l.URL())
	}
	return l.Serve(ctx)
}
