package authtest_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/host/internal/authtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const toolScope = "mcp:tools"

// env is an authorization server and a go-sdk MCP server protected by it.
type env struct {
	as     *authtest.Server
	res    *authtest.Resource
	mcpURL string
	hc     *http.Client
}

func newEnv(t *testing.T, o authtest.Options) *env {
	t.Helper()
	as := authtest.NewServer(t, o)
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "answers ok"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	res := as.Resource(handler, toolScope)
	srv := httptest.NewServer(res)
	t.Cleanup(srv.Close)
	// A transport with its own dialer: the go-sdk then uses it as is for discovery
	// (instead of a clone it cannot close), so the test can close its idle connections.
	tr := &http.Transport{DialContext: (&net.Dialer{}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{as: as, res: res, mcpURL: srv.URL + "/mcp", hc: &http.Client{Transport: tr}}
}

// handler makes the go-sdk's AuthorizationCodeHandler of cfg, on the env's HTTP client.
func (e *env) handler(t *testing.T, cfg *auth.AuthorizationCodeHandlerConfig) *auth.AuthorizationCodeHandler {
	t.Helper()
	cfg.Client = e.hc
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		t.Fatalf("NewAuthorizationCodeHandler: %v", err)
	}
	return h
}

// dial connects the real go-sdk client to the protected MCP server through h. The
// caller closes the session.
func (e *env) dial(ctx context.Context, h auth.OAuthHandler) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "warden", Version: "test"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.mcpURL, HTTPClient: e.hc, OAuthHandler: h}, nil)
}

// connect is handler and dial, closing the session at the end of the test.
func (e *env) connect(t *testing.T, cfg *auth.AuthorizationCodeHandlerConfig) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := e.dial(t.Context(), e.handler(t, cfg))
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func callWhoami(t *testing.T, cs *mcp.ClientSession) error {
	t.Helper()
	r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		return err
	}
	if r.IsError || len(r.Content) != 1 {
		t.Fatalf("whoami: isError=%v, %d content items", r.IsError, len(r.Content))
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Text != "ok" {
		t.Fatalf("whoami answered %#v, want text ok", r.Content[0])
	}
	return nil
}

// callback is a real loopback callback listener, as a client's login would run.
type callback struct {
	url string
	got chan url.Values
}

