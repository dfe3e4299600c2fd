package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/roots"
)

// rootWith writes wasm as a root's policy file and returns the root as a scan would.
func rootWith(t *testing.T, id string, wasm []byte) *roots.Root {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.wasm")
	if err := os.WriteFile(path, wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	return &roots.Root{ID: id, Policy: &roots.PolicyFile{Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(wasm))}}
}

// The cache keeps a module while its digest is unchanged, loads a changed one anew, closes
// what two Loads in a row did not use, and turns a policy that cannot be read or loaded
// into one that fails closed naming it.
func TestCache(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	c := NewCache(rt, nil)
	defer c.Close()
	in := serversIn("t1").AppendTo(nil)
	cfg := &config.Config{}

	good := rootWith(t, "good@1", wat(t, "good"))
	first := c.Load(ctx, cfg, []*roots.Root{good, {ID: "plain@1"}})
	if len(first.Plugins) != 2 || first.Plugins[1] != nil || len(first.Operator) != 0 {
		t.Fatalf("Load = %+v, want the good policy and nil for the root without one", first)
	}
	p := first.Plugins[0]
	if p.ID() != "good@1" || p.Digest() != sha256.Sum256(wat(t, "good")) {
		t.Errorf("policy %q digest %x, want good@1 %s", p.ID(), p.Digest(), good.Policy.SHA256)
	}
	if out, err := p.Call(ctx, abi.HookServers, in); err != nil || string(out) != goodOutput {
		t.Fatalf("Call = %q, %v; want %q", out, err, goodOutput)
	}
	if again := c.Load(ctx, cfg, []*roots.Root{good}); again.Plugins[0] != p {
		t.Error("an unchanged root's policy was loaded anew")
	}

	changed := rootWith(t, "good@1", wat(t, "echo"))
	next := c.Load(ctx, cfg, []*roots.Root{changed}).Plugins[0]
	if next == p {
		t.Fatal("a changed digest kept the old module")
	}
	if next.Hooks() != abi.HookServers|abi.HookCredentials|abi.HookToolCall {
		t.Errorf("the changed module's hooks = %v", next.Hooks())
	}
	// The good module was used by the previous Load: still open. One more Load without it
	// closes it.
	if _, err := p.Call(ctx, abi.HookServers, in); err != nil {
		t.Fatalf("the previous configuration's module was closed too early: %v", err)
	}
	_ = c.Load(ctx, cfg, []*roots.Root{changed})
	probe := 0
	waitFor(t, "the unused module to close", func() bool {
		probe++ // a new input each time: a memoised answer would not see the close
		_, err := p.Call(ctx, abi.HookServers, serversIn(fmt.Sprint("probe", probe)).AppendTo(nil))
		var perr *Error
		return errors.As(err, &perr) && perr.Cause == CauseClosed
	})

	dir := t.TempDir()
	broken := rootWith(t, "broken@1", []byte("not wasm"))
	failed := c.Load(ctx, &config.Config{Policies: []config.PolicyRef{{Path: dir}}}, []*roots.Root{broken})
	op := failed.Operator[0]
	if _, err := op.Call(ctx, abi.HookServers, in); err == nil || !strings.Contains(err.Error(), dir) || op.Hooks() != abi.AllHooks {
		t.Errorf("an operator policy that is a directory: hooks %v, Call error %v; want every hook, failing naming %s", op.Hooks(), err, dir)
	}
	if _, err := failed.Plugins[0].Call(ctx, abi.HookServers, in); err == nil || !strings.Contains(err.Error(), "broken@1") {
		t.Errorf("a module that does not load: Call error %v, want one naming broken@1", err)
	}
}
