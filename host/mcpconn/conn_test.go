package mcpconn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/config"
)

type envOut struct {
	Name  string `json:"name"`
	Set   bool   `json:"set"`
	Value string `json:"value"`
}

func TestStdioEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("WARDEN_TEST_UNRELATED", "host-only-value")
	t.Setenv("DECL_TOKEN", "host-value-of-the-same-name")
	m, _ := newManager(t, Options{})
	d := stdioDecl("envprobe")
	d.Env = map[string]string{"LITERAL_MODE": "ro"}
	d.EnvVars = []config.EnvVar{{Name: "DECL_TOKEN"}}
	// The owning environment's value, not the host's, reaches the child.
	spec := mustSpec(t, d, MapResolver("local", map[string]string{"DECL_TOKEN": secretToken}))
	c := mustAcquire(t, m, spec)

	probe := func(name string) envOut {
		var out envOut
		structured(t, callTool(t, c, "env", map[string]any{"name": name}), &out)
		return out
	}
	if got := probe("WARDEN_TEST_UNRELATED"); got.Set {
		t.Errorf("an unrelated host variable reached the server: %+v", got)
	}
	if got := probe("DECL_TOKEN"); !got.Set || got.Value != secretToken {
		t.Errorf("env_vars DECL_TOKEN did not arrive from the owning environment (set=%v)", got.Set)
	}
	if got := probe("LITERAL_MODE"); got.Value != "ro" {
		t.Errorf("literal env: %+v", got)
	}
	if got, want := probe("PATH"), os.Getenv("PATH"); got.Value != want {
		t.Errorf("PATH = %q, want the host's %q", got.Value, want)
	}
	if !slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Error("spec has no PATH")
	}
	for _, kv := range spec.Env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(BaseEnvVars(), name) && name != "DECL_TOKEN" && name != "LITERAL_MODE" {
			t.Errorf("unexpected variable %s in the child environment", name)
		}
	}
}

func TestStdioRelativeCwd(t *testing.T) {
	m, _ := newManager(t, Options{})
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := stdioDecl("cwd", "--count-file", "relative-count.txt")
	d.Cwd = "srv"
	spec, err := BuildSpec(d, HostResolver(), BuildOptions{BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, m, spec)
	if n := mcpservertest.Count(t, filepath.Join(base, "srv", "relative-count.txt"), "tools/list"); n != 1 {
		t.Errorf("the server did not run in <base>/srv (tools/list count there = %d)", n)
	}
}

func TestSharingStdio(t *testing.T) {
	m, _ := newManager(t, Options{})
	cf := countFile(t)
	spec := mustSpec(t, stdioDecl("shared", "--count-file", cf), nil)

	// Concurrent acquisitions of one key: a single connection attempt.
	conns := make([]*Conn, 4)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i] = mustAcquire(t, m, spec) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	a, b := conns[0], conns[1]
	if a == b || a.s != b.s {
		t.Fatal("handles of one key do not share a connection")
	}
	if ta, tb := a.Tools(), b.Tools(); len(ta) == 0 || !slices.Equal(toolNames(ta), toolNames(tb)) || ta[0] != tb[0] {
		t.Errorf("catalogs differ: %v vs %v", toolNames(ta), toolNames(tb))
	}
	callTool(t, a, "echo", map[string]any{"text": "a"})
	callTool(t, b, "echo", map[string]any{"text": "b"})
	discover, initialize := handshakes(t, cf)
	if discover != 1 || initialize != 0 || mcpservertest.Count(t, cf, "tools/list") != 1 {
		t.Errorf("one shared stdio session should show 1 server/discover, 0 initialize, 1 tools/list; methods: %q",
			mcpservertest.Methods(t, cf))
	}
	if st := a.Status(); st.State != StateReady || st.ProtocolVersion != "2026-07-28" {
		t.Errorf("status = %+v", st)
	}

	// A different key (another literal env value) is another session of the same server.
	d2 := stdioDecl("shared", "--count-file", cf)
	d2.Env = map[string]string{"X": "1"}
	spec2 := mustSpec(t, d2, nil)
	if spec2.Key == spec.Key {
		t.Fatal("different declarations, same key")
	}
	c2 := mustAcquire(t, m, spec2)
	if c2.s == a.s {
		t.Fatal("different keys share a connection")
	}
	if discover, _ := handshakes(t, cf); discover != 2 || mcpservertest.Count(t, cf, "tools/list") != 2 {
		t.Errorf("two keys should make two sessions; methods: %q", mcpservertest.Methods(t, cf))
	}

	// Releasing every handle closes the session; the next Acquire starts a new one.
	for _, c := range conns {
		c.Release()
	}
	a.Release() // idempotent
	if st := a.Status(); st.State != StateFailed || !errors.Is(st.Err, ErrClosed) {
		t.Errorf("released handle status = %+v", st)
	}
	if _, err := a.CallTool(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("CallTool on a released handle: %v", err)
	}
	mustAcquire(t, m, spec)
	if discover, _ := handshakes(t, cf); discover != 3 {
		t.Errorf("re-acquiring after the last release should reconnect; methods: %q", mcpservertest.Methods(t, cf))
	}
}

