package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/safefile"
	"github.com/warden-mcp/warden/host/roots"
)

// Loaded is a policy as Cache.Load returns it: a *Module, or a placeholder that waits for
// its module while it loads and fails closed when it could not be loaded. Its method set is
// the decision engine's Policy, so that this package needs nothing from the engine.
type Loaded interface {
	ID() string
	Digest() [32]byte
	Hooks() abi.Hook
	// ABIVersion is the ABI version the module declared: a caller decoding
	// its outputs holds them to it (abi.ServersOutput.HoldTo and
	// abi.ToolCallOutput.HoldTo).
	ABIVersion() int
	Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error)
}

// Set is the policy modules of one configuration, in the order the decision engine takes
// them.
type Set struct {
	// Operator are the `[[policies]]` of config.toml, in order.
	Operator []Loaded
	// Plugins holds one entry per root given to Cache.Load, in the same order: the root's
	// policy, or nil when it has none.
	Plugins []Loaded
}

// Cache loads the policy modules of a configuration (config.toml's operator policies and
// each capability root's policy) into a Runtime. Modules are cached by
// plugin id, content digest and limits, so a root whose policy did not change keeps its warm
// module across reloads and roots changes, and a changed digest loads the new module. A
// module that fails to load becomes a policy whose every call fails with the load error
// (which names the plugin): what it governs fails closed.
//
// Loading runs in the background: Load returns at once with a placeholder per module that
// is not ready, so a slow compile (bounded by the runtime's compile budget) never holds up a
// reload, an initialize or a thread that does not use it. A decision that needs a pending
// module waits for it, at most until its load ends.
//
// Every policy file is read once, with safefile (regular files only, capped): the bytes the
// runtime compiles are the bytes whose digest it checks against the roots scan's.
//
// Concurrency: Load is meant to be called serially (the thread manager does); mu makes it
// and Close safe for concurrent use anyway.
type Cache struct {
	rt  *Runtime
	log hclog.Logger
	// ctx bounds background loads; cancel ends them (Close).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	cache map[string]*pendingPolicy
	prev  map[string]bool // keys returned by the previous Load
}

// NewCache returns an empty cache loading into rt; log (nil: none) receives load failures.
// Close it before rt.
func NewCache(rt *Runtime, log hclog.Logger) *Cache {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Cache{rt: rt, log: log, ctx: ctx, cancel: cancel, cache: map[string]*pendingPolicy{}}
}

// Load returns the policies of cfg (its operator policies, under its policy limits) and of
// rs (one entry per root), from the cache or loading in the background. A module that
// neither this nor the previous Load used is closed once its load ends: a decision that
// started with the previous set may still be running.
func (l *Cache) Load(_ context.Context, cfg *config.Config, rs []*roots.Root) Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := cfg.PolicyLimits
	limits := Limits{MemoryMB: uint32(lim.MemoryMB), Timeout: time.Duration(lim.TimeoutMS) * time.Millisecond}
	used := map[string]bool{}
	var out Set
	for _, ref := range cfg.Policies {
		id := operatorPolicyID(ref.Path)
		// Read here (safefile never blocks) so that the key holds the content's digest: a
		// changed file is a new module at the next reload.
		data, err := safefile.ReadFile(ref.Path, roots.DefaultMaxPolicySize)
		if err != nil {
			err = fmt.Errorf("operator policy %q: %w", ref.Path, err)
			l.log.Error("operator policy cannot be read; every thread fails closed", "policy", id, "error", err)
			out.Operator = append(out.Operator, &loadFailed{id: id, err: err})
			continue
		}
		sum := sha256.Sum256(data)
		key := fmt.Sprintf("operator\x00%s\x00%x\x00%s\x00%v", id, sum, ref.SHA256, limits)
		used[key] = true
		out.Operator = append(out.Operator, l.get(key, id, sum, func() ([]byte, error) { return data, nil },
			LoadOptions{ID: id, SHA256: ref.SHA256, Limits: limits}))
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
		path, remote := r.Policy.Path, r.Policy.Data
		read := func() ([]byte, error) {
			if remote != nil { // read through its executor when the root was loaded
				return remote, nil
			}
			data, err := safefile.ReadFile(path, roots.DefaultMaxPolicySize)
			if err != nil {
				return nil, fmt.Errorf("policy plugin %q: %w", r.ID, err)
			}
			return data, nil
		}
		out.Plugins = append(out.Plugins, l.get(key, r.ID, sum, read, LoadOptions{ID: r.ID, SHA256: r.Policy.SHA256, Limits: limits}))
	}
	// Close what neither this nor the previous configuration uses: a decision that started
	// with the previous policy set may still be running.
	for k, p := range l.cache {
		if !used[k] && !l.prev[k] {
			delete(l.cache, k)
			l.closeWhenLoaded(p)
		}
	}
	l.prev = used
	return out
}

