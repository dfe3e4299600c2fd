// Package oauth logs warden in to MCP servers behind OAuth and gives their connections
// the stored tokens. It is built on the go-sdk's auth package — discovery (RFC 9728,
// RFC 8414), client ID metadata documents, dynamic client registration (RFC 7591),
// PKCE, state and the RFC 9207 iss check are auth.AuthorizationCodeHandler's — and on
// golang.org/x/oauth2 for refreshes; what this package adds is what a host needs around
// them: a loopback callback listener per login, the login's owner, the credential store
// (package store) and a connection handler that never logs in by itself.
//
// A login belongs to the environment the server runs in. Its store.Key is {Owner: that
// environment ("local" or an executor id), Server: the server's name, URL: its URL}, and
// Options.Transport gives that environment's HTTP route, so a server in an executor gets
// its own login, made through the executor's network (the probe, discovery, registration,
// the code exchange, every refresh) and stored apart from a host login for the same URL.
// A connection is given only its own key's token (Manager.Handler), so a host-owned token
// never travels to an executor.
//
//	st, _ := store.Open(filepath.Join(home, config.OAuthCredentialsFile))
//	m, _ := oauth.New(oauth.Options{Store: st, Transport: routeOf})
//	defer m.Close()
//
//	l, err := m.Start(ctx, oauth.LoginRequest{Key: key, ClientID: configuredOrEmpty})
//	if err != nil {
//		return err // no route, a busy callback port, discovery or registration failed
//	}
//	fmt.Println("open", l.AuthorizationURL) // the browser comes back to l.RedirectURL
//	if err := l.Wait(ctx); err != nil {
//		return err // ErrDenied, ErrStateMismatch, ErrLoginTimeout, a wrong iss, …
//	}
//
//	// On connect:
//	transport := &mcp.StreamableClientTransport{Endpoint: key.URL, OAuthHandler: m.Handler(key)}
//
// # A login
//
// Start listens on 127.0.0.1 (LoginRequest.CallbackPort, else Options.CallbackPort, else
// an ephemeral port; the redirect URI is http://127.0.0.1:PORT/callback), probes the
// server without a token for its 401 challenge, and runs the SDK's flow. The client is
// the configured one when LoginRequest.ClientID is set (no registration, whatever the
// registration mode asks), else a client ID metadata document where the authorization
// server supports it and Options.ClientMetadataURL is set, else dynamic registration as
// "warden" with the callback as its only redirect URI and no client secret. Start returns
// with the authorization URL; the callback listener then accepts one request: the first
// GET /callback ends the login — with this login's state and a code it goes on to the
// iss check and the exchange, with another state (ErrStateMismatch) or an error
// parameter (ErrDenied) it fails. The browser's page waits for the outcome and says it.
// The token is stored only when everything succeeded. A second login for the same key
// cancels the first; LoginRequest.Timeout bounds the whole login.
//
// # Connections
//
// Manager.Handler is an auth.OAuthHandler for mcp.StreamableClientTransport. It sends the
// stored access token, refreshing it (under the store's lock, so concurrent refreshers in
// any process spend a refresh token once) when it is within RefreshMargin of expiry. On a
// 401 it uses a newer stored token if another process stored one, else refreshes once;
// a refused refresh token marks the login expired (Manager.Status reports StatusExpired
// until the next login) and the connection fails with ErrExpired. Without a login it
// fails with ErrNotLoggedIn. It never starts an interactive login inside a request —
// which is what auth.AuthorizationCodeHandler would do there — because a host's
// connections run unattended; see docs/RATIONALE.md.
//
// # Secrets
//
// No token, code or client secret appears in an error, a log line or a page: token
// endpoint errors are reduced to their status and RFC 6749 error code and description
// (golang.org/x/oauth2's own text quotes the response body), and the store's Entry prints
// without its secrets.
//
// # Concurrency
//
// A Manager is safe for concurrent use. Close cancels running logins and waits for them.
package oauth
