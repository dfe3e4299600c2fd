package frontdoor_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wardenCmd returns the real warden binary with args, WARDEN_HOME set to home. Its stderr is
// logged if the test fails.
func wardenCmd(t *testing.T, home string, extraEnv []string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(wardenBin, args...)
	cmd.Env = append(append(os.Environ(), "WARDEN_HOME="+home), extraEnv...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("warden %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return cmd, stderr
}

// `warden mcp` is an MCP server over stdio: an MCP client runs the real binary and sees the
// thread exactly as policy exposes it; the process exits cleanly when stdin closes.
func TestWardenMCPStdio(t *testing.T) {
	hm := newHome(t)
	for _, sel := range []struct{ name, plugin string }{{"by-id", "guarded@1"}, {"by-path", ""}} {
		t.Run(sel.name, func(t *testing.T) {
			plugin := sel.plugin
			if plugin == "" {
				plugin = hm.root
			}
			cmd, stderr := wardenCmd(t, hm.dir, nil, "mcp", "--plugin", plugin)
			changed := newListChanged()
			client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: changed.handler})
			cs, err := client.Connect(testCtx(t), &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			if sel.name == "by-id" {
				exercise(t, cs, changed)
			} else if got := toolNames(t, cs); !slices.Equal(got, wantTools()) {
				t.Errorf("tools/list = %q", got)
			}
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
				t.Errorf("warden mcp did not exit cleanly after stdin closed: %v", cmd.ProcessState)
			}
			if !strings.Contains(stderr.String(), "serving the thread as an MCP server on stdio") {
				t.Errorf("stderr lacks the serving log line")
			}
		})
	}
}

// `warden mcp` refuses a bad selection or kind before serving.
func TestWardenMCPErrors(t *testing.T) {
	hm := newHome(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mcp", "--kind", "boss"}, 2, `--kind "boss"`},
		{[]string{"mcp", "--plugin", "missing@9"}, 1, `capability root "missing@9"`},
		{[]string{"mcp", "--plugin", "./no/such/dir"}, 1, "not a directory"},
		{[]string{"mcp", "extra"}, 2, "usage: warden mcp"},
	} {
		cmd, stderr := wardenCmd(t, hm.dir, nil, c.args...)
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("warden %q: %v, want exit %d with %q in:\n%s", c.args, err, c.code, c.want, stderr.String())
		}
	}
}

