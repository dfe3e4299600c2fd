package decision

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/policy"
)

// conformance loads the conformance policy (examples/conformance: "deny-*" servers are
// disabled, "limited" is explicitly exposed with tool lists, reviewer threads hide stdio)
// under id, in a real wazero runtime.
func conformance(t *testing.T, rt *policy.Runtime, id string) Policy {
	t.Helper()
	m, err := rt.Load(context.Background(), policy.LoadOptions{ID: id, Wasm: testbuild.GoGuest(t, "../../examples/conformance/go")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompositionNeverWidens: with real policy modules, a plugin's own policy that answers
// "expose" cannot undo a baseline refusal (requirements) or an operator refusal, and a
// plugin policy sees — and so decides — only its own plugin's servers.
func TestCompositionNeverWidens(t *testing.T) {
	ctx := context.Background()
	rt, err := policy.NewRuntime(ctx, policy.Config{CompilationCacheDir: testbuild.WazeroCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)

	plugin := func(name, id string) abi.Server {
		return abi.Server{Name: name, Origin: "plugin:" + id, PluginID: id, Transport: "http",
			URL: "https://" + name + ".example.com/mcp", Environment: "local", Enabled: true}
	}
	in := &abi.ServersInput{
		Thread: abi.Thread{ID: "t1", Kind: "interactive", Roots: []abi.Root{
			{ID: "p@1", Location: "local", Path: "/plugins/p"},
			{ID: "q@1", Location: "local", Path: "/plugins/q"},
		}},
		Environments: []abi.Environment{{ID: "local", Local: true, Connected: true, Processes: true}},
		Servers: []abi.Server{
			// p's own policy says "expose" for "limited"; requirements do not list it.
			plugin("limited", "p@1"),
			// q's server is named like something p's policy would disable: p must not see it.
			plugin("deny-q", "q@1"),
			// p's server that the operator policy disables; p's policy has no opinion.
			plugin("deny-p", "p@1"),
			plugin("ok", "p@1"),
		},
		HasRequirements: true,
		Requirements: []abi.Requirement{
			{Name: "deny-q", URL: "https://deny-q.example.com/mcp"},
			{Name: "deny-p", URL: "https://deny-p.example.com/mcp"},
			{Name: "ok", URL: "https://ok.example.com/mcp"},
		},
	}

	t.Run("plugin policy cannot widen the baseline and sees only its servers", func(t *testing.T) {
		var log bytes.Buffer
		e := NewEngine(Options{Log: NewLog(&log)})
		e.SetPolicies(nil, map[string]Policy{"p@1": conformance(t, rt, "p@1")})
		got := byName(e.Servers(ctx, in))
		want := map[string]abi.ServerAction{
			"limited": abi.ServerDisable, // baseline (requirements) refused; p said expose
			"deny-q":  abi.ServerExpose,  // q's server: p's policy never saw it
			"deny-p":  abi.ServerDisable, // p's own server, disabled by p's policy
			"ok":      abi.ServerExpose,
		}
		for name, action := range want {
			if got[name].Action != action {
				t.Errorf("%s: %v (%q by %s), want %v", name, got[name].Action, got[name].Reason, got[name].DecidedBy, action)
			}
		}
		if v := got["limited"]; v.DecidedBy != BaselineID || !strings.Contains(v.Reason, ReasonBlockedByReqs) {
			t.Errorf("limited: decided by %s (%q), want the baseline's requirements refusal", v.DecidedBy, v.Reason)
		}
		if v := got["deny-p"]; v.DecidedBy != "plugin:p@1" || v.Reason != "denied by name: deny-p" {
			t.Errorf("deny-p: decided by %s (%q)", v.DecidedBy, v.Reason)
		}
		// The plugin's decision-log line names only its own servers.
		for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			if strings.Contains(line, `"plugin":"p@1"`) && strings.Contains(line, "deny-q") {
				t.Errorf("p@1's decision mentions q's server: %s", line)
			}
		}
	})

	t.Run("plugin policy cannot widen an operator refusal", func(t *testing.T) {
		noReqs := *in
		noReqs.HasRequirements, noReqs.Requirements = false, nil
		// The operator runs the same module over every server: it disables both deny-*.
		// p's policy then says "expose" for limited, which nobody refused: it stays exposed
		// with p's tool lists; deny-q stays disabled by the operator although q has no
		// policy and p's never saw it.
		e := NewEngine(Options{})
		e.SetPolicies([]Policy{conformance(t, rt, "corp")}, map[string]Policy{"p@1": conformance(t, rt, "p@1")})
		got := byName(e.Servers(ctx, &noReqs))
		if v := got["deny-q"]; v.Action != abi.ServerDisable || v.DecidedBy != "operator:corp" {
			t.Errorf("deny-q: %v by %s, want disable by the operator", v.Action, v.DecidedBy)
		}
		if v := got["deny-p"]; v.Action != abi.ServerDisable || v.DecidedBy != "operator:corp" {
			t.Errorf("deny-p: %v by %s, want disable by the operator (first refusal wins)", v.Action, v.DecidedBy)
		}
		if v := got["limited"]; v.Action != abi.ServerExpose || strings.Join(v.AllowTools, ",") != "add,echo" {
			t.Errorf("limited: %v allow %v, want expose with allow list add,echo (a sorted set)", v.Action, v.AllowTools)
		}
	})

	t.Run("a failing plugin policy disables only its own servers", func(t *testing.T) {
		failing := *in
		failing.HasRequirements, failing.Requirements = false, nil
		failing.Thread.ID = "error" // the conformance guest reports an error for this thread
		e := NewEngine(Options{})
		e.SetPolicies(nil, map[string]Policy{"p@1": conformance(t, rt, "p@1")})
		got := byName(e.Servers(ctx, &failing))
		for _, name := range []string{"limited", "deny-p", "ok"} {
			if v := got[name]; v.Action != abi.ServerDisable || !strings.Contains(v.Reason, `policy plugin "p@1" hook servers: guest reported error: conformance: asked to fail`) {
				t.Errorf("%s: %v (%q), want disabled naming p@1, the hook and the cause", name, v.Action, v.Reason)
			}
		}
		if v := got["deny-q"]; v.Action != abi.ServerExpose {
			t.Errorf("deny-q: %v (%q): another plugin's failure must not touch q's server", v.Action, v.Reason)
		}
	})
}

func byName(vs []ServerVerdict) map[string]ServerVerdict {
	m := map[string]ServerVerdict{}
	for _, v := range vs {
		m[v.Name] = v
	}
	return m
}
