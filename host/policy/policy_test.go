package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero/sys"
	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// compileCacheDir is wazero's on-disk compilation cache shared by the runtimes the tests
// create (newRuntime) and by the other packages' tests (testbuild.WazeroCacheDir), so that
// each guest is compiled once, not once per runtime — seconds per 2 MB Go guest under the
// race detector. Tests of compilation itself give their own directory or module. Set once
// by TestMain.
var compileCacheDir string

func TestMain(m *testing.M) {
	dir, err := testbuild.WazeroCacheDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	compileCacheDir = dir
	goleak.VerifyTestMain(m)
}

func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.CompilationCacheDir == "" {
		cfg.CompilationCacheDir = compileCacheDir
	}
	rt, err := NewRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("Runtime.Close: %v", err)
		}
	})
	return rt
}

func wat(t testing.TB, name string) []byte {
	t.Helper()
	return testbuild.WAT(t, filepath.Join("testdata", "guests", name+".wat"))
}

func mustLoad(t testing.TB, rt *Runtime, opts LoadOptions) *Module {
	t.Helper()
	m, err := rt.Load(context.Background(), opts)
	if err != nil {
		t.Fatalf("Load(%s): %v", opts.ID, err)
	}
	return m
}

func serversIn(threadID string) *abi.ServersInput {
	return &abi.ServersInput{Thread: abi.Thread{ID: threadID}}
}

// goodOutput is what good.wat (and evil.wat in good mode) answers.
const goodOutput = "\x0a\x13\x0a\x02fs\x10\x02\x1a\x0bwat says no"

func checkGood(t testing.TB, out *abi.ServersOutput, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("good call failed: %v", err)
	}
	if len(out.Decisions) != 1 {
		t.Fatalf("decisions = %+v, want one", out.Decisions)
	}
	d := out.Decisions[0]
	if d.Name != "fs" || d.Action != abi.ServerHide || d.Reason != "wat says no" {
		t.Fatalf("decision = %+v, want fs/hide/\"wat says no\"", d)
	}
}

// asError asserts err is a *Error for plugin id with the given cause.
func asError(t testing.TB, err error, id string, cause Cause) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *policy.Error", err, err)
	}
	if pe.PluginID != id || pe.Cause != cause {
		t.Fatalf("error = {plugin %q, cause %v}, want {plugin %q, cause %v}: %v", pe.PluginID, pe.Cause, id, cause, err)
	}
	if !errors.Is(err, cause.Sentinel()) {
		t.Errorf("errors.Is(err, %v) = false", cause.Sentinel())
	}
	return pe
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWATGuestServers(t *testing.T) {
	logs := &testmain.SyncBuffer{}
	rt := newRuntime(t, Config{Logger: hclog.New(&hclog.LoggerOptions{Name: "warden", Output: logs, Level: hclog.Trace})})
	m := mustLoad(t, rt, LoadOptions{ID: "good@1", Wasm: wat(t, "good")})

	if got := m.Hooks(); got != abi.HookServers {
		t.Errorf("Hooks() = %v, want servers", got)
	}
	if got, want := m.Digest(), sha256.Sum256(wat(t, "good")); got != want {
		t.Errorf("Digest() = %x, want %x", got, want)
	}
	if m.ID() != "good@1" {
		t.Errorf("ID() = %q", m.ID())
	}

	t.Run("typed", func(t *testing.T) {
		out, err := m.Servers(context.Background(), serversIn("t1"))
		checkGood(t, out, err)
	})
	t.Run("raw", func(t *testing.T) {
		in := serversIn("t2").AppendTo(nil)
		out, err := m.Call(context.Background(), abi.HookServers, in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, []byte(goodOutput)) {
			t.Fatalf("output = %x, want %x", out, goodOutput)
		}
		out[0] = 0xff // the caller owns the copy: the memo must be unaffected
		again, err := m.Call(context.Background(), abi.HookServers, in)
		if err != nil || !bytes.Equal(again, []byte(goodOutput)) {
			t.Fatalf("second output = %x, %v; want %x", again, err, goodOutput)
		}
	})
	t.Run("append", func(t *testing.T) {
		// AppendCall appends to the caller's buffer, first computed and
		// then from the memo; the memo keeps its own copy.
		in := serversIn("t3").AppendTo(nil)
		buf := []byte("prefix:")
		for i := range 2 {
			out, err := m.AppendCall(context.Background(), abi.HookServers, in, buf)
			if err != nil {
				t.Fatal(err)
			}
			if want := "prefix:" + goodOutput; string(out) != want {
				t.Fatalf("call %d: output = %q, want %q", i, out, want)
			}
			clear(out) // the caller owns the bytes it got
		}
		out, err := m.AppendCall(context.Background(), abi.HookServers, in, nil)
		if err != nil || string(out) != goodOutput {
			t.Fatalf("AppendCall(nil) = %q, %v; want %q", out, err, goodOutput)
		}
	})
	t.Run("missing hook", func(t *testing.T) {
		_, err := m.ToolCall(context.Background(), &abi.ToolCallInput{Tool: "x"})
		pe := asError(t, err, "good@1", CauseMissingHook)
		if pe.Hook != abi.HookToolCall {
			t.Errorf("Hook = %v", pe.Hook)
		}
		want := `policy plugin "good@1" hook tool_call: hook not implemented (the module implements servers)`
		if err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("guest log", func(t *testing.T) {
		if !strings.Contains(logs.String(), "[DEBUG] warden.good@1: hello from wat: hook=servers") {
			t.Errorf("guest log line missing; logs:\n%s", logs)
		}
	})
}

// TestGatheredOutput: a gathered output (docs/abi.md §7.1) from a
// non-Go guest, a literal chunk and a reference, gives the same output as
// the protobuf bytes it describes. (The Go SDK's gathered outputs are
// exercised by every example policy test; the malformed ones by
// TestAdversarialGuests.)
func TestGatheredOutput(t *testing.T) {
	rt := newRuntime(t, Config{})
	m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), MemoEntries: -1})
	out, err := m.Servers(context.Background(), serversIn("g"))
	checkGood(t, out, err)
	raw, err := m.AppendCall(context.Background(), abi.HookServers, serversIn("g").AppendTo(nil), []byte("prefix:"))
	if want := "prefix:\x0a\x13\x0a\x02fs\x10\x02\x1a\x0bwat says no"; err != nil || string(raw) != want {
		t.Fatalf("AppendCall = %q, %v; want %q", raw, err, want)
	}
}

