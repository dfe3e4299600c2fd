package authtest_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/warden-mcp/warden/host/internal/authtest"
)

// TestPublicIssuer runs the go-sdk's whole login (discovery, registration, authorization,
// code exchange, the authenticated call) against a server and a resource known only by
// public https names that resolve nowhere: the client reaches both through a
// ForwardProxy's CONNECT tunnels and trusts them through the CA, so the resource and the
// server answer with their public URLs; the browser stand-in reaches the authorization
// server without any proxy.
func TestPublicIssuer(t *testing.T) {
	const issuer = "https://as.invalid"
	const mcpURL = "https://mcp.invalid/mcp"
	ca := authtest.NewCA(t)
	as := authtest.NewServer(t, authtest.Options{Issuer: issuer + "/", CA: ca})
	if as.CA() != ca {
		t.Fatal("CA() is not Options.CA")
	}
	if as.URL() != issuer {
		t.Fatalf("URL() = %q, want %q (the trailing slash dropped)", as.URL(), issuer)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "answers ok"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	// The listener is loopback but the requests name mcp.invalid: without this the go-sdk's
	// DNS-rebinding protection refuses them.
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	res := as.Resource(handler, toolScope)
	srv := httptest.NewUnstartedServer(res)
	srv.TLS = ca.TLSConfig(t, "mcp.invalid")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	proxy := authtest.NewForwardProxy(t, map[string]string{"as.invalid": as.Addr(), "mcp.invalid": srv.Listener.Addr().String()})
	proxyURL, err := url.Parse(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), DialContext: (&net.Dialer{}).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}

	asm, err := auth.GetAuthServerMetadata(t.Context(), issuer, hc)
	if err != nil || asm == nil {
		t.Fatalf("GetAuthServerMetadata through the proxy: %v, %v", asm, err)
	}
	if asm.Issuer != issuer || asm.AuthorizationEndpoint != issuer+"/authorize" || asm.TokenEndpoint != issuer+"/token" || asm.RegistrationEndpoint != issuer+"/register" {
		t.Errorf("metadata names %q %q %q %q, want every endpoint under %s", asm.Issuer, asm.AuthorizationEndpoint, asm.TokenEndpoint, asm.RegistrationEndpoint, issuer)
	}
	prm, err := oauthex.GetProtectedResourceMetadata(t.Context(), "https://mcp.invalid/.well-known/oauth-protected-resource/mcp", mcpURL, hc)
	if err != nil || prm.Resource != mcpURL || !slices.Equal(prm.AuthorizationServers, []string{issuer}) {
		t.Fatalf("protected resource metadata through the proxy: %+v, %v", prm, err)
	}

	const redirect = "http://127.0.0.1:1/cb"
	var iss string
	fetch := as.Fetcher()
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		Client:      hc,
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "public-test", RedirectURIs: []string{redirect}},
		},
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			r, err := fetch(ctx, a)
			if r != nil {
				iss = r.Iss
			}
			return r, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "warden", Version: "test"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connect to %s through the proxy: %v", mcpURL, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami: %v", err)
	}

	if iss != issuer {
		t.Errorf("the authorization response's iss = %q, want %q", iss, issuer)
	}
	toks := as.TokenRequests()
	if len(toks) != 1 || toks[0].Error != "" || toks[0].Resource != mcpURL || !toks[0].CodeVerifierValid {
		t.Fatalf("token requests %+v, want one good exchange for resource %s", toks, mcpURL)
	}
	seen := res.Seen()
	if len(seen) == 0 || seen[len(seen)-1].Token != toks[0].AccessToken || seen[len(seen)-1].Status != 0 {
		t.Errorf("the resource's last request %+v did not pass with the issued token", seen)
	}
	hosts := proxy.Hosts()
	if !slices.Contains(hosts, "as.invalid") || !slices.Contains(hosts, "mcp.invalid") {
		t.Errorf("the proxy saw hosts %q, want as.invalid and mcp.invalid", hosts)
	}
	for _, r := range proxy.Requests() {
		if r.Method != http.MethodConnect || !r.Routed {
			t.Errorf("the proxy carried %+v, want only routed CONNECT tunnels", r)
		}
	}
	// The browser (no proxy) reached /authorize once, the client's connections through the
	// proxy everything else.
	if a := as.Authorizations(); len(a) != 1 || a[0].Code == "" {
		t.Errorf("authorizations %+v, want one that issued a code", a)
	}

	// An issuer that is not an origin fails the test that builds the server.
	for _, bad := range []string{"ftp://as.invalid", "http://as.invalid/path", "as.invalid", "http://u:p@as.invalid", "https://as.invalid?x=1"} {
		ft := &fatalTB{TB: t}
		func() {
			defer func() { _ = recover() }()
			authtest.NewServer(ft, authtest.Options{Issuer: bad})
		}()
		if !ft.fatal {
			t.Errorf("Issuer %q accepted", bad)
		}
	}
}

