package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/internal/authtest"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
)

// cimdPath is where the document server serves warden's client metadata document; the
// go-sdk takes only a non-root https URL as a document's client id.
const cimdPath = "/warden/client.json"

// cimdEnv is warden's client ID metadata document on an https server (its certificate
// signed by ca), for a fixed callback port, and a store.
type cimdEnv struct {
	ca       *authtest.CA
	docURL   string
	callback string // http://127.0.0.1:PORT/callback, the document's only redirect URI
	port     int
	fetches  atomic.Int32
	st       *store.Store
}

func newCIMDEnv(t *testing.T) *cimdEnv {
	t.Helper()
	e := &cimdEnv{ca: authtest.NewCA(t), port: testmain.FreePort(t)}
	e.callback = "http://127.0.0.1:" + strconv.Itoa(e.port) + "/callback"
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != cimdPath {
			http.NotFound(w, r)
			return
		}
		e.fetches.Add(1)
		// warden's own document, as `warden oauth client-metadata` prints it.
		doc, err := oauth.ClientMetadataDocument(e.docURL, e.port)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	srv.TLS = e.ca.TLSConfig(t, "127.0.0.1")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	e.docURL = srv.URL + cimdPath
	st, err := store.Open(filepath.Join(t.TempDir(), "credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	return e
}

// manager is a Manager over the env's store on its callback port, with metadataURL as
// Options.ClientMetadataURL.
func (e *cimdEnv) manager(t *testing.T, metadataURL string) *oauth.Manager {
	t.Helper()
	m, err := oauth.New(oauth.Options{Store: e.st, CallbackPort: e.port, ClientMetadataURL: metadataURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// cimdAS is an authorization server, with client ID metadata documents or without,
// trusting the env's CA, and the echo MCP server behind it under the store key named
// server.
func (e *cimdEnv) as(t *testing.T, documents bool, server string) (*authtest.Server, *authtest.Resource, store.Key) {
	t.Helper()
	as := authtest.NewServer(t, authtest.Options{ClientIDMetadataDocuments: documents, CA: e.ca})
	res, u := as.EchoMCP(t, "mcp:tools")
	return as, res, store.Key{Owner: store.OwnerLocal, Server: server, URL: u}
}

func cimdCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cimdLogin starts a login, checks its authorization URL names wantClientID (when set),
// plays the browser through the callback, and returns the login's outcome.
func cimdLogin(t *testing.T, m *oauth.Manager, as *authtest.Server, req oauth.LoginRequest, wantClientID string) error {
	t.Helper()
	l, err := m.Start(cimdCtx(t), req)
	if err != nil {
		return err
	}
	u, err := url.Parse(l.AuthorizationURL)
	if err != nil {
		t.Fatalf("authorization URL does not parse: %v", err)
	}
	if wantClientID != "" {
		if got := u.Query().Get("client_id"); got != wantClientID {
			t.Errorf("authorization URL's client_id = %q, want %q", got, wantClientID)
		}
	}
	resp, err := as.Browse(cimdCtx(t), l.AuthorizationURL)
	if err != nil {
		t.Fatalf("browse: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := l.Wait(cimdCtx(t)); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("callback page status %d after a successful login", resp.StatusCode)
	}
	return nil
}

// cimdEcho connects to k's server with m's handler and calls echo.
func cimdEcho(t *testing.T, m *oauth.Manager, k store.Key) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(cimdCtx(t), &mcp.StreamableClientTransport{Endpoint: k.URL, OAuthHandler: m.Handler(k)}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", k.Server, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	res, err := cs.CallTool(cimdCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("echo on %s: %v", k.Server, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("echo on %s: %d content items", k.Server, len(res.Content))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo: hi" {
		t.Fatalf("echo on %s answered %#v", k.Server, res.Content[0])
	}
}

// succeeded returns the token requests of grant that succeeded.
func succeeded(as *authtest.Server, grant string) []authtest.TokenRecord {
	var out []authtest.TokenRecord
	for _, r := range as.TokenRequests() {
		if r.GrantType == grant && r.Error == "" {
			out = append(out, r)
		}
	}
	return out
}

// With mcp_oauth_client_metadata_url set and registration auto, a login to an
// authorization server that supports client ID metadata documents uses the document's
// URL as the client id — no registration — and the stored login works and refreshes
// under it; the same Manager logs in to a server without that support by dynamic
// registration.
func TestLoginClientMetadataDocument(t *testing.T) {
	e := newCIMDEnv(t)
	m := e.manager(t, e.docURL)
	as, res, key := e.as(t, true, "docs")

	if err := cimdLogin(t, m, as, oauth.LoginRequest{Key: key}, e.docURL); err != nil {
		t.Fatalf("login: %v", err)
	}
	if regs := as.Registrations(); len(regs) != 0 {
		t.Errorf("a login with a client metadata document registered: %+v", regs)
	}
	authz := as.Authorizations()
	if len(authz) != 1 || authz[0].ClientID != e.docURL || !authz[0].MetadataDocument ||
		authz[0].RedirectURI != e.callback || authz[0].Error != "" {
		t.Fatalf("authorizations = %+v (want the document %s for %s)", authz, e.docURL, e.callback)
	}
	if n := e.fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times, want 1", n)
	}
	codes := succeeded(as, "authorization_code")
	if len(codes) != 1 || codes[0].ClientID != e.docURL || !codes[0].CodeVerifierValid ||
		codes[0].ClientSecretPresent || codes[0].RedirectURI != e.callback {
		t.Fatalf("code exchanges = %+v (all token requests %+v)", codes, as.TokenRequests())
	}
	ent, ok, err := e.st.Get(cimdCtx(t), key)
	if err != nil || !ok {
		t.Fatalf("stored: ok=%v err=%v", ok, err)
	}
	if ent.ClientID != e.docURL || ent.ClientSecret != "" || ent.AccessToken != codes[0].AccessToken.Reveal() ||
		ent.TokenURL != as.URL()+"/token" || ent.Issuer != as.URL() {
		t.Errorf("stored entry %v, want client id %s and the issued token", ent, e.docURL)
	}

	cimdEcho(t, m, key)
	seen := res.Seen()
	if last := seen[len(seen)-1]; last.Status != 0 || last.Token != codes[0].AccessToken {
		t.Errorf("the last MCP request: status %d, with the login's token=%v", last.Status, last.Token == codes[0].AccessToken)
	}
	// A refused token is refreshed under the document's client id.
	as.ExpireAccessTokens()
	cimdEcho(t, m, key)
	if refreshes := succeeded(as, "refresh_token"); len(refreshes) != 1 || refreshes[0].ClientID != e.docURL || refreshes[0].ClientSecretPresent {
		t.Errorf("refreshes = %+v (all token requests %+v)", refreshes, as.TokenRequests())
	}

	// The same Manager, a server whose authorization server has no document support.
	plain, _, plainKey := e.as(t, false, "plain")
	if err := cimdLogin(t, m, plain, oauth.LoginRequest{Key: plainKey}, ""); err != nil {
		t.Fatalf("login without document support: %v", err)
	}
	regs := plain.Registrations()
	if len(regs) != 1 || regs[0].ClientID == "" || regs[0].ClientName != oauth.ClientName ||
		len(regs[0].RedirectURIs) != 1 || regs[0].RedirectURIs[0] != e.callback || regs[0].AuthMethod != "none" {
		t.Fatalf("registrations = %+v", regs)
	}
	if a := plain.Authorizations(); len(a) != 1 || a[0].ClientID != regs[0].ClientID || a[0].MetadataDocument {
		t.Errorf("authorizations = %+v, want the registered client", a)
	}
	if codes := succeeded(plain, "authorization_code"); len(codes) != 1 || codes[0].ClientID != regs[0].ClientID || !codes[0].CodeVerifierValid {
		t.Errorf("code exchanges = %+v", codes)
	}
	if ent, ok, err := e.st.Get(cimdCtx(t), plainKey); err != nil || !ok || ent.ClientID != regs[0].ClientID {
		t.Errorf("stored %v ok=%v err=%v, want the registered client id", ent, ok, err)
	}
	cimdEcho(t, m, plainKey)
	if n := e.fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times in all, want 1 (only by the server that supports it)", n)
	}
}

// The registration modes against client metadata document settings: cimd needs the URL,
// dcr ignores it, and cimd never falls back to registration.
func TestLoginClientMetadataDocumentModes(t *testing.T) {
	t.Run("cimd without a document URL", func(t *testing.T) {
		e := newCIMDEnv(t)
		m := e.manager(t, "")
		as, _, key := e.as(t, true, "docs")
		_, err := m.Start(cimdCtx(t), oauth.LoginRequest{Key: key, Registration: oauth.RegistrationMetadataDocument})
		if !errors.Is(err, oauth.ErrInvalidRequest) || !strings.Contains(err.Error(), "mcp_oauth_client_metadata_url") ||
			!strings.Contains(err.Error(), `"docs"`) {
			t.Fatalf("Start error = %v, want ErrInvalidRequest naming mcp_oauth_client_metadata_url and the server", err)
		}
		if r, a := as.Registrations(), as.Authorizations(); len(r) != 0 || len(a) != 0 {
			t.Errorf("the authorization server was used: registrations %+v, authorizations %+v", r, a)
		}
		if list, err := e.st.List(cimdCtx(t)); err != nil || len(list) != 0 {
			t.Errorf("stored %v (%v)", list, err)
		}
	})
	t.Run("dcr with a document URL", func(t *testing.T) {
		e := newCIMDEnv(t)
		m := e.manager(t, e.docURL)
		as, _, key := e.as(t, true, "docs")
		if err := cimdLogin(t, m, as, oauth.LoginRequest{Key: key, Registration: oauth.RegistrationDCR}, ""); err != nil {
			t.Fatalf("login: %v", err)
		}
		regs := as.Registrations()
		if len(regs) != 1 || regs[0].ClientID == "" {
			t.Fatalf("registrations = %+v, want one", regs)
		}
		if a := as.Authorizations(); len(a) != 1 || a[0].ClientID != regs[0].ClientID || a[0].MetadataDocument {
			t.Errorf("authorizations = %+v, want the registered client", a)
		}
		if n := e.fetches.Load(); n != 0 {
			t.Errorf("the document was fetched %d times in dcr mode", n)
		}
		if ent, ok, err := e.st.Get(cimdCtx(t), key); err != nil || !ok || ent.ClientID != regs[0].ClientID {
			t.Errorf("stored %v ok=%v err=%v", ent, ok, err)
		}
		cimdEcho(t, m, key)
	})
	t.Run("cimd without document support", func(t *testing.T) {
		e := newCIMDEnv(t)
		m := e.manager(t, e.docURL)
		as, _, key := e.as(t, false, "docs")
		_, err := m.Start(cimdCtx(t), oauth.LoginRequest{Key: key, Registration: oauth.RegistrationMetadataDocument})
		if err == nil || !strings.Contains(err.Error(), `"docs"`) {
			t.Fatalf("Start error = %v, want a failure naming the server", err)
		}
		if r, a := as.Registrations(), as.Authorizations(); len(r) != 0 || len(a) != 0 {
			t.Errorf("cimd mode fell back: registrations %+v, authorizations %+v", r, a)
		}
		if list, err := e.st.List(cimdCtx(t)); err != nil || len(list) != 0 {
			t.Errorf("stored %v (%v)", list, err)
		}
	})
}
