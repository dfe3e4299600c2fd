package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/policy"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// policyLoader implements thread.PolicyLoader with the wazero runtime. Modules are cached by
// plugin id, content digest and limits, so a root whose policy did not change keeps its warm
// module across reloads and roots changes, and a changed digest loads the new module. A
// module that fails to load becomes a policy whose every call fails with the load error
// (which names the plugin): what it governs fails closed.
//
// Concurrency: Load is called serially by the thread manager; mu makes close safe against
// a concurrent Load anyway.
type policyLoader struct {
	rt  *policy.Runtime
	log hclog.Logger

	mu    sync.Mutex
	cache map[string]decision.Policy
	prev  map[string]bool // keys returned by the previous Load
}

func newPolicyLoader(rt *policy.Runtime, log hclog.Logger) *policyLoader {
	return &policyLoader{rt: rt, log: log, cache: map[string]decision.Policy{}}
}

// Load implements thread.PolicyLoader.
func (l *policyLoader) Load(ctx context.Context, cfg *config.Config, rs []*roots.Root) thread.Policies {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := cfg.PolicyLimits
	limits := policy.Limits{MemoryMB: uint32(lim.MemoryMB), Timeout: time.Duration(lim.TimeoutMS) * time.Millisecond}
	used := map[string]bool{}
	var out thread.Policies
	for _, ref := range cfg.Policies {
		id := operatorPolicyID(ref.Path)
		data, err := os.ReadFile(ref.Path)
		if err != nil {
			out.Operator = append(out.Operator, &loadFailed{id: id, err: fmt.Errorf("operator policy %q: %w", ref.Path, err)})
			continue
		}
		sum := sha256.Sum256(data)
		key := fmt.Sprintf("operator\x00%s\x00%x\x00%s\x00%v", id, sum, ref.SHA256, limits)
		used[key] = true
		out.Operator = append(out.Operator, l.get(ctx, key, sum, policy.LoadOptions{ID: id, Wasm: data, SHA256: ref.SHA256, Limits: limits}))
	}
	for _, r := range rs {
		if r.Policy == nil {
			out.Plugins = append(out.Plugins, nil)
			continue
		}
		var sum [32]byte
		_, _ = hex.Decode(sum[:], []byte(r.Policy.SHA256))
		key := fmt.Sprintf("root\x00%s\x00%s\x00%v", r.ID, r.Policy.SHA256, limits)
		used[key] = true
		// The pin makes the runtime load exactly the bytes the roots scan hashed: a file
		// changed since fails closed until the watcher rescans it.
		out.Plugins = append(out.Plugins, l.get(ctx, key, sum, policy.LoadOptions{ID: r.ID, Path: r.Policy.Path, SHA256: r.Policy.SHA256, Limits: limits}))
	}
	// Close what neither this nor the previous configuration uses: a decision that started
	// with the previous policy set may still be running.
	for k, p := range l.cache {
		if !used[k] && !l.prev[k] {
			if m, ok := p.(*policy.Module); ok {
				_ = m.Close(ctx)
			}
			delete(l.cache, k)
		}
	}
	l.prev = used
	return out
}

func (l *policyLoader) get(ctx context.Context, key string, sum [32]byte, o policy.LoadOptions) decision.Policy {
	if p := l.cache[key]; p != nil {
		return p
	}
	m, err := l.rt.Load(ctx, o)
	if err != nil {
		l.log.Error("policy module failed to load; what it governs fails closed", "plugin", o.ID, "error", err)
		p := &loadFailed{id: o.ID, digest: sum, err: err}
		if ctx.Err() == nil { // a cancelled load is retried next time
			l.cache[key] = p
		}
		return p
	}
	l.log.Debug("policy module loaded", "plugin", o.ID, "hooks", m.Hooks().String())
	l.cache[key] = m
	return m
}

// close closes every cached module.
func (l *policyLoader) close(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, p := range l.cache {
		if m, ok := p.(*policy.Module); ok {
			_ = m.Close(ctx)
		}
		delete(l.cache, k)
	}
}

// operatorPolicyID names an operator policy by its file name without .wasm.
func operatorPolicyID(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".wasm")
}

// loadFailed is a policy module that could not be loaded: it claims every hook and fails
// every call with the load error, so the engine fails closed for everything it governs.
type loadFailed struct {
	id     string
	digest [32]byte
	err    error
}

func (p *loadFailed) ID() string       { return p.id }
func (p *loadFailed) Digest() [32]byte { return p.digest }
func (p *loadFailed) Hooks() abi.Hook  { return abi.AllHooks }
func (p *loadFailed) Call(context.Context, abi.Hook, []byte) ([]byte, error) {
	return nil, p.err
}