func newCallback(t *testing.T) *callback {
	t.Helper()
	c := &callback{got: make(chan url.Values, 4)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		c.got <- r.URL.Query()
		_, _ = w.Write([]byte("Login complete; you can close this window.\n"))
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL + "/callback"
	return c
}

// fetcher drives the browser stand-in through the callback listener.
func (c *callback) fetcher(as *authtest.Server) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		resp, err := as.Browse(ctx, args.URL)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New("callback answered " + resp.Status)
		}
		// The callback handler sent before it answered, and Browse waited for the answer.
		q := <-c.got
		if e := q.Get("error"); e != "" {
			return nil, &authtest.AuthorizationError{Code: e, Description: q.Get("error_description")}
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// checkBearerUse asserts the resource first refused the tokenless request, and that
// every later request carried want and passed.
func checkBearerUse(t *testing.T, seen []authtest.ResourceRecord, want authtest.Secret) {
	t.Helper()
	if len(seen) < 2 {
		t.Fatalf("resource saw %d requests, want a refusal then authorized ones", len(seen))
	}
	if seen[0].Authorization != "" || seen[0].Status != http.StatusUnauthorized {
		t.Errorf("first request: Authorization present=%v status %d, want none and 401", seen[0].Authorization != "", seen[0].Status)
	}
	calls := 0
	for i, r := range seen[1:] {
		if r.Token != want || r.Authorization != "Bearer "+want || r.Status != 0 {
			t.Errorf("request %d (%s %s): token matches issued=%v, status %d", i+1, r.Method, r.Path, r.Token == want, r.Status)
		}
		if r.Method == http.MethodPost {
			calls++
		}
	}
	if calls == 0 {
		t.Error("no authorized POST reached the MCP server")
	}
}

func TestPreregisteredClientSkipsRegistration(t *testing.T) {
	cb := newCallback(t)
	e := newEnv(t, authtest.Options{Clients: []authtest.Client{{
		ID: "warden-pre", Secret: "pre-secret-0123456789", RedirectURIs: []string{cb.url},
	}}})
	cs, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{
			ClientID:         "warden-pre",
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "pre-secret-0123456789"},
		},
		RedirectURL:              cb.url,
		AuthorizationCodeFetcher: cb.fetcher(e.as),
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami: %v", err)
	}

	if regs := e.as.Registrations(); len(regs) != 0 {
		t.Errorf("pre-registered client registered: %+v", regs)
	}
	authz := e.as.Authorizations()
	if len(authz) != 1 {
		t.Fatalf("%d authorization requests, want 1: %+v", len(authz), authz)
	}
	a := authz[0]
	if a.ClientID != "warden-pre" || a.RedirectURI != cb.url || a.ResponseType != "code" ||
		!a.HasCodeChallenge || a.CodeChallengeMethod != "S256" || a.Resource != e.mcpURL ||
		!slices.Contains(a.Scopes, toolScope) || a.State == "" || a.Code == "" || a.Error != "" {
		t.Errorf("authorization request: %+v (resource want %s)", a, e.mcpURL)
	}
	toks := e.as.TokenRequests()
	if len(toks) != 1 {
		t.Fatalf("%d token requests, want 1: %+v", len(toks), toks)
	}
	tk := toks[0]
	if tk.GrantType != "authorization_code" || tk.ClientID != "warden-pre" || !tk.ClientSecretPresent ||
		!tk.ClientAuthenticated || !tk.CodeVerifierPresent || !tk.CodeVerifierValid ||
		tk.RedirectURI != cb.url || tk.Resource != e.mcpURL || tk.Error != "" || tk.AccessToken == "" {
		t.Errorf("token request: %+v", tk)
	}
	checkBearerUse(t, e.res.Seen(), tk.AccessToken)
}

func TestDynamicRegistrationAsWarden(t *testing.T) {
	for _, withSecret := range []bool{false, true} {
		name := "public"
		if withSecret {
			name = "confidential"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, authtest.Options{RegistrationSecret: withSecret})
			// The fetcher never calls the callback, so the redirect URI need not listen.
			const redirect = "http://127.0.0.1:1/callback"
			cs, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
					Metadata: &oauthex.ClientRegistrationMetadata{
						ClientName:   "warden",
						RedirectURIs: []string{redirect},
						GrantTypes:   []string{"authorization_code", "refresh_token"},
					},
				},
				AuthorizationCodeFetcher: e.as.Fetcher(),
			})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			if err := callWhoami(t, cs); err != nil {
				t.Fatalf("whoami: %v", err)
			}
			regs := e.as.Registrations()
			if len(regs) != 1 || regs[0].ClientName != "warden" || regs[0].ClientID == "" ||
				!slices.Equal(regs[0].RedirectURIs, []string{redirect}) || regs[0].Error != "" {
				t.Fatalf("registrations: %+v", regs)
			}
			id := regs[0].ClientID
			if authz := e.as.Authorizations(); len(authz) != 1 || authz[0].ClientID != id || authz[0].RedirectURI != redirect {
				t.Errorf("authorization requests: %+v", authz)
			}
			toks := e.as.TokenRequests()
			if len(toks) != 1 || toks[0].ClientID != id || !toks[0].CodeVerifierValid ||
				toks[0].ClientSecretPresent != withSecret || !toks[0].ClientAuthenticated || toks[0].Error != "" {
				t.Fatalf("token requests: %+v", toks)
			}
			checkBearerUse(t, e.res.Seen(), toks[0].AccessToken)
		})
	}
}

