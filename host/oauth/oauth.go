package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/oauth/store"
)

// Errors. Each is wrapped with the server's name and the cause; match with errors.Is.
var (
	// ErrNotLoggedIn: the server asked for a token (401) and there is no stored login for
	// its key.
	ErrNotLoggedIn = errors.New("requires an OAuth login")
	// ErrExpired: the stored login can no longer be used — its refresh token was refused,
	// or the access token was refused and there is no refresh token.
	ErrExpired = errors.New("OAuth login expired")
	// ErrForbidden: the server refused the token with 403 (not a scope step-up warden
	// could satisfy).
	ErrForbidden = errors.New("the server refused access with the stored OAuth token")
	// ErrStateMismatch: the authorization callback's state is not this login's.
	ErrStateMismatch = errors.New("the authorization callback's state does not match this login")
	// ErrDenied: the authorization server redirected back with an error (the user denied
	// consent, or the request was refused).
	ErrDenied = errors.New("the authorization server refused the login")
	// ErrLoginTimeout: no authorization callback arrived within the login's timeout.
	ErrLoginTimeout = errors.New("the login timed out waiting for the authorization callback")
	// ErrCanceled: the login was replaced by a newer login for the same server, or the
	// Manager closed.
	ErrCanceled = errors.New("the login was canceled")
	// ErrCallbackPort: the callback listener could not listen on its port.
	ErrCallbackPort = errors.New("the OAuth callback listener cannot listen")
	// ErrUnroutable: the environment that owns the login cannot be reached.
	ErrUnroutable = errors.New("the OAuth traffic cannot be routed")
	// ErrInvalidRequest: a LoginRequest is malformed (an unknown registration mode, no URL).
	ErrInvalidRequest = errors.New("invalid OAuth login request")
)

// Defaults.
const (
	// DefaultLoginTimeout bounds a login whose LoginRequest.Timeout is zero.
	DefaultLoginTimeout = 5 * time.Minute
	// DefaultHTTPTimeout bounds each discovery, registration, token or probe request.
	DefaultHTTPTimeout = 30 * time.Second
	// RefreshMargin is how long before its expiry a token is refreshed.
	RefreshMargin = 30 * time.Second
	// ClientName is the client_name warden registers with dynamic client registration.
	ClientName = "warden"
)

// Options configures New.
type Options struct {
	// Store holds the logins. Required.
	Store *store.Store
	// Transport returns the RoundTripper that carries one environment's OAuth traffic —
	// the probe of the server, metadata discovery, registration, the token exchange and
	// refreshes: for an executor id, the executor's tunnel (its network), for "local" the
	// host's. nil: http.DefaultTransport for "local" and ErrUnroutable for any other
	// environment.
	Transport func(env string) (http.RoundTripper, error)
	// CallbackPort is the global callback port (config.toml's mcp_oauth_callback_port),
	// used when a LoginRequest names none. 0: an ephemeral loopback port.
	CallbackPort int
	// ClientMetadataURL is the https URL of a client ID metadata document describing
	// warden (config.toml's mcp_oauth_client_metadata_url; ClientMetadataDocument makes
	// it). When set, a login whose callback listens on CallbackPort (the document's
	// redirect URI) to an authorization server that supports client ID metadata documents
	// uses it as the client id instead of registering. "": never.
	ClientMetadataURL string
	// HTTPTimeout bounds each OAuth HTTP request. 0: DefaultHTTPTimeout.
	HTTPTimeout time.Duration
	// OnLogin is called, on a goroutine of the Manager, when another process (warden oauth
	// login, a second host) stores a login for a key whose connection here failed for want
	// of one. It is how those servers start again without a restart; a login made with
	// this Manager's Start is its caller's to act on. nil: the store is not watched.
	OnLogin func(store.Key)
	// Logger receives login and refresh events (never a token). nil: none.
	Logger hclog.Logger
}

// Manager runs OAuth logins and gives connections their tokens.
//
// Concurrency: every method is safe for concurrent use. Close cancels running logins and
// waits for them.
type Manager struct {
	o   Options
	log hclog.Logger

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	logins  map[store.Key]*Login
	expired map[store.Key]string // why a login can no longer be used, until the next login
	waiting map[store.Key]string // keys whose connections failed for want of a login: the refused token
	closed  bool
}

// New returns a Manager over o.Store.
func New(o Options) (*Manager, error) {
	if o.Store == nil {
		return nil, errors.New("oauth.New: Options.Store is required")
	}
	if o.HTTPTimeout <= 0 {
		o.HTTPTimeout = DefaultHTTPTimeout
	}
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{o: o, log: log, ctx: ctx, cancel: cancel,
		logins: map[store.Key]*Login{}, expired: map[store.Key]string{}, waiting: map[store.Key]string{}}
	if o.OnLogin != nil {
		if err := m.watch(); err != nil {
			// Logins by this process still recover their servers; another process's are
			// picked up at the next reload.
			log.Warn("not watching the OAuth credential store for other processes' logins", "file", o.Store.Path(), "error", err)
		}
	}
	return m, nil
}

// Close cancels every running login (each ends with ErrCanceled) and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}

// Store is the Manager's credential store.
func (m *Manager) Store() *store.Store { return m.o.Store }

// Status is a login's state as status output reports it.
type Status int

// Login states.
const (
	// StatusNone: no stored login.
	StatusNone Status = iota
	// StatusLoggedIn: a stored login with a token.
	StatusLoggedIn
	// StatusExpired: a stored login that can no longer be used (see Manager.Expired).
	StatusExpired
)

// Status reports the state of k's login. A store that cannot be read reports StatusNone
// (the connection's own error then says why).
func (m *Manager) Status(ctx context.Context, k store.Key) Status {
	m.mu.Lock()
	_, exp := m.expired[k]
	m.mu.Unlock()
	if exp {
		return StatusExpired
	}
	e, ok, err := m.o.Store.Get(ctx, k)
	if err != nil || !ok || e.AccessToken == "" {
		return StatusNone
	}
	return StatusLoggedIn
}

// Expired returns why k's login can no longer be used, or "".
func (m *Manager) Expired(k store.Key) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expired[k]
}

func (m *Manager) markExpired(k store.Key, why string) {
	m.mu.Lock()
	m.expired[k] = why
	m.mu.Unlock()
	m.log.Warn("OAuth login expired", "owner", k.Owner, "server", k.Server, "url", k.URL, "reason", why)
}

// Logout deletes k's stored login; it reports whether there was one.
func (m *Manager) Logout(ctx context.Context, k store.Key) (bool, error) {
	ok, err := m.o.Store.Delete(ctx, k)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	delete(m.expired, k)
	m.mu.Unlock()
	return ok, nil
}

// client is the HTTP client for env's OAuth traffic: bounded in time, and never following
// a redirect (a 307 from a token endpoint would re-send the client secret and the code to
// wherever it points).
func (m *Manager) client(env string) (*http.Client, error) {
	var rt http.RoundTripper = http.DefaultTransport
	if m.o.Transport != nil {
		var err error
		if rt, err = m.o.Transport(env); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnroutable, err) // err names the environment
		}
	} else if env != store.OwnerLocal {
		return nil, fmt.Errorf("%w: environment %q has no transport", ErrUnroutable, env)
	}
	return &http.Client{
		Transport:     rt,
		Timeout:       m.o.HTTPTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}
