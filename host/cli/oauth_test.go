package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/authtest"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/oauth/store"
)

// lines collects what an in-process command writes to one stream, line by line, so a
// test can wait for a line without sleeping.
type lines struct {
	w *io.PipeWriter

	mu   sync.Mutex
	all  []string
	more chan struct{} // closed and replaced on every new line
	done chan struct{} // closed when the writer closed
}

func newLines() *lines {
	r, w := io.Pipe()
	l := &lines{w: w, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, sc.Text())
			close(l.more)
			l.more = make(chan struct{})
			l.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r) // never block the writer
	}()
	return l
}

// wait returns the first submatches of re in a line, waiting until ctx ends.
func (l *lines) wait(ctx context.Context, t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for {
		l.mu.Lock()
		for _, s := range l.all {
			if m := re.FindStringSubmatch(s); m != nil {
				l.mu.Unlock()
				return m
			}
		}
		more := l.more
		l.mu.Unlock()
		select {
		case <-more:
		case <-l.done:
			t.Fatalf("the stream ended without a line matching %q:\n%s", re, l.text())
		case <-ctx.Done():
			t.Fatalf("no line matching %q in time:\n%s", re, l.text())
		}
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// run is an in-process `warden` invocation.
type run struct {
	stdout, stderr *lines
	code           chan int
}

// start runs Main with args in a goroutine; getenv is the command's environment.
func start(ctx context.Context, args []string, getenv func(string) string) *run {
	r := &run{stdout: newLines(), stderr: newLines(), code: make(chan int, 1)}
	go func() {
		code := Main(ctx, args, IO{Stdin: strings.NewReader(""), Stdout: r.stdout.w, Stderr: r.stderr.w, Getenv: getenv})
		r.stdout.w.Close()
		r.stderr.w.Close()
		<-r.stdout.done
		<-r.stderr.done
		r.code <- code
	}()
	return r
}

// exit waits for the command's exit code.
func (r *run) exit(ctx context.Context, t *testing.T) int {
	t.Helper()
	select {
	case c := <-r.code:
		return c
	case <-ctx.Done():
		t.Fatalf("the command did not exit in time\nstdout:\n%s\nstderr:\n%s", r.stdout.text(), r.stderr.text())
		return -1
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// openInBrowser plays the user's browser: it follows the authorization URL's redirects
// to warden's callback page and returns that page's status.
func openInBrowser(ctx context.Context, t *testing.T, u string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// storedLogins reads the home's credential store.
func storedLogins(ctx context.Context, t *testing.T, home string) []store.Entry {
	t.Helper()
	st, err := store.Open(filepath.Join(home, config.OAuthCredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	list, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// noSecrets fails if any output of the runs holds a code or token as issued.
func noSecrets(t *testing.T, as *authtest.Server, runs ...*run) {
	t.Helper()
	secrets := issuedSecrets(as)
	if len(secrets) == 0 {
		t.Fatal("the authorization server issued nothing: the check would prove nothing")
	}
	for i, r := range runs {
		if containsSecret([]byte(r.stdout.text()+r.stderr.text()), secrets) {
			t.Errorf("the output of run %d holds a code or token issued by the authorization server", i)
		}
	}
}

var (
	authURLLine = regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/authorize\?.*)$`)
	apiURLLine  = regexp.MustCompile(`host API listening on (ws://127\.0\.0\.1:\d+)`)
)

// apiCall sends one JSON-RPC request over ws and returns its result, skipping
// notifications.
func apiCall(ctx context.Context, t *testing.T, ws *websocket.Conn, id int, method string, params any) json.RawMessage {
	t.Helper()
	p, _ := json.Marshal(params)
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p)
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if string(m.ID) != fmt.Sprint(id) {
			continue
		}
		if m.Error != nil {
			t.Fatalf("%s: error %s", method, m.Error)
		}
		return m.Result
	}
}

// TestOAuthLoginThroughServe logs in to the server of a thread of a running `warden
// serve` (both in-process): the login runs in the serve, the command prints its URL and
// waits for mcpServer/oauthLogin/completed.
func TestOAuthLoginThroughServe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as, docsURL := protectedMCP(t, authtest.Options{})
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[mcp_servers.docs]\nurl = %q\n", docsURL))
	const token = "serve-test-token-0123456789abcdef"
	vars := env(map[string]string{"WT": token, "WRONG": "wrong-token-0123456789abcdef"})

	serveCtx, stopServe := context.WithCancel(ctx)
	serve := start(serveCtx, []string{"--home", home, "serve", "--listen", "ws://127.0.0.1:0", "--token-env", "WT"}, vars)
	defer func() {
		stopServe()
		if c := serve.exit(ctx, t); c != 0 {
			t.Errorf("serve exit %d\n%s", c, serve.stderr.text())
		}
	}()
	apiURL := serve.stderr.wait(ctx, t, apiURLLine)[1]

	// A client of the serve starts the thread; the login is for that thread's server.
	ws, _, err := websocket.Dial(ctx, apiURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(websocket.StatusNormalClosure, "")
	apiCall(ctx, t, ws, 1, "initialize", map[string]any{"clientInfo": map[string]string{"name": "test", "version": "1"}})
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(apiCall(ctx, t, ws, 2, "thread/start", map[string]any{}), &started); err != nil || started.Thread.ID == "" {
		t.Fatalf("thread/start: %v %+v", err, started)
	}
	tid := started.Thread.ID

	login := start(ctx, []string{"--home", home, "oauth", "login", "docs", "--thread", tid, "--connect", apiURL, "--token-env", "WT", "--no-browser"}, vars)
	u := login.stdout.wait(ctx, t, authURLLine)[1]
	if status := openInBrowser(ctx, t, u); status != http.StatusOK {
		t.Errorf("callback page status %d", status)
	}
	if c := login.exit(ctx, t); c != 0 {
		t.Fatalf("oauth login exit %d\nstdout:\n%s\nstderr:\n%s", c, login.stdout.text(), login.stderr.text())
	}
	want := fmt.Sprintf("Logged in to MCP server %q (thread %s).", "docs", tid)
	if !strings.Contains(login.stdout.text(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, login.stdout.text())
	}
	list := storedLogins(ctx, t, home)
	if len(list) != 1 || list[0].Key != (store.Key{Owner: store.OwnerLocal, Server: "docs", URL: docsURL}) || list[0].AccessToken == "" {
		t.Errorf("stored logins = %v", list)
	}

	// Failures: the serve's error, precisely.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown thread", []string{"--thread", "thr_nosuch", "--token-env", "WT"}, `thread "thr_nosuch" not found`},
		{"unknown server", []string{"--thread", tid, "--token-env", "WT"}, `no such MCP server named "nosuch"`},
		{"wrong token", []string{"--thread", tid, "--token-env", "WRONG"}, "refused the connection (401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := "docs"
			if tc.name == "unknown server" {
				server = "nosuch"
			}
			args := append([]string{"--home", home, "oauth", "login", server, "--connect", apiURL, "--no-browser"}, tc.args...)
			r := start(ctx, args, vars)
			if c := r.exit(ctx, t); c != ExitFailure {
				t.Fatalf("exit %d, want 1\nstderr:\n%s", c, r.stderr.text())
			}
			if !strings.Contains(r.stderr.text(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr.text())
			}
			noSecrets(t, as, r)
		})
	}
	noSecrets(t, as, login, serve)
}

// TestOAuthLoginWaitsForExecutor logs in to a server that runs in an executor which
// connects only after the login began: the command waits for it, the login's traffic
// goes through the executor and the login is the executor's (owner exec-1).
func TestOAuthLoginWaitsForExecutor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as, docsURL := protectedMCP(t, authtest.Options{})
	const token = "executor-test-token-0123456789abcdef"
	t.Setenv("WARDEN_CLI_TEST_EXEC_TOKEN", token) // the host reads token_env from its process environment
	port := testmain.FreePort(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[mcp_servers.docs]\nurl = %q\nenvironment_id = \"exec-1\"\n", docsURL))
	writeFile(t, filepath.Join(home, "environments.toml"), fmt.Sprintf("[[environments]]\nid = \"exec-1\"\nurl = \"ws://127.0.0.1:%d\"\ntoken_env = \"WARDEN_CLI_TEST_EXEC_TOKEN\"\n", port))

	login := start(ctx, []string{"--home", home, "oauth", "login", "docs", "--no-browser"}, env(nil))
	login.stderr.wait(ctx, t, regexp.MustCompile(`waiting up to .* for executor environments \(exec-1\) to connect`))

	execCtx, stopExec := context.WithCancel(ctx)
	ex := start(execCtx, []string{"--home", t.TempDir(), "executor", "--listen", fmt.Sprintf("ws://127.0.0.1:%d", port), "--token-env", "ET"},
		env(map[string]string{"ET": token}))
	defer func() {
		stopExec()
		ex.exit(ctx, t)
	}()

	u := login.stdout.wait(ctx, t, authURLLine)[1]
	if status := openInBrowser(ctx, t, u); status != http.StatusOK {
		t.Errorf("callback page status %d", status)
	}
	if c := login.exit(ctx, t); c != 0 {
		t.Fatalf("oauth login exit %d\nstdout:\n%s\nstderr:\n%s\nexecutor stderr:\n%s", c, login.stdout.text(), login.stderr.text(), ex.stderr.text())
	}
	if want := `Logged in to MCP server "docs" (owner exec-1).`; !strings.Contains(login.stdout.text(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, login.stdout.text())
	}
	list := storedLogins(ctx, t, home)
	if len(list) != 1 || list[0].Key != (store.Key{Owner: "exec-1", Server: "docs", URL: docsURL}) {
		t.Errorf("stored logins = %v", list)
	}
	noSecrets(t, as, login, ex)
}

// TestOAuthLoginExecutorNeverConnects: the wait is bounded and the error names the
// environment.
func TestOAuthLoginExecutorNeverConnects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), "[mcp_servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\nenvironment_id = \"exec-1\"\n")
	// Nothing listens there: the host redials in the background, never connecting.
	writeFile(t, filepath.Join(home, "environments.toml"), fmt.Sprintf("[[environments]]\nid = \"exec-1\"\nurl = \"ws://127.0.0.1:%d\"\n", testmain.FreePort(t)))

	r := start(ctx, []string{"--home", home, "oauth", "login", "docs", "--no-browser", "--executor-wait", "500ms"}, env(nil))
	if c := r.exit(ctx, t); c != ExitFailure {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", c, r.stderr.text())
	}
	for _, want := range []string{`OAuth login for MCP server "docs"`, `environment "exec-1"`, "executor not connected", "waited 500ms for the executor to connect"} {
		if !strings.Contains(r.stderr.text(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr.text())
		}
	}
	if r.stdout.text() != "" {
		t.Errorf("stdout: %s", r.stdout.text())
	}
}

