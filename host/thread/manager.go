package thread

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/roots"
)

// Options configures a Manager. Engine, Conns and Snapshot are required; every other zero
// field is documented.
type Options struct {
	// Engine decides every hook; the Manager installs the policies of the current
	// configuration into it (Engine.SetPolicies) and is its only writer.
	Engine *decision.Engine
	// Conns connects to servers and shares sessions between threads.
	Conns *mcpconn.Manager
	// Snapshot is the initial configuration (Snapshot.Home must be set).
	Snapshot *Snapshot

	// Load re-reads the configuration for Reload. nil: config.LoadHome(Snapshot.Home.Dir) and
	// roots.Scan of its plugins dirs.
	Load func(ctx context.Context) (*Snapshot, error)
	// OnSnapshot, when set, is called after Reload adopted a new snapshot (for example to
	// re-point a roots watcher at changed plugins dirs). It runs on Reload's goroutine with
	// no lock held.
	OnSnapshot func(*Snapshot)
	// Policies loads policy modules. nil: no runtime; every operator policy and every root
	// policy is treated as failing to load, so what it governs fails closed.
	Policies PolicyLoader
	// Executors lists the executor environments with their capabilities and, when connected,
	// their own declarations (executor-config). It is called whenever a candidate set is
	// built. nil: environments.toml's entries, none connected (the executor client does not
	// exist yet).
	Executors func(home *config.Home) []Environment
	// ExecutorFiles returns how to read the files of the capability root at root (an
	// absolute path) in executor env, for selections with an environment location (see
	// roots.LoadRemote). nil: environment locations are refused.
	ExecutorFiles func(env, root string) roots.ReadFunc
	// LookupEnv reads the host's environment: credential references owned by the host and
	// the minimal base environment of stdio servers. nil: os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// OAuth runs OAuth logins (OAuthLogin) and reports their state in status output; it
	// must be the Manager whose Handler Conns gives connections. nil: OAuthLogin fails with
	// ErrOAuthUnavailable and a server declaring `oauth` reports AuthNotLoggedIn.
	OAuth *oauth.Manager
	// Logger receives thread lifecycle logs. nil: no logging.
	Logger hclog.Logger
	// OnToolCall, when set, is told the outcome of every finished tool call of a thread
	// (Thread.CallToolWith), by server name: the tool-call metrics. The name is "" when the
	// thread lists no server of that name (it came from the caller, and a metric labelled
	// with whatever callers send would grow without bound). It runs on the caller's
	// goroutine and must not block.
	OnToolCall func(server string, outcome ToolCallOutcome)
}

// Manager owns the threads of a host: it builds each thread's server set from the current
// configuration, runs policy over it, starts the allowed servers (through a shared
// mcpconn.Manager), applies reloads and roots changes, and publishes status notifications.
//
// Concurrency: every method is safe for concurrent use. Methods that may block take a ctx
// first. Close ends every thread and waits for every goroutine the Manager started.
type Manager struct {
	engine        *decision.Engine
	conns         *mcpconn.Manager
	load          func(ctx context.Context) (*Snapshot, error)
	onSnapshot    func(*Snapshot)
	policies      PolicyLoader
	executorsF    func(home *config.Home) []Environment
	executorFiles func(env, root string) roots.ReadFunc
	lookupEnv     func(string) (string, bool)
	oauth         *oauth.Manager
	onToolCall    func(server string, outcome ToolCallOutcome)
	log           hclog.Logger
	events        *dispatcher

	// configMu serializes configuration changes (Reload, UpdateRoots) with the registration
	// of new threads, so that every thread is planned against every snapshot it lives under.
	configMu sync.Mutex
	// policyMu serializes policy loading and Engine.SetPolicies.
	policyMu sync.Mutex

	mu      sync.Mutex
	snap    *Snapshot
	threads map[string]*Thread
	closed  bool
	wg      sync.WaitGroup // background goroutines (server starts, session closes)
}