func TestSharingHTTP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol string
		// per session
		discover, initialize int
	}{
		// The default client asks for 2026-07-28 with server/discover; a stateful HTTP
		// server does not serve that version, so the client falls back to initialize.
		{"latest", ProtocolLatest, 1, 1},
		{"pinned 2025-11-25", "2025-11-25", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t, Options{ProtocolVersion: tc.protocol})
			cf := countFile(t)
			p := mcpservertest.StartHTTP(t, exampleBin, nil, "--count-file", cf)
			spec := mustSpec(t, &config.ServerDecl{Name: "web", URL: p.URL}, nil)
			a := mustAcquire(t, m, spec)
			b := mustAcquire(t, m, spec)
			callTool(t, a, "echo", map[string]any{"text": "a"})
			callTool(t, b, "echo", map[string]any{"text": "b"})
			discover, initialize := handshakes(t, cf)
			if discover != tc.discover || initialize != tc.initialize || mcpservertest.Count(t, cf, "tools/list") != 1 {
				t.Errorf("want %d server/discover, %d initialize, 1 tools/list for one shared session; methods: %q",
					tc.discover, tc.initialize, mcpservertest.Methods(t, cf))
			}
			spec2 := mustSpec(t, &config.ServerDecl{Name: "web2", URL: p.URL}, nil)
			mustAcquire(t, m, spec2)
			discover, initialize = handshakes(t, cf)
			if discover != 2*tc.discover || initialize != 2*tc.initialize || mcpservertest.Count(t, cf, "tools/list") != 2 {
				t.Errorf("a second key should make a second session; methods: %q", mcpservertest.Methods(t, cf))
			}
		})
	}
}

func TestIdleGrace(t *testing.T) {
	clk := newFakeClock()
	m, _ := newManager(t, withClock(Options{IdleGrace: time.Hour}, clk))
	cf := countFile(t)
	spec := mustSpec(t, stdioDecl("idle", "--count-file", cf), nil)
	ctx := context.Background()
	c, err := m.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	if tm := clk.next(t); tm.d != time.Hour {
		t.Errorf("idle timer of %s, want the 1h grace", tm.d)
	}
	c, err = m.Acquire(ctx, spec) // within the grace: same session
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := handshakes(t, cf); d != 1 {
		t.Errorf("re-acquired within the grace period, but the server saw %d handshakes", d)
	}
	s := c.s
	c.Release()
	clk.next(t).fire() // the grace period ends
	select {
	case <-s.ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection was not closed at the end of its grace period")
	}
	c, err = m.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.s == s {
		t.Error("the expired connection was reused")
	}
	if d, _ := handshakes(t, cf); d != 2 {
		t.Errorf("after the grace period the session should have been closed; methods %q", mcpservertest.Methods(t, cf))
	}
}

