package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// The npm packages of testdata/npm that the older tests use, at the versions its package.json
// pins (npmPackage checks the installed one against them).
const (
	everythingPkg     = "@modelcontextprotocol/server-everything"
	everythingVersion = "2026.8.31"
	tsSDKPkg          = "@modelcontextprotocol/sdk"
	tsSDKVersion      = "1.32.2"
)

// exampleBin is the example MCP server, built once for the package.
var exampleBin string

// wardenPath is the warden binary TestMain builds.
var wardenPath string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, &wardenPath)) }

// wardenBin returns the warden binary built for the package's tests.
func wardenBin(testing.TB) string { return wardenPath }

// npmPackage installs testdata/npm (gatewayNPM: it fails the test, never skips, without npm)
// and fails the test unless the installed pkg is at version, so that the versions the tests
// name and log are the ones they run.
func npmPackage(t testing.TB, pkg, version string) *npmProject {
	t.Helper()
	npm := gatewayNPM(t)
	raw, err := os.ReadFile(npm.file(t, pkg, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatalf("npm package %s: package.json: %v", pkg, err)
	}
	if meta.Version != version {
		t.Fatalf("npm package %s is installed at %q, the tests expect %q: keep testdata/npm/package.json and these constants in step", pkg, meta.Version, version)
	}
	return npm
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

// testCtx is bounded well within the test timeout (a failure bound, never a measurement).
func testCtx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// newHome writes config.toml into a fresh warden home and returns the home.
func newHome(t testing.TB, configTOML string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(configTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// serverTOML renders a [mcp_servers.NAME] table for a stdio server.
func serverTOML(name, command string, args []string, extra string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n%s\n", name, strconv.Quote(command), strings.Join(q, ", "), extra)
}

// newHost starts a Host over home and closes it at cleanup; its logs are shown if the test
// fails.
func newHost(t testing.TB, home string) *host.Host {
	t.Helper()
	logs := &syncBuffer{}
	h, err := host.New(testCtx(t), host.Options{
		Home:           home,
		Logger:         hclog.New(&hclog.LoggerOptions{Name: "host", Level: logLevel(t), Output: logs}),
		PolicyCacheDir: testbuild.WazeroCache(t),
	})
	if err != nil {
		t.Fatalf("host.New: %v\n%s", err, logs.String())
	}
	if err := h.ConfigErrors(); err != nil {
		t.Fatalf("config errors: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("host.Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return h
}

// logLevel is Debug for tests (their logs are shown when they fail) and Warn for benchmarks,
// whose measurements should not include formatting debug lines.
func logLevel(tb testing.TB) hclog.Level {
	if _, ok := tb.(*testing.B); ok {
		return hclog.Warn
	}
	return hclog.Debug
}

// mustJSON marshals v.
func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
