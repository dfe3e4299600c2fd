package thread_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// exampleBin is the example MCP server, built once for the package's tests.
var exampleBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = testmain.SyncBuffer

// fixture is a warden home on disk with a Manager over it.
type fixture struct {
	t       *testing.T
	home    string // the home directory
	plugins string // the plugins dir named in config.toml
	env     map[string]string
	m       *thread.Manager
	conns   *mcpconn.Manager
	logs    *syncBuffer
	events  *eventLog
	// executors is what Options.Executors returns (the executor seam).
	executors []thread.Environment
}

type fixtureOption func(*fixture)

// withExecutors injects executor environments through the thread layer's executor seam.
func withExecutors(envs ...thread.Environment) fixtureOption {
	return func(f *fixture) { f.executors = envs }
}

// withEnv sets host environment variables as the Manager sees them (layered over the test
// process's real environment).
func withEnv(kv map[string]string) fixtureOption {
	return func(f *fixture) { f.env = kv }
}

// newFixture writes config (the [mcp_servers] part; a [plugins] table pointing at the
// fixture's plugins dir is added) into a fresh home and starts a Manager over it. Files
// in extra (relative to the home) are written first.
func newFixture(t *testing.T, configTOML string, extra map[string]string, opts ...fixtureOption) *fixture {
	t.Helper()
	f := &fixture{t: t, home: t.TempDir(), logs: &syncBuffer{}, events: &eventLog{}}
	for _, o := range opts {
		o(f)
	}
	f.plugins = filepath.Join(f.home, "plugins")
	mkdir(t, f.plugins)
	for name, content := range extra {
		writeFile(t, filepath.Join(f.home, name), content)
	}
	f.writeConfig(configTOML)
	snap := thread.LoadSnapshot(f.home, nil)
	if snap.ConfigErr != nil {
		t.Fatalf("config: %v", snap.ConfigErr)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: f.logs})
	f.conns = mcpconn.NewManager(mcpconn.Options{Logger: log.Named("mcp")})
	o := thread.Options{
		Engine:   decision.NewEngine(decision.Options{}),
		Conns:    f.conns,
		Snapshot: snap,
		Logger:   log.Named("thread"),
		LookupEnv: func(name string) (string, bool) {
			if v, ok := f.env[name]; ok {
				return v, true
			}
			return os.LookupEnv(name)
		},
	}
	if f.executors != nil {
		o.Executors = func(*config.Home) []thread.Environment { return f.executors }
	}
	m, err := thread.NewManager(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	cancel := m.Subscribe(f.events.add)
	t.Cleanup(func() {
		cancel()
		if err := m.Close(); err != nil {
			t.Errorf("Manager.Close: %v", err)
		}
		if err := f.conns.Close(); err != nil {
			t.Errorf("mcpconn.Manager.Close: %v", err)
		}
		if t.Failed() {
			t.Logf("log:\n%s", f.logs.String())
		}
	})
	return f
}

func (f *fixture) writeConfig(servers string) {
	f.t.Helper()
	writeFile(f.t, filepath.Join(f.home, "config.toml"),
		fmt.Sprintf("[plugins]\ndirs = [%s]\n\n%s", strconv.Quote(f.plugins), servers))
}

// start starts a thread, failing the test on error.
func (f *fixture) start(p thread.StartParams) *thread.Thread {
	f.t.Helper()
	t, err := f.m.Start(ctx(f.t), p)
	if err != nil {
		f.t.Fatalf("Start: %v", err)
	}
	return t
}

// ctx is a context bounded well within the test timeout.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// stdioServer renders a [mcp_servers.NAME] table for the example server in stdio mode.
func stdioServer(name string, args []string, extra string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n%s\n", name, strconv.Quote(exampleBin), strings.Join(q, ", "), extra)
}

// plugin writes a capability root: its manifest (when manifest != "") and .mcp.json.
func plugin(t *testing.T, dir, manifest string, servers map[string]any) {
	t.Helper()
	mkdir(t, dir)
	if manifest != "" {
		writeFile(t, filepath.Join(dir, ".codex-plugin", "plugin.json"), manifest)
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".mcp.json"), string(data))
}

// stdioJSON is an .mcp.json entry for the example server in stdio mode.
func stdioJSON(args ...string) map[string]any {
	return map[string]any{"command": exampleBin, "args": args}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a test file, creating its directories.
var writeFile = testmain.WriteFile

// status reads a thread's status, failing the test on error.
func status(t *testing.T, th *thread.Thread, name string) []thread.ServerStatus {
	t.Helper()
	st, err := th.Status(ctx(t), name, false)
	if err != nil {
		t.Fatalf("Status(%q): %v", name, err)
	}
	return st
}

// byName indexes statuses by server name.
func byName(st []thread.ServerStatus) map[string]thread.ServerStatus {
	out := map[string]thread.ServerStatus{}
	for _, s := range st {
		out[s.Name] = s
	}
	return out
}

func names(st []thread.ServerStatus) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.Name)
	}
	return out
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

// call calls a tool and decodes its structured result into a map.
func call(t *testing.T, th *thread.Thread, server, tool, args string) map[string]any {
	t.Helper()
	res, err := th.CallTool(ctx(t), server, tool, json.RawMessage(args), "test")
	if err != nil {
		t.Fatalf("CallTool(%s/%s): %v", server, tool, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s/%s): tool error: %v", server, tool, res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return out
}

// handshakes counts the session-establishing requests a server saw: server/discover and
// initialize (a 2026-07-28 client falling back to initialize sends both for one session).
func handshakes(t *testing.T, countPath string) int {
	t.Helper()
	return mcpservertest.Count(t, countPath, "server/discover") + mcpservertest.Count(t, countPath, "initialize")
}

// eventLog records Manager events.
type eventLog struct {
	mu     sync.Mutex
	events []thread.Event
}

func (l *eventLog) add(ev thread.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) snapshot() []thread.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
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

// unavailable asserts err is a *thread.UnavailableError whose text contains want.
func unavailable(t *testing.T, err error, want string) {
	t.Helper()
	var na *thread.UnavailableError
	if !errors.As(err, &na) || !errors.Is(err, thread.ErrToolNotAvailable) {
		t.Fatalf("error = %v (%T), want a *thread.UnavailableError", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %q, want it to contain %q", err, want)
	}
}

var _ = roots.StatusOK
