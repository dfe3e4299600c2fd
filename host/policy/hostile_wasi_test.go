package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// hardBound is how long a test waits for a call that should have ended
// long before: a failure bound, never the assertion.
const hardBound = 30 * time.Second

// deadlineMargin is the fixed scheduling slack allowed on top of twice a
// deadline: make test runs every package at once under -race on two cores,
// where a goroutine may wait a few hundred milliseconds for a CPU. It is
// far below what an unbounded host function costs (seconds to hours).
const deadlineMargin = 300 * time.Millisecond

// bounded runs fn on its own goroutine and returns how long it took and
// its error. It fails the test (without waiting further) when fn has not
// returned within hardBound: the host is stuck.
func bounded(t *testing.T, what string, fn func() error) (time.Duration, error) {
	t.Helper()
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		err := fn()
		done <- result{err, time.Since(start)}
	}()
	select {
	case r := <-done:
		return r.took, r.err
	case <-time.After(hardBound):
		t.Fatalf("%s: still running after %v: the host is stuck", what, hardBound)
		return 0, nil
	}
}

var timeoutText = regexp.MustCompile(`^timed out after ([0-9.]+(?:µs|ms|s)) \(limit ([0-9.]+(?:µs|ms|s))\)$`)

// checkTimeoutText asserts that err's text is prefix followed by "timed out
// after T (limit L)" with L = limit and T >= L: the time the call took, not
// the configured deadline.
func checkTimeoutText(t *testing.T, err error, prefix string, limit time.Duration) {
	t.Helper()
	text, ok := strings.CutPrefix(err.Error(), prefix)
	if !ok {
		t.Fatalf("error %q does not start with %q", err, prefix)
	}
	m := timeoutText.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("error %q: want %q followed by \"timed out after <took> (limit %v)\"", err, prefix, limit)
	}
	took, err1 := time.ParseDuration(m[1])
	lim, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("error %q: unparsable durations: %v, %v", err, err1, err2)
	}
	if lim != limit {
		t.Errorf("error %q: limit %v, want %v", err, lim, limit)
	}
	if took < limit {
		t.Errorf("error %q: took %v, less than the %v limit it exceeded", err, took, limit)
	}
}

// TestStartSectionRefused: a module with a wasm start section is refused at
// Load, before it is compiled or instantiated, whatever its start function
// does; the one that loops forever would otherwise run inside instantiation
// with no deadline and hang the host.
func TestStartSectionRefused(t *testing.T) {
	rt := newRuntime(t, Config{})
	cases := []struct {
		name, guest string
		fn          int
	}{
		{"start loops forever", "start_loops", 0},
		{"start returns, next to _initialize", "start_noop", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wasm := wat(t, tc.guest)
			took, err := bounded(t, "Load", func() error {
				_, err := rt.Load(context.Background(), LoadOptions{ID: "start@1", Wasm: wasm})
				return err
			})
			if err == nil {
				t.Fatal("Load succeeded, want ErrStartSection")
			}
			asError(t, err, "start@1", CauseLoad)
			if !errors.Is(err, ErrStartSection) {
				t.Errorf("errors.Is(err, ErrStartSection) = false: %v", err)
			}
			want := fmt.Sprintf(`policy plugin "start@1": the module has a start section (function %d): policies are reactors and run no code at instantiation (initialize in "_initialize", which the host runs under the init timeout)`, tc.fn)
			if err.Error() != want {
				t.Errorf("error\n got: %q\nwant: %q", err, want)
			}
			if took > time.Second {
				t.Errorf("Load took %v, want a fraction of a second", took)
			}
		})
	}
	// The runtime still loads and serves good modules.
	m := mustLoad(t, rt, LoadOptions{ID: "good@1", Wasm: wat(t, "good")})
	out, err := m.Servers(context.Background(), serversIn("t"))
	checkGood(t, out, err)
}

// TestHostileWASIFloods: a hook that floods one host function (WASI or
// warden.log) with guest-sized work in a loop fails with CauseTimeout
// within twice its deadline (plus a fixed margin), reports the time it
// took, and the module keeps serving from a fresh instance.
func TestHostileWASIFloods(t *testing.T) {
	// 200ms rather than the 50ms default: the bound asserted is relative,
	// and the test machine is shared.
	const timeout = 200 * time.Millisecond
	logs := &testmain.SyncBuffer{}
	rt := newRuntime(t, Config{PoolSize: 1, Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})})
	m := mustLoad(t, rt, LoadOptions{ID: "hostile@1", Wasm: wat(t, "hostile_wasi"), MemoEntries: -1,
		Limits: Limits{Timeout: timeout}})
	cases := []struct {
		name string
		mode byte
	}{
		{"fd_write 1M iovecs over all memory", 'W'},
		{"fd_write 1024 iovecs over 64 MiB (stdout)", 'w'},
		{"fd_write 1024 iovecs over 64 MiB (stderr)", 'e'},
		{"random_get of 64 MiB", 'R'},
		{"poll_oneoff with 800k subscriptions", 'P'},
		{"fd_read with 8M iovecs", 'r'},
		{"path_open with a 64 MiB path", 'O'},
		{"warden.log of 64 MiB", 'L'},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			took, err := bounded(t, "hook call", func() error {
				_, err := m.Call(context.Background(), abi.HookServers, []byte{tc.mode})
				return err
			})
			t.Logf("%v after %v", err, took)
			asError(t, err, "hostile@1", CauseTimeout)
			checkTimeoutText(t, err, `policy plugin "hostile@1" hook servers: `, timeout)
			if limit := 2*timeout + deadlineMargin; took > limit {
				t.Errorf("the call took %v, want at most %v (2x the %v deadline + %v)", took, limit, timeout, deadlineMargin)
			}
			// A fresh instance answers.
			_, err = bounded(t, "call afterwards", func() error {
				out, err := m.Call(context.Background(), abi.HookServers, []byte{'g'})
				if err == nil && len(out) != 0 {
					err = fmt.Errorf("output %x, want empty", out)
				}
				return err
			})
			if err != nil {
				t.Fatalf("call afterwards: %v", err)
			}
		})
	}
	if !strings.Contains(logs.String(), "guest stdout/stderr bytes dropped unread (per-call limit)") {
		t.Errorf("no log of the dropped stdout/stderr bytes; logs:\n%.2000s", logs)
	}
}