// TestOAuthLoginCanceled: Ctrl-C (the command's context ending, as cmd/warden does on
// SIGINT) ends the login cleanly — exit 1, nothing stored, the callback listener closed.
func TestOAuthLoginCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, docsURL := protectedMCP(t, authtest.Options{})
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[mcp_servers.docs]\nurl = %q\n", docsURL))

	loginCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	r := start(loginCtx, []string{"--home", home, "oauth", "login", "docs", "--no-browser"}, env(nil))
	authURL := r.stdout.wait(ctx, t, authURLLine)[1]
	interrupt()
	if c := r.exit(ctx, t); c != ExitFailure {
		t.Fatalf("exit %d, want 1\nstderr:\n%s", c, r.stderr.text())
	}
	if want := `login to MCP server "docs" canceled; nothing was stored`; !strings.Contains(r.stderr.text(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr.text())
	}
	if list := storedLogins(ctx, t, home); len(list) != 0 {
		t.Errorf("stored logins = %v", list)
	}
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	callback := u.Query().Get("redirect_uri")
	// The listener shuts down in the background once the login ended: poll, bounded.
	for {
		resp, err := http.Get(callback)
		if err != nil {
			break
		}
		resp.Body.Close()
		if ctx.Err() != nil {
			t.Fatalf("the callback listener %s still answers after the login was canceled", callback)
		}
		runtime.Gosched()
	}
}
