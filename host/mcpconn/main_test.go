package mcpconn

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// exampleBin is the example MCP server, built once for the package's tests.
var exampleBin string

// secretToken is the recognisable credential every test uses; it must never appear in an
// error or a log line.
const secretToken = "wrdn-SECRET-7f3a9c1e"

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

// newManager returns a Manager logging at trace level into a buffer. At cleanup it closes
// the Manager and fails the test if the log mentions secretToken.
func newManager(t *testing.T, o Options) (*Manager, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	o.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: logs})
	m := NewManager(o)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if strings.Contains(logs.String(), secretToken) {
			t.Errorf("the log contains the secret token:\n%s", logs.String())
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", logs.String())
		}
	})
	return m, logs
}

// noSecret fails the test if err's text contains the secret token.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secretToken) {
		t.Errorf("error text contains the secret token: %v", err)
	}
}

func stdioDecl(name string, args ...string) *config.ServerDecl {
	return &config.ServerDecl{Name: name, Command: exampleBin, Args: args, Enabled: true}
}

func countFile(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "count.txt")
}

func mustSpec(t *testing.T, d *config.ServerDecl, r Resolver) Spec {
	t.Helper()
	s, err := BuildSpec(d, r, BuildOptions{BaseDir: t.TempDir()})
	if err != nil {
		t.Fatalf("BuildSpec(%s): %v", d.Name, err)
	}
	return s
}

func mustAcquire(t *testing.T, m *Manager, s Spec) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := m.Acquire(ctx, s)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", s.Name, err)
	}
	t.Cleanup(c.Release)
	return c
}

func callTool(t *testing.T, c *Conn, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, name, args)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s): tool error %v", name, res.Content)
	}
	return res
}

// structured decodes a result's structured content into out.
func structured(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

func toolNames(tools []*mcp.Tool) []string {
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	return names
}

// handshakes counts the session-establishing requests a server saw: server/discover and
// initialize (a 2026-07-28 client falling back to initialize sends both for one session).
func handshakes(t *testing.T, countPath string) (discover, initialize int) {
	t.Helper()
	return mcpservertest.Count(t, countPath, "server/discover"), mcpservertest.Count(t, countPath, "initialize")
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newTestLogger(w *syncBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: w})
}
