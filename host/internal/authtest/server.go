package authtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Consent is what the consent step decides.
type Consent int

// The consent decisions. The zero value approves.
const (
	ConsentApprove Consent = iota
	ConsentDeny
)

func (c Consent) String() string {
	if c == ConsentDeny {
		return "deny"
	}
	return "approve"
}

// IssMode is what the authorization response carries as its RFC 9207 iss parameter.
type IssMode int

// The iss modes. The zero value sends the right issuer.
const (
	IssCorrect IssMode = iota
	// IssWrong sends WrongIssuer.
	IssWrong
	// IssOmitted sends no iss although the metadata advertises it.
	IssOmitted
)

// WrongIssuer is the iss that IssWrong sends.
const WrongIssuer = "http://wrong-issuer.invalid"

// Client is a pre-registered client.
type Client struct {
	ID string
	// Secret makes the client confidential (client_secret_post); empty means public.
	Secret       Secret
	RedirectURIs []string
	Name         string
}

// Options configure a Server. The zero value is a server with dynamic client
// registration, public clients, hour-long access tokens and automatic consent.
type Options struct {
	// Clients are pre-registered; more can be added with AddClient.
	Clients []Client
	// DisableRegistration drops registration_endpoint from the metadata and answers
	// /register with 404.
	DisableRegistration bool
	// RegistrationSecret makes dynamic registration issue a client secret (and
	// client_secret_post) to a client that asks for no particular auth method.
	RegistrationSecret bool
	// Scopes are advertised in scopes_supported besides offline_access and the scopes
	// of every Resource.
	Scopes []string
	// AccessTokenLifetime is both the expires_in sent and the lifetime the resources
	// enforce; default one hour. golang.org/x/oauth2 refreshes a token within 10s of
	// its expiry, so a lifetime under 10s makes the client refresh before every request.
	AccessTokenLifetime time.Duration
	// RefreshTokenLifetime defaults to one day.
	RefreshTokenLifetime time.Duration
	// CodeLifetime defaults to one minute.
	CodeLifetime time.Duration
	// Consent is the initial consent decision (SetConsent changes it).
	Consent Consent
	// Iss is the initial iss mode (SetIss changes it).
	Iss IssMode
	// ConsentTimeout bounds how long a held consent waits before it denies;
	// default 30s.
	ConsentTimeout time.Duration
	// Issuer is the server's public base URL, an origin such as
	// "https://oauth-only.invalid": the issuer of the metadata and of the iss parameter,
	// the base of every endpoint the metadata names, and the authorization server every
	// Resource's metadata names. The name need not resolve: a client reaches the server
	// through a forward proxy that sends that host to Addr (NewForwardProxy), and the
	// browser stand-in dials the listener itself. An https issuer makes the listener
	// serve TLS with a certificate for the issuer's host signed by CA; the go-sdk accepts
	// metadata and endpoints only over https unless they are on loopback, so a public
	// name for a go-sdk client must be https. "": the listener's loopback URL.
	Issuer string
	// CA signs the certificate of an https Issuer (nil: the server makes a CA of its own,
	// Server.CA), and is what the server trusts when it fetches a client ID metadata
	// document (nil: the system roots).
	CA *CA
	// ClientIDMetadataDocuments makes the server accept client ID metadata documents
	// (draft-ietf-oauth-client-id-metadata-document): the metadata advertises
	// client_id_metadata_document_supported, and a client_id that is an https URL with a
	// path is fetched at every /authorize — within 5 KiB and 10s, trusting CA, following
	// no redirect — and must name itself as client_id, list the redirect_uri exactly and
	// ask for no client secret; the client is public. /token then accepts that client id
	// for the codes and refresh tokens issued to it. false: such a client_id is unknown
	// unless pre-registered.
	ClientIDMetadataDocuments bool
}

// Limits on what a peer can make the server hold.
const (
	maxBodyBytes   = 64 << 10
	maxHeaderBytes = 16 << 10
	maxClients     = 1024
	maxCodes       = 1024
	maxTokens      = 16384
	maxListItems   = 32
)

