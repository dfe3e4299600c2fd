package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/warden-mcp/warden/host/oauth/store"
)

// Registration is how a login obtains its OAuth client when none is configured.
type Registration string

// Registration modes. A configured client id (LoginRequest.ClientID) is used whatever
// the mode says.
const (
	// RegistrationAuto (also ""): a client ID metadata document where the authorization
	// server supports one and Options.ClientMetadataURL is set, else dynamic client
	// registration.
	RegistrationAuto Registration = "auto"
	// RegistrationDCR: dynamic client registration (RFC 7591) only.
	RegistrationDCR Registration = "dcr"
	// RegistrationMetadataDocument: the client ID metadata document only.
	RegistrationMetadataDocument Registration = "cimd"
)

// ParseRegistration checks a registration mode as a client gives it.
func ParseRegistration(s string) (Registration, error) {
	switch r := Registration(s); r {
	case "", RegistrationAuto:
		return RegistrationAuto, nil
	case RegistrationDCR, RegistrationMetadataDocument:
		return r, nil
	}
	return "", fmt.Errorf("%w: client registration %q is not one of auto, dcr, cimd", ErrInvalidRequest, s)
}

// LoginRequest describes one login.
type LoginRequest struct {
	// Key is the login's store key: Owner is the environment the server runs in (its
	// OAuth traffic goes out from there), Server and URL the server's name and URL.
	Key store.Key
	// ClientID is a configured (pre-registered) client id; it skips registration.
	ClientID string
	// Registration is how to obtain a client when ClientID is empty. "": RegistrationAuto.
	Registration Registration
	// Scopes replace the scopes discovered from the server. nil: the discovered ones.
	Scopes []string
	// CallbackPort is the callback listener's loopback port. 0: Options.CallbackPort,
	// else an ephemeral port.
	CallbackPort int
	// Timeout bounds the whole login, most of it waiting for the user. 0:
	// DefaultLoginTimeout.
	Timeout time.Duration
}

// Login is one running login. AuthorizationURL is the page the user opens; Done is
// closed when the login ended, and Err then says how (nil: the token is stored).
type Login struct {
	// Key is the login's store key.
	Key store.Key
	// AuthorizationURL is the authorization server's page the user opens in a browser.
	AuthorizationURL string
	// RedirectURL is the callback listener's URL, where the browser comes back.
	RedirectURL string

	cancel context.CancelCauseFunc
	urlCh  chan string
	done   chan struct{}
	err    error
}

// Done is closed when the login ended.
func (l *Login) Done() <-chan struct{} { return l.done }

// Err is the login's outcome once Done is closed: nil when the token is stored.
func (l *Login) Err() error {
	<-l.done
	return l.err
}

