package frontdoor_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
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
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
		HTTPClient: httpClient(t, nil),
	})
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

// `warden serve` refuses a non-loopback front door without a token, and a token variable
// that is not set.
func TestWardenServeRefusals(t *testing.T) {
	hm := newHome(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--mcp-listen", "0.0.0.0:0"}, "bearer token is required"},
		{[]string{"serve", "--listen", "ws://0.0.0.0:0"}, "bearer token"},
		{[]string{"serve", "--token-env", "FD_TEST_UNSET_VAR"}, "FD_TEST_UNSET_VAR is unset or empty"},
	} {
		cmd, stderr := wardenCmd(t, hm.dir, nil, c.args...)
		cmd.Stdin = strings.NewReader("") // stdio mode would end at EOF anyway
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("warden %q: %v, want exit 1 with %q in:\n%s", c.args, err, c.want, stderr.String())
		}
	}
}
