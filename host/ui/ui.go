// Package ui is the operator's status page of a warden host (`warden serve --ui-listen`): what
// runs and what was decided — threads and their servers with the reasons of those disabled or
// failed, the shared MCP sessions, the executors, the policy modules with their latencies,
// and the recent denials — plus the host's Prometheus metrics at /metrics.
//
// The page is plain HTML rendered on the server (html/template, embedded in the binary) with
// one small script that swaps in the re-rendered content the server pushes over
// server-sent events (/events) when something changes. Nothing is loaded from elsewhere (no
// CDN, no font), and a strict Content-Security-Policy allows only the page's own script and
// style sheet. The page shows names, states, reasons and counts (host.Status), never a
// secret value.
//
// # Access
//
// The listener follows warden's listen guard (host/internal/netguard, as the host API and
// the MCP front door): a TCP address needs the bearer token (or --no-auth, loopback only),
// a unix:// socket is created 0600. A browser cannot send an Authorization header when it
// navigates, so the page also accepts the token once in the URL: GET /?token=TOKEN answers
// with a session cookie (HttpOnly, SameSite=Strict, for this listener only) and a redirect
// to the same URL without the token. Every other request needs that cookie or
// "Authorization: Bearer TOKEN"; without either it gets 401 and no content. The cookie is a
// random value of this listener, not the token: it opens this read-only page and nothing
// else, and it dies with the process.
package ui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/netguard"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is sent with every response: the page's own script, style sheet and
// event stream, nothing else — no inline script or style, no frames, no forms, no other
// origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Defaults of Options.
const (
	// DefaultRefresh is how often a live stream re-reads the status when nothing signalled a
	// change (latencies and counters change without one).
	DefaultRefresh = time.Second
	// DefaultMaxStreams bounds the live streams served at once.
	DefaultMaxStreams = 16
	// DefaultStreamLifetime ends a live stream after this long; the browser reconnects by
	// itself, so a forgotten tab never holds a stream for ever.
	DefaultStreamLifetime = 10 * time.Minute
)

// minGap spaces a stream's updates: a burst of changes (a reload restarting a hundred
// servers) is one update, not a hundred.
const minGap = 200 * time.Millisecond

// Options configures New. The zero value is usable (but Listen needs Token, NoAuth or a
// unix:// address).
type Options struct {
	// Token is the bearer token (at least netguard.MinTokenBytes): the Authorization header,
	// or once in the URL (?token=) to get the session cookie.
	Token string
	// NoAuth serves a TCP listener without a token, on a loopback address only; requests
	// must then name a loopback Host.
	NoAuth bool
	// Logger receives refusals (at debug level) and stream errors. nil: none.
	Logger hclog.Logger
	// Version is shown in the page's header.
	Version string
	// Refresh, MaxStreams and StreamLifetime: 0 means DefaultRefresh, DefaultMaxStreams,
	// DefaultStreamLifetime.
	Refresh        time.Duration
	MaxStreams     int
	StreamLifetime time.Duration
}

// UI is the status page of one host.
type UI struct {
	h       *host.Host
	o       Options
	log     hclog.Logger
	tmpl    *template.Template
	static  map[string]staticFile
	session string // the cookie value of this UI (random, hex)
	streams chan struct{}
}

type staticFile struct {
	body        []byte
	contentType string
}

var funcs = template.FuncMap{
	// short shortens an id for display; the full value stays in a title attribute.
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.Local().Format("15:04:05")
	},
	"dur": formatDuration,
}

// formatDuration prints a latency at a useful precision: 800ns, 42µs, 1.3ms, 2.50s.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// New returns the status page of h. It is valid until h is closed.
func New(h *host.Host, o Options) (*UI, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.StreamLifetime <= 0 {
		o.StreamLifetime = DefaultStreamLifetime
	}
	tmpl, err := template.New("ui").Funcs(funcs).ParseFS(assets, "assets/page.html")
	if err != nil {
		return nil, fmt.Errorf("ui: parsing the page template: %w", err)
	}
	u := &UI{h: h, o: o, log: o.Logger, tmpl: tmpl, streams: make(chan struct{}, o.MaxStreams),
		static: map[string]staticFile{}}
	for name, ct := range map[string]string{"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"} {
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			return nil, fmt.Errorf("ui: embedded asset %s: %w", name, err)
		}
		u.static["/static/"+name] = staticFile{b, ct}
	}
	var sess [32]byte
	if _, err := rand.Read(sess[:]); err != nil {
		return nil, fmt.Errorf("ui: session cookie value: %w", err)
	}
	u.session = hex.EncodeToString(sess[:])
	return u, nil
}

// page is what the templates render.
type page struct {
	host.Status
	Version string
}

