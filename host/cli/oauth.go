package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/logging"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
	"github.com/warden-mcp/warden/host/protocol"
	"github.com/warden-mcp/warden/host/thread"
)

const (
	oauthLoginUsage  = "SERVER [--plugin ID | --thread ID --connect ws://HOST:PORT [--token-env VAR]] [--registration auto|dcr|cimd] [--scope S]... [--timeout 5m] [--executor-wait 30s] [--no-browser]"
	oauthListUsage   = "[--json]"
	oauthLogoutUsage = "SERVER [--owner ENV] [--url URL]"
	oauthMetaUsage   = ""
)

// defaultExecutorWait is --executor-wait's default: how long `oauth login` waits for
// executors to connect when the server is (or may be) routed to one — a host just started
// dials them in the background, so the first attempts can find them not connected yet.
const defaultExecutorWait = 30 * time.Second

// executorPoll is how often the login is retried while waiting for executors. The host
// has no "executor connected" signal outside the thread layer, so the login is simply
// tried again.
const executorPoll = 250 * time.Millisecond

// remoteGrace is how much longer than the login's own timeout `oauth login --thread`
// waits for the serve process's completion notification before giving up on it.
const remoteGrace = 30 * time.Second

func oauthUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: warden oauth login|list|logout [flags]")
	fmt.Fprintln(w, "\nsubcommands:")
	fmt.Fprintf(w, "  login  %s\n", oauthLoginUsage)
	fmt.Fprintln(w, "         log in to a streamable HTTP MCP server with OAuth and store the token")
	fmt.Fprintf(w, "  list   %s\n", oauthListUsage)
	fmt.Fprintln(w, "         list the stored logins (never a token)")
	fmt.Fprintf(w, "  logout %s\n", oauthLogoutUsage)
	fmt.Fprintln(w, "         delete a stored login")
	fmt.Fprintln(w, "  client-metadata")
	fmt.Fprintln(w, "         print the client ID metadata document to serve at mcp_oauth_client_metadata_url")
}

// runOAuth is `warden oauth`: logins to OAuth-protected MCP servers and the credential
// store they live in (<home>/mcp-oauth-credentials.json).
func runOAuth(ctx context.Context, g *global, args []string) error {
	if len(args) == 0 || slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		oauthUsage(g.io.Stdout)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	return runSubcommand(ctx, g, "oauth", args, []command{
		{name: "login", run: oauthLogin},
		{name: "list", run: oauthList},
		{name: "logout", run: oauthLogout},
		{name: "client-metadata", run: func(_ context.Context, g *global, args []string) error { return oauthClientMetadata(g, args) }},
	})
}

// loginFlags are the parsed flags of `oauth login`.
type loginFlags struct {
	server       string
	plugin       string
	threadID     string
	connect      string
	tokenEnv     string
	registration oauth.Registration
	scopes       []string
	timeout      time.Duration
	noBrowser    bool
	executorWait time.Duration
}

func oauthLogin(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "oauth login", oauthLoginUsage)
	var lf loginFlags
	var scopes stringList
	fl.StringVar(&lf.plugin, "plugin", "", "log in to a server of the capability root `ID` (name@version, as `warden plugins list` shows it) or PATH, in a thread that selects it")
	fl.StringVar(&lf.threadID, "thread", "", "log in to the server of thread `ID` of a running `warden serve` (with --connect)")
	fl.StringVar(&lf.connect, "connect", "", "the host API `URL` of the running `warden serve` (ws://HOST:PORT or unix:///PATH), with --thread")
	fl.StringVar(&lf.tokenEnv, "token-env", "", "environment `VAR` holding the bearer token of the serve's host API, with --thread. The token itself is never a flag")
	reg := fl.String("registration", string(oauth.RegistrationAuto), "how to obtain the OAuth client when the server configures none: auto, dcr (dynamic client registration) or cimd (client ID metadata document)")
	fl.Var(&scopes, "scope", "request scope `S` instead of the configured or discovered ones (repeatable)")
	fl.DurationVar(&lf.timeout, "timeout", oauth.DefaultLoginTimeout, "how long to wait for the login to complete in the browser")
	fl.BoolVar(&lf.noBrowser, "no-browser", false, "do not open $BROWSER; only print the URL")
	fl.DurationVar(&lf.executorWait, "executor-wait", defaultExecutorWait, "how long to wait for an executor the server runs in to connect")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		fmt.Fprintf(g.io.Stderr, "warden oauth login: "+format+"\n", a...)
		return errUsage
	}
	switch {
	case len(rest) != 1:
		fl.Usage()
		return errUsage
	case lf.plugin != "" && lf.threadID != "":
		return bad("--plugin and --thread exclude each other (a running serve's thread already selected its plugins)")
	case lf.threadID != "" && lf.connect == "":
		return bad("--thread needs --connect, the host API URL of the `warden serve` that runs the thread")
	case lf.threadID == "" && (lf.connect != "" || lf.tokenEnv != ""):
		return bad("--connect and --token-env go with --thread")
	case lf.timeout <= 0:
		return bad("--timeout must be positive, got %v", lf.timeout)
	case lf.executorWait < 0:
		return bad("--executor-wait must not be negative, got %v", lf.executorWait)
	}
	lf.server, lf.scopes = rest[0], scopes
	if lf.registration, err = oauth.ParseRegistration(*reg); err != nil {
		return bad("--registration: %v", err)
	}
	if lf.threadID != "" {
		return loginRemote(ctx, g, lf)
	}
	return loginLocal(ctx, g, lf)
}

