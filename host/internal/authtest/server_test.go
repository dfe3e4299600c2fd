package authtest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/warden-mcp/warden/host/internal/authtest"
)

const verifier = "verifier-0123456789-0123456789-0123456789-abcdef"

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func authorizeURL(as *authtest.Server, params map[string]string) string {
	q := url.Values{}
	for k, v := range params {
		if v != "" {
			q.Set(k, v)
		}
	}
	return as.URL() + "/authorize?" + q.Encode()
}

func goodAuthorize(clientID, redirect string) map[string]string {
	return map[string]string{
		"client_id": clientID, "redirect_uri": redirect, "response_type": "code", "state": "st-1",
		"code_challenge": challenge(verifier), "code_challenge_method": "S256", "resource": "http://127.0.0.1:9/mcp",
	}
}

func postToken(t *testing.T, as *authtest.Server, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(as.URL()+"/token", form)
	if err != nil {
		t.Fatalf("POST /token: %v", err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("decode /token answer: %v", err)
	}
	return resp.StatusCode, m
}

func TestMetadata(t *testing.T) {
	as := authtest.NewServer(t, authtest.Options{Scopes: []string{"extra"}})
	asm, err := auth.GetAuthServerMetadata(t.Context(), as.URL(), http.DefaultClient)
	if err != nil || asm == nil {
		t.Fatalf("GetAuthServerMetadata: %v, %v", asm, err)
	}
	if asm.Issuer != as.URL() || asm.AuthorizationEndpoint != as.URL()+"/authorize" || asm.TokenEndpoint != as.URL()+"/token" ||
		asm.RegistrationEndpoint != as.URL()+"/register" || !asm.AuthorizationResponseIssParameterSupported ||
		!slices.Equal(asm.CodeChallengeMethodsSupported, []string{"S256"}) ||
		!slices.Equal(asm.GrantTypesSupported, []string{"authorization_code", "refresh_token"}) ||
		!slices.Equal(asm.TokenEndpointAuthMethodsSupported, []string{"none", "client_secret_post"}) ||
		!slices.Contains(asm.ScopesSupported, "offline_access") || !slices.Contains(asm.ScopesSupported, "extra") {
		t.Errorf("metadata: %+v", asm)
	}
	noDCR := authtest.NewServer(t, authtest.Options{DisableRegistration: true})
	asm, err = auth.GetAuthServerMetadata(t.Context(), noDCR.URL(), http.DefaultClient)
	if err != nil || asm.RegistrationEndpoint != "" {
		t.Errorf("with registration disabled: %+v, %v", asm, err)
	}
	if _, err := oauthex.RegisterClient(t.Context(), noDCR.URL()+"/register",
		&oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://127.0.0.1:1/cb"}}, http.DefaultClient); err == nil {
		t.Error("registration worked with registration disabled")
	}
}

func TestRegisterValidates(t *testing.T) {
	as := authtest.NewServer(t, authtest.Options{})
	for _, tc := range []struct {
		name string
		meta oauthex.ClientRegistrationMetadata
	}{
		{"no redirect URIs", oauthex.ClientRegistrationMetadata{ClientName: "x"}},
		{"plain http off loopback", oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://example.com/cb"}}},
		{"fragment", oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"https://example.com/cb#f"}}},
		{"basic auth", oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"https://example.com/cb"}, TokenEndpointAuthMethod: "client_secret_basic"}},
		{"implicit grant", oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"https://example.com/cb"}, GrantTypes: []string{"implicit"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := oauthex.RegisterClient(t.Context(), as.URL()+"/register", &tc.meta, http.DefaultClient); err == nil {
				t.Error("registration accepted")
			}
		})
	}
	big := bytes.Repeat([]byte("a"), 65<<10)
	resp, err := http.Post(as.URL()+"/register", "application/json",
		io.MultiReader(strings.NewReader(`{"client_name":"`), bytes.NewReader(big), strings.NewReader(`","redirect_uris":["https://e.com/cb"]}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("oversized registration: status %d, want 400", resp.StatusCode)
	}
	regs := as.Registrations()
	if len(regs) != 6 {
		t.Fatalf("%d registration records, want 6", len(regs))
	}
	for _, r := range regs {
		if r.ClientID != "" || r.Error == "" {
			t.Errorf("a refused registration recorded as %+v", r)
		}
	}
}

func TestAuthorizeValidates(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	as := authtest.NewServer(t, authtest.Options{Clients: []authtest.Client{{ID: "c", RedirectURIs: []string{redirect}}}})
	ctx := t.Context()
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"no PKCE", "code_challenge", "", "invalid_request"},
		{"plain PKCE", "code_challenge_method", "plain", "invalid_request"},
		{"token response", "response_type", "token", "unsupported_response_type"},
		{"unknown scope", "scope", "admin", "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := goodAuthorize("c", redirect)
			p[tc.key] = tc.value
			r, err := as.AuthorizationCode(ctx, authorizeURL(as, p))
			if err != nil {
				t.Fatal(err)
			}
			if r.Error != tc.want || r.Code != "" || r.State != "st-1" || r.Iss != as.URL() || r.RedirectURL != redirect {
				t.Errorf("got %+v, want error %s with state and iss", r, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, key, value string }{
		{"unknown client", "client_id", "nobody"},
		{"other redirect", "redirect_uri", "http://127.0.0.1:1/cb2"},
		{"redirect prefix", "redirect_uri", redirect + "/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := goodAuthorize("c", redirect)
			p[tc.key] = tc.value
			if _, err := as.AuthorizationCode(ctx, authorizeURL(as, p)); !errors.Is(err, authtest.ErrNoRedirect) {
				t.Errorf("got %v, want ErrNoRedirect", err)
			}
		})
	}
	if _, err := as.AuthorizationCode(ctx, "http://127.0.0.1:1/authorize?client_id=c"); !errors.Is(err, authtest.ErrNotThisServer) {
		t.Errorf("a foreign URL: %v, want ErrNotThisServer", err)
	}
}

func TestCodeExchange(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	as := authtest.NewServer(t, authtest.Options{Clients: []authtest.Client{
		{ID: "c", RedirectURIs: []string{redirect}},
		{ID: "conf", Secret: "s-0123456789", RedirectURIs: []string{redirect}},
	}})
	code := func(clientID string) string {
		t.Helper()
		r, err := as.AuthorizationCode(t.Context(), authorizeURL(as, goodAuthorize(clientID, redirect)))
		if err != nil || r.Code == "" {
			t.Fatalf("authorize: %+v, %v", r, err)
		}
		return r.Code.Reveal()
	}
	form := func(code string, kv ...string) url.Values {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"c"}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				f.Del(kv[i])
			} else {
				f.Set(kv[i], kv[i+1])
			}
		}
		return f
	}
	for _, tc := range []struct {
		name   string
		kv     []string
		status int
		want   string
	}{
		{"no verifier", []string{"code_verifier", ""}, 400, "invalid_request"},
		{"wrong verifier", []string{"code_verifier", verifier + "x"}, 400, "invalid_grant"},
		{"other client", []string{"client_id", "conf", "client_secret", "s-0123456789"}, 400, "invalid_grant"},
		{"other redirect", []string{"redirect_uri", redirect + "2"}, 400, "invalid_grant"},
		{"other resource", []string{"resource", "http://127.0.0.1:9/other"}, 400, "invalid_target"},
		{"unknown client", []string{"client_id", "nobody"}, 401, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := postToken(t, as, form(code("c"), tc.kv...))
			if status != tc.status || m["error"] != tc.want || m["access_token"] != nil {
				t.Errorf("got %d %v, want %d %s", status, m["error"], tc.status, tc.want)
			}
		})
	}
	t.Run("confidential without secret", func(t *testing.T) {
		status, m := postToken(t, as, form(code("conf"), "client_id", "conf"))
		if status != 401 || m["error"] != "invalid_client" {
			t.Errorf("got %d %v", status, m["error"])
		}
	})
	t.Run("replay revokes", func(t *testing.T) {
		c := code("c")
		status, m := postToken(t, as, form(c))
		if status != 200 || m["token_type"] != "Bearer" || m["access_token"] == nil || m["refresh_token"] == nil {
			t.Fatalf("first exchange: %d %v", status, m["error"])
		}
		if status, m2 := postToken(t, as, form(c)); status != 400 || m2["error"] != "invalid_grant" {
			t.Errorf("replay: %d %v", status, m2["error"])
		}
		refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {"c"}, "refresh_token": {m["refresh_token"].(string)}}
		if status, m3 := postToken(t, as, refresh); status != 400 || m3["error"] != "invalid_grant" {
			t.Errorf("refresh token bought by a replayed code still works: %d %v", status, m3["error"])
		}
	})
	t.Run("rotation", func(t *testing.T) {
		_, m := postToken(t, as, form(code("c")))
		rt := m["refresh_token"].(string)
		refresh := url.Values{"grant_type": {"refresh_token"}, "client_id": {"c"}, "refresh_token": {rt}}
		status, m2 := postToken(t, as, refresh)
		if status != 200 || m2["refresh_token"] == nil || m2["refresh_token"] == rt {
			t.Fatalf("refresh: %d %v", status, m2["error"])
		}
		if status, m3 := postToken(t, as, refresh); status != 400 || m3["error"] != "invalid_grant" {
			t.Errorf("a rotated refresh token still works: %d %v", status, m3["error"])
		}
	})
}

// TestResourceChecks drives the protected resource directly: challenge shape, scope,
// audience and expiry.
func TestResourceChecks(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	as := authtest.NewServer(t, authtest.Options{Scopes: []string{"other"}, Clients: []authtest.Client{{ID: "c", RedirectURIs: []string{redirect}}}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "inside") })
	res := as.Resource(ok, "mcp:tools")
	srv := httptest.NewServer(res)
	t.Cleanup(srv.Close)
	mcpURL := srv.URL + "/mcp"

	prm, err := oauthex.GetProtectedResourceMetadata(t.Context(), srv.URL+"/.well-known/oauth-protected-resource/mcp", mcpURL, http.DefaultClient)
	if err != nil || !slices.Equal(prm.AuthorizationServers, []string{as.URL()}) || !slices.Equal(prm.ScopesSupported, []string{"mcp:tools"}) {
		t.Fatalf("protected resource metadata: %+v, %v", prm, err)
	}

	token := func(scope, resource string) string {
		p := goodAuthorize("c", redirect)
		p["scope"], p["resource"] = scope, resource
		r, err := as.AuthorizationCode(t.Context(), authorizeURL(as, p))
		if err != nil || r.Code == "" {
			t.Fatalf("authorize: %+v, %v", r, err)
		}
		_, m := postToken(t, as, url.Values{"grant_type": {"authorization_code"}, "code": {r.Code.Reveal()}, "client_id": {"c"}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
		return m["access_token"].(string)
	}
	get := func(tok string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, mcpURL, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
	}
	wantMeta := fmt.Sprintf(`Bearer resource_metadata=%q, scope="mcp:tools"`, srv.URL+"/.well-known/oauth-protected-resource/mcp")
	if status, c := get(""); status != 401 || c != wantMeta {
		t.Errorf("no token: %d %q, want 401 %q", status, c, wantMeta)
	}
	good := token("mcp:tools", mcpURL)
	if status, _ := get(good); status != 200 {
		t.Errorf("good token: %d", status)
	}
	if status, c := get(token("other", mcpURL)); status != 403 || !strings.Contains(c, `error="insufficient_scope"`) {
		t.Errorf("token without the scope: %d %q", status, c)
	}
	if status, c := get(token("mcp:tools", srv.URL+"/elsewhere")); status != 401 || !strings.Contains(c, `error="invalid_token"`) {
		t.Errorf("token for another resource: %d %q", status, c)
	}
	as.ExpireAccessTokens()
	if status, c := get(good); status != 401 || !strings.Contains(c, `error="invalid_token"`) || !strings.Contains(c, "expired") {
		t.Errorf("expired token: %d %q", status, c)
	}
	seen := res.Seen()
	if len(seen) != 5 || seen[1].Token != authtest.Secret(good) || seen[1].Status != 0 || seen[4].Token != authtest.Secret(good) || seen[4].Error != "invalid_token" {
		t.Errorf("resource records: %+v", seen)
	}
}

// TestEarlyExpiryMeansNewLogin pins the go-sdk behaviour the host has to wrap: when the
// server expires an access token the client still thinks valid, the 401 starts a whole
// new authorization, not a refresh.
func TestEarlyExpiryMeansNewLogin(t *testing.T) {
	const redirect = "http://127.0.0.1:1/cb"
	e := newEnv(t, authtest.Options{Clients: []authtest.Client{{ID: "pub", RedirectURIs: []string{redirect}}}})
	cs, err := e.connect(t, &auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: "pub"}, RedirectURL: redirect,
		AuthorizationCodeFetcher: e.as.Fetcher(),
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	e.as.ExpireAccessTokens()
	if err := callWhoami(t, cs); err != nil {
		t.Fatalf("whoami: %v", err)
	}
	toks := e.as.TokenRequests()
	if len(e.as.Authorizations()) != 2 || len(toks) != 2 || toks[1].GrantType != "authorization_code" {
		t.Errorf("want a second full login: %d authorizations, token grants %v", len(e.as.Authorizations()), grantTypes(toks))
	}
}

func grantTypes(toks []authtest.TokenRecord) []string {
	var g []string
	for _, t := range toks {
		g = append(g, t.GrantType)
	}
	return g
}

// TestSecretsNeverPrint formats a record holding credentials every usual way.
func TestSecretsNeverPrint(t *testing.T) {
	const value = "tok-VALUE-0123456789"
	rec := authtest.TokenRecord{AccessToken: value, RefreshToken: value, PresentedRefreshToken: value}
	res := authtest.ResourceRecord{Authorization: "Bearer " + value, Token: value}
	var out bytes.Buffer
	for _, v := range []any{rec, &rec, res, authtest.Secret(value)} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		slog.New(slog.NewTextHandler(&out, nil)).Info("r", "v", v, "s", authtest.Secret(value))
		slog.New(slog.NewJSONHandler(&out, nil)).Info("r", "v", v)
	}
	if strings.Contains(out.String(), value) || strings.Contains(out.String(), fmt.Sprintf("%x", value)) {
		t.Fatal("a formatting of a record shows the secret")
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Fatal("no redacted marker in the output: the check above proves nothing")
	}
	if authtest.Secret(value).Reveal() != value || rec.AccessToken != value {
		t.Fatal("the value is not there for comparisons")
	}
}