// Wait waits for the login to end, or for ctx.
func (l *Login) Wait(ctx context.Context) error {
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel ends the login with ErrCanceled (a no-op once it ended).
func (l *Login) Cancel() { l.cancel(ErrCanceled) }

// Start begins a login: it listens for the callback, probes the server, discovers its
// authorization server and obtains a client (configured, metadata document or
// registration) — all from the environment that owns the login — and returns once the
// authorization URL is known. The rest runs in the background until Done: the callback
// (exactly one, with this login's state), the RFC 9207 iss check, the code exchange with
// PKCE, and storing the token under req.Key. Nothing is stored unless all of it succeeds.
// A second login for the same key cancels the first.
//
// Errors before the URL exists (no route, a busy callback port, discovery or registration
// failing) are returned here; later ones are the Login's Err. ctx bounds only the wait
// for the URL.
func (m *Manager) Start(ctx context.Context, req LoginRequest) (*Login, error) {
	if err := req.Key.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	reg, err := ParseRegistration(string(req.Registration))
	if err != nil {
		return nil, err
	}
	req.Registration = reg
	client, err := m.client(req.Key.Owner)
	if err != nil {
		return nil, m.named(req.Key, err)
	}
	port := cmp.Or(req.CallbackPort, m.o.CallbackPort)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, m.named(req.Key, fmt.Errorf("%w on 127.0.0.1:%d: %w", ErrCallbackPort, port, err))
	}
	lctx, cancel := context.WithCancelCause(m.ctx)
	lctx, stopTimer := context.WithTimeoutCause(lctx, cmp.Or(req.Timeout, DefaultLoginTimeout),
		fmt.Errorf("%w (%s)", ErrLoginTimeout, cmp.Or(req.Timeout, DefaultLoginTimeout)))
	l := &Login{
		Key:         req.Key,
		RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port),
		cancel:      cancel,
		urlCh:       make(chan string, 1),
		done:        make(chan struct{}),
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		stopTimer()
		cancel(ErrCanceled)
		_ = ln.Close()
		return nil, m.named(req.Key, ErrCanceled)
	}
	if old := m.logins[req.Key]; old != nil {
		old.cancel(fmt.Errorf("%w: a newer login for the same server started", ErrCanceled))
	}
	m.logins[req.Key] = l
	m.wg.Add(1)
	m.mu.Unlock()

	cb := newCallback(ln, req.Key.Server)
	go func() {
		defer m.wg.Done()
		defer stopTimer()
		err := m.run(lctx, l, req, client, cb)
		// The port is free before anyone hears the login ended (they may start the next
		// one on it); a page still being written finishes on its open connection.
		cb.stopListening()
		l.err = err
		m.mu.Lock()
		if m.logins[req.Key] == l {
			delete(m.logins, req.Key)
		}
		if err == nil {
			// The caller of Start recovers what this login fixes; OnLogin is for others'.
			delete(m.expired, req.Key)
			delete(m.waiting, req.Key)
		}
		m.mu.Unlock()
		cb.finish(err)
		close(l.done)
		if err != nil {
			m.log.Info("OAuth login failed", "owner", req.Key.Owner, "server", req.Key.Server, "error", err)
		} else {
			m.log.Info("OAuth login stored", "owner", req.Key.Owner, "server", req.Key.Server, "url", req.Key.URL)
		}
	}()
	select {
	case u := <-l.urlCh:
		l.AuthorizationURL = u
		return l, nil
	case <-l.done:
		return nil, l.err
	case <-ctx.Done():
		l.cancel(ctx.Err())
		<-l.done
		return nil, ctx.Err()
	}
}

// named prefixes err with the login's server.
func (m *Manager) named(k store.Key, err error) error {
	return fmt.Errorf("OAuth login for MCP server %q: %w", k.Server, err)
}