// loginLocal runs the login in an in-process host over the home: the server as a default
// thread sees it, or as a thread selecting --plugin sees it.
func loginLocal(ctx context.Context, g *global, lf loginFlags) error {
	cwd, _ := os.Getwd()
	var sel []thread.SelectedRoot
	if lf.plugin != "" {
		r, err := selectRoot(lf.plugin, cwd)
		if err != nil {
			return err
		}
		sel = append(sel, r)
	}
	logger := g.log
	if !g.logLevelSet {
		// The host's info lines (starting, servers failing for want of this very login)
		// only interrupt the URL and the outcome; warnings still show.
		logger = logging.New(logging.Options{JSON: g.logJSON, Level: "warn", Output: g.io.Stderr})
	}
	h, err := host.New(ctx, host.Options{Home: g.home, Logger: logger})
	if err != nil {
		return err
	}
	defer h.Close()
	if h.OAuth() == nil {
		return fmt.Errorf("%w: the credential store %s cannot be opened (the log line above says why)",
			thread.ErrOAuthUnavailable, filepath.Join(h.HomeDir(), config.OAuthCredentialsFile))
	}
	// With --plugin, the server as a thread selecting the plugin would list it: planned,
	// not started (a required server that needs this very login would fail a real start).
	p := thread.OAuthLoginParams{Name: lf.server, SelectedRoots: sel, Registration: string(lf.registration), Scopes: lf.scopes, Timeout: lf.timeout}
	l, err := startWaitingForExecutors(ctx, g, h, p, lf.executorWait)
	if err != nil {
		return err
	}
	announce(g, lf, l.AuthorizationURL)
	select {
	case <-l.Done():
	case <-ctx.Done():
		// Ctrl-C: end the login (its callback listener closes) before the host does.
		l.Cancel()
		<-l.Done()
		return fmt.Errorf("login to MCP server %q canceled; nothing was stored", lf.server)
	}
	if err := l.Err(); err != nil {
		return err
	}
	fmt.Fprintf(g.io.Stdout, "Logged in to MCP server %q (owner %s).\n", lf.server, l.Key.Owner)
	return nil
}

// startWaitingForExecutors starts the login, retrying for a bounded time while the server
// may be waiting for an executor: routed to one that has not connected yet (the login's
// traffic cannot be routed), or not listed yet because it is an executor's own server and
// the executor has not announced it.
func startWaitingForExecutors(ctx context.Context, g *global, h *host.Host, p thread.OAuthLoginParams, wait time.Duration) (*oauth.Login, error) {
	var envs []string
	if home := h.Config(); home != nil && home.Environments != nil {
		for _, e := range home.Environments.List {
			envs = append(envs, e.ID)
		}
	}
	deadline := time.Now().Add(wait)
	var ticker *time.Ticker
	for {
		l, err := h.Threads().OAuthLogin(ctx, p)
		if err == nil {
			return l, nil
		}
		unroutable := errors.Is(err, oauth.ErrUnroutable)
		retry := len(envs) > 0 && (unroutable || errors.Is(err, thread.ErrNoSuchServer))
		if !retry {
			return nil, err
		}
		if time.Now().After(deadline) {
			if unroutable {
				return nil, fmt.Errorf("%w (waited %v for the executor to connect)", err, wait)
			}
			return nil, fmt.Errorf("%w; nor did any executor environment (%s) announce it within %v",
				err, strings.Join(envs, ", "), wait)
		}
		if ticker == nil {
			fmt.Fprintf(g.io.Stderr, "warden oauth login: waiting up to %v for executor environments (%s) to connect\n",
				wait, strings.Join(envs, ", "))
			ticker = time.NewTicker(executorPoll)
			defer ticker.Stop()
		}
		select {
		case <-ticker.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("login to MCP server %q canceled while waiting for executors: %w", p.Name, ctx.Err())
		}
	}
}