func TestIssuerMismatchRefused(t *testing.T) {
	for _, tc := range []struct {
		mode authtest.IssMode
		want string
	}{
		{authtest.IssWrong, "does not match expected issuer"},
		{authtest.IssOmitted, "none was received"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			e := newEnv(t, authtest.Options{Iss: tc.mode})
			_, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
				DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
					Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "warden", RedirectURIs: []string{"http://127.0.0.1:1/cb"}},
				},
				AuthorizationCodeFetcher: e.as.Fetcher(),
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("connect error %v, want one containing %q", err, tc.want)
			}
			// The go-sdk tries server/discover, then falls back to initialize: a failed
			// login runs twice, so count at least one.
			authz := e.as.Authorizations()
			if len(authz) == 0 {
				t.Error("no authorization request")
			}
			for _, a := range authz {
				if a.Code == "" || a.Error != "" {
					t.Errorf("want approved authorizations, got %+v", a)
				}
			}
			if toks := e.as.TokenRequests(); len(toks) != 0 {
				t.Errorf("the client redeemed a code with a bad iss: %+v", toks)
			}
			for _, r := range e.res.Seen() {
				if r.Authorization != "" {
					t.Errorf("resource saw an Authorization header on %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

func TestDeniedConsent(t *testing.T) {
	cb := newCallback(t)
	e := newEnv(t, authtest.Options{Consent: authtest.ConsentDeny, Clients: []authtest.Client{{ID: "pub", RedirectURIs: []string{cb.url}}}})
	_, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      &oauthex.ClientCredentials{ClientID: "pub"},
		RedirectURL:              cb.url,
		AuthorizationCodeFetcher: cb.fetcher(e.as),
	})
	var ae *authtest.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "access_denied" {
		t.Fatalf("connect error %v, want an access_denied AuthorizationError", err)
	}
	authz := e.as.Authorizations()
	if len(authz) == 0 {
		t.Error("no authorization request")
	}
	for _, a := range authz {
		if !a.ConsentAsked || a.Consent != authtest.ConsentDeny || a.Code != "" || a.Error != "access_denied" {
			t.Errorf("authorization: %+v", a)
		}
	}
	if toks := e.as.TokenRequests(); len(toks) != 0 {
		t.Errorf("token requests after a denial: %+v", toks)
	}
}

func TestHeldConsent(t *testing.T) {
	e := newEnv(t, authtest.Options{Clients: []authtest.Client{{ID: "pub", RedirectURIs: []string{"http://127.0.0.1:1/cb"}}}})
	h := e.handler(t, &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      &oauthex.ClientCredentials{ClientID: "pub"},
		RedirectURL:              "http://127.0.0.1:1/cb",
		AuthorizationCodeFetcher: e.as.Fetcher(),
	})
	hold := e.as.HoldConsent()
	type result struct {
		cs  *mcp.ClientSession
		err error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := e.dial(t.Context(), h)
		done <- result{cs, err}
	}()
	<-hold.Reached()
	// Held: the login is in the consent step, so nothing can have been redeemed.
	if toks := e.as.TokenRequests(); len(toks) != 0 {
		t.Errorf("token requests while consent is held: %+v", toks)
	}
	if authz := e.as.Authorizations(); len(authz) != 0 {
		t.Errorf("authorization recorded before its consent was decided: %+v", authz)
	}
	hold.Release(authtest.ConsentApprove)
	r := <-done
	if r.err != nil {
		t.Fatalf("connect after release: %v", r.err)
	}
	t.Cleanup(func() { _ = r.cs.Close() })
	if err := callWhoami(t, r.cs); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if toks := e.as.TokenRequests(); len(toks) != 1 || !toks[0].CodeVerifierValid {
		t.Errorf("token requests: %+v", toks)
	}
}