// Server is a real OAuth 2.1 authorization server on a loopback httptest server:
// RFC 8414 metadata, RFC 7591 registration, authorization code with PKCE (S256 only),
// RFC 9207 iss, refresh with rotation. Its methods are safe for concurrent use.
type Server struct {
	o       Options
	srv     *httptest.Server
	issuer  string
	ca      *CA
	browser *http.Client
	docs    *http.Client // fetches client ID metadata documents

	mu      sync.Mutex
	scopes  []string
	clients map[string]*Client
	// docClients are the clients described by client ID metadata documents, by URL, as
	// last fetched; apart from clients so that /authorize fetches a document every time.
	docClients map[string]*Client
	codes      map[string]*codeGrant
	access     map[string]*accessGrant
	refresh    map[string]*refreshGrant
	consent    Consent
	iss        IssMode
	hold       *Hold
	register   []RegisterRecord
	authz      []AuthorizeRecord
	token      []TokenRecord
}

type codeGrant struct {
	clientID, redirectURI, challenge, resource string
	scopes                                     []string
	expires                                    time.Time
	used                                       bool
	// issued are the tokens the code was exchanged for, revoked if it is replayed.
	issued []string
}

type accessGrant struct {
	clientID, resource string
	scopes             []string
	expires            time.Time
	revoked            bool
}

type refreshGrant struct {
	clientID, resource string
	scopes             []string
	expires            time.Time
	// done is set when the token was rotated or revoked; reason says which.
	done   bool
	reason string
}

// NewServer starts a server on loopback; it closes when tb's test ends.
func NewServer(tb testing.TB, o Options) *Server {
	tb.Helper()
	issuer, err := publicOrigin(o.Issuer)
	if err != nil {
		tb.Fatalf("authtest: Options.Issuer: %v", err)
	}
	if o.AccessTokenLifetime <= 0 {
		o.AccessTokenLifetime = time.Hour
	}
	if o.RefreshTokenLifetime <= 0 {
		o.RefreshTokenLifetime = 24 * time.Hour
	}
	if o.CodeLifetime <= 0 {
		o.CodeLifetime = time.Minute
	}
	if o.ConsentTimeout <= 0 {
		o.ConsentTimeout = 30 * time.Second
	}
	s := &Server{
		o:          o,
		scopes:     append([]string{"offline_access"}, o.Scopes...),
		clients:    make(map[string]*Client),
		docClients: make(map[string]*Client),
		docs:       newDocumentClient(o.CA),
		codes:      make(map[string]*codeGrant),
		access:     make(map[string]*accessGrant),
		refresh:    make(map[string]*refreshGrant),
		consent:    o.Consent,
		iss:        o.Iss,
	}
	for _, c := range o.Clients {
		s.AddClient(c)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.serveMetadata)
	mux.HandleFunc("/register", s.serveRegister)
	mux.HandleFunc("/authorize", s.serveAuthorize)
	mux.HandleFunc("/token", s.serveToken)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Config.ReadHeaderTimeout = 10 * time.Second
	s.srv.Config.ReadTimeout = 30 * time.Second
	s.srv.Config.WriteTimeout = o.ConsentTimeout + 30*time.Second
	s.srv.Config.IdleTimeout = 30 * time.Second
	s.srv.Config.MaxHeaderBytes = maxHeaderBytes
	var roots *x509.CertPool
	if strings.HasPrefix(issuer, "https://") {
		s.ca = o.CA
		if s.ca == nil {
			s.ca = NewCA(tb)
		}
		u, _ := url.Parse(issuer) // checked by publicOrigin
		s.srv.TLS = s.ca.TLSConfig(tb, u.Hostname(), "127.0.0.1")
		roots = s.ca.Pool()
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.issuer = s.srv.URL
	if issuer != "" {
		s.issuer = issuer
	}
	// The browser stand-in reaches the issuer's host (which may not resolve) at the real
	// listener, and every other address (the client's callback) as it is. It uses no
	// proxy: a browser on the user's machine talks to the authorization server directly.
	listener := s.srv.Listener.Addr().String()
	issuerAddr := hostPort(s.issuer)
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	s.browser = &http.Client{
		Transport: &http.Transport{
			MaxResponseHeaderBytes: maxHeaderBytes,
			TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == issuerAddr {
					addr = listener
				}
				return dialer.DialContext(ctx, network, addr)
			},
		},
		// The stand-in browser stops at every redirect: it decides itself where to go.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       o.ConsentTimeout + 30*time.Second,
	}
	tb.Cleanup(func() {
		s.mu.Lock()
		h := s.hold
		s.mu.Unlock()
		if h != nil {
			h.Release(ConsentDeny)
		}
		s.srv.Close()
		s.browser.CloseIdleConnections()
		s.docs.CloseIdleConnections()
	})
	return s
}

