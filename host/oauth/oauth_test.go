package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/warden-mcp/warden/host/internal/authtest"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fixture is an authorization server, an MCP server behind it, a store and a Manager.
type fixture struct {
	as   *authtest.Server
	res  *authtest.Resource
	url  string // the MCP endpoint
	st   *store.Store
	path string
	m    *oauth.Manager
	key  store.Key
}

func newFixture(t *testing.T, o authtest.Options) *fixture {
	t.Helper()
	as := authtest.NewServer(t, o)
	res, u := as.EchoMCP(t, "mcp:tools")
	path := filepath.Join(t.TempDir(), "credentials.json")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oauth.New(oauth.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &fixture{as: as, res: res, url: u, st: st, path: path, m: m,
		key: store.Key{Owner: store.OwnerLocal, Server: "docs", URL: u}}
}

// login runs a login to its end with the browser stand-in and returns its error and the
// callback page's status.
func (f *fixture) login(t *testing.T, req oauth.LoginRequest) (page int, err error) {
	t.Helper()
	if req.Key == (store.Key{}) {
		req.Key = f.key
	}
	l, err := f.m.Start(testCtx(t), req)
	if err != nil {
		return 0, err
	}
	resp, err := f.as.Browse(testCtx(t), l.AuthorizationURL)
	if err != nil {
		t.Fatalf("browse: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, l.Wait(testCtx(t))
}

func (f *fixture) connect(t *testing.T) (*mcp.ClientSession, error) { return f.connectKey(t, f.key) }

func (f *fixture) connectKey(t *testing.T, k store.Key) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(testCtx(t), &mcp.StreamableClientTransport{Endpoint: f.url, OAuthHandler: f.m.Handler(k)}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func echo(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestLoginDCRThenConnect(t *testing.T) {
	f := newFixture(t, authtest.Options{})
	if _, err := f.connect(t); !errors.Is(err, oauth.ErrNotLoggedIn) {
		t.Fatalf("connect before login: %v, want ErrNotLoggedIn", err)
	}
	if s := f.m.Status(testCtx(t), f.key); s != oauth.StatusNone {
		t.Errorf("status before login = %v", s)
	}
	page, err := f.login(t, oauth.LoginRequest{Registration: oauth.RegistrationDCR})
	if err != nil || page != http.StatusOK {
		t.Fatalf("login: %v (page %d)", err, page)
	}
	regs := f.as.Registrations()
	if len(regs) != 1 || regs[0].ClientName != "warden" || regs[0].AuthMethod != "none" {
		t.Fatalf("registrations = %+v", regs)
	}
	toks := f.as.TokenRequests()
	if len(toks) != 1 || !toks[0].CodeVerifierValid || toks[0].ClientID != regs[0].ClientID {
		t.Fatalf("token requests = %+v", toks)
	}
	e, ok, err := f.st.Get(testCtx(t), f.key)
	if err != nil || !ok || e.AccessToken != toks[0].AccessToken.Reveal() || e.TokenURL != f.as.URL()+"/token" || e.Issuer != f.as.URL() {
		t.Fatalf("stored %v ok=%v err=%v", e, ok, err)
	}
	if s := f.m.Status(testCtx(t), f.key); s != oauth.StatusLoggedIn {
		t.Errorf("status after login = %v", s)
	}
	cs, err := f.connect(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := echo(t, cs); got != "echo: hi" {
		t.Errorf("echo = %q", got)
	}
	seen := f.res.Seen()
	if last := seen[len(seen)-1]; last.Token.Reveal() != e.AccessToken {
		t.Errorf("the last request used another token")
	}
	if fi, err := os.Stat(f.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v %v", fi.Mode(), err)
	}
}

func TestLoginPreregisteredSkipsRegistration(t *testing.T) {
	f := newFixture(t, authtest.Options{})
	// The redirect URI is the callback listener's: register the client for a fixed port.
	port := strconv.Itoa(testmain.FreePort(t))
	f.as.AddClient(authtest.Client{ID: "configured", RedirectURIs: []string{"http://127.0.0.1:" + port + "/callback"}})
	_, err := f.login(t, oauth.LoginRequest{ClientID: "configured", Registration: oauth.RegistrationDCR, CallbackPort: atoi(t, port)})
	if err != nil {
		t.Fatal(err)
	}
	if regs := f.as.Registrations(); len(regs) != 0 {
		t.Errorf("a configured client registered: %+v", regs)
	}
	if toks := f.as.TokenRequests(); len(toks) != 1 || toks[0].ClientID != "configured" || !toks[0].CodeVerifierValid {
		t.Errorf("token requests = %+v", toks)
	}
}

// Each failure ends the login with success false, a precise error, and nothing stored.
func TestLoginFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts authtest.Options
		run  func(t *testing.T, f *fixture) error
		want error
		text string
	}{
		{"wrong iss", authtest.Options{Iss: authtest.IssWrong}, func(t *testing.T, f *fixture) error {
			_, err := f.login(t, oauth.LoginRequest{})
			return err
		}, nil, "does not match expected issuer"},
		{"denied consent", authtest.Options{Consent: authtest.ConsentDeny}, func(t *testing.T, f *fixture) error {
			_, err := f.login(t, oauth.LoginRequest{})
			return err
		}, oauth.ErrDenied, "access_denied"},
		{"wrong state", authtest.Options{}, func(t *testing.T, f *fixture) error {
			l, err := f.m.Start(testCtx(t), oauth.LoginRequest{Key: f.key})
			if err != nil {
				return err
			}
			r, err := f.as.AuthorizationCode(testCtx(t), l.AuthorizationURL)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(l.RedirectURL + "?code=" + r.Code.Reveal() + "&state=forged&iss=" + r.Iss)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("callback page status %d", resp.StatusCode)
			}
			return l.Wait(testCtx(t))
		}, oauth.ErrStateMismatch, "state does not match"},
		{"timeout", authtest.Options{}, func(t *testing.T, f *fixture) error {
			l, err := f.m.Start(testCtx(t), oauth.LoginRequest{Key: f.key, Timeout: 200 * time.Millisecond})
			if err != nil {
				return err
			}
			return l.Wait(testCtx(t))
		}, oauth.ErrLoginTimeout, "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			err := tc.run(t, f)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("login error = %v, want %v containing %q", err, tc.want, tc.text)
			}
			if !strings.Contains(err.Error(), `"docs"`) {
				t.Errorf("error does not name the server: %v", err)
			}
			if list, err := f.st.List(testCtx(t)); err != nil || len(list) != 0 {
				t.Errorf("stored after a failed login: %v %v", list, err)
			}
		})
	}
}

func TestRefreshBeforeExpiryAndExpired(t *testing.T) {
	// A token lifetime under the refresh margin makes every request refresh first.
	f := newFixture(t, authtest.Options{AccessTokenLifetime: 5 * time.Second})
	if _, err := f.login(t, oauth.LoginRequest{}); err != nil {
		t.Fatal(err)
	}
	before, _, _ := f.st.Get(testCtx(t), f.key)
	probes := len(f.res.Seen()) // the login's unauthenticated probe
	cs, err := f.connect(t)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs)
	after, _, _ := f.st.Get(testCtx(t), f.key)
	if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Fatalf("the token was not refreshed before use")
	}
	var refreshes int
	for _, r := range f.as.TokenRequests() {
		if r.GrantType == "refresh_token" && r.Error == "" {
			refreshes++
		}
	}
	if refreshes == 0 {
		t.Fatal("no refresh reached the token endpoint")
	}
	for _, r := range f.res.Seen()[probes:] {
		if r.Status != 0 {
			t.Errorf("a request was refused (%d %s): the refresh came too late", r.Status, r.Error)
		}
	}

	// The refresh token dies: the next connection fails as expired, and status says so.
	f.as.ExpireRefreshTokens()
	f.as.ExpireAccessTokens()
	_, err = f.connect(t)
	if !errors.Is(err, oauth.ErrExpired) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("connect with a dead refresh token: %v", err)
	}
	if s := f.m.Status(testCtx(t), f.key); s != oauth.StatusExpired {
		t.Errorf("status = %v, want expired", s)
	}
	// Logging in again recovers.
	if _, err := f.login(t, oauth.LoginRequest{}); err != nil {
		t.Fatal(err)
	}
	if s := f.m.Status(testCtx(t), f.key); s != oauth.StatusLoggedIn {
		t.Errorf("status after the new login = %v", s)
	}
	cs, err = f.connect(t)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs)
}