// announce prints the authorization URL and opens it in $BROWSER.
func announce(g *global, lf loginFlags, authURL string) {
	fmt.Fprintf(g.io.Stdout, "Open this URL in a browser to log in to MCP server %q:\n%s\n", lf.server, authURL)
	if lf.noBrowser {
		return
	}
	b := strings.Fields(g.io.Getenv("BROWSER"))
	if len(b) == 0 {
		return
	}
	// Not waited on: a browser may run for as long as the user likes. Its output is
	// dropped — it is not warden's, and would land between warden's lines.
	cmd := exec.Command(b[0], append(b[1:], authURL)...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(g.io.Stderr, "warden oauth login: warning: cannot start $BROWSER (%s): %v; open the URL yourself\n", b[0], err)
		return
	}
	go func() { _ = cmd.Wait() }() // reaps it
}

// ----- login through a running serve -----

// loginRemote asks a running `warden serve` to log in to the server of one of its threads
// (mcpServer/oauth/login over its host API) and waits for mcpServer/oauthLogin/completed.
func loginRemote(ctx context.Context, g *global, lf loginFlags) error {
	token, err := tokenFromEnv(g, lf.tokenEnv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, lf.timeout+remoteGrace)
	defer cancel()
	c, err := dialAPI(ctx, lf.connect, token)
	if err != nil {
		return err
	}
	defer c.close()

	if _, err := c.call(ctx, 1, protocol.MethodInitialize, &protocol.InitializeParams{
		ClientInfo: protocol.ClientInfo{Name: "warden oauth login", Version: Version},
		Capabilities: &protocol.ClientCapabilities{OptOutNotificationMethods: []string{
			protocol.NotifyMcpServerStartupStatusUpdated, protocol.NotifyMcpServerToolsUpdated}},
	}); err != nil {
		return fmt.Errorf("host API %s: %w", lf.connect, err)
	}
	tid := lf.threadID
	params := &protocol.McpServerOauthLoginParams{Name: lf.server, ThreadID: &tid, Scopes: lf.scopes}
	reg := string(lf.registration)
	params.ClientRegistration = &reg
	secs := int64(math.Ceil(lf.timeout.Seconds()))
	params.TimeoutSecs = &secs
	raw, err := c.call(ctx, 2, protocol.MethodMcpServerOauthLogin, params)
	if err != nil {
		return fmt.Errorf("host API %s: %w", lf.connect, err)
	}
	var res protocol.McpServerOauthLoginResponse
	if err := json.Unmarshal(raw, &res); err != nil || res.AuthorizationURL == "" {
		return fmt.Errorf("host API %s: %s: the response carries no authorization URL", lf.connect, protocol.MethodMcpServerOauthLogin)
	}
	announce(g, lf, res.AuthorizationURL)
	n, err := c.completed(ctx, lf.server, lf.threadID)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("host API %s: no %s for MCP server %q within %v", lf.connect, protocol.NotifyMcpServerOauthLoginCompleted, lf.server, lf.timeout+remoteGrace)
		}
		if ctx.Err() != nil {
			// The API has no way to cancel a login: the serve's own timeout ends it.
			return fmt.Errorf("stopped waiting for the login to MCP server %q; it runs on in the serve until its timeout (%v)", lf.server, lf.timeout)
		}
		return fmt.Errorf("host API %s: %w", lf.connect, err)
	}
	if !n.Success {
		msg := "the login failed"
		if n.Error != nil {
			msg = *n.Error
		}
		return errors.New(msg)
	}
	fmt.Fprintf(g.io.Stdout, "Logged in to MCP server %q (thread %s).\n", lf.server, lf.threadID)
	return nil
}

// apiClient is a minimal JSON-RPC client of the host API over WebSocket, for one login.
type apiClient struct {
	ws *websocket.Conn
	// early holds a completion notification read while waiting for a response (the
	// login can only end after its URL was answered, but the order of the two on the wire
	// is not promised).
	early []protocol.McpServerOauthLoginCompletedNotification
}

// apiMessage is any message the host API sends: a response or a notification.
type apiMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *protocol.Error `json:"error"`
}