// run is the login after Start: the SDK's authorization code flow, with this package's
// fetcher (the callback listener) and persistence.
func (m *Manager) run(ctx context.Context, l *Login, req LoginRequest, client *http.Client, cb *callback) error {
	defer cb.close()
	var (
		got     *oauth2.Token
		gotCfg  *oauth2.Config
		gotIss  string
		fetched bool
	)
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         l.RedirectURL,
		RequestRefreshToken: true,
		Client:              client,
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if fetched {
				return nil, errors.New("the server asked for a second authorization in one login")
			}
			fetched = true
			u, err := url.Parse(a.URL)
			if err != nil {
				return nil, fmt.Errorf("the authorization URL does not parse")
			}
			cb.expect(u.Query().Get("state"))
			l.urlCh <- a.URL
			select {
			case r := <-cb.result:
				if r.err != nil {
					return nil, r.err
				}
				gotIss = r.iss
				return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got, gotCfg = t, c
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if len(req.Scopes) > 0 {
		scopes := append([]string(nil), req.Scopes...)
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	documentRedirect := m.o.CallbackPort != 0 && l.RedirectURL == fmt.Sprintf("http://127.0.0.1:%d/callback", m.o.CallbackPort)
	switch {
	case req.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: req.ClientID}
	case req.Registration == RegistrationMetadataDocument:
		switch {
		case m.o.ClientMetadataURL == "":
			return m.named(req.Key, fmt.Errorf("%w: client registration cimd needs mcp_oauth_client_metadata_url in config.toml", ErrInvalidRequest))
		case !documentRedirect:
			return m.named(req.Key, fmt.Errorf("%w: client registration cimd needs the login's callback on mcp_oauth_callback_port, the port of the document's redirect URI", ErrInvalidRequest))
		}
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: m.o.ClientMetadataURL}
	default:
		// The document names one redirect URI, on the global callback port: a login
		// listening elsewhere registers instead.
		if req.Registration == RegistrationAuto && m.o.ClientMetadataURL != "" && documentRedirect {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: m.o.ClientMetadataURL}
		}
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: clientMetadata(l.RedirectURL)}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return m.named(req.Key, err)
	}
	probeReq, probeResp, err := probe(ctx, client, req.Key.URL)
	if err != nil {
		return m.named(req.Key, m.cause(ctx, err))
	}
	if err := h.Authorize(ctx, probeReq, probeResp); err != nil {
		return m.named(req.Key, m.cause(ctx, err))
	}
	if got == nil || got.AccessToken == "" {
		return m.named(req.Key, errors.New("the authorization server issued no access token"))
	}
	e := store.FromToken(req.Key, got)
	e.ClientID, e.ClientSecret = gotCfg.ClientID, gotCfg.ClientSecret
	e.Issuer = gotIss
	e.TokenURL, e.TokenAuth = gotCfg.Endpoint.TokenURL, authStyleName(gotCfg.Endpoint.AuthStyle)
	if e.TokenAuth == "" && e.ClientSecret == "" {
		// A public client has no secret for a Basic header: without this, x/oauth2's
		// auto-detection tries Basic first and every refresh starts with a 401.
		e.TokenAuth = "params"
	}
	if len(e.Scopes) == 0 {
		e.Scopes = gotCfg.Scopes
	}
	// Storing must not be cut short by the login's own deadline once the token exists.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.HTTPTimeout)
	defer cancel()
	if err := m.o.Store.Put(sctx, e); err != nil {
		return m.named(req.Key, fmt.Errorf("storing the token: %w", err))
	}
	return nil
}

// clientMetadata is how warden describes itself to an authorization server: a public
// native client (no secret) with one loopback redirect URI, using refresh tokens.
func clientMetadata(redirect string) *oauthex.ClientRegistrationMetadata {
	return &oauthex.ClientRegistrationMetadata{
		ClientName:              ClientName,
		RedirectURIs:            []string{redirect},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
}

// ClientMetadataDocument is the client ID metadata document to serve at url (config.toml's
// mcp_oauth_client_metadata_url) for logins whose callback listens on callbackPort
// (mcp_oauth_callback_port): an authorization server compares the login's redirect URI
// with the document's exactly, so the port must be fixed.
func ClientMetadataDocument(url string, callbackPort int) ([]byte, error) {
	if callbackPort < 1 || callbackPort > 65535 {
		return nil, fmt.Errorf("%w: a client ID metadata document needs a fixed callback port (mcp_oauth_callback_port): its redirect URI must match the login's exactly", ErrInvalidRequest)
	}
	doc := struct {
		ClientID string `json:"client_id"`
		*oauthex.ClientRegistrationMetadata
	}{url, clientMetadata(fmt.Sprintf("http://127.0.0.1:%d/callback", callbackPort))}
	doc.ApplicationType = "native"
	return json.MarshalIndent(doc, "", "  ")
}

// cause turns a flow error into what the user is told: the login's own cause when its
// context ended (timeout, cancellation), a token endpoint's refusal without its response
// body, else err.
func (m *Manager) cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return describe(err)
}

// describe rewrites an oauth2.RetrieveError — whose text quotes the whole response body —
// as its status and RFC 6749 error code and description.
func describe(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	msg := "the token endpoint refused the request"
	if re.Response != nil {
		msg += " (" + re.Response.Status + ")"
	}
	if re.ErrorCode != "" {
		msg += ": " + printable(re.ErrorCode)
		if re.ErrorDescription != "" {
			msg += ": " + printable(re.ErrorDescription)
		}
	}
	return &retrieveError{msg: msg, code: re.ErrorCode}
}

type retrieveError struct {
	msg, code string
}

func (e *retrieveError) Error() string { return e.msg }

// printable bounds a server-supplied string for an error message: 200 runes, no control
// characters.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