// `warden serve` with the API on WebSocket and the front door on HTTP, both behind a token
// from the environment: a thread started through the API is served at
// /threads/{id}/mcp; SIGTERM stops the process cleanly.
func TestWardenServe(t *testing.T) {
	hm := newHome(t)
	const token = "serve-test-token-41b0"
	cmd, stderr := wardenCmd(t, hm.dir, []string{"FD_TEST_TOKEN=" + token},
		"serve", "--listen", "ws://127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--token-env", "FD_TEST_TOKEN")
	cmd.Stderr = nil // read line by line below, and copied to stderr
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	urls := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			_, _ = stderr.Write([]byte(line + "\n"))
			if rest, ok := strings.CutPrefix(line, "warden: "); ok && strings.Contains(rest, " listening on ") {
				urls <- rest
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var apiURL, mcpURL string
	for apiURL == "" || mcpURL == "" {
		select {
		case u := <-urls:
			if v, ok := strings.CutPrefix(u, "host API listening on "); ok {
				apiURL = v
			}
			if v, ok := strings.CutPrefix(u, "MCP front door listening on "); ok {
				mcpURL = v
			}
		case err := <-exited:
			t.Fatalf("warden serve exited: %v\n%s", err, stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("warden serve did not print its URLs:\n%s", stderr.String())
		}
	}
	if !regexp.MustCompile(`^ws://127\.0\.0\.1:\d+$`).MatchString(apiURL) ||
		!regexp.MustCompile(`^http://127\.0\.0\.1:\d+/threads/\{id\}/mcp$`).MatchString(mcpURL) {
		t.Fatalf("URLs %q %q", apiURL, mcpURL)
	}

	// The API needs the token too.
	if _, _, err := websocket.Dial(testCtx(t), apiURL, nil); err == nil {
		t.Errorf("the WebSocket API accepted a client without the token")
	}
	tid := startThreadWS(t, apiURL, token, hm.root)

	url := strings.Replace(mcpURL, "{id}", tid, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "no-token", Version: "1"}, nil)
	if cs, err := client.Connect(testCtx(t), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(t, nil)}, nil); err == nil {
		_ = cs.Close()
		t.Errorf("the front door accepted a client without the token")
	}
	changed := newListChanged()
	cs := connectHTTP(t, url, http.Header{"Authorization": {"Bearer " + token}}, changed)
	exercise(t, cs, changed)
	_ = cs.Close()

	if strings.Contains(stderr.String(), token) {
		t.Errorf("warden serve logged the token")
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("warden serve after SIGTERM: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("warden serve did not stop on SIGTERM")
	}
}

// startThreadWS starts a thread selecting root through the WebSocket host API.
func startThreadWS(t *testing.T, url, token, root string) string {
	t.Helper()
	ctx := testCtx(t)
	var hdr http.Header
	if token != "" {
		hdr = http.Header{"Authorization": {"Bearer " + token}}
	}
	url, hc := unixHTTP(t, url, nil)
	if strings.HasPrefix(url, "http://localhost/threads/") {
		url = "ws://localhost/" // a unix:// API URL: the socket, dialled by hc
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: hc})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer conn.CloseNow()
	call := func(id int, method string, params any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		for {
			_, msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			var r struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(msg, &r) != nil || r.ID == nil || *r.ID != id {
				continue // a notification
			}
			if r.Error != nil {
				t.Fatalf("%s: %s", method, r.Error)
			}
			return r.Result
		}
	}
	call(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "serve-test", "version": "1"}})
	res := call(2, "thread/start", map[string]any{"selectedCapabilityRoots": []any{map[string]any{
		"id": "guarded@1", "location": map[string]any{"type": "local", "path": root}}}})
	var started struct {
		Thread struct{ ID string } `json:"thread"`
	}
	if err := json.Unmarshal(res, &started); err != nil || started.Thread.ID == "" {
		t.Fatalf("thread/start = %s (%v)", res, err)
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
	return started.Thread.ID
}

// `warden serve` refuses what would open a listener to other local users or to the network:
// a non-loopback address without a token (a generated one is for loopback only), --no-auth
// on a non-loopback address, a token under 16 bytes from --token-env (on every address), a
// token variable that is not set, and --no-auth together with --token-env.
func TestWardenServeRefusals(t *testing.T) {
	hm := newHome(t)
	sock := "unix://" + t.TempDir() + "/api.sock"
	short := []string{"FD_TEST_SHORT=fifteen-bytes!!"}
	for _, c := range []struct {
		args []string
		env  []string
		code int
		want string
	}{
		{[]string{"serve", "--mcp-listen", "0.0.0.0:0"}, nil, 1, "bearer token is required"},
		{[]string{"serve", "--listen", "ws://0.0.0.0:0"}, nil, 1, "bearer token"},
		{[]string{"serve", "--token-env", "FD_TEST_UNSET_VAR"}, nil, 1, "FD_TEST_UNSET_VAR is unset or empty"},
		{[]string{"serve", "--no-auth", "--listen", "ws://0.0.0.0:0"}, nil, 1, "--no-auth is accepted only on a loopback address"},
		{[]string{"serve", "--no-auth", "--mcp-listen", "0.0.0.0:0"}, nil, 1, "--no-auth is accepted only on a loopback address"},
		{[]string{"serve", "--listen", "ws://0.0.0.0:0", "--token-env", "FD_TEST_SHORT"}, short, 1, "shorter than 16 bytes"},
		{[]string{"serve", "--listen", "ws://127.0.0.1:0", "--token-env", "FD_TEST_SHORT"}, short, 1, "shorter than 16 bytes"},
		{[]string{"serve", "--listen", sock, "--token-env", "FD_TEST_SHORT"}, short, 1, "shorter than 16 bytes"},
		{[]string{"serve", "--no-auth", "--token-env", "FD_TEST_SHORT"}, short, 2, "exclude each other"},
	} {
		cmd, stderr := wardenCmd(t, hm.dir, c.env, c.args...)
		cmd.Stdin = strings.NewReader("") // stdio mode would end at EOF anyway
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("warden %q: %v, want exit %d with %q in:\n%s", c.args, err, c.code, c.want, stderr.String())
		}
		if strings.Contains(stderr.String(), "fifteen-bytes!!") {
			t.Errorf("warden %q printed the token", c.args)
		}
	}
	if _, err := os.Stat(filepath.Join(hm.dir, "listen.token")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused serve left a token file: %v", err)
	}
}