// dialAPI connects to a serve's host API: ws://HOST:PORT with the bearer token (if any),
// or unix:///PATH.
func dialAPI(ctx context.Context, addr, token string) (*apiClient, error) {
	opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
	target := addr
	if path, ok := netguard.UnixPath(addr); ok {
		if path == "" {
			return nil, fmt.Errorf("--connect %q: the unix:// address has no path", addr)
		}
		var d net.Dialer
		opts.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", path) },
		}}
		target = "ws://localhost/"
	} else if u, err := url.Parse(addr); err != nil || u.Scheme != "ws" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("--connect %q: want ws://HOST:PORT or unix:///PATH", addr)
	}
	if token != "" {
		opts.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.Dial(ctx, target, opts)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("host API %s refused the connection (401): pass the serve's bearer token with --token-env VAR", addr)
		}
		return nil, fmt.Errorf("host API %s: %w", addr, err)
	}
	ws.SetReadLimit(1 << 20)
	return &apiClient{ws: ws}, nil
}

func (c *apiClient) close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

func (c *apiClient) read(ctx context.Context) (*apiMessage, error) {
	_, data, err := c.ws.Read(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the connection ended: %w", err)
	}
	var m apiMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("a message is not JSON-RPC: %w", err)
	}
	return &m, nil
}

// call sends a request and returns its result, keeping completion notifications that
// arrive meanwhile.
func (c *apiClient) call(ctx context.Context, id int, method string, params any) (json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(&protocol.Request{JSONRPC: protocol.Version, ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p})
	if err != nil {
		return nil, err
	}
	if err := c.ws.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if m.Method == protocol.NotifyMcpServerOauthLoginCompleted {
			var n protocol.McpServerOauthLoginCompletedNotification
			if json.Unmarshal(m.Params, &n) == nil {
				c.early = append(c.early, n)
			}
			continue
		}
		if m.Method != "" || string(m.ID) != fmt.Sprint(id) {
			continue
		}
		if m.Error != nil {
			if strings.HasPrefix(m.Error.Message, method+": ") {
				return nil, m.Error // the host's message already says which request failed
			}
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	}
}

// completed waits for the completion notification of server's login in thread tid.
func (c *apiClient) completed(ctx context.Context, server, tid string) (*protocol.McpServerOauthLoginCompletedNotification, error) {
	match := func(n *protocol.McpServerOauthLoginCompletedNotification) bool {
		return n.Name == server && n.ThreadID != nil && *n.ThreadID == tid
	}
	for i := range c.early {
		if match(&c.early[i]) {
			return &c.early[i], nil
		}
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return nil, err
		}
		if m.Method != protocol.NotifyMcpServerOauthLoginCompleted {
			continue
		}
		var n protocol.McpServerOauthLoginCompletedNotification
		if err := json.Unmarshal(m.Params, &n); err != nil {
			return nil, fmt.Errorf("%s: %w", protocol.NotifyMcpServerOauthLoginCompleted, err)
		}
		if match(&n) {
			return &n, nil
		}
	}
}

// ----- list and logout -----

// openStore opens the home's credential store; ok is false (with a nil error) when the
// home does not exist, which is an empty store.
func openStore(g *global) (st *store.Store, path string, ok bool, err error) {
	path = filepath.Join(g.home, config.OAuthCredentialsFile)
	if _, err := os.Stat(g.home); errors.Is(err, fs.ErrNotExist) {
		return nil, path, false, nil
	}
	st, err = store.Open(path)
	if err != nil {
		return nil, path, false, err
	}
	return st, path, true, nil
}

// listStore lists an opened store's logins; none when there is no store (ok false).
func listStore(ctx context.Context, st *store.Store, ok bool) ([]store.Entry, error) {
	if !ok {
		return nil, nil
	}
	return st.List(ctx)
}

// loginState is a stored login's state: the Manager's (logged in, or expired as this
// process knows it), refined by the entry itself — an access token past its expiry with
// no refresh token can no longer be used.
func loginState(ctx context.Context, m *oauth.Manager, e store.Entry, now time.Time) string {
	switch m.Status(ctx, e.Key) {
	case oauth.StatusExpired:
		return "expired"
	case oauth.StatusNone:
		return "no token"
	}
	if !e.Expiry.IsZero() && !e.Expiry.After(now) && !e.HasRefreshToken() {
		return "expired"
	}
	return "logged in"
}

func expiryText(e store.Entry) string {
	switch {
	case e.AccessToken == "":
		return "unknown"
	case e.Expiry.IsZero():
		// golang.org/x/oauth2's reading of a token without expires_in: it never expires.
		return "never"
	}
	return e.Expiry.UTC().Format(time.RFC3339)
}

// sortForDisplay orders entries by server name, then owner, then URL (the store's own
// order is owner first).
func sortForDisplay(entries []store.Entry) {
	slices.SortFunc(entries, func(a, b store.Entry) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Owner, b.Owner), strings.Compare(a.URL, b.URL))
	})
}