// TestHostileWASIInit: the same floods inside _initialize make Load fail
// within twice the InitTimeout (plus a fixed margin), and the runtime keeps
// loading and serving other modules.
func TestHostileWASIInit(t *testing.T) {
	const initTimeout = 200 * time.Millisecond
	rt := newRuntime(t, Config{PoolSize: 1})
	for _, guest := range []string{"init_fd_write_flood", "init_fd_write_budget"} {
		t.Run(guest, func(t *testing.T) {
			wasm := wat(t, guest)
			took, err := bounded(t, "Load", func() error {
				_, err := rt.Load(context.Background(), LoadOptions{ID: "init@1", Wasm: wasm, Limits: Limits{InitTimeout: initTimeout}})
				return err
			})
			t.Logf("%v after %v", err, took)
			if err == nil {
				t.Fatal("Load succeeded, want an _initialize timeout")
			}
			asError(t, err, "init@1", CauseLoad)
			checkTimeoutText(t, err, `policy plugin "init@1": _initialize(): `, initTimeout)
			if limit := 2*initTimeout + deadlineMargin; took > limit {
				t.Errorf("Load took %v, want at most %v (2x the %v init timeout + %v)", took, limit, initTimeout, deadlineMargin)
			}
		})
	}
	m := mustLoad(t, rt, LoadOptions{ID: "good@1", Wasm: wat(t, "good")})
	out, err := m.Servers(context.Background(), serversIn("t"))
	checkGood(t, out, err)
}

// TestWASICaps: the per-call caps and the sandbox's answers, probed by a
// guest that proc_exits with what one call returned.
func TestWASICaps(t *testing.T) {
	rt := newRuntime(t, Config{PoolSize: 1})
	m := mustLoad(t, rt, LoadOptions{ID: "probe@1", Wasm: wat(t, "hostile_wasi"), MemoEntries: -1})
	cases := []struct {
		name string
		mode byte
		code uint32
	}{
		{"fd_write with 1025 iovecs: EINVAL", '1', errnoInval},
		{"fd_read with 1025 iovecs: EINVAL", '2', errnoInval},
		{"poll_oneoff with 65 subscriptions: EINVAL", '3', errnoInval},
		{"fd_close(stdout): ENOTSUP", '4', errnoNotsup},
		{"fd_write of 1024 iovecs of 3 bytes: 3072 written", '5', 3072},
		{"poll_oneoff with a clock subscription: one event", '6', 101},
		{"path_open on stdout: ENOTDIR", '7', errnoNotdir},
		{"path_open with a path past memory: EFAULT", '8', errnoFault},
		{"fd_read of stdin: EOF", '9', 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Call(context.Background(), abi.HookServers, []byte{tc.mode})
			asError(t, err, "probe@1", CauseExit)
			if want := fmt.Sprintf(`policy plugin "probe@1" hook servers: guest exited with code %d`, tc.code); err.Error() != want {
				t.Errorf("error\n got: %q\nwant: %q", err, want)
			}
		})
	}
}

// TestWASISignatures: every replaced WASI function has the signature of
// wazero's builtin (Go and C guests import them by that signature), and
// the sandbox offers exactly the builtins' names.
func TestWASISignatures(t *testing.T) {
	ctx := context.Background()
	ref := wazero.NewRuntime(ctx)
	defer ref.Close(ctx)
	builtin, err := wasi_snapshot_preview1.Instantiate(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	want := builtin.(api.Module).ExportedFunctionDefinitions()
	rt := newRuntime(t, Config{})
	got := rt.wasiFuncs
	if len(got) != len(want) {
		t.Errorf("the sandbox offers %d WASI functions, wazero %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if defSignature(g) != defSignature(w) {
			t.Errorf("%s: signature %s, builtin %s", name, defSignature(g), defSignature(w))
		}
		if strings.Join(g.ParamNames(), ",") != strings.Join(w.ParamNames(), ",") {
			t.Errorf("%s: parameters %v, builtin %v", name, g.ParamNames(), w.ParamNames())
		}
	}
	for _, o := range wasiOverrides() {
		if _, ok := want[o.name]; !ok {
			t.Errorf("override %s replaces no builtin", o.name)
		}
	}
}
