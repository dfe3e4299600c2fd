package authtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/warden-mcp/warden/host/internal/authtest"
)

// docServer is an https server, its certificate signed by a test CA, that serves client
// ID metadata documents by path and counts the fetches.
type docServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	docs    map[string]http.HandlerFunc
	fetches map[string]int
}

func newDocServer(t *testing.T, ca *authtest.CA) *docServer {
	t.Helper()
	d := &docServer{docs: map[string]http.HandlerFunc{}, fetches: map[string]int{}}
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		h := d.docs[r.URL.Path]
		d.fetches[r.URL.Path]++
		d.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	d.srv.TLS = ca.TLSConfig(t, "127.0.0.1")
	d.srv.StartTLS()
	t.Cleanup(d.srv.Close)
	return d
}

// serve makes path answer h and returns the document's URL.
func (d *docServer) serve(path string, h http.HandlerFunc) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[path] = h
	return d.srv.URL + path
}

// serveJSON makes path answer doc as JSON and returns the document's URL.
func (d *docServer) serveJSON(path string, doc func(url string) map[string]any) string {
	u := d.srv.URL + path
	return d.serve(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc(u))
	})
}

func (d *docServer) fetched(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches[path]
}

// clientDoc is a valid client metadata document for a public client.
func clientDoc(redirects ...string) func(string) map[string]any {
	return func(u string) map[string]any {
		return map[string]any{
			"client_id": u, "client_name": "warden", "redirect_uris": redirects,
			"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
			"token_endpoint_auth_method": "none",
		}
	}
}

func TestMetadataDocumentLogin(t *testing.T) {
	ca := authtest.NewCA(t)
	// Under oauth2's 10s expiry margin, so the client refreshes before every request and
	// the refresh_token grant runs with the document's client id too.
	e := newEnv(t, authtest.Options{ClientIDMetadataDocuments: true, CA: ca, AccessTokenLifetime: 9 * time.Second})
	asm, err := auth.GetAuthServerMetadata(t.Context(), e.as.URL(), http.DefaultClient)
	if err != nil || asm == nil || !asm.ClientIDMetadataDocumentSupported {
		t.Fatalf("metadata does not advertise client ID metadata documents: %+v, %v", asm, err)
	}
	d := newDocServer(t, ca)
	// The fetcher never calls the callback, so the redirect URI need not listen.
	const redirect = "http://127.0.0.1:1/callback"
	docURL := d.serveJSON("/oauth/client.json", clientDoc(redirect))

	cs, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
		RedirectURL:                    redirect,
		RequestRefreshToken:            true,
		AuthorizationCodeFetcher:       e.as.Fetcher(),
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami: %v", err)
	}

	if regs := e.as.Registrations(); len(regs) != 0 {
		t.Errorf("a metadata document client registered: %+v", regs)
	}
	authz := e.as.Authorizations()
	if len(authz) != 1 {
		t.Fatalf("%d authorization requests, want 1: %+v", len(authz), authz)
	}
	if a := authz[0]; a.ClientID != docURL || !a.MetadataDocument || a.MetadataDocumentError != "" ||
		a.RedirectURI != redirect || a.Code == "" || a.Error != "" {
		t.Errorf("authorization request: %+v (client id want %s)", a, docURL)
	}
	if n := d.fetched("/oauth/client.json"); n != 1 {
		t.Errorf("the document was fetched %d times, want once (at /authorize)", n)
	}
	var exchanged, refreshed bool
	for _, tk := range e.as.TokenRequests() {
		if tk.Error != "" {
			// oauth2's auth style detection tries HTTP Basic first: refused, no code spent.
			if tk.Error != "invalid_client" || tk.ClientID != "" {
				t.Errorf("failed token request: %+v", tk)
			}
			continue
		}
		if tk.ClientID != docURL || tk.ClientSecretPresent || !tk.ClientAuthenticated {
			t.Errorf("token request by another client or with a secret: %+v", tk)
		}
		switch tk.GrantType {
		case "authorization_code":
			exchanged = tk.CodeVerifierValid && tk.RedirectURI == redirect
		case "refresh_token":
			refreshed = true
		}
	}
	if !exchanged || !refreshed {
		t.Fatalf("want a code exchange with a valid verifier and a refresh by %s: %+v", docURL, e.as.TokenRequests())
	}
	seen := e.res.Seen()
	if last := seen[len(seen)-1]; last.Status != 0 || last.Token == "" {
		t.Errorf("the last MCP request did not pass with a token: status %d", last.Status)
	}
}

// The go-sdk's flow with a document whose redirect_uris do not list the client's
// redirect URI: /authorize refuses with an error page, and no code is issued.
func TestMetadataDocumentRedirectMismatchRefused(t *testing.T) {
	ca := authtest.NewCA(t)
	e := newEnv(t, authtest.Options{ClientIDMetadataDocuments: true, CA: ca})
	d := newDocServer(t, ca)
	docURL := d.serveJSON("/oauth/client.json", clientDoc("http://127.0.0.1:1/other"))
	_, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: docURL},
		RedirectURL:                    "http://127.0.0.1:1/callback",
		AuthorizationCodeFetcher:       e.as.Fetcher(),
	})
	if !errors.Is(err, authtest.ErrNoRedirect) {
		t.Fatalf("connect error %v, want ErrNoRedirect", err)
	}
	authz := e.as.Authorizations()
	if len(authz) == 0 {
		t.Fatal("no authorization request")
	}
	for _, a := range authz {
		if a.ClientID != docURL || !a.MetadataDocument || a.Error != "invalid_redirect_uri" || a.Code != "" || a.ConsentAsked {
			t.Errorf("authorization: %+v", a)
		}
	}
	if toks := e.as.TokenRequests(); len(toks) != 0 {
		t.Errorf("token requests after a refused authorization: %+v", toks)
	}
}

