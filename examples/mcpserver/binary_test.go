package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
)

// TestBinary builds the real warden-example-mcp binary and talks to it over
// stdio and streamable HTTP with a go-sdk client.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a binary")
	}
	bin := mcpservertest.Build(t)
	t.Run("stdio", func(t *testing.T) { testBinaryStdio(t, bin) })
	t.Run("stdio signals and delay", func(t *testing.T) { testBinaryStdioLifecycle(t, bin) })
	t.Run("http", func(t *testing.T) { testBinaryHTTP(t, bin) })
	t.Run("http bearer", func(t *testing.T) { testBinaryBearer(t, bin) })
	t.Run("http required header", func(t *testing.T) { testBinaryRequiredHeader(t, bin) })
	t.Run("http delays", func(t *testing.T) { testBinaryDelays(t, bin) })
	t.Run("usage errors", func(t *testing.T) { testBinaryUsage(t, bin) })
}

func newClient(copts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "binary-test", Version: "v0"}, copts)
}

func testBinaryStdio(t *testing.T, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	countPath := filepath.Join(t.TempDir(), "count")
	// The env var exists only in the child's environment.
	env := append(os.Environ(), "WARDEN_EXAMPLE_PROBE=child-only")
	cmd := mcpservertest.Command(t, bin, env, "--name", "stdio-srv", "--count-file", countPath, "--tools", "echo,add,fail,env")
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "stdio-srv" {
		t.Errorf("server name = %q, want stdio-srv", got)
	}
	if diff := cmp.Diff([]string{"add", "echo", "env", "fail"}, listToolNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	calls := []struct {
		name string
		tool string
		args map[string]any
		want callResult
	}{
		{"echo", "echo", map[string]any{"text": "hi"}, callResult{Text: "hi", Structured: map[string]any{"text": "hi", "server": "stdio-srv"}}},
		{"add", "add", map[string]any{"a": 2, "b": 40}, callResult{Text: "42", Structured: map[string]any{"sum": 42.0}}},
		{"fail", "fail", map[string]any{"message": "nope"}, callResult{Text: "nope", IsError: true}},
		{"env from child", "env", map[string]any{"name": "WARDEN_EXAMPLE_PROBE"},
			callResult{Text: "WARDEN_EXAMPLE_PROBE=child-only", Structured: map[string]any{"name": "WARDEN_EXAMPLE_PROBE", "set": true, "value": "child-only"}}},
		{"env unset", "env", map[string]any{"name": "WARDEN_EXAMPLE_UNSET"},
			callResult{Text: "WARDEN_EXAMPLE_UNSET is not set", Structured: map[string]any{"name": "WARDEN_EXAMPLE_UNSET", "set": false, "value": ""}}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, callTool(t, cs, c.tool, c.args)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	// Closing the session closes the child's stdin; it must exit cleanly.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("server did not exit cleanly after stdin closed: %v", cmd.ProcessState)
	}
	want := []string{"initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call", "tools/call", "tools/call", "tools/call"}
	if diff := cmp.Diff(want, mcpservertest.Methods(t, countPath)); diff != "" {
		t.Errorf("count file (-want +got):\n%s", diff)
	}
}

func testBinaryStdioLifecycle(t *testing.T, bin string) {
	t.Run("exits cleanly on SIGTERM", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := mcpservertest.Command(t, bin, nil)
		cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Connected, so the signal handler is installed; stdin stays open.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		go func() { _ = cs.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			t.Fatal("session still open 10s after SIGTERM")
		}
		_ = cs.Close() // reaps the process
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("exit after SIGTERM: %v", cmd.ProcessState)
		}
	})
	t.Run("startup delay", func(t *testing.T) {
		const delay = 500 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: mcpservertest.Command(t, bin, nil, "--startup-delay", delay.String())}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if took := time.Since(start); took < delay {
			t.Errorf("connect took %v, want at least the %v startup delay", took, delay)
		}
	})
}