// TestPlainHTTPIssuer: an http issuer under a public name, reached through the proxy
// with its Host header kept, names itself in the metadata; the browser stand-in reaches
// its /authorize without the proxy; a Resource behind the proxy builds its resource URL
// from the public name.
func TestPlainHTTPIssuer(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	as := authtest.NewServer(t, authtest.Options{Issuer: "http://as.invalid",
		Clients: []authtest.Client{{ID: "c", RedirectURIs: []string{redirect}}}})
	if as.CA() != nil {
		t.Error("an http issuer has a CA")
	}
	res := as.Resource(http.NotFoundHandler(), toolScope)
	srv := httptest.NewServer(res)
	t.Cleanup(srv.Close)
	proxy := authtest.NewForwardProxy(t, map[string]string{"as.invalid": as.Addr(), "mcp.invalid": srv.Listener.Addr().String()})
	u, _ := url.Parse(proxy.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	var meta struct {
		Issuer        string
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, hc, "http://as.invalid/.well-known/oauth-authorization-server", &meta)
	if meta.Issuer != "http://as.invalid" || meta.TokenEndpoint != "http://as.invalid/token" {
		t.Errorf("metadata %+v", meta)
	}
	var prm struct {
		Resource string
		Servers  []string `json:"authorization_servers"`
	}
	getJSON(t, hc, "http://mcp.invalid/.well-known/oauth-protected-resource/mcp", &prm)
	if prm.Resource != "http://mcp.invalid/mcp" || !slices.Equal(prm.Servers, []string{"http://as.invalid"}) {
		t.Errorf("protected resource metadata %+v", prm)
	}
	p := goodAuthorize("c", redirect)
	r, err := as.AuthorizationCode(t.Context(), authorizeURL(as, p))
	if err != nil || r.Code == "" || r.Iss != "http://as.invalid" {
		t.Fatalf("authorize at the public name: %+v, %v", r, err)
	}
	want := []authtest.ProxyRecord{
		{Method: "GET", Host: "as.invalid", Path: "/.well-known/oauth-authorization-server", Routed: true},
		{Method: "GET", Host: "mcp.invalid", Path: "/.well-known/oauth-protected-resource/mcp", Routed: true},
	}
	if got := proxy.Requests(); !slices.Equal(got, want) {
		t.Errorf("proxy records %+v, want %+v", got, want)
	}
}

func getJSON(t *testing.T, hc *http.Client, u string, out any) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// TestForwardProxyUnrouted: a host without a route gets 502 and is recorded as unrouted.
func TestForwardProxyUnrouted(t *testing.T) {
	proxy := authtest.NewForwardProxy(t, map[string]string{})
	u, _ := url.Parse(proxy.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(u)}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get("http://nowhere.invalid/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	if got := proxy.Requests(); len(got) != 1 || got[0].Host != "nowhere.invalid" || got[0].Path != "/x" || got[0].Routed {
		t.Errorf("records %+v", got)
	}
}

// fatalTB records a Fatalf instead of ending the test, and stops the caller with a panic
// the test recovers.
type fatalTB struct {
	testing.TB
	fatal bool
}

func (f *fatalTB) Fatalf(string, ...any) {
	f.fatal = true
	panic("fatal")
}