func authStyleName(s oauth2.AuthStyle) string {
	switch s {
	case oauth2.AuthStyleInHeader:
		return "header"
	case oauth2.AuthStyleInParams:
		return "params"
	}
	return ""
}

func authStyle(name string) oauth2.AuthStyle {
	switch name {
	case "header":
		return oauth2.AuthStyleInHeader
	case "params":
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}

// probe asks the server, without a token, what it wants: the 401 (its WWW-Authenticate
// challenge names the resource metadata and scopes) is what the SDK's flow starts from. A
// server that answers anything else is logged in to anyway — the user asked — from an
// empty challenge, which makes the SDK discover the metadata at the well-known URLs.
func probe(ctx context.Context, client *http.Client, endpoint string) (*http.Request, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("the server URL does not parse")
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot reach the server: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return req, resp, nil
	}
	_ = resp.Body.Close()
	return req, &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// ----- the callback listener -----

// callback is one login's loopback listener. It answers GET /callback once: the first
// request carrying this login's state (or any state, which ends the login as a state
// mismatch) is the result; the browser's page waits for the login's outcome and says it.
type callback struct {
	srv    *http.Server
	ln     net.Listener
	server string // the MCP server's name, for the page

	mu    sync.Mutex
	state string
	taken bool

	result  chan cbResult // one result
	outcome chan struct{} // closed by finish
	err     error         // the login's outcome, set before outcome closes
	served  chan struct{} // closed when Serve returned
}

type cbResult struct {
	code, state, iss string
	err              error
}

func newCallback(ln net.Listener, server string) *callback {
	cb := &callback{ln: ln, server: server, result: make(chan cbResult, 1), outcome: make(chan struct{}), served: make(chan struct{})}
	cb.srv = &http.Server{
		Handler:           cb,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          discardLogger(),
	}
	go func() {
		defer close(cb.served)
		_ = cb.srv.Serve(ln)
	}()
	return cb
}

func (cb *callback) expect(state string) {
	cb.mu.Lock()
	cb.state = state
	cb.mu.Unlock()
}

// stopListening closes the listener; connections already accepted stay open.
func (cb *callback) stopListening() { _ = cb.ln.Close() }

// finish records the login's outcome for the page.
func (cb *callback) finish(err error) {
	cb.err = err
	close(cb.outcome)
}

// close stops the listener once the page (if any) is written.
func (cb *callback) close() {
	go func() {
		<-cb.outcome
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if cb.srv.Shutdown(ctx) != nil {
			_ = cb.srv.Close()
		}
	}()
}

func (cb *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	cb.mu.Lock()
	if cb.taken || cb.state == "" {
		cb.mu.Unlock()
		page(w, http.StatusConflict, "warden: this login is not waiting for a callback",
			"This sign-in link was already used or the login has ended. Start the login again.")
		return
	}
	cb.taken = true
	var res cbResult
	switch {
	case q.Get("state") != cb.state:
		res.err = fmt.Errorf("%w (the callback was refused: a stale or forged redirect)", ErrStateMismatch)
	case q.Get("error") != "":
		msg := printable(q.Get("error"))
		if d := q.Get("error_description"); d != "" {
			msg += ": " + printable(d)
		}
		res.err = fmt.Errorf("%w: %s", ErrDenied, msg)
	case q.Get("code") == "":
		res.err = errors.New("the authorization callback carries no code")
	default:
		res = cbResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	}
	cb.mu.Unlock()
	cb.result <- res

	select {
	case <-cb.outcome:
	case <-r.Context().Done():
		return
	}
	if cb.err != nil {
		page(w, http.StatusBadRequest, "warden: login failed", fmt.Sprintf("The login to MCP server %q failed: %v", cb.server, cb.err))
		return
	}
	page(w, http.StatusOK, "warden: logged in", fmt.Sprintf("You are logged in to MCP server %q. You can close this window.", cb.server))
}

// page answers the browser with a short page. The callback URL carries the code: the
// page sends no referrer, is not cached, and loads nothing.
func page(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em}</style></head>
<body><h1>%s</h1><p>%s</p></body></html>
`, html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