// servedProc is a running `warden serve` whose "warden: ..." stderr lines are collected.
type servedProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	lines  chan string // every "warden: " line, without the prefix
	exited chan error  // cmd.Wait's result, once stderr is drained
}

// startWarden starts warden with args over home and returns once it runs.
func startWarden(t *testing.T, home string, env []string, args ...string) *servedProc {
	t.Helper()
	cmd, stderr := wardenCmd(t, home, env, args...)
	cmd.Stderr = nil
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &servedProc{cmd: cmd, stderr: stderr, lines: make(chan string, 64), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			_, _ = stderr.Write([]byte(line + "\n"))
			if rest, ok := strings.CutPrefix(line, "warden: "); ok {
				select {
				case p.lines <- rest:
				default:
				}
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// await returns the rest of the first collected line that starts with prefix.
func (p *servedProc) await(t *testing.T, prefix string) string {
	t.Helper()
	for {
		select {
		case l := <-p.lines:
			if v, ok := strings.CutPrefix(l, prefix); ok {
				return v
			}
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("warden exited before printing %q: %v\n%s", prefix, err, p.stderr.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("warden did not print %q:\n%s", prefix, p.stderr.String())
		}
	}
}

// stop sends SIGTERM and waits (within bound) for the exit, which must be clean.
func (p *servedProc) stop(t *testing.T, bound time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("warden after SIGTERM: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("warden did not stop within %v of SIGTERM", bound)
	}
}

// `warden serve --listen ws://127.0.0.1:0 --mcp-listen 127.0.0.1:0` without token flags
// generates a token, writes it to <home>/listen.token (0600) and names the file, never the
// token; both listeners refuse a client without it (401) and serve one with it.
func TestWardenServeGeneratedToken(t *testing.T) {
	hm := newHome(t)
	p := startWarden(t, hm.dir, nil, "serve", "--listen", "ws://127.0.0.1:0", "--mcp-listen", "127.0.0.1:0")
	file := p.await(t, "bearer token for the listeners written to ")
	file, _, _ = strings.Cut(file, " (mode 0600)")
	mcpURL := p.await(t, "MCP front door listening on ")
	apiURL := p.await(t, "host API listening on ")
	if want := filepath.Join(hm.dir, "listen.token"); file != want {
		t.Errorf("token file %q, want %q", file, want)
	}
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v (%v), want a regular 0600 file", fi, err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if len(token) < 32 {
		t.Fatalf("generated token has %d characters, want at least 32 (128 bits hex)", len(token))
	}

	_, resp, err := websocket.Dial(testCtx(t), apiURL, &websocket.DialOptions{HTTPClient: httpClient(t, nil)})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket without the token: %v (%v), want 401", err, resp)
	}
	tid := startThreadWS(t, apiURL, token, hm.root)

	url := strings.Replace(mcpURL, "{id}", tid, 1)
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(`{}`))
	resp, err = httpClient(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("front door without the token: %d, want 401", resp.StatusCode)
	}
	cs := connectHTTP(t, url, http.Header{"Authorization": {"Bearer " + token}}, newListChanged())
	if got := toolNames(t, cs); !slices.Equal(got, wantTools()) {
		t.Errorf("tools with the token = %q", got)
	}
	_ = cs.Close()
	if strings.Contains(p.stderr.String(), token) {
		t.Errorf("warden serve printed the token")
	}
	p.stop(t, 20*time.Second)
}

// `warden serve` on Unix sockets: both files are 0600 (under a permissive umask too), the
// host API and the front door work over them without a token, no token file is written,
// and the sockets are removed on SIGTERM.
func TestWardenServeUnixSockets(t *testing.T) {
	hm := newHome(t)
	dir := t.TempDir()
	apiSock, mcpSock := filepath.Join(dir, "api.sock"), filepath.Join(dir, "mcp.sock")
	old := syscall.Umask(0)
	p := startWarden(t, hm.dir, nil, "serve", "--listen", "unix://"+apiSock, "--mcp-listen", "unix://"+mcpSock)
	syscall.Umask(old)
	mcpURL := p.await(t, "MCP front door listening on ")
	apiURL := p.await(t, "host API listening on ")
	if apiURL != "unix://"+apiSock || mcpURL != "unix://"+mcpSock+"/threads/{id}/mcp" {
		t.Fatalf("URLs %q %q", apiURL, mcpURL)
	}
	for _, s := range []string{apiSock, mcpSock} {
		fi, err := os.Lstat(s)
		if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v (%v), want a 0600 socket", s, fi, err)
		}
	}
	tid := startThreadWS(t, apiURL, "", hm.root)
	cs := connectHTTP(t, strings.Replace(mcpURL, "{id}", tid, 1), nil, newListChanged())
	if got := toolNames(t, cs); !slices.Equal(got, wantTools()) {
		t.Errorf("tools over the Unix socket = %q", got)
	}
	_ = cs.Close()
	if _, err := os.Stat(filepath.Join(hm.dir, "listen.token")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve on Unix sockets wrote a token file: %v", err)
	}
	p.stop(t, 20*time.Second)
	for _, s := range []string{apiSock, mcpSock} {
		if _, err := os.Lstat(s); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s outlived warden serve: %v", s, err)
		}
	}
}