func oauthList(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "oauth list", oauthListUsage)
	asJSON := fl.Bool("json", false, "print JSON (the store's secret-free logging form of each login, with its state)")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fl.Usage()
		return errUsage
	}
	st, path, ok, err := openStore(g)
	if err != nil {
		return err
	}
	entries, err := listStore(ctx, st, ok)
	if err != nil {
		return err
	}
	sortForDisplay(entries)
	var m *oauth.Manager
	if ok {
		if m, err = oauth.New(oauth.Options{Store: st}); err != nil {
			return err
		}
		defer m.Close()
	}
	now := time.Now()
	if *asJSON {
		out := make([]map[string]any, 0, len(entries))
		for _, e := range entries {
			// Entry's MarshalJSON is the secret-free logging form; the state is added to it.
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			v["state"] = loginState(ctx, m, e, now)
			out = append(out, v)
		}
		enc := json.NewEncoder(g.io.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(entries) == 0 {
		fmt.Fprintf(g.io.Stdout, "No OAuth logins stored (%s).\n", path)
		return nil
	}
	tw := tabwriter.NewWriter(g.io.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tOWNER\tURL\tEXPIRES\tREFRESH\tSTATE")
	for _, e := range entries {
		refresh := "no"
		if e.HasRefreshToken() {
			refresh = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Server, e.Owner, e.URL, expiryText(e), refresh, loginState(ctx, m, e, now))
	}
	return tw.Flush()
}

// oauthClientMetadata prints the client ID metadata document for the home's
// mcp_oauth_client_metadata_url and mcp_oauth_callback_port: what the operator serves at
// that URL so authorization servers that support such documents need no registration.
func oauthClientMetadata(g *global, args []string) error {
	fl := subFlags(g, "oauth client-metadata", oauthMetaUsage)
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fl.Usage()
		return errUsage
	}
	home, err := config.LoadHome(g.home)
	if err != nil {
		return err
	}
	o := home.Config.OAuth
	if o.ClientMetadataURL == "" {
		return fmt.Errorf("%s sets no mcp_oauth_client_metadata_url: set it to the https URL where the document will be served", home.Config.File)
	}
	doc, err := oauth.ClientMetadataDocument(o.ClientMetadataURL, o.CallbackPort)
	if err != nil {
		return fmt.Errorf("%s: %w", home.Config.File, err)
	}
	_, err = fmt.Fprintf(g.io.Stdout, "%s\n", doc)
	return err
}

func oauthLogout(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "oauth logout", oauthLogoutUsage)
	owner := fl.String("owner", "", "only the login owned by environment `ENV` (local, or an executor id)")
	u := fl.String("url", "", "only the login for the server at `URL`")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		fl.Usage()
		return errUsage
	}
	server := rest[0]
	st, path, ok, err := openStore(g)
	if err != nil {
		return err
	}
	entries, err := listStore(ctx, st, ok)
	if err != nil {
		return err
	}
	var match []store.Entry
	for _, e := range entries {
		if e.Server == server && (*owner == "" || e.Owner == *owner) && (*u == "" || e.URL == *u) {
			match = append(match, e)
		}
	}
	sortForDisplay(match)
	switch {
	case len(match) == 0:
		return fmt.Errorf("no stored OAuth login for MCP server %q%s in %s", server, filterText(*owner, *u), path)
	case len(match) > 1:
		fmt.Fprintf(g.io.Stderr, "warden oauth logout: %d stored logins for MCP server %q; choose one with --owner or --url:\n", len(match), server)
		for _, e := range match {
			fmt.Fprintf(g.io.Stderr, "  --owner %s --url %s\n", e.Owner, e.URL)
		}
		return errUsage
	}
	m, err := oauth.New(oauth.Options{Store: st})
	if err != nil {
		return err
	}
	defer m.Close()
	e := match[0]
	deleted, err := m.Logout(ctx, e.Key)
	if err != nil {
		return err
	}
	if !deleted {
		// Another process removed it between the list and the delete.
		return fmt.Errorf("no stored OAuth login for MCP server %q%s in %s", server, filterText(e.Owner, e.URL), path)
	}
	fmt.Fprintf(g.io.Stdout, "Logged out of MCP server %q (owner %s, %s).\n", e.Server, e.Owner, e.URL)
	return nil
}

func filterText(owner, u string) string {
	var parts []string
	if owner != "" {
		parts = append(parts, "owner "+owner)
	}
	if u != "" {
		parts = append(parts, "URL "+u)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
