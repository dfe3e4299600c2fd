// Package testmain is the TestMain the packages under host/ share: build the binaries their
// tests run as real processes once per test process, run the tests, then fail the run if
// goroutines leaked.
//
//	var exampleBin string
//
//	func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }
package testmain

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
)

// Run builds the example MCP server into *exampleServer and, when warden is not nil, the
// warden binary into *warden; runs the tests; removes the binaries; and, when the tests
// passed, checks for leaked goroutines. It returns the process exit code.
func Run(m *testing.M, exampleServer, warden *string) int {
	dir, err := os.MkdirTemp("", "warden-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *exampleServer, err = mcpservertest.BuildTo(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if warden != nil {
		*warden = filepath.Join(dir, "warden")
		if out, err := exec.Command("go", "build", "-o", *warden, "github.com/warden-mcp/warden/cmd/warden").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./cmd/warden: %v\n%s", err, out)
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
