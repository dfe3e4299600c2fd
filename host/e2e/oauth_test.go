package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/authtest"
	"github.com/warden-mcp/warden/host/internal/leaktest"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
	"github.com/warden-mcp/warden/host/protocol"
	"github.com/warden-mcp/warden/host/thread"
)

// The OAuth half of S5 (DESIGN §5 rule 4): the OAuth servers of a plugin located in an
// executor log in — one with a pre-registered client, one by dynamic registration — with
// logins owned by the executor: discovery, registration and the token exchange go out
// from the executor's network, the tokens are stored apart from the host's login for the
// same server name and URL, and that host token is never sent.
//
// The authorization server and the MCP server have public https names that resolve
// nowhere; only the executor reaches them, through the forward proxy in its HTTPS_PROXY
// (routing by host name to the loopback listeners), trusting their certificates through
// SSL_CERT_FILE. https because the go-sdk takes OAuth metadata and endpoints only over
// https off loopback. The host process has neither the proxy nor the CA.
func TestS5ExecutorOAuth(t *testing.T) {
	const (
		execID   = "exec-oauth"
		pluginID = "oauth-demo@1"
		issuer   = "https://oauth-only.invalid"
		mcpURL   = "https://oauth-mcp.invalid/mcp"
	)
	c := leaktest.NewCanaries(t, "HOST_OAUTH_ACCESS", "HOST_OAUTH_REFRESH")
	pluginPort, globalPort := freePorts(t)
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", pluginPort)

	ca := authtest.NewCA(t)
	as := authtest.NewServer(t, authtest.Options{Issuer: issuer, CA: ca,
		Clients: []authtest.Client{{ID: "configured-client", RedirectURIs: []string{redirect}}}})
	res, mcpAddr := echoResource(t, as, ca, "oauth-mcp.invalid")
	egress := authtest.NewForwardProxy(t, map[string]string{"oauth-only.invalid": as.Addr(), "oauth-mcp.invalid": mcpAddr})

	// The host's own logins for the same server names and URL, made by store.Put before
	// the host starts (in a scratch store: executorHost makes the home, and gets the file
	// byte for byte).
	hostLogins := make([]store.Entry, 0, 2)
	for _, name := range []string{"p_oauth", "p_oauth_pre"} {
		hostLogins = append(hostLogins, store.Entry{
			Key:      store.Key{Owner: store.OwnerLocal, Server: name, URL: mcpURL},
			ClientID: "host-oauth-client", Issuer: issuer, TokenURL: issuer + "/token", TokenAuth: "params",
			AccessToken: c.Value("HOST_OAUTH_ACCESS"), RefreshToken: c.Value("HOST_OAUTH_REFRESH"), TokenType: "Bearer",
		})
	}
	hostFile := storeFileWith(t, hostLogins)
	hostEntriesBefore := rawEntries(t, hostFile, store.OwnerLocal)
	if len(hostEntriesBefore) != 2 {
		t.Fatalf("the scratch store holds %d host entries, want 2", len(hostEntriesBefore))
	}

	plugin := writePlugin(t, `{"name":"oauth-demo","version":"1"}`, fmt.Sprintf(`{"mcpServers":{
		"p_oauth": {"url": %q, "oauth": {"callbackPort": %d}},
		"p_oauth_pre": {"url": %q, "oauth": {"clientId": "configured-client", "callbackPort": %d}}}}`,
		mcpURL, pluginPort, mcpURL, pluginPort))
	execHome := t.TempDir()
	if err := os.WriteFile(filepath.Join(execHome, "config.toml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The executor's network: the proxy for both schemes (no NO_PROXY inherited from the
	// test's environment to bypass it) and the CA that signed the public names.
	envTOML := fmt.Sprintf(`default = "local"

[[environments]]
id = %q
program = %q
args = ["--log-level", "debug", "executor", "--listen", "stdio"]
[environments.env]
WARDEN_HOME = %q
HTTP_PROXY = %q
HTTPS_PROXY = %q
NO_PROXY = ""
no_proxy = ""
SSL_CERT_FILE = %q
`, execID, wardenBin(t), execHome, egress.URL(), egress.URL(), ca.CertFile(t))
	h, logs, home := executorHost(t, map[string]string{
		"config.toml":               fmt.Sprintf("mcp_oauth_credentials_store = \"file\"\nmcp_oauth_callback_port = %d\n", globalPort),
		"environments.toml":         envTOML,
		config.OAuthCredentialsFile: string(hostFile),
	})
	storePath := filepath.Join(home, config.OAuthCredentialsFile)

	logins := make(chan *thread.OAuthLoginCompleted, 8)
	unsubscribe := h.Threads().Subscribe(func(ev thread.Event) {
		if e, ok := ev.(*thread.OAuthLoginCompleted); ok {
			select {
			case logins <- e:
			default: // more completions than logins: the count check below reports it
			}
		}
	})
	t.Cleanup(unsubscribe)

	sel := []thread.SelectedRoot{{ID: pluginID, Location: thread.Location{Type: thread.LocationEnvironment, EnvironmentID: execID, Path: plugin}}}
	th := startSelecting(t, h, sel)

	// Before any login both servers fail for want of one, saying how to log in. The host's
	// login for the same name and URL does not count: the login belongs to the executor.
	before := statusUntil(t, th, "both OAuth servers failed", func(m map[string]thread.ServerStatus) bool {
		return m["p_oauth"].Status == thread.StateFailed && m["p_oauth_pre"].Status == thread.StateFailed
	})
	for _, name := range []string{"p_oauth", "p_oauth_pre"} {
		s := before[name]
		if s.PluginID != pluginID || s.AuthStatus != thread.AuthNotLoggedIn || !strings.Contains(s.ToolsError, "log in") {
			t.Errorf("%s before login = plugin %q, auth %q, error %q; want %s, %q and an error saying to log in",
				name, s.PluginID, s.AuthStatus, s.ToolsError, pluginID, thread.AuthNotLoggedIn)
		}
	}
	for _, r := range res.Seen() {
		if r.Authorization != "" {
			t.Errorf("before any executor login a request carried an Authorization header: %+v", r)
		}
	}

	// The pre-registered client: no registration, its client id in the authorization URL
	// and in the token request.
	l := startLogin(t, h.Threads(), th.ID(), "p_oauth_pre")
	q := authorizationQuery(t, l, issuer)
	if q.Get("client_id") != "configured-client" {
		t.Errorf("p_oauth_pre's authorization URL has client_id %q, want configured-client", q.Get("client_id"))
	}
	if q.Get("redirect_uri") != redirect || l.RedirectURL != redirect {
		t.Errorf("p_oauth_pre's redirect_uri = %q (login %q), want %q, the plugin's callback port", q.Get("redirect_uri"), l.RedirectURL, redirect)
	}
	if regs := as.Registrations(); len(regs) != 0 {
		t.Errorf("a configured client registered anyway: %+v", regs)
	}
	browse(t, as, l.AuthorizationURL)
	waitLoginCompleted(t, logins, th.ID(), "p_oauth_pre")
	preTok := lastCodeExchange(t, as)
	if preTok.ClientID != "configured-client" || !preTok.CodeVerifierValid || preTok.RedirectURI != redirect || preTok.Resource != mcpURL {
		t.Errorf("p_oauth_pre's token request = %+v, want client configured-client, a valid code_verifier, redirect %s, resource %s", preTok, redirect, mcpURL)
	}

	// Dynamic registration: client_name warden, redirect_uris exactly the authorization
	// URL's redirect_uri on the plugin's callback port.
	l = startLogin(t, h.Threads(), th.ID(), "p_oauth")
	q = authorizationQuery(t, l, issuer)
	regs := as.Registrations()
	if len(regs) != 1 {
		t.Fatalf("registrations = %+v, want exactly one", regs)
	}
	reg := regs[0]
	if reg.Error != "" || reg.ClientName != oauth.ClientName || !slices.Equal(reg.RedirectURIs, []string{q.Get("redirect_uri")}) {
		t.Errorf("registration = %+v, want client_name %q and redirect_uris [%s]", reg, oauth.ClientName, q.Get("redirect_uri"))
	}
	if q.Get("redirect_uri") != redirect {
		t.Errorf("p_oauth's redirect_uri = %q, want %q (the plugin's callback port %d, not the global %d)", q.Get("redirect_uri"), redirect, pluginPort, globalPort)
	}
	if q.Get("client_id") != reg.ClientID {
		t.Errorf("p_oauth's authorization URL has client_id %q, want the registered %q", q.Get("client_id"), reg.ClientID)
	}
	browse(t, as, l.AuthorizationURL)
	waitLoginCompleted(t, logins, th.ID(), "p_oauth")
	dcrTok := lastCodeExchange(t, as)
	if dcrTok.GrantType != "authorization_code" || dcrTok.ClientID != reg.ClientID || !dcrTok.CodeVerifierValid {
		t.Errorf("p_oauth's token request = %+v, want an authorization_code grant with a valid code_verifier for client %s", dcrTok, reg.ClientID)
	}

	// The servers recover in the running thread, logged in.
	st := statusUntil(t, th, "both OAuth servers ready", func(m map[string]thread.ServerStatus) bool {
		return m["p_oauth"].Status == thread.StateReady && m["p_oauth_pre"].Status == thread.StateReady
	})
	for _, name := range []string{"p_oauth", "p_oauth_pre"} {
		if s := st[name]; s.AuthStatus != thread.AuthOAuth || s.PluginID != pluginID {
			t.Errorf("%s after login = auth %q plugin %q, want %q %s", name, s.AuthStatus, s.PluginID, thread.AuthOAuth, pluginID)
		}
	}
	for _, name := range []string{"p_oauth", "p_oauth_pre"} {
		msg := "hello over executor OAuth from " + name
		if got := toolText(t, th, name, "echo", fmt.Sprintf(`{"message":%q}`, msg)); got != "ECHOING: "+msg {
			t.Errorf("%s/echo = %q", name, got)
		}
	}

	// One more login, over the host API: p_oauth_pre again, for the same thread.
	api := dialAPI(t, h)
	threadID, reg2, secs := th.ID(), "dcr", int64(60)
	var resp protocol.McpServerOauthLoginResponse
	if err := api.call(testCtx(t), protocol.MethodMcpServerOauthLogin, protocol.McpServerOauthLoginParams{
		Name: "p_oauth_pre", ThreadID: &threadID, ClientRegistration: &reg2, TimeoutSecs: &secs}, &resp); err != nil {
		t.Fatalf("mcpServer/oauth/login: %v", err)
	}
	au, err := url.Parse(resp.AuthorizationURL)
	if err != nil || au.Scheme+"://"+au.Host+au.Path != issuer+"/authorize" || au.Query().Get("client_id") != "configured-client" {
		t.Fatalf("mcpServer/oauth/login answered authorizationUrl %q (%v), want %s/authorize for configured-client", resp.AuthorizationURL, err, issuer)
	}
	browse(t, as, resp.AuthorizationURL)
	api.waitNotification(testCtx(t), func(n protocol.Notification) bool {
		if n.Method != protocol.NotifyMcpServerOauthLoginCompleted {
			return false
		}
		var p protocol.McpServerOauthLoginCompletedNotification
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatalf("%s params: %v", n.Method, err)
		}
		if p.Name != "p_oauth_pre" {
			return false
		}
		if !p.Success || p.ThreadID == nil || *p.ThreadID != threadID || p.Error != nil {
			t.Fatalf("%s = %s, want success for p_oauth_pre in thread %s", n.Method, n.Params, threadID)
		}
		return true
	})
	waitLoginCompleted(t, logins, th.ID(), "p_oauth_pre")
	apiTok := lastCodeExchange(t, as)
	if apiTok.ClientID != "configured-client" || !apiTok.CodeVerifierValid {
		t.Errorf("the API login's token request = %+v", apiTok)
	}
	if n := len(as.Registrations()); n != 1 {
		t.Errorf("%d registrations after the API login of a configured client, want still 1", n)
	}
	if got := toolText(t, th, "p_oauth_pre", "echo", `{"message":"after the API login"}`); got != "ECHOING: after the API login" {
		t.Errorf("p_oauth_pre/echo after the API login = %q", got)
	}
	apiStatus := api.status(testCtx(t), threadID, "")

	// Only the executor's tokens reached the server, and they authenticated its requests.
	issued := []authtest.Secret{preTok.AccessToken, dcrTok.AccessToken, apiTok.AccessToken}
	hostTok := c.Value("HOST_OAUTH_ACCESS")
	var passedPre, passedDCR bool
	for i, r := range res.Seen() {
		if r.Token.Reveal() == hostTok || strings.Contains(r.Authorization.Reveal(), hostTok) {
			t.Errorf("request #%d to the MCP server (%s %s) carried the host's OAuth token", i, r.Method, r.Path)
		}
		if r.Token != "" && !slices.Contains(issued, r.Token) {
			t.Errorf("request #%d to the MCP server carried a token the authorization server never issued: %+v", i, r)
		}
		passedPre = passedPre || (r.Status == 0 && (r.Token == preTok.AccessToken || r.Token == apiTok.AccessToken))
		passedDCR = passedDCR || (r.Status == 0 && r.Token == dcrTok.AccessToken)
	}
	if !passedPre || !passedDCR {
		t.Errorf("requests authenticated by the configured client's token: %v, by the registered client's: %v; want both", passedPre, passedDCR)
	}
	for i, r := range as.TokenRequests() {
		if r.PresentedRefreshToken.Reveal() == c.Value("HOST_OAUTH_REFRESH") || r.ClientID == "host-oauth-client" {
			t.Errorf("token request #%d used the host's login: %+v", i, r)
		}
	}
	// Discovery, registration and the token exchange went out from the executor's network.
	hosts := egress.Hosts()
	if !slices.Contains(hosts, "oauth-only.invalid") || !slices.Contains(hosts, "oauth-mcp.invalid") {
		t.Errorf("the executor's proxy saw hosts %q, want oauth-only.invalid and oauth-mcp.invalid", hosts)
	}
	for _, r := range egress.Requests() {
		if !r.Routed {
			t.Errorf("the executor asked its proxy for an unrouted destination: %+v", r)
		}
	}

	// The host's entries are untouched, byte for byte; the executor's logins are stored
	// under the executor's id.
	after, err := os.ReadFile(storePath)
	if err != nil {
		t.Fatal(err)
	}
	if got := rawEntries(t, after, store.OwnerLocal); !slices.EqualFunc(got, hostEntriesBefore, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		t.Errorf("the host's entries changed: %d before, %d after, or their bytes differ", len(hostEntriesBefore), len(got))
	}
	s, err := store.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		server, clientID string
		token            authtest.Secret
	}{{"p_oauth", reg.ClientID, dcrTok.AccessToken}, {"p_oauth_pre", "configured-client", apiTok.AccessToken}} {
		e, ok, err := s.Get(testCtx(t), store.Key{Owner: execID, Server: want.server, URL: mcpURL})
		if err != nil || !ok {
			t.Errorf("no login stored for %s under owner %s: %v", want.server, execID, err)
			continue
		}
		if e.ClientID != want.clientID || authtest.Secret(e.AccessToken) != want.token {
			t.Errorf("the stored login of %s (owner %s) = %v, want client %s and the token it was issued last", want.server, execID, e, want.clientID)
		}
	}
	all, err := s.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.Owner != store.OwnerLocal && e.Owner != execID {
			t.Errorf("an entry for owner %q, want only %s and %s: %v", e.Owner, store.OwnerLocal, execID, e)
		}
	}
	if len(all) != 4 {
		t.Errorf("the store holds %d entries, want the host's 2 and the executor's 2", len(all))
	}

	// No token in any log or status: neither the host's nor any the authorization server
	// issued. The executor's stderr reaches the host log (a spawned executor's stderr is
	// logged line by line), so the host log covers it.
	if !strings.Contains(logs.String(), "stderr: environment="+execID) {
		t.Errorf("the host log holds no line of the executor's stderr: the scan below would not cover it")
	}
	decisions, err := os.ReadFile(filepath.Join(home, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{
		"host log (with the executor's stderr)": logs.String(),
		"decision log":                          string(decisions),
		"status before login":                   statusJSON(t, before),
		"status":                                statusJSON(t, st),
		"API status":                            string(mustJSON(t, apiStatus)),
	}
	var secrets []authtest.Secret
	for _, r := range as.TokenRequests() {
		secrets = append(secrets, r.AccessToken, r.RefreshToken)
	}
	assertNoSecret(t, secrets, sources)
	var srcs []leaktest.Source
	for name, text := range sources {
		srcs = append(srcs, leaktest.TextSource(name, text))
	}
	leaktest.AssertNoCanary(t, c, srcs...)
	select {
	case e := <-logins:
		t.Errorf("an unexpected login completion: %+v", e)
	default:
	}
}

// freePorts returns two distinct loopback ports free now (the reference test picks its
// callback ports the same way).
func freePorts(t *testing.T) (int, int) {
	t.Helper()
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return a.Addr().(*net.TCPAddr).Port, b.Addr().(*net.TCPAddr).Port
}

// echoResource serves a go-sdk MCP server with an echo tool behind as's protection, over
// TLS with a certificate for host, and returns the Resource and the listener's address.
func echoResource(t *testing.T, as *authtest.Server, ca *authtest.CA, host string) (*authtest.Resource, string) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "oauth-echo", Version: "1"}, nil)
	type args struct {
		Message string `json:"message"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echoes its message"},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ECHOING: " + a.Message}}}, nil, nil
		})
	// The listener is loopback but the requests name the public host: without this the
	// go-sdk's DNS-rebinding protection refuses them.
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	res := as.Resource(handler, "mcp:tools")
	srv := httptest.NewUnstartedServer(res)
	srv.TLS = ca.TLSConfig(t, host)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return res, srv.Listener.Addr().String()
}

// storeFileWith writes entries with store.Put into a scratch store and returns the file.
func storeFileWith(t *testing.T, entries []store.Entry) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), config.OAuthCredentialsFile)
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := s.Put(testCtx(t), e); err != nil {
			t.Fatalf("store.Put %s: %v", e.Key, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawEntries returns, in file order, the bytes of the credential file's entries owned by
// owner.
func rawEntries(t *testing.T, file []byte, owner string) []json.RawMessage {
	t.Helper()
	var f struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(file, &f); err != nil {
		t.Fatalf("the credential file does not parse: %v", err)
	}
	var out []json.RawMessage
	for i, raw := range f.Entries {
		var k struct {
			Owner string `json:"owner"`
		}
		if err := json.Unmarshal(raw, &k); err != nil {
			t.Fatalf("credential file entry %d does not parse: %v", i, err)
		}
		if k.Owner == owner {
			out = append(out, raw)
		}
	}
	return out
}

// startLogin starts a login through the thread layer, the way the client would pick
// dynamic registration.
func startLogin(t *testing.T, m *thread.Manager, threadID, name string) *oauth.Login {
	t.Helper()
	l, err := m.OAuthLogin(testCtx(t), thread.OAuthLoginParams{ThreadID: threadID, Name: name, Registration: "dcr", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("OAuthLogin %s: %v", name, err)
	}
	return l
}

// authorizationQuery checks that the login's authorization URL is the issuer's
// authorization endpoint and returns its query.
func authorizationQuery(t *testing.T, l *oauth.Login, issuer string) url.Values {
	t.Helper()
	u, err := url.Parse(l.AuthorizationURL)
	if err != nil {
		t.Fatalf("login %s: the authorization URL does not parse: %v", l.Key, err)
	}
	if u.Scheme+"://"+u.Host+u.Path != issuer+"/authorize" {
		t.Fatalf("login %s: the authorization URL is %s://%s%s, want %s/authorize", l.Key, u.Scheme, u.Host, u.Path, issuer)
	}
	return u.Query()
}

// browse plays the user's browser: the authorization server's consent, then warden's
// callback listener, whose page waits for the login's outcome.
func browse(t *testing.T, as *authtest.Server, authorizationURL string) {
	t.Helper()
	resp, err := as.Browse(testCtx(t), authorizationURL)
	if err != nil {
		t.Fatalf("browsing to the authorization URL: %v", err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "logged in") {
		t.Fatalf("warden's callback page: status %d: %q", resp.StatusCode, page)
	}
}

// waitLoginCompleted waits for the next OAuthLoginCompleted event and checks it reports
// the success of name's login for the thread.
func waitLoginCompleted(t *testing.T, ch <-chan *thread.OAuthLoginCompleted, threadID, name string) {
	t.Helper()
	select {
	case e := <-ch:
		if e.Name != name || e.ThreadID != threadID || !e.Success || e.Error != "" {
			t.Fatalf("login completed %+v, want success for %s in thread %s", e, name, threadID)
		}
	case <-testCtx(t).Done():
		t.Fatalf("no OAuthLoginCompleted for %s", name)
	}
}

// lastCodeExchange returns the authorization server's last token request, which must be a
// successful authorization_code grant.
func lastCodeExchange(t *testing.T, as *authtest.Server) authtest.TokenRecord {
	t.Helper()
	toks := as.TokenRequests()
	if len(toks) == 0 {
		t.Fatal("no token request reached the authorization server")
	}
	r := toks[len(toks)-1]
	if r.GrantType != "authorization_code" || r.Error != "" || r.AccessToken == "" {
		t.Fatalf("the last token request = %+v, want a successful authorization_code grant", r)
	}
	return r
}

// assertNoSecret fails once per secret and source where the secret's value appears,
// naming the secret by its index, never by its value.
func assertNoSecret(t *testing.T, secrets []authtest.Secret, sources map[string]string) {
	t.Helper()
	for name, text := range sources {
		for i, s := range secrets {
			if s != "" && strings.Contains(text, s.Reveal()) {
				t.Errorf("issued token #%d (of %d access and refresh tokens) appears in the %s", i, len(secrets), name)
			}
		}
	}
}