// adversarialCase is one misbehaviour of evil.wat, selected by the last
// byte of the input (the thread id).
type adversarialCase struct {
	name    string
	mode    string
	cause   Cause
	text    string // exact error text, or a prefix when prefix is set
	prefix  bool
	discard bool // the instance must be closed and replaced
	// slow runs the case on a module with a 10s timeout (for a guest whose
	// failure may take longer than the default deadline).
	slow  bool
	check func(t *testing.T, err error, parentCtx context.Context)
}

func TestAdversarialGuests(t *testing.T) {
	rt := newRuntime(t, Config{})
	evil := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), Limits: Limits{MemoryMB: 16}, MemoEntries: -1})
	evilSlow := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), Limits: Limits{MemoryMB: 16, Timeout: 10 * time.Second}, MemoEntries: -1})
	// The good module's generous timeout: this test checks that it keeps
	// answering correctly while the evil one misbehaves on a busy 2-core
	// machine, not its latency.
	good := mustLoad(t, rt, LoadOptions{ID: "good", Wasm: wat(t, "good"), MemoEntries: -1, Limits: Limits{Timeout: 5 * time.Second}})

	const p = `policy plugin "evil" hook servers: `
	cases := []adversarialCase{
		{name: "infinite loop", mode: "L", cause: CauseTimeout, text: p + "timed out after ", prefix: true, discard: true,
			check: func(t *testing.T, err error, parent context.Context) {
				checkTimeoutText(t, err, p, 50*time.Millisecond)
				// The per-call deadline ended it: the caller's own ctx is live.
				if parent.Err() != nil {
					t.Errorf("parent ctx done: %v", parent.Err())
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("errors.Is(err, context.DeadlineExceeded) = false")
				}
			}},
		// slow: growing to 16 MiB page by page takes ~5-150ms (race detector).
		{name: "memory bomb", mode: "M", cause: CauseMemory, text: p + "hit the 16 MiB memory limit (trapped: wasm error: unreachable)", discard: true, slow: true},
		{name: "huge grow", mode: "B", cause: CauseMemory, text: p + "hit the 16 MiB memory limit (trapped: wasm error: unreachable)", discard: true},
		{name: "trap", mode: "T", cause: CauseTrap, text: p + "trapped: wasm error: unreachable", discard: true},
		// Unbounded recursion crosses the depth bound the instrumentation
		// adds (interrupt.MaxStack of estimated frames) after a few ms,
		// long before this module's 10s deadline; wazero's own stack
		// ceiling (≈160 MB allocated on the host first) is never reached.
		// (With a deadline of a few ms the deadline may come first.)
		{name: "deep recursion", mode: "R", cause: CauseTrap, text: p + "trapped: call stack too deep (over the 8 MiB the host allows)", discard: true, slow: true},
		{name: "proc_exit", mode: "X", cause: CauseExit, text: p + "guest exited with code 3", discard: true,
			check: func(t *testing.T, err error, _ context.Context) {
				var exit *sys.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 3 {
					t.Errorf("want *sys.ExitError with code 3, got %v", err)
				}
			}},
		{name: "garbage output", mode: "G", cause: CauseMalformedOutput, text: p + "malformed output: ", prefix: true, discard: true,
			check: func(t *testing.T, err error, _ context.Context) {
				var de *abi.DecodeError
				if !errors.As(err, &de) {
					t.Errorf("want an *abi.DecodeError inside, got %v", err)
				}
			}},
		{name: "output out of bounds", mode: "O", cause: CauseMalformedOutput, text: p + "malformed output: [0xffff0000, 0xffff0064) is outside the 131072-byte guest memory", discard: true},
		{name: "output over cap", mode: "S", cause: CauseOutputTooLarge, text: p + "output of 2097152 bytes exceeds the 1048576-byte cap", discard: true},
		{name: "guest error", mode: "E", cause: CauseGuestError, text: p + "guest reported error: nope", discard: false},
		{name: "gathered: bad header", mode: "h", cause: CauseMalformedOutput, text: p + "malformed gathered output: bad header 00 01 00 00", discard: true},
		{name: "gathered: reference out of bounds", mode: "r", cause: CauseMalformedOutput, text: p + "malformed gathered output: reference [0xfffffff0, 0x100000000) at byte 4 is outside the 131072-byte guest memory", discard: true},
		{name: "gathered: literal past the end", mode: "l", cause: CauseMalformedOutput, text: p + "malformed gathered output: literal of 64 bytes at byte 4 runs past the output", discard: true},
		{name: "gathered: truncated chunk", mode: "k", cause: CauseMalformedOutput, text: p + "malformed gathered output: truncated chunk at byte 4", discard: true},
		{name: "gathered: over cap", mode: "z", cause: CauseOutputTooLarge, text: p + "gathered output exceeds the 1048576-byte cap", discard: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			evil := evil
			if tc.slow {
				evil = evilSlow
			}
			// A different, good module keeps answering in parallel.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var goodCalls atomic.Int64
			goodErrs := make(chan error, 4)
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						out, err := good.Servers(ctx, serversIn(fmt.Sprint("g", goodCalls.Load())))
						if err == nil && (len(out.Decisions) != 1 || out.Decisions[0].Name != "fs") {
							err = fmt.Errorf("good module answered %+v", out)
						}
						if err != nil {
							goodErrs <- err
							return
						}
						goodCalls.Add(1)
					}
				}()
			}

			before := evil.created.Load()
			start := time.Now()
			_, err := evil.Servers(ctx, serversIn(tc.mode))
			elapsed := time.Since(start)
			t.Logf("%s: %v after %v", tc.name, err, elapsed)
			pe := asError(t, err, "evil", tc.cause)
			if pe.Hook != abi.HookServers {
				t.Errorf("Hook = %v", pe.Hook)
			}
			if tc.prefix && !strings.HasPrefix(err.Error(), tc.text) || !tc.prefix && err.Error() != tc.text {
				t.Errorf("error text\n got: %q\nwant: %q", err.Error(), tc.text)
			}
			if tc.check != nil {
				tc.check(t, err, ctx)
			}

			// The same module still answers a good call.
			out, err := evil.Servers(ctx, serversIn("ok"))
			checkGood(t, out, err)

			if tc.discard {
				waitFor(t, "a replacement instance", func() bool { return evil.created.Load() == before+1 })
			} else if n := evil.created.Load(); n != before {
				t.Errorf("instances created = %d, want %d (a guest error must not discard the instance)", n-before, 0)
			}

			// Let the good module run a little after the failure too.
			waitFor(t, "good calls", func() bool { return goodCalls.Load() > 5 })
			close(stop)
			wg.Wait()
			select {
			case err := <-goodErrs:
				t.Fatalf("the good module failed while the evil one misbehaved: %v", err)
			default:
			}
		})
	}
}