// NewManager returns a Manager for the configuration in o.Snapshot, with its policies
// loaded into o.Engine.
func NewManager(ctx context.Context, o Options) (*Manager, error) {
	switch {
	case o.Engine == nil:
		return nil, errors.New("thread.NewManager: Options.Engine is required")
	case o.Conns == nil:
		return nil, errors.New("thread.NewManager: Options.Conns is required")
	case o.Snapshot == nil || o.Snapshot.Home == nil:
		return nil, errors.New("thread.NewManager: Options.Snapshot with a Home is required")
	}
	m := &Manager{
		engine:        o.Engine,
		conns:         o.Conns,
		load:          o.Load,
		onSnapshot:    o.OnSnapshot,
		policies:      o.Policies,
		executorsF:    o.Executors,
		executorFiles: o.ExecutorFiles,
		lookupEnv:     o.LookupEnv,
		oauth:         o.OAuth,
		onToolCall:    o.OnToolCall,
		log:           o.Logger,
		snap:          o.Snapshot,
		threads:       map[string]*Thread{},
	}
	if m.load == nil {
		dir := o.Snapshot.Home.Dir
		m.load = func(context.Context) (*Snapshot, error) { return LoadSnapshot(dir, nil), nil }
	}
	if m.policies == nil {
		m.policies = noRuntime{}
	}
	if m.lookupEnv == nil {
		m.lookupEnv = os.LookupEnv
	}
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	m.events = newDispatcher()
	m.applyLimits(o.Snapshot)
	m.syncPolicies(ctx, nil)
	return m, nil
}

// applyLimits installs snap's host-wide [limits] that the connection manager enforces
// (max_threads is read by Start from the current snapshot).
func (m *Manager) applyLimits(snap *Snapshot) {
	m.conns.SetMaxConcurrentStarts(snap.Home.Config.Limits.WithDefaults().MaxConcurrentServerStarts)
}

// LoadSnapshot reads a home directory and scans its plugins dirs (plus extraDirs): what
// Reload does by default.
func LoadSnapshot(dir string, extraDirs []string) *Snapshot {
	home, err := config.LoadHome(dir)
	dirs := append(slices.Clone(home.Config.Plugins.Dirs), extraDirs...)
	return &Snapshot{Home: home, Roots: roots.Scan(dirs, roots.Options{}), ConfigErr: err}
}

// Subscribe registers fn for every Event until the returned cancel func is called. Events
// are delivered one at a time, in the order they happened, on a goroutine of the Manager;
// fn must not block for long and must not call Close (which waits for that goroutine), but
// may call any other method.
func (m *Manager) Subscribe(fn func(Event)) (cancel func()) { return m.events.subscribe(fn) }

// Snapshot returns the configuration new threads are built from.
func (m *Manager) Snapshot() *Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snap
}

// Thread returns the running thread with this id.
func (m *Manager) Thread(id string) (*Thread, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	if !ok || !t.started.Load() {
		return nil, false
	}
	return t, true
}

// List returns the running threads (those whose Start returned them), oldest first.
func (m *Manager) List() []*Thread {
	return slices.DeleteFunc(m.all(), func(t *Thread) bool { return !t.started.Load() })
}

// all returns every registered thread, including those whose Start is still running (a
// reload must plan them too), oldest first.
func (m *Manager) all() []*Thread {
	m.mu.Lock()
	out := make([]*Thread, 0, len(m.threads))
	for _, t := range m.threads {
		out = append(out, t)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Thread) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// Start starts a thread (thread/start). It builds the candidate set from the current
// configuration and the selected roots (DESIGN.md §3), runs policy, and starts the exposed
// servers concurrently, each bounded by its startup timeout. It returns once policy has
// run and every required server (except executor-config ones, which fail alone) is ready;
// the other servers keep starting and report through StartupStatus events.
//
// A selected root that cannot be used fails Start with a *RootError. A required server that
// does not start fails Start with a *RequiredServerError; the thread is then closed (its
// other servers are released) and not listed.
func (m *Manager) Start(ctx context.Context, p StartParams) (*Thread, error) {
	kind := p.Kind
	switch kind {
	case "":
		kind = KindInteractive
	case KindInteractive, KindReviewer, KindSubagent:
	default:
		return nil, fmt.Errorf("thread/start: %w: unknown thread kind %q", ErrInvalidParams, p.Kind)
	}
	t := m.newThread(kind, p)

	m.configMu.Lock()
	snap, err := m.current()
	if err != nil {
		m.configMu.Unlock()
		t.cancel()
		return nil, fmt.Errorf("thread/start: %w", err)
	}
	pl, err := m.buildPlan(snap, t, nil, true)
	if err != nil {
		m.configMu.Unlock()
		t.cancel()
		return nil, fmt.Errorf("thread/start: %w", err)
	}
	t.latest = pl
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.configMu.Unlock()
		t.cancel()
		return nil, fmt.Errorf("thread/start: thread manager %w", ErrClosed)
	}
	if limit := snap.Home.Config.Limits.WithDefaults().MaxThreads; len(m.threads) >= limit {
		m.mu.Unlock()
		m.configMu.Unlock()
		t.cancel()
		return nil, fmt.Errorf("thread/start: %w: %d threads are open, the limit set by max_threads in [limits] of %s (default %d); close a thread or raise the limit",
			ErrThreadLimit, len(m.threads), snap.Home.Config.File, config.DefaultMaxThreads)
	}
	m.threads[t.id] = t
	m.mu.Unlock()
	m.configMu.Unlock()

	if len(pl.outOfSet()) > 0 {
		m.syncPolicies(ctx, nil) // the thread is registered: its roots' policies are included
	}
	t.applyMu.Lock()
	err = t.apply(ctx, pl, "")
	t.applyMu.Unlock()
	if err == nil {
		err = t.waitRequired(ctx)
	}
	if err != nil {
		_ = t.Close()
		return nil, fmt.Errorf("thread/start: %w", err)
	}
	t.started.Store(true)
	m.log.Debug("thread started", "thread", t.id, "kind", kind, "roots", len(pl.roots))
	return t, nil
}

