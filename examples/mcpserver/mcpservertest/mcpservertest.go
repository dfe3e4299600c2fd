// Package mcpservertest builds and starts the example MCP server
// (warden-example-mcp, in the parent directory) from Go tests, so any test in
// the warden module can talk to a real MCP server process over stdio or
// streamable HTTP.
//
// Typical use:
//
//	bin := mcpservertest.Build(t) // once per top-level test (go build is cached)
//
//	// stdio: hand the command to the go-sdk (or to warden's own launcher).
//	cmd := mcpservertest.Command(t, bin, nil, "--count-file", countPath)
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
//
//	// streamable HTTP: the process is stopped (SIGTERM) at test cleanup.
//	p := mcpservertest.StartHTTP(t, bin, nil, "--require-bearer-env", "TOKEN")
//	transport := &mcp.StreamableClientTransport{Endpoint: p.URL}
//
//	// what the server saw, in order:
//	methods := mcpservertest.Methods(t, countPath)
package mcpservertest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ImportPath is the example server's package.
const ImportPath = "github.com/warden-mcp/warden/examples/mcpserver"

// BinaryName is the name Build gives the binary.
const BinaryName = "warden-example-mcp"

// BuildTo runs `go build -o DIR/warden-example-mcp` for the example server and
// returns the binary's path. It must run with a working directory inside the
// warden module (true for any test in the module). It suits TestMain, where
// there is no *testing.T.
func BuildTo(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("finding the go command: %w", err)
	}
	out := filepath.Join(dir, BinaryName)
	cmd := exec.Command(goBin, "build", "-o", out, ImportPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", ImportPath, err, stderr.String())
	}
	return out, nil
}

// Build builds the example server into a fresh t.TempDir and returns the
// binary's path. Call it once per top-level test and share the path between
// subtests; the Go build cache keeps repeat builds cheap.
func Build(t testing.TB) string {
	t.Helper()
	bin, err := BuildTo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Command returns an unstarted command running bin in stdio mode with args,
// ready for mcp.CommandTransport. env nil inherits the test's environment;
// otherwise env is the complete environment (use append(os.Environ(), ...) to
// extend). The server's stderr is captured and logged if the test fails.
func Command(t testing.TB, bin string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("example server (stdio) stderr:\n%s", stderr.String())
		}
	})
	return cmd
}

// Process is a running HTTP-mode example server.
type Process struct {
	// URL is the MCP endpoint, e.g. http://127.0.0.1:41234/mcp.
	URL string
	// Cmd is the running command.
	Cmd *exec.Cmd

	stderr *syncBuffer
	done   chan struct{}
	err    error // from Wait; valid once done is closed

	stopOnce sync.Once
	stopErr  error
}

// StartHTTP starts bin with `--http 127.0.0.1:0` plus args, waits for its
// `listening URL` line, and returns the process. env is as for Command. The
// process gets SIGTERM at test cleanup (or on Stop); its stderr is logged if
// the test failed.
func StartHTTP(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = env
	p := &Process{Cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r) // stdout carries nothing else
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stopping example server: %v", err)
		}
		if t.Failed() {
			t.Logf("example server stderr:\n%s", p.Stderr())
		}
	})
	select {
	case line := <-lines:
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if !ok {
			t.Fatalf("example server did not announce its URL; first stdout line %q; stderr:\n%s", line, p.Stderr())
		}
		p.URL = url
	case <-time.After(30 * time.Second):
		t.Fatalf("example server did not announce its URL within 30s; stderr:\n%s", p.Stderr())
	}
	return p
}

// Stderr returns what the server has written to stderr so far.
func (p *Process) Stderr() string { return p.stderr.String() }

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after 10s).
// It returns the exit error, nil for a clean exit. It is safe to call more
// than once.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
		default:
			_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.Cmd.Process.Kill()
			<-p.done
			p.stopErr = errors.New("example server did not exit within 10s of SIGTERM; killed")
			return
		}
		p.stopErr = p.err
	})
	return p.stopErr
}

// Methods returns the JSON-RPC methods recorded in a --count-file, in order.
// A missing file means no methods. The server writes a method's line before
// handling the message, so once a response has arrived its line is present.
func Methods(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading count file: %v", err)
	}
	return strings.Fields(string(data))
}

// Count returns how many times method appears in a --count-file.
func Count(t testing.TB, path, method string) int {
	t.Helper()
	n := 0
	for _, m := range Methods(t, path) {
		if m == method {
			n++
		}
	}
	return n
}

// HeaderClient returns an *http.Client that adds h to every request, for use
// as mcp.StreamableClientTransport.HTTPClient (e.g. to send a bearer token).
func HeaderClient(h http.Header) *http.Client {
	return &http.Client{Transport: headerRoundTripper{base: http.DefaultTransport, h: h}}
}

type headerRoundTripper struct {
	base http.RoundTripper
	h    http.Header
}

func (rt headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range rt.h {
		r.Header[k] = append([]string(nil), vs...)
	}
	return rt.base.RoundTrip(r)
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
