package policy

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
)

// examplePolicy builds examples/plugins/<name> as a wasip1 reactor.
func examplePolicy(t testing.TB, name string) []byte {
	t.Helper()
	return testbuild.GoGuest(t, filepath.Join("..", "..", "examples", "plugins", name))
}

type decision struct {
	name   string
	action abi.ServerAction
	reason string
	deny   []string
}

func decisions(out *abi.ServersOutput) []decision {
	var ds []decision
	for _, d := range out.Decisions {
		ds = append(ds, decision{d.Name, d.Action, d.Reason, slices.Clone(d.DenyTools)})
	}
	return ds
}

// The Go tests compile ~2 MB modules, which takes seconds (tens of seconds
// under the race detector), so they run in parallel with each other.

func TestGoExamplePolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	load := func(t *testing.T, name string) *Module {
		t.Parallel()
		return mustLoad(t, rt, LoadOptions{ID: name + "@test", Wasm: examplePolicy(t, name)})
	}

	t.Run("allow-hosts", func(t *testing.T) {
		m := load(t, "allow-hosts")
		if !m.Hooks().Has(abi.HookServers) {
			t.Fatalf("Hooks() = %v", m.Hooks())
		}
		out, err := m.Servers(ctx, abitest.ServersInput20())
		if err != nil {
			t.Fatal(err)
		}
		// Only the http servers on browser.example.org are off the list.
		want := []decision{
			{"browser-7", abi.ServerDisable, "host browser.example.org is not in the allow list", nil},
			{"browser-15", abi.ServerDisable, "host browser.example.org is not in the allow list", nil},
		}
		if got := decisions(out); !slices.EqualFunc(got, want, eqDecision) {
			t.Errorf("decisions = %+v\nwant %+v", got, want)
		}
	})

	t.Run("reviewer-no-stdio", func(t *testing.T) {
		m := load(t, "reviewer-no-stdio")
		in := abitest.ServersInput20()
		out, err := m.Servers(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var want []decision
		for _, s := range in.Servers {
			if s.Transport == "stdio" {
				want = append(want, decision{s.Name, abi.ServerHide, "stdio servers are hidden in reviewer threads", nil})
			}
		}
		if got := decisions(out); len(want) == 0 || !slices.EqualFunc(got, want, eqDecision) {
			t.Errorf("decisions = %+v\nwant %+v", got, want)
		}
		in.Thread.Kind = "default"
		out, err = m.Servers(ctx, in)
		if err != nil || len(out.Decisions) != 0 {
			t.Errorf("default thread: %+v, %v; want no opinion", out, err)
		}
	})

	t.Run("block-tool", func(t *testing.T) {
		m := load(t, "block-tool")
		if want := abi.HookServers | abi.HookToolCall; m.Hooks() != want {
			t.Errorf("Hooks() = %v, want %v", m.Hooks(), want)
		}
		out, err := m.Servers(ctx, abitest.ServersInput20())
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Decisions) != 20 {
			t.Fatalf("%d decisions, want 20", len(out.Decisions))
		}
		for _, d := range out.Decisions {
			if d.Action != abi.ServerExpose || !slices.Equal(d.DenyTools, []string{"fail"}) {
				t.Errorf("decision %+v, want expose with deny_tools [fail]", d)
			}
		}
		for _, tc := range []struct {
			tool   string
			action abi.ToolCallAction
			reason string
		}{
			{"fail", abi.ToolCallDeny, "tool fail is blocked by policy"},
			{"delete_file", abi.ToolCallDeny, "tool delete_file is blocked by policy"},
			{"read_file", abi.ToolCallAllow, ""},
		} {
			out, err := m.ToolCall(ctx, abitest.ToolCallInput(tc.tool, `{"path":"/tmp/x"}`))
			if err != nil {
				t.Fatal(err)
			}
			if out.Action != tc.action || out.Reason != tc.reason || out.Rewrite {
				t.Errorf("tool %s: %+v, want %v %q", tc.tool, out, tc.action, tc.reason)
			}
		}
		_, err = m.Credentials(ctx, abitest.CredentialsInput())
		asError(t, err, "block-tool@test", CauseMissingHook)
	})

	t.Run("no-forwarding", func(t *testing.T) {
		m := load(t, "no-forwarding")
		if m.Hooks() != abi.HookCredentials {
			t.Errorf("Hooks() = %v, want credentials", m.Hooks())
		}
		in := abitest.CredentialsInput()
		out, err := m.Credentials(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Decisions) != len(in.Server.Credentials) {
			t.Fatalf("decisions = %+v, want one per credential", out.Decisions)
		}
		for i, d := range out.Decisions {
			if d.Index != uint32(i) || d.Action != abi.CredentialDeny || !strings.Contains(d.Reason, "not allowed") {
				t.Errorf("decision %d = %+v, want deny", i, d)
			}
		}
		in.Server.Name = "node_repl" // on the policy's forwardable list
		out, err = m.Credentials(ctx, in)
		if err != nil || len(out.Decisions) != 0 {
			t.Errorf("forwardable server: %+v, %v; want no opinion", out, err)
		}
	})
}

func eqDecision(a, b decision) bool {
	return a.name == b.name && a.action == b.action && a.reason == b.reason && slices.Equal(a.deny, b.deny)
}