func TestHTTPCredentials(t *testing.T) {
	env := append(os.Environ(), "EXAMPLE_TOKEN="+secretToken, "EXAMPLE_KEY=key-"+secretToken)
	p := mcpservertest.StartHTTP(t, exampleBin, env,
		"--require-bearer-env", "EXAMPLE_TOKEN", "--require-header", "X-Key=EXAMPLE_KEY")
	decl := func(name string) *config.ServerDecl {
		return &config.ServerDecl{Name: name, URL: p.URL, BearerTokenEnvVar: "REMOTE_TOKEN",
			EnvHTTPHeaders: map[string]string{"X-Key": "REMOTE_KEY"},
			HTTPHeaders:    map[string]string{"X-Team": "blue"}, StartupTimeout: 5 * time.Second}
	}
	m, logs := newManager(t, Options{})

	good := MapResolver("local", map[string]string{"REMOTE_TOKEN": secretToken, "REMOTE_KEY": "key-" + secretToken})
	c := mustAcquire(t, m, mustSpec(t, decl("remote"), good))
	digest := func(header string) (present bool, sum string) {
		var out struct {
			Present bool   `json:"present"`
			SHA256  string `json:"sha256"`
		}
		structured(t, callTool(t, c, "header_digest", map[string]any{"name": header}), &out)
		return out.Present, out.SHA256
	}
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	for header, want := range map[string]string{
		"Authorization": "Bearer " + secretToken, "X-Key": "key-" + secretToken, "X-Team": "blue",
	} {
		if present, sum := digest(header); !present || sum != hash(want) {
			t.Errorf("header %s did not arrive as declared (present=%v)", header, present)
		}
	}

	// A wrong token and a missing header both fail, and no error carries either credential.
	for name, r := range map[string]Resolver{
		"wrong-token": MapResolver("local", map[string]string{"REMOTE_TOKEN": "not-" + secretToken, "REMOTE_KEY": "key-" + secretToken}),
		"wrong-key":   MapResolver("local", map[string]string{"REMOTE_TOKEN": secretToken, "REMOTE_KEY": "nope"}),
	} {
		spec := mustSpec(t, decl(name), r)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := m.Acquire(ctx, spec)
		cancel()
		if err == nil {
			t.Fatalf("%s: Acquire succeeded", name)
		}
		noSecret(t, err)
		if !strings.HasPrefix(err.Error(), `MCP server "`+name+`" failed to start`) {
			t.Errorf("%s: error %q", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	if strings.Contains(logs.String(), "not-"+secretToken) {
		t.Error("the log contains the wrong token")
	}

	// A missing variable fails in BuildSpec, naming the variable, not a value.
	_, err := BuildSpec(decl("unset"), MapResolver("local", nil), BuildOptions{})
	if !errors.Is(err, ErrMissingCredential) || !strings.Contains(err.Error(), "REMOTE_") {
		t.Errorf("unset: %v", err)
	}
}

func TestToolsListChanged(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			m, _ := newManager(t, Options{})
			cf := countFile(t)
			var d *config.ServerDecl
			if transport == "stdio" {
				d = stdioDecl("dyn", "--count-file", cf)
			} else {
				d = &config.ServerDecl{Name: "dyn", URL: mcpservertest.StartHTTP(t, exampleBin, nil, "--count-file", cf).URL}
			}
			spec := mustSpec(t, d, nil)
			a := mustAcquire(t, m, spec)
			b := mustAcquire(t, m, spec)
			if len(a.Tools()) < 3 {
				t.Fatalf("tools = %v", toolNames(a.Tools()))
			}
			events := make(chan Event, 10)
			stop := b.Subscribe(func(ev Event) { events <- ev })
			defer stop()

			// Over streamable HTTP the server can only notify once the client's standalone
			// SSE stream (a GET the SDK opens asynchronously after the handshake) is up; a
			// list_changed sent before that is dropped by the server. So keep changing the
			// tool set until a notification gets through.
			sets := [][]string{{"echo", "set_tools"}, {"echo", "add", "set_tools"}}
			var got Event
			for i := 0; got.Kind != EventTools; i++ {
				if i == 20 {
					t.Fatal("no EventTools after set_tools")
				}
				callTool(t, a, "set_tools", map[string]any{"tools": sets[i%2]})
				select {
				case got = <-events:
				case <-time.After(500 * time.Millisecond):
				}
			}
			want := toolNames(a.Tools())
			if !slices.Equal(toolNames(got.Tools), want) ||
				!(slices.Equal(want, sets[0]) || slices.Equal(want, sets[1])) {
				t.Errorf("event tools %v, Tools() %v", toolNames(got.Tools), want)
			}
			if !slices.Equal(toolNames(b.Tools()), want) || slices.Contains(want, "slow") {
				t.Errorf("Tools() = %v after list_changed", toolNames(b.Tools()))
			}
			if n := mcpservertest.Count(t, cf, "tools/list"); n < 2 {
				t.Errorf("tools/list count = %d, want the startup list and a refresh", n)
			}
		})
	}
}