// TestRecursionAllocation: the call stack of a recursing guest lives
// outside its linear memory (wazero grows it with Go allocations), so the
// depth bound is what keeps it small: without it one call of the
// recursing guest allocated ≈160 MB on the host, with it ≈20 MB.
func TestRecursionAllocation(t *testing.T) {
	rt := newRuntime(t, Config{})
	m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), Limits: Limits{MemoryMB: 16, Timeout: time.Minute}, MemoEntries: -1})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := m.Servers(context.Background(), serversIn("R"))
	runtime.ReadMemStats(&after)
	asError(t, err, "evil", CauseTrap)
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 48 {
		t.Errorf("one recursing call allocated %d MB on the host, want at most 48", mb)
	}
}

func TestTimeoutsAndCancellation(t *testing.T) {
	rt := newRuntime(t, Config{})
	t.Run("per-module timeout", func(t *testing.T) {
		m := mustLoad(t, rt, LoadOptions{ID: "evil-10ms", Wasm: wat(t, "evil"), Limits: Limits{Timeout: 10 * time.Millisecond}})
		_, err := m.Servers(context.Background(), serversIn("L"))
		asError(t, err, "evil-10ms", CauseTimeout)
		checkTimeoutText(t, err, `policy plugin "evil-10ms" hook servers: `, 10*time.Millisecond)
	})
	t.Run("caller cancels", func(t *testing.T) {
		m := mustLoad(t, rt, LoadOptions{ID: "evil-slow", Wasm: wat(t, "evil"), Limits: Limits{Timeout: time.Minute}})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := m.Servers(ctx, serversIn("L"))
		asError(t, err, "evil-slow", CauseCanceled)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("errors.Is(err, context.Canceled) = false: %v", err)
		}
		out, err := m.Servers(context.Background(), serversIn("ok"))
		checkGood(t, out, err)
	})
	t.Run("wait for a busy pool", func(t *testing.T) {
		rt := newRuntime(t, Config{PoolSize: 1, MaxInstances: 2})
		m := mustLoad(t, rt, LoadOptions{ID: "evil-busy", Wasm: wat(t, "evil"), Limits: Limits{Timeout: 300 * time.Millisecond}, MemoEntries: -1})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = m.Servers(context.Background(), serversIn("L"))
			}()
		}
		waitFor(t, "both instances busy", func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.live == 2 && len(m.idle) == 0 && m.created.Load() == 2
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := m.Servers(ctx, serversIn("ok"))
		asError(t, err, "evil-busy", CauseCanceled)
		if !strings.Contains(err.Error(), "canceled while waiting for an instance") {
			t.Errorf("error = %v", err)
		}
		wg.Wait()
		// Both looping instances were discarded and replaced; calls work again.
		out, err := m.Servers(context.Background(), serversIn("ok"))
		checkGood(t, out, err)
		m.mu.Lock()
		live := m.live
		m.mu.Unlock()
		if live > 2 {
			t.Errorf("live instances = %d, over MaxInstances 2", live)
		}
	})
}