// TestRefresh: an access token that expires is refreshed by the client (grant
// recorded, rotated, and the new token is what the resource sees); an expired refresh
// token sends the client back to an interactive login, which fails when consent is
// denied and recovers the same session when approved.
func TestRefresh(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	// Under oauth2's 10s expiry margin, so the client refreshes before each request;
	// the resource accepts each token for those 9s.
	e := newEnv(t, authtest.Options{
		AccessTokenLifetime: 9 * time.Second,
		Clients:             []authtest.Client{{ID: "pub", RedirectURIs: []string{redirect}}},
	})
	cs, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient:      &oauthex.ClientCredentials{ClientID: "pub"},
		RedirectURL:              redirect,
		RequestRefreshToken:      true,
		AuthorizationCodeFetcher: e.as.Fetcher(),
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if a := e.as.Authorizations(); len(a) != 1 || !slices.Contains(a[0].Scopes, "offline_access") {
		t.Fatalf("authorization did not ask for offline_access: %+v", a)
	}

	// Every token issued so far is now dead on the server: the call can only pass with
	// a token from a refresh made after this point.
	e.as.ExpireAccessTokens()
	before := len(e.as.TokenRequests())
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami after expiry: %v", err)
	}
	toks := e.as.TokenRequests()
	if toks[0].GrantType != "authorization_code" {
		t.Fatalf("first token request is %q", toks[0].GrantType)
	}
	// Rotation: every refresh presents the refresh token the previous grant issued.
	for i := 1; i < len(toks); i++ {
		if toks[i].GrantType != "refresh_token" || toks[i].Error != "" || toks[i].PresentedRefreshToken != toks[i-1].RefreshToken ||
			toks[i].RefreshToken == toks[i-1].RefreshToken {
			t.Fatalf("token request %d is not a clean rotation of %d: %+v", i, i-1, toks[i])
		}
	}
	if len(toks) <= before {
		t.Fatal("no refresh after the access tokens expired")
	}
	seen := e.res.Seen()
	last := seen[len(seen)-1]
	if last.Status != 0 || last.Token == "" || !slices.ContainsFunc(toks[before:], func(r authtest.TokenRecord) bool { return r.AccessToken == last.Token }) {
		t.Errorf("the call did not use a token from the refresh: status %d, token from a later refresh=%v", last.Status, last.Token != "")
	}
	for _, r := range seen {
		if r.Error == "invalid_token" {
			t.Errorf("the client sent an expired token on %s %s", r.Method, r.Path)
		}
	}

	// An expired refresh token: oauth2 gets invalid_grant, the go-sdk sends the request
	// without a token, and the 401 starts a new interactive login.
	e.as.ExpireRefreshTokens()
	e.as.SetConsent(authtest.ConsentDeny)
	nTok, nSeen, nAuthz := len(e.as.TokenRequests()), len(e.res.Seen()), len(e.as.Authorizations())
	err = callWhoami(t, cs)
	var ae *authtest.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "access_denied" {
		t.Fatalf("whoami with an expired refresh token and denied consent: %v, want access_denied", err)
	}
	toks = e.as.TokenRequests()[nTok:]
	if len(toks) == 0 || toks[0].GrantType != "refresh_token" || toks[0].Error != "invalid_grant" {
		t.Errorf("token requests after the refresh token expired: %+v", toks)
	}
	if seen := e.res.Seen()[nSeen:]; len(seen) == 0 || seen[0].Authorization != "" || seen[0].Status != http.StatusUnauthorized {
		t.Errorf("want a tokenless 401 after the failed refresh, got %+v", seen)
	}
	if authz := e.as.Authorizations()[nAuthz:]; len(authz) != 1 || authz[0].Error != "access_denied" {
		t.Errorf("want one denied re-login, got %+v", authz)
	}

	// Logging in again recovers the same session.
	e.as.SetConsent(authtest.ConsentApprove)
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami after a new login: %v", err)
	}
}