// URL is the server's base URL, which is also its issuer identifier: Options.Issuer when
// set, else the listener's loopback URL.
func (s *Server) URL() string { return s.issuer }

// CA is the authority that signed an https issuer's certificate (Options.CA, or the
// server's own), nil for an http issuer. A client trusts the server with CA().Pool(), or
// in a child process with SSL_CERT_FILE=CA().CertFile(t).
func (s *Server) CA() *CA { return s.ca }

// Addr is the listener's address (127.0.0.1:port), where a forward proxy sends requests
// for the issuer's host.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// publicOrigin checks an Options.Issuer and returns it without a trailing slash ("" for
// "").
func publicOrigin(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q does not parse: %w", v, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: the scheme must be http or https", v)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", fmt.Errorf("%q must be an origin: scheme://host[:port], no path, query, fragment or userinfo", v)
	}
	return u.Scheme + "://" + u.Host, nil
}

// hostPort is the host:port a client dials for an http(s) origin (the scheme's port when
// none is given).
func hostPort(origin string) string {
	u, _ := url.Parse(origin) // the issuer, already checked
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// AddClient pre-registers c, replacing a client with the same ID.
func (s *Server) AddClient(c Client) {
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c.ID] = &c
}

// SetConsent sets the decision of every later consent step that is not held.
func (s *Server) SetConsent(c Consent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consent = c
}

// SetIss sets what later authorization responses carry as iss.
func (s *Server) SetIss(m IssMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iss = m
}

// ExpireAccessTokens makes every access token issued so far expired: a resource answers
// it with 401 error="invalid_token". Tokens issued later are not affected.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.access {
		a.revoked = true
	}
}

// ExpireRefreshTokens makes every refresh token issued so far unusable: a refresh with
// it gets invalid_grant.
func (s *Server) ExpireRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.refresh {
		if !r.done {
			r.done, r.reason = true, "refresh token expired"
		}
	}
}

// Registrations returns the /register requests so far, oldest first.
func (s *Server) Registrations() []RegisterRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.register)
}

// Authorizations returns the /authorize requests so far, oldest first.
func (s *Server) Authorizations() []AuthorizeRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authz)
}

// TokenRequests returns the /token requests so far, oldest first.
func (s *Server) TokenRequests() []TokenRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.token)
}

// Hold keeps consent steps waiting until Release. Safe for concurrent use.
type Hold struct {
	s           *Server
	reached     chan struct{}
	reachedOnce sync.Once
	done        chan struct{}
	releaseOnce sync.Once
	decision    Consent
}

// HoldConsent makes every later consent step wait until the returned Hold is released
// (or Options.ConsentTimeout passes, which denies).
func (s *Server) HoldConsent() *Hold {
	h := &Hold{s: s, reached: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = h
	return h
}

// Reached is closed when the first request reaches the held consent step.
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release answers every request held by h with d and stops holding later ones.
func (h *Hold) Release(d Consent) {
	h.releaseOnce.Do(func() {
		h.s.mu.Lock()
		h.decision = d
		if h.s.hold == h {
			h.s.hold = nil
		}
		h.s.mu.Unlock()
		close(h.done)
	})
}

func newToken() string { return rand.Text() + rand.Text() }

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// validVerifier is RFC 7636 §4.1: 43 to 128 unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("-._~", c)) {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	scopes := slices.Clone(s.scopes)
	s.mu.Unlock()
	m := map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + "/authorize",
		"token_endpoint":                                 s.issuer + "/token",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_post"},
		"scopes_supported":                               scopes,
		"authorization_response_iss_parameter_supported": true,
	}
	if !s.o.DisableRegistration {
		m["registration_endpoint"] = s.issuer + "/register"
	}
	if s.o.ClientIDMetadataDocuments {
		m["client_id_metadata_document_supported"] = true
	}
	writeJSON(w, http.StatusOK, m)
}