// A token the server expired early gets a 401; the handler refreshes once and the request
// goes through.
func TestRefreshOnceOn401(t *testing.T) {
	f := newFixture(t, authtest.Options{})
	if _, err := f.login(t, oauth.LoginRequest{}); err != nil {
		t.Fatal(err)
	}
	cs, err := f.connect(t)
	if err != nil {
		t.Fatal(err)
	}
	f.as.ExpireAccessTokens()
	if got := echo(t, cs); got != "echo: hi" {
		t.Errorf("echo = %q", got)
	}
	var refreshes int
	for _, r := range f.as.TokenRequests() {
		if r.GrantType == "refresh_token" {
			refreshes++
		}
	}
	if refreshes != 1 {
		t.Errorf("%d refreshes, want 1", refreshes)
	}
	data, _ := os.ReadFile(f.path)
	for _, r := range f.as.TokenRequests() {
		if r.AccessToken != "" && !bytes.Contains(data, []byte(r.AccessToken.Reveal())) && r.GrantType == "refresh_token" {
			t.Error("the refreshed token is not stored")
		}
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// 100 logins at once, each its own key, then 100 refreshes at once — half of them on one
// shared key, whose refresh token rotates on every use: nothing is lost, no
// refresh token is spent twice (which the server would answer with invalid_grant), and
// the file stays 0600.
func TestConcurrentLoginsAndRefreshes(t *testing.T) {
	f := newFixture(t, authtest.Options{AccessTokenLifetime: 5 * time.Second})
	const n = 100
	keys := make([]store.Key, n)
	errs := make(chan error, n)
	for i := range keys {
		keys[i] = store.Key{Owner: store.OwnerLocal, Server: "docs-" + strconv.Itoa(i), URL: f.url}
		go func(k store.Key) {
			l, err := f.m.Start(testCtx(t), oauth.LoginRequest{Key: k})
			if err != nil {
				errs <- err
				return
			}
			resp, err := f.as.Browse(testCtx(t), l.AuthorizationURL)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			errs <- l.Wait(testCtx(t))
		}(keys[i])
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("login: %v", err)
		}
	}
	list, err := f.st.List(testCtx(t))
	if err != nil || len(list) != n {
		t.Fatalf("%d entries after %d logins (%v)", len(list), n, err)
	}

	for i := range n {
		k := keys[i]
		if i%2 == 1 {
			k = keys[0] // half of them refresh the same login
		}
		go func(k store.Key) {
			// What a connection does before each request: its token, refreshed first
			// (the lifetime is under the refresh margin).
			ts, err := f.m.Handler(k).TokenSource(testCtx(t))
			if err == nil {
				var tok *oauth2.Token
				if tok, err = ts.Token(); err == nil && (tok == nil || tok.AccessToken == "") {
					err = errors.New("no token")
				}
			}
			errs <- err
		}(k)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("refresh: %v", err)
		}
	}
	// The shared login's latest token works.
	cs, err := f.connectKey(t, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs)
	for _, r := range f.as.TokenRequests() {
		if r.Error != "" {
			t.Errorf("a token request failed with %s (%s grant)", r.Error, r.GrantType)
		}
	}
	list, err = f.st.List(testCtx(t))
	if err != nil || len(list) != n {
		t.Fatalf("%d entries after the refreshes (%v)", len(list), err)
	}
	for _, e := range list {
		if e.AccessToken == "" || e.RefreshToken == "" || e.ClientID == "" || e.TokenURL == "" {
			t.Errorf("entry %s lost a field", e.Key)
		}
	}
	if s := f.m.Status(testCtx(t), keys[0]); s != oauth.StatusLoggedIn {
		t.Errorf("the shared login is %v after concurrent refreshes", s)
	}
	if fi, err := os.Stat(f.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v %v", fi.Mode(), err)
	}
}