func TestAllocFailure(t *testing.T) {
	rt := newRuntime(t, Config{})
	m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), MemoEntries: -1})
	// evil's warden_alloc refuses more than 32 KiB.
	_, err := m.Servers(context.Background(), serversIn(strings.Repeat("x", 40<<10)))
	asError(t, err, "evil", CauseMemory)
	if want := `policy plugin "evil" hook servers: warden_alloc(65536) returned 0 (out of memory)`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	out, err := m.Servers(context.Background(), serversIn("ok"))
	checkGood(t, out, err)
}

func TestGuestLogging(t *testing.T) {
	logs := &testmain.SyncBuffer{}
	rt := newRuntime(t, Config{
		Logger:                hclog.New(&hclog.LoggerOptions{Name: "warden", Output: logs, Level: hclog.Trace}),
		MaxLogMessagesPerCall: 5,
	})
	m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), MemoEntries: -1})
	out, err := m.Servers(context.Background(), serversIn("W"))
	checkGood(t, out, err)
	text := logs.String()
	if n := strings.Count(text, "evil guest called"); n != 5 {
		t.Errorf("%d guest messages logged, want 5 (the per-call limit); logs:\n%s", n, text)
	}
	if !strings.Contains(text, "[WARN]  warden.evil: guest log messages dropped (per-call limit): hook=servers dropped=996 limit=5") {
		t.Errorf("no dropped-messages warning; logs:\n%s", text)
	}
	// The budget is per call.
	out, err = m.Servers(context.Background(), serversIn("ok"))
	checkGood(t, out, err)
	if n := strings.Count(logs.String(), "evil guest called"); n != 6 {
		t.Errorf("%d guest messages logged after a second call, want 6", n)
	}
}

// oneFunctionModule returns a module with one table and one () -> ()
// function whose body is the local declarations locals followed by code.
func oneFunctionModule(locals []byte, code ...byte) []byte {
	body := append(append([]byte{}, locals...), code...)
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, 1, 4, 1, 0x60, 0, 0) // type section: () -> ()
	m = append(m, 3, 2, 1, 0)          // function section: one function of type 0
	m = append(m, 4, 4, 1, 0x70, 0, 1) // table section: funcref, min 1
	size := binary.AppendUvarint(nil, uint64(len(body)))
	sec := append(append([]byte{1}, size...), body...)
	m = append(m, 10)
	m = binary.AppendUvarint(m, uint64(len(sec)))
	return append(m, sec...)
}

