// Package authtest is a real OAuth 2.1 authorization server for tests, on loopback, with a
// protected-resource wrapper for MCP servers and a browser stand-in — enough for the
// go-sdk's auth.AuthorizationCodeHandler to run its whole flow against it: RFC 9728
// discovery, RFC 8414 metadata, RFC 7591 registration, authorization code with PKCE
// (S256 only), RFC 9207 iss, refresh tokens with rotation.
//
// Endpoints of a Server (its URL is also its issuer; see Public names below):
//   - /.well-known/oauth-authorization-server: metadata, advertising iss support,
//     S256, the authorization_code and refresh_token grants, the auth methods none and
//     client_secret_post, offline_access and every Resource's scopes,
//     registration_endpoint unless Options.DisableRegistration, and
//     client_id_metadata_document_supported with Options.ClientIDMetadataDocuments.
//   - /register: dynamic registration; redirect URIs must be https or loopback http.
//   - /authorize: checks client_id and the exact redirect_uri (an error page, no
//     redirect, when either is wrong; with Options.ClientIDMetadataDocuments a client_id
//     that is an https URL with a path is a public client whose client ID metadata
//     document is fetched from that URL, trusting Options.CA, and must name the URL as
//     its client_id and list the redirect_uri — AuthorizeRecord.MetadataDocument and
//     MetadataDocumentError say how that went), response_type=code, an S256
//     code_challenge and the scopes; then the consent step — approve by default, SetConsent(ConsentDeny) to
//     answer error=access_denied, HoldConsent to keep it waiting until the test
//     releases it — then redirects with code, state and iss (SetIss/Options.Iss send a
//     wrong one or none).
//   - /token: authorization_code (single use; a replay revokes what the code bought;
//     client, redirect_uri, resource and code_verifier checked) and refresh_token
//     (rotated: each refresh token works once); a metadata document's client id is
//     known here once /authorize accepted its document. ExpireAccessTokens and
//     ExpireRefreshTokens end what was issued so far; Options.AccessTokenLifetime sets
//     expires_in, and golang.org/x/oauth2 refreshes within 10s of expiry, so a
//     lifetime under 10s makes a client refresh before every request.
//
// Every request is recorded (Registrations, Authorizations, TokenRequests, and
// Resource.Seen for the protected resource). Credentials in records — codes, tokens,
// Authorization headers — are Secrets: compare them with ==, and print records freely,
// since every formatting of a Secret shows "[redacted]". Reveal gives the value; never
// print it. Bodies are capped at 64 KiB (4 MiB through a Resource), headers at 16 KiB,
// the clients, codes and tokens held at fixed counts, a held consent at
// Options.ConsentTimeout.
//
// A go-sdk MCP server behind OAuth, and a client that logs in through a real callback
// listener (callbackURL is that listener's /callback; it passes the code, state and iss
// it got to the fetcher):
//
//	as := authtest.NewServer(t, authtest.Options{
//		Clients: []authtest.Client{{ID: "warden", RedirectURIs: []string{callbackURL}}},
//	})
//	res := as.Resource(mcp.NewStreamableHTTPHandler(getServer, nil), "mcp:tools")
//	srv := httptest.NewServer(res) // a Resource is served at the root
//	h, _ := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
//		PreregisteredClient: &oauthex.ClientCredentials{ClientID: "warden"},
//		RedirectURL:         callbackURL,
//		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
//			resp, err := as.Browse(ctx, a.URL) // GET /authorize, consent, GET the callback
//			if err != nil {
//				return nil, err
//			}
//			resp.Body.Close()
//			return <-fromCallback, nil
//		},
//	})
//	cs, err := mcp.NewClient(impl, nil).Connect(ctx,
//		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", OAuthHandler: h}, nil)
//	...
//	tok := as.TokenRequests()[0] // tok.CodeVerifierValid, tok.ClientID
//	last := res.Seen()[len(res.Seen())-1]
//	if last.Token != tok.AccessToken { ... }
//
// Without a callback listener, Fetcher() (or AuthorizationCode,
// which returns the code, state and iss of the redirect) plays the browser and hands
// the result straight to the handler.
//
// Public names. A test of traffic that must leave from another network (an executor's)
// gives the server and the resource names that resolve nowhere: Options.Issuer
// ("https://oauth-only.invalid") makes the server advertise that issuer, build every
// metadata endpoint on it and serve TLS with a certificate for it, signed by Options.CA
// (NewCA); the resource's httptest server gets a certificate from the same CA
// (CA.TLSConfig) and, since a Resource builds its resource URL from the request's Host
// and TLS, answers under its public name. NewForwardProxy routes those names to the
// listeners (Server.Addr) — CONNECT tunnels for https, plain requests with the Host kept
// for http — and records the hosts asked for; the client that must reach them gets the
// proxy (HTTPS_PROXY) and the CA (SSL_CERT_FILE=CA.CertFile, or CA.Pool in process). The
// browser stand-in needs neither: it dials the listener for the issuer's host and trusts
// the CA. Public names must be https for a go-sdk client, which refuses http metadata and
// endpoints off loopback.
//
//	ca := authtest.NewCA(t)
//	as := authtest.NewServer(t, authtest.Options{Issuer: "https://oauth-only.invalid", CA: ca})
//	srv := httptest.NewUnstartedServer(as.Resource(mcpHandler, "mcp:tools"))
//	srv.TLS = ca.TLSConfig(t, "oauth-mcp.invalid")
//	srv.StartTLS()
//	proxy := authtest.NewForwardProxy(t, map[string]string{
//		"oauth-only.invalid": as.Addr(), "oauth-mcp.invalid": srv.Listener.Addr().String()})
//	// the client: HTTPS_PROXY=proxy.URL(), SSL_CERT_FILE=ca.CertFile(t),
//	// MCP URL https://oauth-mcp.invalid/mcp (mcpHandler with DisableLocalhostProtection,
//	// since the requests name a non-loopback host)
//
// The go-sdk's habits a test meets here: it runs the fetcher inside the failing
// request, once per 401 (a failed Connect logs in twice, because it tries
// server/discover and then initialize); it refreshes only on its own clock, so a token
// the server expired early gets a 401 and a whole new login, not a refresh; a refresh
// that fails with invalid_grant sends the request without a token, and that 401 starts
// a new login too; with a client ID metadata document it leaves the token endpoint's
// auth style to golang.org/x/oauth2's detection, whose first try is HTTP Basic — which
// this server refuses with 401 invalid_client (recorded without a client id, the code
// still unspent) — before it sends client_id in the form.
package authtest