func TestStartupTimeout(t *testing.T) {
	m, _ := newManager(t, Options{TerminateGrace: 200 * time.Millisecond})
	d := stdioDecl("sleepy", "--startup-delay", "10s")
	d.StartupTimeout = 500 * time.Millisecond
	spec := mustSpec(t, d, nil)
	start := time.Now()
	_, err := m.Acquire(context.Background(), spec)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrStartupTimeout) {
		t.Fatalf("err = %v, want ErrStartupTimeout", err)
	}
	if !strings.HasPrefix(err.Error(), `MCP server "sleepy" did not start within 500ms`) {
		t.Errorf("err = %q", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("Acquire took %s with a 500ms startup timeout", elapsed)
	}
	// Within the backoff window a new Acquire fails fast with the same cause.
	_, err = m.Acquire(context.Background(), spec)
	if !errors.Is(err, ErrBackoff) || !errors.Is(err, ErrStartupTimeout) {
		t.Errorf("immediate re-Acquire: %v", err)
	}
	t.Log(err)
}

func TestStartupsRunConcurrently(t *testing.T) {
	m, _ := newManager(t, Options{})
	var wg sync.WaitGroup
	start := time.Now()
	for _, name := range []string{"one", "two", "three"} {
		spec := mustSpec(t, stdioDecl(name, "--startup-delay", "1s"), nil)
		wg.Go(func() { mustAcquire(t, m, spec) })
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed > 2500*time.Millisecond {
		t.Errorf("three servers with a 1s startup delay took %s: not started concurrently", elapsed)
	}
}

func TestStartFailureShowsExitAndScrubbedStderr(t *testing.T) {
	m, logs := newManager(t, Options{})
	// The server rejects its arguments and prints them to stderr; the argument happens to
	// equal a credential resolved for this server, so it must be scrubbed.
	d := stdioDecl("broken", "--tools", secretToken)
	d.EnvVars = []config.EnvVar{{Name: "TOKEN"}}
	spec := mustSpec(t, d, MapResolver("local", map[string]string{"TOKEN": secretToken}))
	_, err := m.Acquire(context.Background(), spec)
	if err == nil {
		t.Fatal("Acquire succeeded")
	}
	noSecret(t, err)
	for _, want := range []string{`MCP server "broken" failed to start`, "exit status 2", "stderr:", "[REDACTED]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("stderr was not logged (scrubbed):\n%s", logs.String())
	}
}

// waitStatus waits for an EventStatus with state st.
func waitStatus(t *testing.T, events <-chan Event, st State) Status {
	t.Helper()
	return waitEvent(t, events, fmt.Sprintf("%s status", st), func(ev Event) bool {
		return ev.Kind == EventStatus && ev.Status.State == st
	}).Status
}

// A server that dies is restarted on its own after the Backoff delay, again with a longer
// delay while restarts fail, until it is back; Release ends the restarts.
func TestCrashRestartWithBackoff(t *testing.T) {
	clk := newFakeClock()
	m, _ := newManager(t, withClock(Options{Backoff: Backoff{Initial: 300 * time.Millisecond, Max: 10 * time.Second}}, clk))
	cf := countFile(t)
	// A copy of the server binary, so that a restart can be made to fail by moving it away.
	bin := filepath.Join(t.TempDir(), "server")
	data, err := os.ReadFile(exampleBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	d := stdioDecl("crashy", "--count-file", cf)
	d.Command = bin
	c := mustAcquire(t, m, mustSpec(t, d, nil))
	events := make(chan Event, 50)
	defer c.Subscribe(func(ev Event) { events <- ev })()

	kill := func() Status {
		t.Helper()
		if err := syscall.Kill(pidOf(t, c), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return waitStatus(t, events, StateFailed)
	}
	st := kill()
	if !errors.Is(st.Err, ErrServerExited) || !strings.Contains(st.Err.Error(), "signal: killed") ||
		!strings.HasPrefix(st.Err.Error(), `MCP server "crashy"`) {
		t.Errorf("failure = %v", st.Err)
	}
	if c.Tools() != nil || c.Status().State != StateFailed {
		t.Error("a failed connection still reports tools")
	}
	if d := st.RetryAt.Sub(clk.Now()); d != 300*time.Millisecond {
		t.Errorf("first backoff %s, want 300ms", d)
	}
	// A use inside the backoff window fails fast with the cause.
	if _, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "x"}); !errors.Is(err, ErrBackoff) ||
		!errors.Is(err, ErrServerExited) {
		t.Errorf("CallTool during backoff: %v", err)
	}

	// The restart fails (no binary): the next one waits twice as long.
	if err := os.Rename(bin, bin+".away"); err != nil {
		t.Fatal(err)
	}
	tm := clk.next(t)
	if tm.d != 300*time.Millisecond {
		t.Errorf("restart timer %s, want 300ms", tm.d)
	}
	tm.fire()
	waitStatus(t, events, StateStarting)
	st = waitStatus(t, events, StateFailed)
	if !strings.Contains(st.Err.Error(), "failed to start") {
		t.Errorf("failed restart: %v", st.Err)
	}
	if err := os.Rename(bin+".away", bin); err != nil {
		t.Fatal(err)
	}
	if tm = clk.next(t); tm.d != 600*time.Millisecond {
		t.Errorf("second restart timer %s, want 600ms", tm.d)
	}
	tm.fire()
	waitStatus(t, events, StateStarting)
	waitStatus(t, events, StateReady)
	if len(c.Tools()) == 0 {
		t.Error("no tools after the restart")
	}
	callTool(t, c, "echo", map[string]any{"text": "back"})
	if d, _ := handshakes(t, cf); d != 2 {
		t.Errorf("the restart should be a second session; methods %q", mcpservertest.Methods(t, cf))
	}

	// A third failure soon after: the delay doubles again. Releasing the last handle
	// during the wait ends the restart loop (goleak checks that nothing is left).
	st = kill()
	if d := st.RetryAt.Sub(clk.Now()); d != 1200*time.Millisecond {
		t.Errorf("third backoff %s, want 1.2s", d)
	}
	clk.next(t)
	c.Release()
	if d, _ := handshakes(t, cf); d != 2 {
		t.Errorf("restarted after the last Release; methods %q", mcpservertest.Methods(t, cf))
	}
}

func TestInFlightCallOnKilledServer(t *testing.T) {
	m, _ := newManager(t, Options{Backoff: Backoff{Initial: time.Millisecond}})
	cf := countFile(t)
	c := mustAcquire(t, m, mustSpec(t, stdioDecl("victim", "--count-file", cf), nil))
	events := make(chan Event, 20)
	defer c.Subscribe(func(ev Event) { events <- ev })()
	type result struct {
		err     error
		elapsed time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		_, err := c.CallTool(context.Background(), "slow", map[string]any{"ms": 60000})
		done <- result{err, time.Since(start)}
	}()
	eventually(t, 10*time.Second, "the slow call to reach the server", func() bool {
		return mcpservertest.Count(t, cf, "tools/call") == 1
	})
	killedAt := time.Now()
	if err := syscall.Kill(pidOf(t, c), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if !errors.Is(r.err, ErrServerExited) || !strings.Contains(r.err.Error(), `tools/call "slow"`) {
			t.Errorf("in-flight call error = %v", r.err)
		}
		if d := time.Since(killedAt); d > 3*time.Second {
			t.Errorf("the call returned %s after the kill", d)
		}
		t.Log(r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight call hangs after the server was killed")
	}
	// The connection comes back on its own, and works.
	waitStatus(t, events, StateReady)
	callTool(t, c, "echo", map[string]any{"text": "again"})
}

func TestHTTPServerGoneCallFailsPromptly(t *testing.T) {
	m, _ := newManager(t, Options{})
	p := mcpservertest.StartHTTP(t, exampleBin, nil)
	c := mustAcquire(t, m, mustSpec(t, &config.ServerDecl{Name: "vanishing", URL: p.URL}, nil))
	callTool(t, c, "echo", map[string]any{"text": "hi"})
	if err := p.Stop(); err != nil {
		t.Logf("stop: %v", err)
	}
	start := time.Now()
	_, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "anyone?"})
	if err == nil || !strings.HasPrefix(err.Error(), `MCP server "vanishing"`) {
		t.Errorf("call to a stopped server: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("call to a stopped server took %s", el)
	}
	t.Log(err)
}

func TestAcquireAfterCanceledStartIsNotHeldBack(t *testing.T) {
	m, _ := newManager(t, Options{TerminateGrace: 200 * time.Millisecond})
	spec := mustSpec(t, stdioDecl("impatient", "--startup-delay", "300ms"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Acquire(ctx, spec); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// The abandoned start was the caller's choice, not a server failure: no backoff.
	mustAcquire(t, m, spec)
}

func TestToolTimeout(t *testing.T) {
	m, _ := newManager(t, Options{})
	cf := countFile(t)
	d := stdioDecl("tardy", "--count-file", cf)
	d.ToolTimeout = 300 * time.Millisecond
	c := mustAcquire(t, m, mustSpec(t, d, nil))
	start := time.Now()
	_, err := c.CallTool(context.Background(), "slow", map[string]any{"ms": 10000})
	if !errors.Is(err, ErrToolTimeout) || !strings.Contains(err.Error(), `did not answer tools/call "slow" within 300ms`) {
		t.Errorf("err = %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("timed-out call took %s", el)
	}
	// The session survives a timeout: the next call works on it, and the server was told
	// to cancel.
	callTool(t, c, "echo", map[string]any{"text": "still here"})
	if d, _ := handshakes(t, cf); d != 1 {
		t.Errorf("a tool timeout restarted the session; methods %q", mcpservertest.Methods(t, cf))
	}
	eventually(t, 5*time.Second, "notifications/cancelled", func() bool {
		return mcpservertest.Count(t, cf, "notifications/cancelled") >= 1
	})
	// An unknown tool is the server's answer, not a broken session.
	if _, err := c.CallTool(context.Background(), "no_such_tool", nil); err == nil ||
		!strings.HasPrefix(err.Error(), `MCP server "tardy" rejected tools/call "no_such_tool"`) {
		t.Errorf("unknown tool: %v", err)
	} else {
		t.Log(err)
	}
	if st := c.Status(); st.State != StateReady {
		t.Errorf("status after an unknown tool: %+v", st)
	}
	// A tool error is a result, not an error.
	res, err := c.CallTool(context.Background(), "fail", map[string]any{"message": "nope"})
	if err != nil || !res.IsError {
		t.Errorf("fail tool: res=%v err=%v", res, err)
	}
}

func TestProtocolInterop(t *testing.T) {
	type server struct {
		name string
		http bool
		args []string
	}
	servers := []server{
		{"stdio-all", false, nil},
		{"stdio-2024-11-05", false, []string{"--protocol-versions", "2024-11-05"}},
		{"stdio-2026-07-28-only", false, []string{"--protocol-versions", "2026-07-28"}},
		{"http-stateful-all", true, nil},
		{"http-2025-06-18", true, []string{"--protocol-versions", "2025-06-18"}},
		{"http-stateless-2026-07-28-only", true, []string{"--stateless", "--protocol-versions", "2026-07-28"}},
	}
	m, _ := newManager(t, Options{})
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			d := stdioDecl(sv.name, sv.args...)
			if sv.http {
				d = &config.ServerDecl{Name: sv.name, URL: mcpservertest.StartHTTP(t, exampleBin, nil, sv.args...).URL}
			}
			c := mustAcquire(t, m, mustSpec(t, d, nil))
			var out struct{ Sum float64 }
			structured(t, callTool(t, c, "add", map[string]any{"a": 2, "b": 3}), &out)
			if out.Sum != 5 || len(c.Tools()) == 0 {
				t.Errorf("sum = %v, tools = %v", out.Sum, toolNames(c.Tools()))
			}
			t.Logf("negotiated %s", c.Status().ProtocolVersion)
		})
	}
}

func TestManagerClose(t *testing.T) {
	m, _ := newManager(t, Options{IdleGrace: time.Hour})
	spec := mustSpec(t, stdioDecl("closing"), nil)
	c := mustAcquire(t, m, spec)
	idle := mustAcquire(t, m, mustSpec(t, stdioDecl("idle-at-close"), nil))
	idle.Release() // now in its (hour-long) grace period
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("CallTool after Close: %v", err)
	}
	if st := c.Status(); st.State != StateFailed || !errors.Is(st.Err, ErrClosed) {
		t.Errorf("Status after Close: %+v", st)
	}
	if _, err := m.Acquire(context.Background(), spec); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	c.Release()
}

func TestAcquireContextCanceled(t *testing.T) {
	m, _ := newManager(t, Options{TerminateGrace: 200 * time.Millisecond})
	spec := mustSpec(t, stdioDecl("waiting", "--startup-delay", "5s"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := m.Acquire(ctx, spec); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Acquire ignored its context for %s", el)
	}
}

// pidOf is the process id of a ready stdio connection's server.
func pidOf(t *testing.T, c *Conn) int {
	t.Helper()
	c.s.mu.Lock()
	sess := c.s.sess
	c.s.mu.Unlock()
	if sess == nil {
		t.Fatal("connection not ready")
	}
	pid := int(sess.pid.Load())
	if pid == 0 {
		t.Fatal("no process")
	}
	return pid
}