func TestLoadRejections(t *testing.T) {
	rt := newRuntime(t, Config{})
	good := wat(t, "good")
	goodSum := sha256.Sum256(good)
	dir := t.TempDir()
	goodPath := filepath.Join(dir, "good.wasm")
	if err := os.WriteFile(goodPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 64)

	cases := []struct {
		name     string
		opts     LoadOptions
		sentinel error
		contains []string
	}{
		{"unknown import module", LoadOptions{Wasm: wat(t, "bad_import_env")}, ErrForbiddenImport,
			[]string{`import "env"."now" is not allowed`}},
		{"unknown warden import", LoadOptions{Wasm: wat(t, "bad_import_warden")}, ErrForbiddenImport,
			[]string{`import "warden"."exec" is not offered by the host`}},
		{"warden.log wrong signature", LoadOptions{Wasm: wat(t, "bad_import_log_sig")}, ErrForbiddenImport,
			[]string{`import "warden"."log" has signature (i32,i32)->(), expected (i32,i32,i32)->()`}},
		{"WASI wrong signature", LoadOptions{Wasm: wat(t, "bad_import_wasi_sig")}, ErrForbiddenImport,
			[]string{`import "wasi_snapshot_preview1"."proc_exit" has signature (i64)->(), expected (i32)->()`}},
		{"unknown WASI function", LoadOptions{Wasm: wat(t, "bad_import_wasi_name")}, ErrForbiddenImport,
			[]string{`import "wasi_snapshot_preview1"."sock_connect" is not a WASI preview1 function`}},
		{"global import", LoadOptions{Wasm: wat(t, "bad_import_global")}, ErrForbiddenImport,
			[]string{`import "env"."g" is a global`}},
		{"memory import", LoadOptions{Wasm: wat(t, "bad_import_memory")}, ErrForbiddenImport,
			[]string{`import "env"."memory" is a memory`}},
		{"missing warden_abi_version", LoadOptions{Wasm: wat(t, "no_abi_version")}, ErrBadExport,
			[]string{`missing export "warden_abi_version", expected signature ()->(i32)`}},
		{"missing memory", LoadOptions{Wasm: wat(t, "no_memory")}, ErrBadExport,
			[]string{`missing export "memory"`}},
		{"_start export", LoadOptions{Wasm: wat(t, "command")}, ErrCommandModule,
			[]string{`exports "_start"`, "reactors"}},
		{"hook with wrong signature", LoadOptions{Wasm: wat(t, "wrong_hook_sig")}, ErrBadExport,
			[]string{`export "warden_servers" has signature (i32)->(i64), expected (i32,i32)->(i64)`}},
		{"alloc with wrong signature", LoadOptions{Wasm: wat(t, "wrong_alloc_sig")}, ErrBadExport,
			[]string{`export "warden_alloc" has signature (i64)->(i32), expected (i32)->(i32)`}},
		{"no hook", LoadOptions{Wasm: wat(t, "no_hooks")}, ErrNoHooks,
			[]string{"exports no hook"}},
		{"wrong ABI version", LoadOptions{Wasm: wat(t, "abi_v3")}, ErrABIVersion,
			[]string{"warden_abi_version() returned 3, but this host implements ABI versions 1 to 2"}},
		{"version 1 guest exporting a version 2 hook", LoadOptions{Wasm: wat(t, "v1_exports_v2_hook")}, ErrABIVersion,
			[]string{`the module exports "warden_tool_result", a hook of ABI version 2, but warden_abi_version() returned 1`}},
		{"version 1 guest claiming a version 2 hook", LoadOptions{Wasm: wat(t, "v1_hooks_mask_v2")}, ErrBadExport,
			[]string{"warden_hooks() returned 0x9, which has bits for no hook of ABI version 1 (resource_read)"}},
		{"warden_hooks claims a missing export", LoadOptions{Wasm: wat(t, "hooks_mask_lies")}, ErrBadExport,
			[]string{`warden_hooks() reports tool_call but the module does not export "warden_tool_call"`}},
		{"_initialize traps", LoadOptions{Wasm: wat(t, "init_traps")}, ErrLoad,
			[]string{"_initialize(): trapped: wasm error: unreachable"}},
		{"_initialize loops", LoadOptions{Wasm: wat(t, "init_loops"), Limits: Limits{InitTimeout: 50 * time.Millisecond}}, ErrLoad,
			[]string{"_initialize(): timed out after ", "ms (limit 50ms)"}},
		{"warden_alloc returns 0", LoadOptions{Wasm: wat(t, "alloc_zero")}, ErrLoad,
			[]string{"warden_alloc(4096) returned 0 (out of memory)"}},
		{"initial memory over the limit", LoadOptions{Wasm: wat(t, "big_memory")}, ErrBadExport,
			[]string{`memory "memory" needs 2048 pages (131072 KiB) initially, over the 64 MiB limit`}},
		{"digest pin mismatch (bytes)", LoadOptions{Wasm: good, SHA256: zeros}, ErrDigestMismatch,
			[]string{"sha256 mismatch for module bytes: expected " + zeros + ", actual " + hex.EncodeToString(goodSum[:])}},
		{"digest pin mismatch (file)", LoadOptions{Path: goodPath, SHA256: zeros}, ErrDigestMismatch,
			[]string{"sha256 mismatch for " + goodPath + ": expected " + zeros + ", actual " + hex.EncodeToString(goodSum[:])}},
		{"bad pin", LoadOptions{Wasm: good, SHA256: "xyz"}, ErrLoad,
			[]string{`sha256 pin "xyz" for module bytes is not a 64-digit hex digest`}},
		{"not wasm", LoadOptions{Wasm: []byte("not wasm at all")}, ErrLoad,
			[]string{"compile module bytes: interrupt: not a WebAssembly binary module"}},
		// Inputs that crash or exhaust wazero 1.12's compiler are refused
		// before it sees them: a billion locals (it would allocate ≈13 GB)
		// and a table.grow (a table could grow outside the memory limit).
		{"a billion locals", LoadOptions{Wasm: oneFunctionModule([]byte{1, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0x7f}, 0x0b)}, ErrLoad,
			[]string{"compile module bytes: interrupt: function 0", "locals"}},
		{"table.grow", LoadOptions{Wasm: oneFunctionModule([]byte{0}, 0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a, 0x0b)}, ErrLoad,
			[]string{"compile module bytes: interrupt: function 0", "table.grow is not allowed in a policy module"}},
		{"missing file", LoadOptions{Path: filepath.Join(dir, "nope.wasm")}, ErrLoad,
			[]string{"read module: ", "nope.wasm"}},
		{"memory limit too big", LoadOptions{Wasm: good, Limits: Limits{MemoryMB: 5000}}, ErrLoad,
			[]string{"memory limit 5000 MiB exceeds the maximum of 4096 MiB"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("bad%d@1", i)
			tc.opts.ID = id
			m, err := rt.Load(context.Background(), tc.opts)
			if err == nil {
				_ = m.Close(context.Background())
				t.Fatal("Load succeeded")
			}
			t.Logf("%v", err)
			pe := asError(t, err, id, CauseLoad)
			if pe.Hook != 0 {
				t.Errorf("Hook = %v, want none", pe.Hook)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("errors.Is(err, %v) = false", tc.sentinel)
			}
			if prefix := fmt.Sprintf("policy plugin %q: ", id); !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			for _, s := range tc.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	t.Run("digest pin match", func(t *testing.T) {
		for _, pin := range []string{hex.EncodeToString(goodSum[:]), "sha256:" + strings.ToUpper(hex.EncodeToString(goodSum[:]))} {
			m := mustLoad(t, rt, LoadOptions{ID: "pinned", Path: goodPath, SHA256: pin})
			out, err := m.Servers(context.Background(), serversIn("x"))
			checkGood(t, out, err)
			if err := m.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("warden_hooks narrows the exports", func(t *testing.T) {
		m := mustLoad(t, rt, LoadOptions{ID: "narrow", Wasm: wat(t, "hooks_mask_narrows")})
		defer m.Close(context.Background())
		if m.Hooks() != abi.HookToolCall {
			t.Errorf("Hooks() = %v, want tool_call", m.Hooks())
		}
		_, err := m.Servers(context.Background(), serversIn("x"))
		asError(t, err, "narrow", CauseMissingHook)
		out, err := m.ToolCall(context.Background(), &abi.ToolCallInput{Tool: "t"})
		if err != nil || out.Action != abi.ToolCallAllow {
			t.Errorf("ToolCall = %+v, %v; want an empty (allow) answer", out, err)
		}
	})
	// Nothing rejected leaked a compiled module or a registered Module, once the compile
	// goroutines (which drop their reference after the loads have theirs) are done.
	rt.compiling.Wait()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.compiled) != 0 || len(rt.modules) != 0 {
		t.Errorf("after rejected loads: %d compiled, %d modules; want 0, 0", len(rt.compiled), len(rt.modules))
	}
}

func TestCallPlumbing(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, Config{PoolSize: 1, MaxInstances: 1})
	m := mustLoad(t, rt, LoadOptions{ID: "echo", Wasm: wat(t, "echo"), MemoEntries: -1, Limits: Limits{MaxInputBytes: 1 << 20}})
	if want := abi.HookServers | abi.HookCredentials | abi.HookToolCall; m.Hooks() != want {
		t.Fatalf("Hooks() = %v, want %v", m.Hooks(), want)
	}
	allocs := func() uint32 {
		t.Helper()
		out, err := m.Call(ctx, abi.HookCredentials, nil)
		if err != nil || len(out) != 4 {
			t.Fatalf("credentials: %x, %v", out, err)
		}
		return binary.LittleEndian.Uint32(out)
	}
	if n := allocs(); n != 1 {
		t.Errorf("warden_alloc calls after init = %d, want 1 (the pre-warmed buffer)", n)
	}
	for _, tc := range []struct {
		size       int
		wantAllocs uint32
	}{
		{0, 1}, {1, 1}, {4096, 1}, // fits the initial 4 KiB buffer
		{4097, 2},                     // grows to 8 KiB
		{100 << 10, 3}, {50 << 10, 3}, // grows to 128 KiB; then reused
		{1 << 20, 4}, // exactly the input cap
	} {
		t.Run(fmt.Sprintf("echo %d bytes", tc.size), func(t *testing.T) {
			in := bytes.Repeat([]byte{byte(tc.size)}, tc.size)
			if tc.size > 0 {
				in[0], in[tc.size-1] = 'a', 'z'
			}
			out, err := m.Call(ctx, abi.HookToolCall, in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("echo of %d bytes returned %d different bytes", len(in), len(out))
			}
			if tc.size == 0 && out != nil {
				t.Errorf("empty output = %#v, want nil", out)
			}
			if n := allocs(); n != tc.wantAllocs {
				t.Errorf("warden_alloc calls = %d, want %d", n, tc.wantAllocs)
			}
		})
	}
	t.Run("input over the cap", func(t *testing.T) {
		_, err := m.Call(ctx, abi.HookToolCall, make([]byte, 1<<20+1))
		asError(t, err, "echo", CauseInputTooLarge)
		if want := `policy plugin "echo" hook tool_call: input of 1048577 bytes exceeds the 1048576-byte cap`; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("not a single hook", func(t *testing.T) {
		for _, h := range []abi.Hook{0, abi.HookServers | abi.HookToolCall, 8} {
			_, err := m.Call(ctx, h, nil)
			asError(t, err, "echo", CauseMissingHook)
		}
	})
}

func TestMemo(t *testing.T) {
	ctx := context.Background()
	counter := func(t *testing.T, m *Module, in string) byte {
		t.Helper()
		out, err := m.Call(ctx, abi.HookServers, []byte(in))
		if err != nil || len(out) != 1 {
			t.Fatalf("servers(%q) = %x, %v", in, out, err)
		}
		return out[0]
	}
	cases := []struct {
		name        string
		memoEntries int
		inputs      string // one call per byte
		want        []byte // the guest's call counter seen per call
	}{
		{"on", 0, "aaba", []byte{1, 1, 2, 1}},
		{"off", -1, "aaba", []byte{1, 2, 3, 4}},
		{"lru eviction", 2, "abcab", []byte{1, 2, 3, 4, 5}}, // a is evicted by c, then b by a
		{"lru recency", 2, "abacb", []byte{1, 2, 1, 3, 4}},  // a refreshed; c evicts b
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, Config{PoolSize: 1, MaxInstances: 1, MemoEntries: tc.memoEntries})
			m := mustLoad(t, rt, LoadOptions{ID: "echo", Wasm: wat(t, "echo")})
			for i, c := range []byte(tc.inputs) {
				if got := counter(t, m, string(c)); got != tc.want[i] {
					t.Fatalf("call %d (%q): counter %d, want %d (sequence %v)", i, c, got, tc.want[i], tc.want)
				}
			}
		})
	}
	t.Run("errors are not memoised", func(t *testing.T) {
		rt := newRuntime(t, Config{})
		m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil")})
		for range 2 {
			before := m.created.Load()
			_, err := m.Servers(ctx, serversIn("T"))
			asError(t, err, "evil", CauseTrap)
			waitFor(t, "replacement", func() bool { return m.created.Load() == before+1 })
		}
		if n := m.memo.len(); n != 0 {
			t.Errorf("memo holds %d entries after failures, want 0", n)
		}
	})
}

func TestConcurrentCalls(t *testing.T) {
	rt := newRuntime(t, Config{PoolSize: 2, MaxInstances: 4})
	m := mustLoad(t, rt, LoadOptions{ID: "echo", Wasm: wat(t, "echo"), MemoEntries: -1})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				in := []byte(fmt.Sprintf("goroutine %d call %d %s", g, i, strings.Repeat("x", (g*50+i)%9000)))
				out, err := m.Call(context.Background(), abi.HookToolCall, in)
				if err == nil && !bytes.Equal(out, in) {
					err = fmt.Errorf("echo mismatch for %q", in[:20])
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live > 4 || int(m.created.Load()) > 4 {
		t.Errorf("live %d, created %d: want <= MaxInstances (4)", m.live, m.created.Load())
	}
}

func TestSandbox(t *testing.T) {
	rt := newRuntime(t, Config{PoolSize: 1, MaxInstances: 1, MemoEntries: -1})
	probe := func(id string) []byte {
		m := mustLoad(t, rt, LoadOptions{ID: id, Wasm: wat(t, "sandbox")})
		out, err := m.Call(context.Background(), abi.HookToolCall, nil)
		if err != nil || len(out) != 56 || string(out[:4]) != "sbx:" {
			t.Fatalf("probe: %x, %v", out, err)
		}
		return out[4:]
	}
	a, b := probe("sandbox-a"), probe("sandbox-b")
	le := binary.LittleEndian
	if got, want := le.Uint64(a[0:]), uint64(fakeEpochNanos); got != want {
		t.Errorf("realtime = %d (%v), want the fake epoch %d", got, time.Unix(0, int64(got)).UTC(), want)
	}
	if got := le.Uint64(a[8:]); got > uint64(time.Second) {
		t.Errorf("monotonic = %d, want a fake clock near 0", got)
	}
	if !bytes.Equal(a[16:32], b[16:32]) || bytes.Equal(a[16:32], make([]byte, 16)) {
		t.Errorf("random bytes %x and %x: want equal (deterministic) and non-zero", a[16:32], b[16:32])
	}
	if n := le.Uint32(a[32:]); n != 0 {
		t.Errorf("environment variables = %d, want 0", n)
	}
	if n := le.Uint32(a[40:]); n != 0 {
		t.Errorf("arguments = %d, want 0", n)
	}
	if errno := le.Uint32(a[48:]); errno != 8 {
		t.Errorf("fd_prestat_get(3) errno = %d, want 8 (EBADF: no preopens)", errno)
	}
}

func TestCompileOncePerDigest(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	good := wat(t, "good")
	digest := sha256.Sum256(good)
	a := mustLoad(t, rt, LoadOptions{ID: "a", Wasm: good})
	b := mustLoad(t, rt, LoadOptions{ID: "b", Wasm: good, Limits: Limits{MemoryMB: 8}})
	refs := func() int {
		// The compiling goroutine releases its own reference just after the loads see
		// the module ready.
		rt.compiling.Wait()
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if e, ok := rt.compiled[digest]; ok {
			return e.refs
		}
		return 0
	}
	if a.compiled != b.compiled || refs() != 2 {
		t.Fatalf("two loads of one digest: shared=%v refs=%d, want one compiled module with 2 refs", a.compiled == b.compiled, refs())
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := b.Servers(ctx, serversIn("x"))
	checkGood(t, out, err)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if refs() != 0 {
		t.Errorf("compiled module still referenced after both modules closed")
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	t.Run("module", func(t *testing.T) {
		rt := newRuntime(t, Config{})
		m := mustLoad(t, rt, LoadOptions{ID: "good", Wasm: wat(t, "good"), MemoEntries: -1})
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		_, err := m.Servers(ctx, serversIn("x"))
		asError(t, err, "good", CauseClosed)
	})
	t.Run("module with calls running", func(t *testing.T) {
		// Calls take and return instances through the hot slot and the idle
		// channel while Close runs, and the calls in flight return theirs
		// after it: every instance must end up closed (live back to 0) and
		// every call must succeed or report CauseClosed.
		for round := range 50 {
			rt := newRuntime(t, Config{PoolSize: 2, MaxInstances: 3})
			m := mustLoad(t, rt, LoadOptions{ID: "good", Wasm: wat(t, "good"), MemoEntries: -1})
			in := serversIn("x").AppendTo(nil)
			var wg sync.WaitGroup
			var stop atomic.Bool
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						_, err := m.Call(ctx, abi.HookServers, in)
						if err != nil {
							asError(t, err, "good", CauseClosed)
							return
						}
					}
				}()
			}
			time.Sleep(time.Duration(round%5) * time.Millisecond)
			stop.Store(true)
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			m.mu.Lock()
			live := m.live
			m.mu.Unlock()
			if live != 0 || m.hot.Load() != nil || len(m.idle) != 0 {
				t.Fatalf("round %d: after Close and the calls: live %d, hot %v, idle %d; want all instances closed", round, live, m.hot.Load() != nil, len(m.idle))
			}
		}
	})
	t.Run("module with a call in flight", func(t *testing.T) {
		rt := newRuntime(t, Config{})
		m := mustLoad(t, rt, LoadOptions{ID: "evil", Wasm: wat(t, "evil"), Limits: Limits{Timeout: 200 * time.Millisecond}})
		done := make(chan error)
		go func() {
			_, err := m.Servers(ctx, serversIn("L"))
			done <- err
		}()
		waitFor(t, "the call to start", func() bool { return len(m.idle) < 2 })
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
		err := <-done
		asError(t, err, "evil", CauseClosed)
	})
	t.Run("runtime", func(t *testing.T) {
		rt, err := NewRuntime(ctx, Config{})
		if err != nil {
			t.Fatal(err)
		}
		m := mustLoad(t, rt, LoadOptions{ID: "good", Wasm: wat(t, "good")})
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		_, err = m.Servers(ctx, serversIn("x"))
		asError(t, err, "good", CauseClosed)
		_, err = rt.Load(ctx, LoadOptions{ID: "late", Wasm: wat(t, "good")})
		asError(t, err, "late", CauseLoad)
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Load after Close: %v, want ErrClosed inside", err)
		}
	})
}

func TestCompilationCacheDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := range 2 {
		rt, err := NewRuntime(ctx, Config{CompilationCacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		m, err := rt.Load(ctx, LoadOptions{ID: "good", Wasm: wat(t, "good")})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Servers(ctx, serversIn(fmt.Sprint(i)))
		checkGood(t, out, err)
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var files int
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Errorf("no files in the compilation cache dir %s", dir)
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{PluginID: "acme@1", Hook: abi.HookServers, Cause: CauseTimeout, Err: detail(context.DeadlineExceeded, "timed out after 50ms")},
			`policy plugin "acme@1" hook servers: timed out after 50ms`},
		{&Error{PluginID: "acme@1", Cause: CauseLoad, Err: errors.New("boom")},
			`policy plugin "acme@1": boom`},
		{&Error{PluginID: "acme@1", Hook: abi.HookToolCall, Cause: CauseTrap},
			`policy plugin "acme@1" hook tool_call: trap`},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
	for c := CauseTimeout; c <= CauseClosed; c++ {
		if strings.HasPrefix(c.String(), "cause(") || c.Sentinel() == nil {
			t.Errorf("cause %d has no name or sentinel", c)
		}
	}
	if !errors.Is(cases[0].err, context.DeadlineExceeded) || errors.Is(cases[0].err, ErrTrap) {
		t.Errorf("errors.Is does not see through / discriminate")
	}
}

// TestVersionNegotiation: a guest is held to the ABI version it declares.
// The same answers (a decision with prompt and resource lists, a tool call
// ASK) mean what version 1 defined from a version 1 guest — the lists are
// unknown fields, ASK an undefined action (fail closed) — and what version
// 2 defines from a version 2 guest.
func TestVersionNegotiation(t *testing.T) {
	rt := newRuntime(t, Config{})
	ctx := context.Background()
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			m := mustLoad(t, rt, LoadOptions{ID: fmt.Sprintf("answers-v%d@1", v), Wasm: wat(t, fmt.Sprintf("v%d_answers", v))})
			defer m.Close(ctx)
			if m.ABIVersion() != v {
				t.Fatalf("ABIVersion() = %d, want %d", m.ABIVersion(), v)
			}
			if want := abi.HookServers | abi.HookToolCall; m.Hooks() != want {
				t.Fatalf("Hooks() = %v, want %v", m.Hooks(), want)
			}
			out, err := m.Servers(ctx, serversIn("t"))
			if err != nil {
				t.Fatal(err)
			}
			d := out.Decisions[0]
			if d.Name != "fs" || len(d.AllowTools) != 1 {
				t.Fatalf("decision = %+v", d)
			}
			if got := len(d.AllowPrompts) + len(d.DenyResources); v == 1 && got != 0 || v == 2 && got != 2 {
				t.Fatalf("v%d decision = %+v", v, d)
			}
			tc, err := m.ToolCall(ctx, &abi.ToolCallInput{Tool: "x"})
			if v == 1 {
				pe := asError(t, err, m.ID(), CauseMalformedOutput)
				if !errors.Is(err, abi.ErrEnum) || !strings.Contains(pe.Error(), "action 2 is undefined in ABI version 1") {
					t.Fatalf("v1 ASK: %v", err)
				}
				return
			}
			if err != nil || tc.Action != abi.ToolCallAsk || tc.Reason != "ok?" {
				t.Fatalf("v2 ASK: %+v, %v", tc, err)
			}
		})
	}
}