func (u *UI) render(name string) ([]byte, error) {
	var b bytes.Buffer
	if err := u.tmpl.ExecuteTemplate(&b, name, page{Status: u.h.Status(), Version: u.o.Version}); err != nil {
		return nil, fmt.Errorf("ui: rendering %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// handler serves the page and its parts under the access rule of the package documentation
// (guard; the session cookie is named cookie). Streams end when done is closed.
func (u *UI) handler(cookie string, guard netguard.Guard, done <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		b, err := u.render("page")
		if err != nil {
			u.log.Error("status page", "error", err)
			http.Error(w, "the status page could not be rendered", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) { u.events(w, r, done) })
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(u.h.Status())
	})
	mux.Handle("GET /metrics", u.h.Metrics().Handler())
	mux.HandleFunc("GET /static/", func(w http.ResponseWriter, r *http.Request) {
		f, ok := u.static[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", f.contentType)
		_, _ = w.Write(f.body)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		if u.allow(w, r, cookie, guard) {
			mux.ServeHTTP(w, r)
		}
	})
}

// allow applies the access rule; when it refuses (or redirects) it has answered.
func (u *UI) allow(w http.ResponseWriter, r *http.Request, cookie string, guard netguard.Guard) bool {
	if guard.Token == "" {
		return guard.Allow(w, r, u.log) // a Unix socket, or --no-auth on loopback
	}
	q := r.URL.Query()
	if q.Has("token") {
		if !netguard.ValidBearer("Bearer "+q.Get("token"), guard.Token) {
			// The URL is never logged: it holds what may be a token.
			u.log.Debug("status page: wrong token in the URL", "remote", r.RemoteAddr)
			unauthorized(w)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: cookie, Value: u.session, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		to := r.URL.Path
		if len(q) > 0 {
			to += "?" + q.Encode()
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(cookie); err == nil && sameSecret(c.Value, u.session) {
		return true
	}
	if netguard.ValidBearer(r.Header.Get("Authorization"), guard.Token) {
		return true
	}
	u.log.Debug("status page: request without the token or the session cookie", "remote", r.RemoteAddr)
	unauthorized(w)
	return false
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
	http.Error(w, "unauthorized: open the page as /?token=TOKEN (the token of warden serve) or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
}

// sameSecret compares two secrets in constant time, whatever their lengths.
func sameSecret(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// events is the live stream: the rendered content as one "status" event whenever it changed,
// checked on every change signal of the host and every Refresh. It ends when the client
// goes, the listener stops (done) or the stream's lifetime is over.
func (u *UI) events(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
	select {
	case u.streams <- struct{}{}:
		defer func() { <-u.streams }()
	default:
		http.Error(w, "too many open status streams", http.StatusServiceUnavailable)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	changes, cancel := u.h.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	ctx := r.Context()
	end := time.NewTimer(u.o.StreamLifetime)
	defer end.Stop()
	tick := time.NewTicker(u.o.Refresh)
	defer tick.Stop()
	gap := time.NewTimer(0)
	defer gap.Stop()
	// retry: a dropped stream is reopened after a second.
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	fl.Flush()
	var last []byte
	for {
		b, err := u.render("content")
		if err != nil {
			u.log.Error("status stream", "error", err)
			return
		}
		if !bytes.Equal(b, last) {
			if err := writeEvent(w, "status", b); err != nil {
				return
			}
			fl.Flush()
			last = b
			gap.Reset(minGap)
			select {
			case <-gap.C:
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
		select {
		case <-changes:
		case <-tick.C:
		case <-end.C:
			return
		case <-ctx.Done():
			return
		case <-done:
			return
		}
	}
}

// writeEvent writes one server-sent event; every line of data gets its own "data:" field.
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	var b bytes.Buffer
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteByte('\n')
	for line := range strings.SplitSeq(strings.ReplaceAll(string(data), "\r", ""), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// Listener is a bound status-page listener; see UI.Listen.
type Listener struct {
	u     *UI
	ln    *netguard.Listener
	guard netguard.Guard
}

// Listen binds addr for the page under the listen guard: "host:port" ("" means 127.0.0.1:0)
// needs Options.Token unless Options.NoAuth (loopback only); "unix:///path" is a socket
// created 0600. Start serving with Serve. The errors wrap netguard's (ErrTokenRequired,
// ErrNoAuthNotLoopback, ErrTokenTooShort, …) and name the address.
func (u *UI) Listen(addr string) (*Listener, error) {
	g := netguard.Guard{Token: u.o.Token, NoAuth: u.o.NoAuth}
	ln, err := netguard.Listen(context.Background(), addr, g)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	return &Listener{u: u, ln: ln, guard: g}, nil
}

// URL is the bound base URL, e.g. http://127.0.0.1:41234 (unix:///path for a socket).
func (l *Listener) URL() string { return l.ln.URL("http") }

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases a listener whose Serve was never called; to stop Serve, cancel its context.
func (l *Listener) Close() error { return l.ln.Close() }

// cookieName is per listener: browsers share cookies between the ports of one host, and two
// warden processes on one machine must not overwrite each other's session.
func (l *Listener) cookieName() string {
	if ta, ok := l.ln.Addr().(*net.TCPAddr); ok {
		return fmt.Sprintf("warden_ui_%d", ta.Port)
	}
	return "warden_ui"
}

// Serve serves the page until ctx is done, then ends the open streams, stops and returns
// nil; it returns an error if the listener fails first. Call it once.
func (l *Listener) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{
		Handler:           l.u.handler(l.cookieName(), l.guard, ctx.Done()),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          l.u.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	if err := netguard.Serve(ctx, hs, l.ln, cancel); err != nil {
		return fmt.Errorf("ui: serve %s: %w", l.URL(), err)
	}
	return nil
}