// SIGTERM stops `warden serve` within 2 s even when shutting down gracefully would take
// longer: here a thread's stdio server ignores SIGTERM and lingers after its stdin closes,
// so closing it costs the host's whole terminate grace (stdin, SIGTERM, SIGKILL: 4 s and
// more). warden exits after its stop grace with a line saying why, or at once on a second
// signal. The bound is twice the 2 s promise.
func TestWardenServeStopsOnSIGTERM(t *testing.T) {
	for _, c := range []struct {
		name    string
		signals int
		want    string
	}{
		{"grace", 1, "did not stop within"},
		{"second signal", 2, "second signal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hm := newHome(t)
			script := filepath.Join(t.TempDir(), "stubborn.sh")
			writeFile(t, script, "#!/bin/sh\ntrap '' TERM\n"+quote(exampleBin)+"\nexec sleep 60\n")
			if err := os.Chmod(script, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(hm.dir, "config.toml"), hm.config(fmt.Sprintf("[mcp_servers.stubborn]\ncommand = %q\n", script)))
			const token = "sigterm-test-token-9d2"
			p := startWarden(t, hm.dir, []string{"FD_TEST_TOKEN=" + token},
				"serve", "--listen", "ws://127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--token-env", "FD_TEST_TOKEN")
			mcpURL := p.await(t, "MCP front door listening on ")
			apiURL := p.await(t, "host API listening on ")
			tid := startThreadWS(t, apiURL, token, hm.root)
			cs := connectHTTP(t, strings.Replace(mcpURL, "{id}", tid, 1), http.Header{"Authorization": {"Bearer " + token}}, newListChanged())
			if got := toolNames(t, cs); !slices.Contains(got, "stubborn__echo") {
				t.Fatalf("the stubborn server is not ready: tools %q", got)
			}
			_ = cs.Close()

			start := time.Now()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if c.signals == 2 {
				p.await(t, "terminated: stopping")
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
			const bound = 4 * time.Second
			select {
			case err := <-p.exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
					t.Errorf("warden serve after SIGTERM: %v, want exit %d", err, 128+int(syscall.SIGTERM))
				}
				t.Logf("exited %v after the first SIGTERM", time.Since(start).Round(time.Millisecond))
			case <-time.After(bound):
				t.Fatalf("warden serve did not exit within %v of SIGTERM", bound)
			}
			if !strings.Contains(p.stderr.String(), c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, p.stderr.String())
			}
		})
	}
}