// DiscoverStatus is mcpServerStatus/list without a thread: it connects to the named server
// alone (or, with name "", to every server) as a default interactive thread with no
// selected roots would — policy applies — reads its status and catalog, and lets the
// connection go. An unknown or hidden name gives an empty result.
func (m *Manager) DiscoverStatus(ctx context.Context, name string) ([]ServerStatus, error) {
	snap, err := m.current()
	if err != nil {
		return nil, fmt.Errorf("mcpServerStatus/list: %w", err)
	}
	t := m.newThread(KindInteractive, StartParams{})
	t.ephemeral = true
	defer t.Close()
	pl, err := m.buildPlan(snap, t, nil, true)
	if err != nil {
		return nil, fmt.Errorf("mcpServerStatus/list: %w", err)
	}
	if name != "" && !pl.has(name) {
		return []ServerStatus{}, nil
	}
	t.latest = pl
	t.applyMu.Lock()
	err = t.apply(ctx, pl, name)
	t.applyMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("mcpServerStatus/list: %w", err)
	}
	return t.collect(ctx, name, true)
}

// Close closes every thread (releasing their connections) and waits for every goroutine of
// the Manager, including pending event deliveries. It does not close Options.Conns. Close is
// idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return nil
	}
	m.closed = true
	ts := make([]*Thread, 0, len(m.threads))
	for _, t := range m.threads {
		ts = append(ts, t)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Go(func() { _ = t.Close() })
	}
	wg.Wait()
	m.wg.Wait()
	m.events.close()
	return nil
}

func (m *Manager) current() (*Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("thread manager %w", ErrClosed)
	}
	return m.snap, nil
}

// goBackground runs fn on a goroutine the Manager waits for at Close; it reports false
// (and does not run fn) once the Manager is closed.
func (m *Manager) goBackground(fn func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.wg.Go(fn)
	return true
}

func (m *Manager) emit(ev Event) { m.events.emit(ev) }

func (m *Manager) newThread(kind Kind, p StartParams) *Thread {
	ctx, cancel := context.WithCancel(context.Background())
	return &Thread{
		m:        m,
		id:       newID(),
		kind:     kind,
		selected: slices.Clone(p.SelectedRoots),
		cwd:      p.Cwd,
		created:  time.Now(),
		ctx:      ctx,
		cancel:   cancel,
	}
}

// newID returns "thr_" and 128 random bits in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "thr_" + hex.EncodeToString(b[:])
}

// executors returns the executor environments for home.
func (m *Manager) executors(home *config.Home) []Environment {
	if m.executorsF != nil {
		return m.executorsF(home)
	}
	var out []Environment
	for _, e := range home.Environments.List {
		out = append(out, Environment{ID: e.ID})
	}
	return out
}