// Each document that cannot be used is refused at /authorize with an error page and
// recorded with why.
func TestMetadataDocumentRefusals(t *testing.T) {
	ca := authtest.NewCA(t)
	as := authtest.NewServer(t, authtest.Options{ClientIDMetadataDocuments: true, CA: ca})
	d := newDocServer(t, ca)
	const redirect = "http://127.0.0.1:1/callback"
	good := clientDoc(redirect)
	with := func(k string, v any) func(string) map[string]any {
		return func(u string) map[string]any {
			m := good(u)
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
			return m
		}
	}
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{})
	}))
	// The refused handshake is the point; its log line is noise.
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	for _, tc := range []struct {
		name, url, code, reason string
	}{
		{"other client_id", d.serveJSON("/other-id.json", with("client_id", "https://127.0.0.1/elsewhere.json")), "invalid_client", "not its own URL"},
		{"no redirect_uris", d.serveJSON("/no-redirects.json", with("redirect_uris", nil)), "invalid_client", "redirect_uris"},
		{"client secret", d.serveJSON("/secret.json", with("client_secret", "s3cret-value")), "invalid_client", "client_secret"},
		{"confidential method", d.serveJSON("/post.json", with("token_endpoint_auth_method", "client_secret_post")), "invalid_client", "token_endpoint_auth_method"},
		{"not JSON", d.serve("/text", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }), "invalid_client", "not a JSON"},
		{"too big", d.serve("/big.json", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"client_name":"` + strings.Repeat("x", 6<<10) + `"}`))
		}), "invalid_client", "over 5120 bytes"},
		{"redirected", d.serve("/moved.json", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/oauth/client.json", http.StatusFound)
		}), "invalid_client", "302"},
		{"missing", d.srv.URL + "/missing.json", "invalid_client", "404"},
		{"untrusted certificate", untrusted.URL + "/client.json", "invalid_client", "cannot be fetched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(as.Authorizations())
			_, err := as.AuthorizationCode(t.Context(), authorizeURL(as, goodAuthorize(tc.url, redirect)))
			if !errors.Is(err, authtest.ErrNoRedirect) {
				t.Fatalf("authorize: %v, want ErrNoRedirect", err)
			}
			authz := as.Authorizations()[n:]
			if len(authz) != 1 {
				t.Fatalf("%d authorization records, want 1", len(authz))
			}
			a := authz[0]
			if !a.MetadataDocument || a.Error != tc.code || !strings.Contains(a.MetadataDocumentError, tc.reason) || a.Code != "" {
				t.Errorf("authorization: %+v, want error %s with a reason containing %q", a, tc.code, tc.reason)
			}
			if strings.Contains(a.MetadataDocumentError, "s3cret-value") {
				t.Error("the recorded reason quotes the document's client secret")
			}
		})
	}
	// The moved document's target was not fetched: redirects are not followed.
	if n := d.fetched("/oauth/client.json"); n != 0 {
		t.Errorf("the redirect was followed (%d fetches of its target)", n)
	}
	// A document client the server never accepted is unknown at /token.
	status, m := postToken(t, as, map[string][]string{
		"grant_type": {"authorization_code"}, "client_id": {d.srv.URL + "/other-id.json"}, "code": {"x"},
		"redirect_uri": {redirect}, "code_verifier": {verifier},
	})
	if status != http.StatusUnauthorized || m["error"] != "invalid_client" {
		t.Errorf("token request by a refused document client: %d %v", status, m)
	}
}

// Without the option an https client_id is only an unknown client, and the metadata
// does not advertise documents.
func TestMetadataDocumentsOff(t *testing.T) {
	ca := authtest.NewCA(t)
	as := authtest.NewServer(t, authtest.Options{CA: ca})
	asm, err := auth.GetAuthServerMetadata(t.Context(), as.URL(), http.DefaultClient)
	if err != nil || asm.ClientIDMetadataDocumentSupported {
		t.Errorf("metadata: %+v, %v", asm, err)
	}
	d := newDocServer(t, ca)
	const redirect = "http://127.0.0.1:1/callback"
	docURL := d.serveJSON("/oauth/client.json", clientDoc(redirect))
	if _, err := as.AuthorizationCode(t.Context(), authorizeURL(as, goodAuthorize(docURL, redirect))); !errors.Is(err, authtest.ErrNoRedirect) {
		t.Fatalf("authorize: %v, want ErrNoRedirect", err)
	}
	if a := as.Authorizations(); len(a) != 1 || a[0].MetadataDocument || a[0].Error != "invalid_client" {
		t.Errorf("authorizations: %+v", a)
	}
	if n := d.fetched("/oauth/client.json"); n != 0 {
		t.Errorf("the document was fetched %d times without the option", n)
	}
}