// validRedirectURI accepts absolute http(s) URIs without a fragment; plain http only on
// loopback (RFC 8252 §7.3, OAuth 2.1 §2.3.1).
func validRedirectURI(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Fragment != "" || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		return h == "localhost" || h == "127.0.0.1" || h == "::1"
	}
	return false
}

func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	if s.o.DisableRegistration {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		RedirectURIs            []string `json:"redirect_uris"`
		ClientName              string   `json:"client_name"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ResponseTypes           []string `json:"response_types"`
		Scope                   string   `json:"scope"`
	}
	rec := RegisterRecord{}
	fail := func(status int, code, desc string) {
		rec.Error = code
		s.mu.Lock()
		s.register = appendRecord(s.register, rec)
		s.mu.Unlock()
		writeJSON(w, status, oauthError{code, desc})
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		fail(http.StatusBadRequest, "invalid_client_metadata", "body must be application/json")
		return
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		fail(http.StatusBadRequest, "invalid_client_metadata", "body is not a JSON client metadata object")
		return
	}
	rec.ClientName, rec.RedirectURIs, rec.AuthMethod, rec.GrantTypes = req.ClientName, req.RedirectURIs, req.TokenEndpointAuthMethod, req.GrantTypes
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxListItems {
		fail(http.StatusBadRequest, "invalid_redirect_uri", "redirect_uris needs 1 to 32 entries")
		return
	}
	for _, u := range req.RedirectURIs {
		if !validRedirectURI(u) {
			fail(http.StatusBadRequest, "invalid_redirect_uri", "redirect URIs must be https, or http on loopback, without a fragment")
			return
		}
	}
	for _, g := range req.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			fail(http.StatusBadRequest, "invalid_client_metadata", "unsupported grant type "+strconvQuote(g))
			return
		}
	}
	for _, rt := range req.ResponseTypes {
		if rt != "code" {
			fail(http.StatusBadRequest, "invalid_client_metadata", "unsupported response type "+strconvQuote(rt))
			return
		}
	}
	method := req.TokenEndpointAuthMethod
	switch method {
	case "":
		method = "none"
		if s.o.RegistrationSecret {
			method = "client_secret_post"
		}
	case "none", "client_secret_post":
	default:
		fail(http.StatusBadRequest, "invalid_client_metadata", "token_endpoint_auth_method must be none or client_secret_post")
		return
	}
	c := Client{ID: "client-" + rand.Text(), RedirectURIs: slices.Clone(req.RedirectURIs), Name: req.ClientName}
	if method == "client_secret_post" {
		c.Secret = Secret(newToken())
	}
	s.mu.Lock()
	if len(s.clients) >= maxClients {
		s.mu.Unlock()
		fail(http.StatusServiceUnavailable, "temporarily_unavailable", "too many clients")
		return
	}
	s.clients[c.ID] = &c
	rec.ClientID = c.ID
	s.register = appendRecord(s.register, rec)
	s.mu.Unlock()
	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        time.Now().Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": method,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	}
	if c.Secret != "" {
		resp["client_secret"] = c.Secret.Reveal()
	}
	writeJSON(w, http.StatusCreated, resp)
}

// strconvQuote quotes a peer's value for an error description, cut short so an error
// answer stays small.
func strconvQuote(v string) string {
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return fmt.Sprintf("%q", v)
}

func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	rec := AuthorizeRecord{
		ClientID:            q.Get("client_id"),
		RedirectURI:         q.Get("redirect_uri"),
		ResponseType:        q.Get("response_type"),
		Scopes:              strings.Fields(q.Get("scope")),
		State:               q.Get("state"),
		CodeChallengeMethod: q.Get("code_challenge_method"),
		HasCodeChallenge:    q.Get("code_challenge") != "",
		Resource:            q.Get("resource"),
	}
	record := func() {
		s.mu.Lock()
		s.authz = appendRecord(s.authz, rec)
		s.mu.Unlock()
	}
	var c *Client
	var ok bool
	if s.o.ClientIDMetadataDocuments && isDocumentClientID(rec.ClientID) {
		// A document client is whatever its document says now, so it is fetched before
		// anything else is checked, outside the lock (the fetch takes network time).
		rec.MetadataDocument = true
		var err error
		if c, err = s.fetchDocumentClient(r.Context(), rec.ClientID); err == nil {
			err = s.rememberDocumentClient(c)
		}
		if err != nil {
			rec.Error, rec.MetadataDocumentError = "invalid_client", err.Error()
			var de *documentError
			if errors.As(err, &de) {
				rec.Error = de.code
			}
			record()
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ok = true
	}
	s.mu.Lock()
	if !ok {
		c, ok = s.clients[rec.ClientID]
	}
	var redirectOK bool
	if ok {
		redirectOK = slices.Contains(c.RedirectURIs, rec.RedirectURI)
	}
	supported := slices.Clone(s.scopes)
	s.mu.Unlock()
	// Without a known client and an exactly registered redirect URI the server must not
	// redirect (RFC 6749 §4.1.2.1): it answers with an error page instead.
	if !ok {
		rec.Error = "invalid_client"
		record()
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	if !redirectOK {
		rec.Error = "invalid_redirect_uri"
		record()
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
		return
	}
	redirect := func(params url.Values) {
		s.mu.Lock()
		iss := s.iss
		s.mu.Unlock()
		switch iss {
		case IssCorrect:
			params.Set("iss", s.issuer)
		case IssWrong:
			params.Set("iss", WrongIssuer)
		}
		if rec.State != "" {
			params.Set("state", rec.State)
		}
		u, _ := url.Parse(rec.RedirectURI) // validated at registration
		v := u.Query()
		for k, vs := range params {
			v[k] = vs
		}
		u.RawQuery = v.Encode()
		record()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	fail := func(code, desc string) {
		rec.Error = code
		redirect(url.Values{"error": {code}, "error_description": {desc}})
	}
	if rec.ResponseType != "code" {
		fail("unsupported_response_type", "response_type must be code")
		return
	}
	challenge := q.Get("code_challenge")
	if challenge == "" {
		fail("invalid_request", "code_challenge is required")
		return
	}
	if rec.CodeChallengeMethod != "S256" {
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	if b, err := base64.RawURLEncoding.DecodeString(challenge); err != nil || len(b) != sha256.Size {
		fail("invalid_request", "code_challenge is not a base64url SHA-256")
		return
	}
	for _, sc := range rec.Scopes {
		if !slices.Contains(supported, sc) {
			fail("invalid_scope", "unknown scope "+strconvQuote(sc))
			return
		}
	}

	rec.ConsentAsked = true
	s.mu.Lock()
	decision, hold := s.consent, s.hold
	s.mu.Unlock()
	if hold != nil {
		hold.reachedOnce.Do(func() { close(hold.reached) })
		t := time.NewTimer(s.o.ConsentTimeout)
		select {
		case <-hold.done:
			s.mu.Lock()
			decision = hold.decision
			s.mu.Unlock()
		case <-t.C:
			decision = ConsentDeny
		case <-r.Context().Done():
			t.Stop()
			rec.Error = "abandoned"
			record()
			return
		}
		t.Stop()
	}
	rec.Consent = decision
	if decision == ConsentDeny {
		fail("access_denied", "the user denied the request")
		return
	}
	code := newToken()
	s.mu.Lock()
	if len(s.codes) >= maxCodes {
		s.sweepLocked()
	}
	full := len(s.codes) >= maxCodes
	if !full {
		s.codes[code] = &codeGrant{
			clientID: rec.ClientID, redirectURI: rec.RedirectURI, challenge: challenge,
			resource: rec.Resource, scopes: rec.Scopes, expires: time.Now().Add(s.o.CodeLifetime),
		}
	}
	s.mu.Unlock()
	if full {
		fail("temporarily_unavailable", "too many outstanding codes")
		return
	}
	rec.Code = Secret(code)
	redirect(url.Values{"code": {code}})
}

// sweepLocked drops what can no longer be used. s.mu must be held.
func (s *Server) sweepLocked() {
	now := time.Now()
	for k, c := range s.codes {
		if c.used || now.After(c.expires) {
			delete(s.codes, k)
		}
	}
	for k, a := range s.access {
		if a.revoked || now.After(a.expires) {
			delete(s.access, k)
		}
	}
	for k, r := range s.refresh {
		if r.done || now.After(r.expires) {
			delete(s.refresh, k)
		}
	}
}

// tokenError is an error answer of the token endpoint.
type tokenError struct {
	status     int
	code, desc string
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rec := TokenRecord{}
	answer := func(resp map[string]any, te *tokenError) {
		if te != nil {
			rec.Error = te.code
		}
		s.mu.Lock()
		s.token = appendRecord(s.token, rec)
		s.mu.Unlock()
		if te != nil {
			if te.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
			}
			writeJSON(w, te.status, oauthError{te.code, te.desc})
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}
	bad := func(code, desc string) *tokenError { return &tokenError{http.StatusBadRequest, code, desc} }
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		answer(nil, bad("invalid_request", "body must be application/x-www-form-urlencoded"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		answer(nil, bad("invalid_request", "body is not a form"))
		return
	}
	f := r.PostForm
	rec.GrantType = f.Get("grant_type")
	rec.ClientID = f.Get("client_id")
	rec.RedirectURI = f.Get("redirect_uri")
	rec.Resource = f.Get("resource")
	rec.ClientSecretPresent = f.Has("client_secret")
	rec.CodeVerifierPresent = f.Get("code_verifier") != ""
	// Recorded before the client is checked, so that a refresh token sent by a client the
	// server does not know (someone else's login) shows in the record too.
	rec.PresentedRefreshToken = Secret(f.Get("refresh_token"))
	rec.Scopes = strings.Fields(f.Get("scope"))
	if _, _, ok := r.BasicAuth(); ok {
		answer(nil, &tokenError{http.StatusUnauthorized, "invalid_client", "client_secret_basic is not supported; use client_secret_post"})
		return
	}
	// answer locks s.mu itself, so every path below unlocks before answering.
	s.mu.Lock()
	c, ok := s.clients[rec.ClientID]
	if !ok {
		// A document client is known once /authorize accepted its document; the codes
		// and refresh tokens it holds are bound to its id.
		c, ok = s.docClients[rec.ClientID]
	}
	if !ok {
		s.mu.Unlock()
		answer(nil, &tokenError{http.StatusUnauthorized, "invalid_client", "unknown client_id"})
		return
	}
	if c.Secret != "" && subtle.ConstantTimeCompare([]byte(c.Secret), []byte(f.Get("client_secret"))) != 1 {
		s.mu.Unlock()
		answer(nil, &tokenError{http.StatusUnauthorized, "invalid_client", "client authentication failed"})
		return
	}
	rec.ClientAuthenticated = true
	var resp map[string]any
	var te *tokenError
	switch rec.GrantType {
	case "authorization_code":
		resp, te = s.exchangeLocked(&rec, f)
	case "refresh_token":
		resp, te = s.refreshLocked(&rec, f)
	default:
		te = bad("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
	s.mu.Unlock()
	answer(resp, te)
}

// exchangeLocked redeems an authorization code. s.mu must be held.
func (s *Server) exchangeLocked(rec *TokenRecord, f url.Values) (map[string]any, *tokenError) {
	invalid := func(desc string) *tokenError { return &tokenError{http.StatusBadRequest, "invalid_grant", desc} }
	code := f.Get("code")
	g, ok := s.codes[code]
	if !ok {
		return nil, invalid("unknown authorization code")
	}
	if g.used {
		// A replayed code may be stolen: what it bought is revoked (RFC 6749 §4.1.2).
		for _, t := range g.issued {
			if a, ok := s.access[t]; ok {
				a.revoked = true
			}
			if r, ok := s.refresh[t]; ok {
				r.done, r.reason = true, "revoked: authorization code replayed"
			}
		}
		return nil, invalid("authorization code already used")
	}
	// The code is spent by this attempt whatever its outcome, so a verifier cannot be
	// guessed over several tries.
	g.used = true
	if time.Now().After(g.expires) {
		return nil, invalid("authorization code expired")
	}
	if g.clientID != rec.ClientID {
		return nil, invalid("authorization code was issued to another client")
	}
	if g.redirectURI != rec.RedirectURI {
		return nil, invalid("redirect_uri differs from the authorization request")
	}
	verifier := f.Get("code_verifier")
	if verifier == "" {
		return nil, &tokenError{http.StatusBadRequest, "invalid_request", "code_verifier is required"}
	}
	if !validVerifier(verifier) || subtle.ConstantTimeCompare([]byte(s256(verifier)), []byte(g.challenge)) != 1 {
		return nil, invalid("code_verifier does not match the code_challenge")
	}
	rec.CodeVerifierValid = true
	if rec.Resource != "" && rec.Resource != g.resource {
		return nil, &tokenError{http.StatusBadRequest, "invalid_target", "resource differs from the authorization request"}
	}
	resp, te := s.issueLocked(rec, g.clientID, g.resource, g.scopes)
	if te == nil {
		g.issued = append(g.issued, rec.AccessToken.Reveal(), rec.RefreshToken.Reveal())
	}
	return resp, te
}

// refreshLocked runs a refresh_token grant, rotating the refresh token. s.mu must be
// held.
func (s *Server) refreshLocked(rec *TokenRecord, f url.Values) (map[string]any, *tokenError) {
	invalid := func(desc string) *tokenError { return &tokenError{http.StatusBadRequest, "invalid_grant", desc} }
	rt := f.Get("refresh_token")
	g, ok := s.refresh[rt]
	switch {
	case !ok:
		return nil, invalid("unknown refresh token")
	case g.done:
		return nil, invalid(g.reason)
	case time.Now().After(g.expires):
		return nil, invalid("refresh token expired")
	case g.clientID != rec.ClientID:
		return nil, invalid("refresh token was issued to another client")
	}
	scopes := g.scopes
	if len(rec.Scopes) > 0 {
		for _, sc := range rec.Scopes {
			if !slices.Contains(g.scopes, sc) {
				return nil, &tokenError{http.StatusBadRequest, "invalid_scope", "scope exceeds the original grant"}
			}
		}
		scopes = rec.Scopes
	}
	if rec.Resource != "" && rec.Resource != g.resource {
		return nil, &tokenError{http.StatusBadRequest, "invalid_target", "resource differs from the original grant"}
	}
	g.done, g.reason = true, "refresh token was rotated"
	return s.issueLocked(rec, g.clientID, g.resource, scopes)
}

// issueLocked mints an access and a refresh token. s.mu must be held.
func (s *Server) issueLocked(rec *TokenRecord, clientID, resource string, scopes []string) (map[string]any, *tokenError) {
	if len(s.access)+len(s.refresh) >= maxTokens {
		s.sweepLocked()
		if len(s.access)+len(s.refresh) >= maxTokens {
			return nil, &tokenError{http.StatusServiceUnavailable, "temporarily_unavailable", "too many tokens"}
		}
	}
	now := time.Now()
	at, rt := newToken(), newToken()
	s.access[at] = &accessGrant{clientID: clientID, resource: resource, scopes: scopes, expires: now.Add(s.o.AccessTokenLifetime)}
	s.refresh[rt] = &refreshGrant{clientID: clientID, resource: resource, scopes: scopes, expires: now.Add(s.o.RefreshTokenLifetime)}
	rec.Scopes, rec.AccessToken, rec.RefreshToken = slices.Clone(scopes), Secret(at), Secret(rt)
	expiresIn := int64(s.o.AccessTokenLifetime / time.Second)
	if expiresIn < 1 {
		expiresIn = 1
	}
	resp := map[string]any{
		"access_token":  at,
		"token_type":    "Bearer",
		"expires_in":    expiresIn,
		"refresh_token": rt,
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	return resp, nil
}

// checkAccess decides a bearer token for resourceURL. It returns "" when the token is
// good, else an RFC 6750 error code and a description that never contains the token.
func (s *Server) checkAccess(token, resourceURL string, required []string) (code, desc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.access[token]
	switch {
	case !ok:
		return "invalid_token", "unknown token"
	case a.revoked || time.Now().After(a.expires):
		return "invalid_token", "token expired"
	case a.resource != "" && a.resource != resourceURL:
		return "invalid_token", "token was issued for another resource"
	}
	for _, sc := range required {
		if !slices.Contains(a.scopes, sc) {
			return "insufficient_scope", "token lacks a required scope"
		}
	}
	return "", ""
}

// addScopes advertises scopes in the metadata.
func (s *Server) addScopes(scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range scopes {
		if !slices.Contains(s.scopes, sc) {
			s.scopes = append(s.scopes, sc)
		}
	}
}