// syncPolicies loads the policies of the current configuration and installs them into the
// engine: the operator policies, and a policy per plugin id. The plugin ids are claimed, in
// order, by the usable roots of the watched set, the roots threads selected outside it (in
// their newest plans) and extra; two of those with one id but different policy modules make
// the id fail closed. Then the roots threads still run on (their applied plans, which a
// queued refresh has not replaced yet, or a root that has since broken or gone) keep their
// policy for ids nothing newer claims — a server never outlives its plugin's policy.
//
// The caller's cancellation is not passed on: a policy set is shared by every thread, and a
// module whose load was cut short would fail closed for all of them.
func (m *Manager) syncPolicies(ctx context.Context, extra []*roots.Root) {
	ctx = context.WithoutCancel(ctx)
	m.policyMu.Lock()
	defer m.policyMu.Unlock()
	m.mu.Lock()
	cfg := m.snap.Home.Config
	var primary, secondary []*roots.Root
	if m.snap.Roots != nil {
		for _, r := range m.snap.Roots.Roots() {
			if r.Status != roots.StatusError {
				primary = append(primary, r)
			}
		}
	}
	for _, t := range m.threads {
		t.mu.Lock()
		if t.latest != nil {
			primary = append(primary, t.latest.outOfSet()...)
		}
		for _, p := range []*plan{t.latest, t.current} {
			if p != nil {
				for _, r := range p.roots {
					secondary = append(secondary, r.root)
				}
			}
		}
		t.mu.Unlock()
	}
	m.mu.Unlock()
	primary = append(primary, extra...)

	seen := map[*roots.Root]bool{}
	var rs []*roots.Root
	nPrimary := 0
	for i, r := range append(primary, secondary...) {
		if !seen[r] {
			seen[r] = true
			rs = append(rs, r)
			if i < len(primary) {
				nPrimary = len(rs)
			}
		}
	}

	pols := m.policies.Load(ctx, cfg, rs)
	plugins := map[string]decision.Policy{}
	claimedBefore := map[string]bool{} // ids claimed by the primary tier
	for _, tier := range [][2]int{{0, nPrimary}, {nPrimary, len(rs)}} {
		claimed := map[string]bool{}
		digests := map[string]string{}
		for i := tier[0]; i < tier[1]; i++ {
			r := rs[i]
			if claimedBefore[r.ID] {
				continue
			}
			claimed[r.ID] = true
			if r.Policy == nil || i >= len(pols.Plugins) || pols.Plugins[i] == nil {
				continue
			}
			if d, ok := digests[r.ID]; ok {
				if d != r.Policy.SHA256 {
					m.log.Warn("two capability roots with one plugin id have different policies; the id fails closed", "plugin", r.ID)
					plugins[r.ID] = &failingPolicy{id: r.ID, hooks: abi.AllHooks,
						err: fmt.Errorf("policy plugin %q: two capability roots with this id have different policy modules", r.ID)}
				}
				continue
			}
			digests[r.ID] = r.Policy.SHA256
			plugins[r.ID] = pols.Plugins[i]
		}
		for id := range claimed {
			claimedBefore[id] = true
		}
	}
	m.engine.SetPolicies(pols.Operator, plugins)
}

// failingPolicy is a policy whose every call fails: the engine then fails closed for
// everything it governs, with err's text as the reason.
type failingPolicy struct {
	id     string
	digest [32]byte
	hooks  abi.Hook
	err    error
}

func (p *failingPolicy) ID() string       { return p.id }
func (p *failingPolicy) Digest() [32]byte { return p.digest }
func (p *failingPolicy) Hooks() abi.Hook  { return p.hooks }
func (p *failingPolicy) Call(context.Context, abi.Hook, []byte) ([]byte, error) {
	return nil, p.err
}

// noRuntime is the PolicyLoader of a Manager without one: every policy fails closed.
type noRuntime struct{}

func (noRuntime) Load(_ context.Context, cfg *config.Config, rs []*roots.Root) Policies {
	var out Policies
	for _, ref := range cfg.Policies {
		out.Operator = append(out.Operator, &failingPolicy{id: ref.Path, hooks: abi.AllHooks,
			err: fmt.Errorf("operator policy %q: no policy runtime is configured", ref.Path)})
	}
	for _, r := range rs {
		var p decision.Policy
		if r.Policy != nil {
			p = &failingPolicy{id: r.ID, hooks: abi.AllHooks,
				err: fmt.Errorf("policy plugin %q: no policy runtime is configured", r.ID)}
		}
		out.Plugins = append(out.Plugins, p)
	}
	return out
}
