package decision

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/policy"
)

// wideLists loads testdata/widelists (tool lists of 120000 names; a credentials answer
// for an index past the server's credentials) in a real runtime with a 4 MiB output cap.
func wideLists(t *testing.T) Policy {
	t.Helper()
	ctx := context.Background()
	rt, err := policy.NewRuntime(ctx, policy.Config{CompilationCacheDir: testbuild.WazeroCache(t), Limits: policy.Limits{MaxOutputBytes: 4 << 20, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	m, err := rt.Load(ctx, policy.LoadOptions{ID: "wide@1", Wasm: testbuild.GoGuest(t, "testdata/widelists"), MemoEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFoldingWideToolListsIsNotQuadratic: folding a servers answer whose allow and deny
// lists hold 120000 names each took tens of seconds when each name was looked up in the
// list built so far. The bound is far above the linear fold's time and far below the
// quadratic one's; the lists must also come out right.
func TestFoldingWideToolListsIsNotQuadratic(t *testing.T) {
	p := wideLists(t)
	in := &abi.ServersInput{
		Thread: abi.Thread{ID: "t1", Kind: "interactive", Roots: []abi.Root{{ID: "wide@1", Location: "local", Path: "/plugins/wide"}}},
		Servers: []abi.Server{{Name: "s", Origin: "plugin:wide@1", PluginID: "wide@1", Transport: "stdio",
			Command: "x", Environment: "local", Enabled: true}},
	}
	e := NewEngine(Options{})
	e.SetPolicies([]Policy{p}, map[string]Policy{"wide@1": p}) // two policies: two folds into one verdict
	start := time.Now()
	vs := e.Servers(context.Background(), in)
	f := Filter(nil, []string{"t7"}, &vs[0])
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Servers + Filter took %v for 2×240000 names: folding is superlinear", d)
	}
	if len(vs[0].DenyTools) != 120000 || len(vs[0].AllowTools) != 120000 {
		t.Fatalf("deny %d, allow %d names; want 120000 each (a set: the second fold adds nothing)", len(vs[0].DenyTools), len(vs[0].AllowTools))
	}
	for _, tool := range []string{"t1", "t120000", "t7"} {
		if !f.DenyListed(tool) || !f.AllowListed(tool) {
			t.Errorf("%s: deny-listed %v, allow-listed %v; want both", tool, f.DenyListed(tool), f.AllowListed(tool))
		}
	}
	if f.AllowListed("t120001") || f.AllowListed("u1") {
		t.Error("a tool outside the allow list passes it")
	}
}

// TestCredentialIndexOutOfRangeFailsClosed: a credentials answer naming an index the server
// does not have is malformed output, which fails closed for every credential of the server
// (docs/abi.md), instead of being skipped while the in-range decisions stand.
func TestCredentialIndexOutOfRangeFailsClosed(t *testing.T) {
	p := wideLists(t)
	in := &abi.CredentialsInput{
		Thread: abi.Thread{ID: "t1", Kind: "interactive"},
		Route:  "local",
		Server: abi.Server{Name: "s", Origin: "plugin:wide@1", PluginID: "wide@1", Transport: "http",
			URL: "https://s.example.com/mcp", Environment: "local", Enabled: true,
			Credentials: []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "S_TOKEN", Owner: "local"}}},
	}
	e := NewEngine(Options{})
	e.SetPolicies(nil, map[string]Policy{"wide@1": p})
	vs := e.Credentials(context.Background(), in)
	if len(vs) != 1 {
		t.Fatalf("%d verdicts, want 1", len(vs))
	}
	if v := vs[0]; v.Action != abi.CredentialDeny || !strings.Contains(v.Reason, "credential index 7") || !strings.Contains(v.Reason, "malformed output") {
		t.Fatalf("verdict %+v; want deny naming the malformed index 7", v)
	}
}