// get returns the cached policy for key, or starts loading it in the background: read
// returns the module's bytes.
func (l *Cache) get(key, id string, sum [32]byte, read func() ([]byte, error), o LoadOptions) Loaded {
	if p := l.cache[key]; p != nil {
		return p
	}
	p := &pendingPolicy{id: id, digest: sum, ready: make(chan struct{})}
	l.cache[key] = p
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		p.loaded = l.load(read, o, sum)
		close(p.ready)
	}()
	return p
}

// load reads and loads one module; a failure becomes a loadFailed policy.
func (l *Cache) load(read func() ([]byte, error), o LoadOptions, sum [32]byte) Loaded {
	data, err := read()
	if err == nil {
		o.Wasm = data
		var m *Module
		if m, err = l.rt.Load(l.ctx, o); err == nil {
			l.log.Debug("policy module loaded", "plugin", o.ID, "hooks", m.Hooks().String())
			return m
		}
	}
	l.log.Error("policy module failed to load; what it governs fails closed", "plugin", o.ID, "error", err)
	return &loadFailed{id: o.ID, digest: sum, err: err}
}

// closeWhenLoaded closes p's module once its load ends.
func (l *Cache) closeWhenLoaded(p *pendingPolicy) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		<-p.ready
		if m, ok := p.loaded.(*Module); ok {
			_ = m.Close(context.Background())
		}
	}()
}

// Close ends the loads in flight and closes every cached module, waiting for them.
func (l *Cache) Close() {
	l.cancel()
	l.mu.Lock()
	cache := l.cache
	l.cache = map[string]*pendingPolicy{}
	l.mu.Unlock()
	for _, p := range cache {
		l.closeWhenLoaded(p)
	}
	l.wg.Wait()
}

// pendingPolicy is a policy module being loaded in the background. Until the load ends,
// Hooks and Call wait for it: a decision that needs the module waits at most as long as the
// load may take (the runtime's compile budget and the instance init timeout bound it), and
// a load that fails makes the policy fail closed with the load's reason.
type pendingPolicy struct {
	id     string
	digest [32]byte
	ready  chan struct{}
	loaded Loaded // set before ready is closed
}

var _ Loaded = (*pendingPolicy)(nil)

func (p *pendingPolicy) ID() string { return p.id }

// Digest is the digest the roots scan computed (zero for an operator policy until loaded).
func (p *pendingPolicy) Digest() [32]byte {
	select {
	case <-p.ready:
		return p.loaded.Digest()
	default:
		return p.digest
	}
}

// Hooks waits for the load to end.
func (p *pendingPolicy) Hooks() abi.Hook {
	<-p.ready
	return p.loaded.Hooks()
}

// ABIVersion waits for the load to end.
func (p *pendingPolicy) ABIVersion() int {
	<-p.ready
	return p.loaded.ABIVersion()
}

// Call waits for the load to end (or ctx), then calls the module.
func (p *pendingPolicy) Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error) {
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("policy %q hook %s: its module is still loading: %w", p.id, hook, ctx.Err())
	}
	return p.loaded.Call(ctx, hook, input)
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
func (p *loadFailed) ABIVersion() int  { return abi.Version }
func (p *loadFailed) Call(context.Context, abi.Hook, []byte) ([]byte, error) {
	return nil, p.err
}