// TestGoGuestOutputs: the outputs of a Go guest that records decisions of
// every shape, gathered (docs/abi.md §7.1) under warden, read back as
// written — among them heap strings the output refers to while the guest's
// garbage collector runs and reuses freed memory.
func TestGoGuestOutputs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	m := mustLoad(t, rt, LoadOptions{ID: "go-outputs", Wasm: testbuild.GoGuest(t, filepath.Join("testdata", "goguests", "outputs")),
		MemoEntries: -1, Limits: Limits{Timeout: 5 * time.Second}})
	in := serversIn("t")
	in.Servers = []abi.Server{{Name: "fs", Transport: "stdio"}, {Name: "docs", Transport: "http", URL: "https://docs.example.com/"}}
	for call := range 3 { // the first call grows the buffers; later ones reuse them
		out, err := m.Servers(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want := []abi.ServerDecision{
			{Name: "fs", Action: abi.ServerHide, Reason: "input view fs"},
			{Name: "docs", Action: abi.ServerHide, Reason: "input view docs"},
			{Name: "plain", Action: abi.ServerExpose},
			{Name: strings.Repeat("n", 200), Action: abi.ServerDisable, Reason: "long name"},
			{Name: "five", Action: abi.ServerDisable, Reason: "abcde"},
			{Name: "long-reason", Action: abi.ServerDisable, Reason: strings.Repeat("r", 130)},
			{Name: "tools", Action: abi.ServerExpose, AllowTools: []string{"echo", "add"}},
			{Name: "heap", Action: abi.ServerDisable, Reason: "built 12345 at run time"},
		}
		if diff := cmp.Diff(want, out.Decisions, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("call %d: servers decisions (-want +got):\n%s", call, diff)
		}
		creds := make([]abi.Credential, 201) // the guest decides on index 200
		for i := range creds {
			creds[i] = abi.Credential{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: "local"}
		}
		cout, err := m.Credentials(ctx, &abi.CredentialsInput{Thread: abi.Thread{ID: "t"}, Server: abi.Server{Name: "fs", Credentials: creds}})
		if err != nil {
			t.Fatal(err)
		}
		wantCred := []abi.CredentialDecision{
			{Index: 0, Action: abi.CredentialDeny, Reason: "secret"},
			{Index: 1, Action: abi.CredentialExecutor, Reason: "route 7 via heap"},
			{Index: 2, Action: abi.CredentialLocal},
			{Index: 200, Action: abi.CredentialDeny, Reason: "index of 128 or more"},
		}
		if diff := cmp.Diff(wantCred, cout.Decisions, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("call %d: credentials decisions (-want +got):\n%s", call, diff)
		}
	}
}

// TestGoGuestFailures checks how Go runtime failures inside a guest surface.
func TestGoGuestFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	logs := &testmain.SyncBuffer{}
	rt := newRuntime(t, Config{Logger: hclog.New(&hclog.LoggerOptions{Name: "warden", Output: logs, Level: hclog.Trace})})
	wasm := testbuild.GoGuest(t, filepath.Join("testdata", "goguests", "misbehave"))
	m := mustLoad(t, rt, LoadOptions{ID: "go-misbehave", Wasm: wasm, MemoEntries: -1,
		// Generous: a Go guest's first calls and its GC are slower under
		// the race detector; the loop case has its own deadline below.
		Limits: Limits{MemoryMB: 32, Timeout: 5 * time.Second}})
	fast := mustLoad(t, rt, LoadOptions{ID: "go-misbehave-50ms", Wasm: wasm, MemoEntries: -1})

	const p = `policy plugin "go-misbehave" hook servers: `
	cases := []struct {
		thread string
		m      *Module
		cause  Cause
		text   string
		check  func(t *testing.T, err error)
	}{
		{"panic", m, CauseGuestError, p + "guest reported error: sdk: policy panicked: boom", nil},
		{"fail", m, CauseGuestError, p + "guest reported error: policy failed on purpose", nil},
		{"exit", m, CauseExit, p + "guest exited with code 3", nil},
		{"oom", m, CauseMemory, p + "hit the 32 MiB memory limit (trapped: wasm error: unreachable)", nil},
		{"bigalloc", m, CauseMemory, p + "hit the 32 MiB memory limit (trapped: wasm error: unreachable)", nil},
		{"loop", fast, CauseTimeout, `policy plugin "go-misbehave-50ms" hook servers: timed out after `, func(t *testing.T, err error) {
			checkTimeoutText(t, err, `policy plugin "go-misbehave-50ms" hook servers: `, 50*time.Millisecond)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(err, context.DeadlineExceeded) = false: %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.thread, func(t *testing.T) {
			start := time.Now()
			_, err := tc.m.Servers(ctx, serversIn(tc.thread))
			t.Logf("%v after %v", err, time.Since(start))
			asError(t, err, tc.m.ID(), tc.cause)
			if err.Error() != tc.text && !strings.HasPrefix(err.Error(), tc.text) {
				t.Errorf("error text\n got: %q\nwant: %q", err.Error(), tc.text)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
			out, err := tc.m.Servers(ctx, serversIn("fine"))
			if err != nil || len(out.Decisions) != 0 {
				t.Fatalf("good call afterwards: %+v, %v", out, err)
			}
		})
	}
	t.Run("log", func(t *testing.T) {
		if _, err := m.Servers(ctx, serversIn("log")); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"[WARN]  warden.go-misbehave: hello from go: hook=servers",
			"[DEBUG] warden.go-misbehave: to stdout: hook=servers stream=stdout",
			"[WARN]  warden.go-misbehave: to stderr: hook=servers stream=stderr",
		} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("log line %q missing; logs:\n%s", want, logs)
			}
		}
	})
}