func testBinaryHTTP(t *testing.T, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	countPath := filepath.Join(t.TempDir(), "count")
	p := mcpservertest.StartHTTP(t, bin, nil, "--name", "http-srv", "--count-file", countPath)
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || !strings.HasSuffix(p.URL, "/mcp") {
		t.Fatalf("URL = %q", p.URL)
	}
	changed := make(chan struct{}, 16)
	cs, err := newClient(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if diff := cmp.Diff(sorted(toolNames()), listToolNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	calls := []struct {
		name string
		tool string
		args map[string]any
		want callResult
	}{
		{"echo", "echo", map[string]any{"text": "over http"}, callResult{Text: "over http", Structured: map[string]any{"text": "over http", "server": "http-srv"}}},
		{"add", "add", map[string]any{"a": 0.5, "b": 0.25}, callResult{Text: "0.75", Structured: map[string]any{"sum": 0.75}}},
		{"fail", "fail", map[string]any{"message": "bad"}, callResult{Text: "bad", IsError: true}},
		{"slow", "slow", map[string]any{"ms": 10}, callResult{Text: "done", Structured: map[string]any{"status": "done", "ms": 10.0}}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, callTool(t, cs, c.tool, c.args)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("set_tools notifies", func(t *testing.T) {
		got := callTool(t, cs, "set_tools", map[string]any{"tools": []string{"echo", "set_tools"}})
		if got.IsError {
			t.Fatalf("set_tools: %s", got.Text)
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("no notifications/tools/list_changed over HTTP")
		}
		if diff := cmp.Diff([]string{"echo", "set_tools"}, listToolNames(t, cs)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})
	methods := mcpservertest.Methods(t, countPath)
	if !slices.Contains(methods, "initialize") {
		t.Errorf("count file has no initialize: %q", methods)
	}
	if n := mcpservertest.Count(t, countPath, "tools/call"); n != len(calls)+1 {
		t.Errorf("tools/call counted %d times, want %d (all: %q)", n, len(calls)+1, methods)
	}
	if n := mcpservertest.Count(t, countPath, "tools/list"); n != 2 {
		t.Errorf("tools/list counted %d times, want 2 (all: %q)", n, methods)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("server did not exit cleanly on SIGTERM: %v", err)
	}
}

func testBinaryBearer(t *testing.T, bin string) {
	const token = "example-token-value"
	countPath := filepath.Join(t.TempDir(), "count")
	env := append(os.Environ(), "EXAMPLE_TOKEN="+token)
	p := mcpservertest.StartHTTP(t, bin, env, "--require-bearer-env", "EXAMPLE_TOKEN", "--count-file", countPath)

	tests := []struct {
		name    string
		header  http.Header
		wantErr bool
	}{
		{"no token", nil, true},
		{"wrong token", http.Header{"Authorization": {"Bearer wrong"}}, true},
		{"right token", http.Header{"Authorization": {"Bearer " + token}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A raw POST shows the status code.
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := mcpservertest.HeaderClient(tt.header).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode == http.StatusUnauthorized; got != tt.wantErr {
				t.Errorf("raw POST status = %d, want 401: %v", resp.StatusCode, tt.wantErr)
			}

			cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: p.URL, HTTPClient: mcpservertest.HeaderClient(tt.header), MaxRetries: -1,
			}, nil)
			if tt.wantErr {
				if err == nil {
					cs.Close()
					t.Fatal("connect succeeded without the right token")
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("error leaks the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			got := callTool(t, cs, "header_digest", map[string]any{"name": "authorization"})
			if got.Structured["sha256"] != sha256Hex("Bearer "+token) {
				t.Errorf("header_digest = %+v, want digest of the bearer header", got)
			}
			got = callTool(t, cs, "headers", map[string]any{})
			if !strings.Contains(got.Text, "Authorization") || strings.Contains(got.Text, token) {
				t.Errorf("headers = %q, want Authorization listed and no values", got.Text)
			}
		})
	}
	if strings.Contains(p.Stderr(), token) {
		t.Errorf("server logged the token:\n%s", p.Stderr())
	}
	// Rejected requests are not counted: the first counted message comes
	// from the authorised client.
	methods := mcpservertest.Methods(t, countPath)
	if len(methods) == 0 || mcpservertest.Count(t, countPath, "tools/call") != 2 {
		t.Errorf("count file = %q, want only the authorised session's methods", methods)
	}
}

func testBinaryRequiredHeader(t *testing.T, bin string) {
	env := append(os.Environ(), "EXAMPLE_KEY=k-123")
	p := mcpservertest.StartHTTP(t, bin, env, "--require-header", "X-Api-Key=EXAMPLE_KEY", "--tools", "header_digest")
	tests := []struct {
		name    string
		header  http.Header
		wantErr bool
	}{
		{"missing", nil, true},
		{"wrong", http.Header{"X-Api-Key": {"k-456"}}, true},
		{"right", http.Header{"X-Api-Key": {"k-123"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{
				Endpoint: p.URL, HTTPClient: mcpservertest.HeaderClient(tt.header), MaxRetries: -1,
			}, nil)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("connect error = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer cs.Close()
			got := callTool(t, cs, "header_digest", map[string]any{"name": "x-api-key"})
			if got.Structured["sha256"] != sha256Hex("k-123") {
				t.Errorf("header_digest = %+v", got)
			}
		})
	}
}

func testBinaryDelays(t *testing.T, bin string) {
	const delay = 700 * time.Millisecond
	tests := []struct {
		name string
		args []string
	}{
		{"startup delay", []string{"--startup-delay", delay.String()}},
		{"first response delay", []string{"--first-response-delay", delay.String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The URL is announced at once; the first exchange is late and
			// later ones are not.
			p := mcpservertest.StartHTTP(t, bin, nil, tt.args...)
			for i, wantSlow := range []bool{true, false} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				start := time.Now()
				cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				took := time.Since(start)
				cancel()
				if err != nil {
					t.Fatalf("connect %d: %v", i, err)
				}
				if got := callTool(t, cs, "echo", map[string]any{"text": "late"}); got.Text != "late" {
					t.Errorf("echo = %+v", got)
				}
				_ = cs.Close()
				if wantSlow && took < delay/2 {
					t.Errorf("connect %d took %v, want about %v", i, took, delay)
				}
				if !wantSlow && took >= delay {
					t.Errorf("connect %d took %v, want well under %v", i, took, delay)
				}
			}
		})
	}
}

func testBinaryUsage(t *testing.T, bin string) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"unknown tool", []string{"--tools", "bogus"}, exitUsage},
		{"bearer env unset", []string{"--http", "127.0.0.1:0", "--require-bearer-env", "WARDEN_EXAMPLE_SURELY_UNSET"}, exitUsage},
		{"help", []string{"--help"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := mcpservertest.Command(t, bin, nil, tt.args...)
			err := cmd.Run()
			code := 0
			var exitErr interface{ ExitCode() int }
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
		})
	}
}
