package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/protocol"
)

// tsOutput is what testdata/client.mjs prints.
type tsOutput struct {
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	ProtocolVersion *string  `json:"protocolVersion"`
	Tools           []string `json:"tools"`
	Result          struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
		IsError           bool           `json:"isError"`
	} `json:"result"`
}

// runTSClient runs testdata/client.mjs (the TypeScript SDK's Client) with config and returns
// its parsed output, on the node testdata/npm pins. The script is copied into a temp dir next
// to a node_modules symlink to the installed testdata/npm, so its bare imports resolve to the
// pinned SDK.
func runTSClient(t *testing.T, ctx context.Context, config map[string]any) tsOutput {
	t.Helper()
	npm := npmPackage(t, tsSDKPkg, tsSDKVersion)
	node := npm.node
	modules := filepath.Join(npm.dir, "node_modules")
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "client.mjs"), string(mustJSON(t, config)))
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var out tsOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("TypeScript client printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("TypeScript client: serverInfo %+v, protocol %v, tools %q", out.ServerInfo, deref(out.ProtocolVersion), out.Tools)
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkTSOutput asserts what the TypeScript client saw of a thread with the example server
// as "docs": warden's serverInfo, namespaced tools, and the echo result.
func checkTSOutput(t *testing.T, out tsOutput, text string) {
	t.Helper()
	if out.ServerInfo.Name != "warden" {
		t.Errorf("serverInfo.name = %q, want warden", out.ServerInfo.Name)
	}
	for _, want := range []string{"docs__echo", "docs__add", "docs__env"} {
		if !slices.Contains(out.Tools, want) {
			t.Errorf("tools %q lack %q", out.Tools, want)
		}
	}
	for _, n := range out.Tools {
		if !strings.HasPrefix(n, "docs__") {
			t.Errorf("tool %q is not namespaced docs__", n)
		}
	}
	r := out.Result
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != text {
		t.Errorf("docs__echo result = %+v, want one text %q", r, text)
	}
	if r.StructuredContent["text"] != text || r.StructuredContent["server"] != "warden-example" {
		t.Errorf("docs__echo structuredContent = %v, want {text: %q, server: warden-example}", r.StructuredContent, text)
	}
}

// docsHome is a warden home declaring the example server (stdio) as "docs".
func docsHome(t *testing.T) string {
	return newHome(t, serverTOML("docs", exampleBin, nil, "required = true"))
}

// TestTypeScriptClient connects an MCP client warden did not write — the official
// TypeScript SDK's — to warden's front door, as a user would: `warden mcp` over stdio, and
// `warden serve --mcp-listen` over streamable HTTP. It lists the namespaced tools and calls
// docs__echo.
func TestTypeScriptClient(t *testing.T) {
	npmPackage(t, tsSDKPkg, tsSDKVersion) // fails here, before any warden starts, without npm
	bin := wardenBin(t)
	t.Run("stdio", func(t *testing.T) {
		ctx := testCtx(t)
		const text = "hello over stdio"
		out := runTSClient(t, ctx, map[string]any{
			"transport": "stdio",
			"command":   bin,
			"args":      []string{"--log-level", "debug", "mcp"},
			"env":       map[string]string{"WARDEN_HOME": docsHome(t)},
			"call":      map[string]any{"name": "docs__echo", "arguments": map[string]any{"text": text}},
		})
		checkTSOutput(t, out, text)
	})
	t.Run("http", func(t *testing.T) {
		ctx := testCtx(t)
		w := startServe(t, ctx, bin, docsHome(t))
		id := w.startThread(t)
		const text = "hello over streamable HTTP"
		out := runTSClient(t, ctx, map[string]any{
			"transport": "http",
			"url":       w.mcpBase + frontdoor.ThreadPath(id),
			"token":     w.token,
			"call":      map[string]any{"name": "docs__echo", "arguments": map[string]any{"text": text}},
		})
		checkTSOutput(t, out, text)
	})
}

// serveProc is a running `warden serve --mcp-listen 127.0.0.1:0` whose host API is on its
// stdin/stdout.
type serveProc struct {
	mcpBase string // http://127.0.0.1:PORT
	token   string // the front door's bearer token, generated by warden serve
	stdin   io.WriteCloser
	stdout  *bufio.Scanner
	nextID  int
}

// startServe starts `warden serve --mcp-listen 127.0.0.1:0` over home, waits for the front
// door's URL on stderr, reads the bearer token serve generated from the file it named, and
// initializes the host API on stdin/stdout. Cleanup closes stdin
// (which ends warden serve) and waits for the process.
func startServe(t *testing.T, ctx context.Context, bin, home string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, "--log-level", "debug", "serve", "--mcp-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "WARDEN_HOME="+home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	urls := make(chan string, 1)
	tokenFiles := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			line := sc.Text()
			_, _ = stderr.Write([]byte(line + "\n"))
			if _, f, ok := strings.Cut(line, "bearer token for the listeners written to "); ok {
				f, _, _ = strings.Cut(f, " (mode 0600)")
				select {
				case tokenFiles <- f:
				default:
				}
			}
			if _, u, ok := strings.Cut(line, "MCP front door listening on "); ok {
				select {
				case urls <- strings.TrimSuffix(strings.TrimSpace(u), frontdoor.PathPattern):
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // end of the host API's stdin: warden serve exits
		exited := make(chan error, 1)
		go func() { <-copied; exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("warden serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("warden serve did not exit within 30s of its stdin closing; killed")
		}
		if t.Failed() {
			t.Logf("warden serve stderr:\n%s", stderr.String())
		}
	})
	p := &serveProc{stdin: stdin, stdout: bufio.NewScanner(stdout)}
	p.stdout.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var tokenFile string
	select {
	case tokenFile = <-tokenFiles: // printed before the front door's URL
	case <-ctx.Done():
		t.Fatalf("warden serve did not name its token file: %v\nstderr:\n%s", ctx.Err(), stderr.String())
	}
	select {
	case p.mcpBase = <-urls:
	case <-ctx.Done():
		t.Fatalf("warden serve did not announce the front door: %v\nstderr:\n%s", ctx.Err(), stderr.String())
	}
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("reading the token file warden serve named: %v", err)
	}
	p.token = strings.TrimSpace(string(raw))
	var init protocol.InitializeResponse
	p.call(t, protocol.MethodInitialize, protocol.InitializeParams{ClientInfo: protocol.ClientInfo{Name: "warden-e2e", Version: "1"}}, &init)
	return p
}

// call sends one host API request on stdin and reads its response from stdout, skipping
// notifications. (Requests are sent one at a time, so the next response is this one's.)
func (p *serveProc) call(t *testing.T, method string, params, out any) {
	t.Helper()
	p.nextID++
	req := mustJSON(t, protocol.Request{JSONRPC: protocol.Version, ID: mustJSON(t, p.nextID), Method: method, Params: mustJSON(t, params)})
	if _, err := p.stdin.Write(append(req, '\n')); err != nil {
		t.Fatalf("%s: writing to warden serve: %v", method, err)
	}
	for p.stdout.Scan() {
		var m message
		if err := json.Unmarshal(p.stdout.Bytes(), &m); err != nil {
			t.Fatalf("%s: warden serve wrote %q: %v", method, p.stdout.Text(), err)
		}
		if m.Method != "" && m.ID == nil {
			continue // a notification
		}
		if m.Error != nil {
			t.Fatalf("%s: %v", method, m.Error)
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", method, m.Result, err)
		}
		return
	}
	t.Fatalf("%s: warden serve's stdout ended: %v", method, p.stdout.Err())
}

// startThread starts a thread through the host API and returns its id.
func (p *serveProc) startThread(t *testing.T) string {
	t.Helper()
	var res protocol.ThreadStartResponse
	p.call(t, protocol.MethodThreadStart, protocol.ThreadStartParams{}, &res)
	if res.Thread.ID == "" {
		t.Fatal("thread/start returned no thread id")
	}
	return res.Thread.ID
}
