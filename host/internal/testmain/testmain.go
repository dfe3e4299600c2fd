// Package testmain is the TestMain the packages under host/ share: build the binaries their
// tests run as real processes (through testbuild's shared cache, so once per `go test` run
// rather than once per package), run the tests, then fail the run if goroutines leaked.
//
//	var exampleBin string
//
//	func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }
package testmain

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// Run builds the example MCP server into *exampleServer and, when warden is not nil, the
// warden binary into *warden (paths in the shared build cache, not to be modified); runs
// the tests; and, when they passed, checks for leaked goroutines. It returns the process
// exit code.
func Run(m *testing.M, exampleServer, warden *string) int {
	var err error
	if *exampleServer, err = testbuild.Binary(mcpservertest.ImportPath, mcpservertest.BinaryName); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if warden != nil {
		if *warden, err = testbuild.Binary("github.com/warden-mcp/warden/cmd/warden", "warden"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// SyncBuffer is a goroutine-safe log sink.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WriteFile writes content to path, creating its directories; it fails the test on error.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago, for a listener a test
// must name before it exists (a fixed OAuth callback port, an executor's address).
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
