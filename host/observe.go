package host

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/metrics"
	"github.com/warden-mcp/warden/host/policy"
	"github.com/warden-mcp/warden/host/thread"
)

// Status is what the host is doing now, for an operator (the status page, host/ui): its
// threads and their servers, the shared MCP sessions, the executors, the policy modules with
// their latencies, and the recent refusals of the decision engine with their reasons.
//
// It holds names, states, reasons and counts only, never a secret value: reasons and errors
// are the texts clients and logs already get (which never carry a credential), with every URL
// in them redacted as in errors (mcpconn.RedactURLs: no userinfo, query or fragment).
type Status struct {
	// Time is when the status was read.
	Time time.Time
	// Home is the host's home directory.
	Home string
	// ConfigError lists the problems of the configuration files in use ("" when clean).
	ConfigError string
	// Threads are the running threads, oldest first.
	Threads []ThreadStatus
	// Sessions are the open shared MCP connections.
	Sessions []SessionStatus
	// Executors are the environments.toml entries.
	Executors []ExecutorStatus
	// Policies are the loaded policy modules: the operator's, then the plugins', by id.
	Policies []PolicyStatus
	// Denials are the recent refusals, newest first (at most MaxDenials; a refusal repeated
	// — the same server disabled again at every refresh — is one entry with a count).
	Denials []Denial
}

// ThreadStatus is one running thread.
type ThreadStatus struct {
	thread.View
	// Environment is where the thread's selected roots are: "local", an executor id, or a
	// comma-separated list when they are in several places.
	Environment string
}

// SessionStatus is one shared MCP connection and the threads that use it.
type SessionStatus struct {
	mcpconn.SessionInfo
	// Threads are the ids of the threads whose servers hold this session.
	Threads []string
}

// ExecutorStatus is one executor environment.
type ExecutorStatus struct {
	ID string
	// Address is its URL (redacted) or its program's path.
	Address   string
	Connected bool
	// Dialled reports whether the first connect succeeded (after it the client reconnects by
	// itself).
	Dialled bool
	// HTTPHeaderEnvVars and Processes are the capabilities it announced.
	HTTPHeaderEnvVars bool
	Processes         bool
	// Servers counts the servers it declares (executor-config).
	Servers int
	// Reconnects counts its reconnections after the first connect.
	Reconnects int
}

// PolicyStatus is one loaded policy module.
type PolicyStatus struct {
	// ID is the plugin id ("name@version") or the operator policy's name.
	ID string
	// Kind is "operator" or "plugin".
	Kind string
	// Digest is the module's sha256 (hex; "" until an operator policy has loaded).
	Digest string
	// Loading: the module is still compiling; Hooks is empty until it is done.
	Loading bool
	Hooks   []string
	// PoolSize is the number of warm instances kept per module.
	PoolSize int
	// LastError is the newest failed call's error (a load failure, a trap, a timeout); "".
	LastError string
	// Latency summarizes the recent calls per hook (those called at least once).
	Latency []HookLatency
}

// HookLatency summarizes the recent calls of one hook of one policy.
type HookLatency struct {
	Hook string
	// Calls and Errors count every call since the module was loaded.
	Calls  uint64
	Errors uint64
	// P50 and P99 are over the latest LatencyWindow calls.
	P50 time.Duration
	P99 time.Duration
}

// Denial is one recent refusal of the decision engine.
type Denial struct {
	decision.Observation
	// HookName is Hook's name ("servers", "tool_call", …).
	HookName string
	// Count is how many times this refusal was made (same hook, thread, server, item,
	// outcome, reason and decider); Time is the latest.
	Count int
}

// MaxDenials bounds Status.Denials: the ring of recent refusals keeps this many.
const MaxDenials = 100

// LatencyWindow is how many recent call durations each policy hook keeps for its p50/p99.
const LatencyWindow = 512

// observer collects what Status reports beyond the parts' own state — the recent denials
// and the policies' latencies — and feeds the metrics. It also tells subscribers (the status
// page's live stream) that something changed.
type observer struct {
	metrics  *metrics.Metrics
	poolSize int
	wg       sync.WaitGroup // goroutines waiting for modules to load (learnHooks)

	mu       sync.Mutex
	denials  []Denial // oldest first, at most MaxDenials
	policies []*timedPolicy
	wrapped  map[policy.Loaded]*timedPolicy // the latest Load's wrappers, by module
	subs     map[int]chan struct{}
	nextSub  int
	closed   bool
}

func newObserver(m *metrics.Metrics) *observer {
	return &observer{
		metrics: m,
		// host.go leaves policy.Config.PoolSize at its default.
		poolSize: policy.DefaultPoolSize,
		wrapped:  map[policy.Loaded]*timedPolicy{},
		subs:     map[int]chan struct{}{},
	}
}

// decided is decision.Options.Observe: every decision is counted, refusals are kept.
func (o *observer) decided(ob decision.Observation) {
	o.metrics.Decision(ob.Hook.String(), ob.Outcome)
	if !ob.Denied() {
		return
	}
	o.mu.Lock()
	same := func(d Denial) bool {
		x := d.Observation
		return x.Hook == ob.Hook && x.Thread == ob.Thread && x.Server == ob.Server && x.Item == ob.Item &&
			x.Outcome == ob.Outcome && x.Reason == ob.Reason && x.DecidedBy == ob.DecidedBy
	}
	d := Denial{Observation: ob, HookName: ob.Hook.String(), Count: 1}
	if i := slices.IndexFunc(o.denials, same); i >= 0 {
		d.Count += o.denials[i].Count
		o.denials = slices.Delete(o.denials, i, i+1)
	}
	if len(o.denials) >= MaxDenials {
		o.denials = slices.Delete(o.denials, 0, len(o.denials)-MaxDenials+1)
	}
	o.denials = append(o.denials, d)
	o.mu.Unlock()
	o.changed()
}

// subscribe returns a channel that receives (coalesced) when something Status reports may
// have changed, until cancel is called.
func (o *observer) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	o.mu.Lock()
	id := o.nextSub
	o.nextSub++
	if !o.closed {
		o.subs[id] = ch
	}
	o.mu.Unlock()
	return ch, func() {
		o.mu.Lock()
		delete(o.subs, id)
		o.mu.Unlock()
	}
}

// changed wakes every subscriber without blocking (a pending wake-up covers this one).
func (o *observer) changed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ch := range o.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// wrap returns ps with each module wrapped in its timedPolicy (the same wrapper for the
// same module across loads, so its latencies survive a reload that keeps it). The wrappers
// of this load become the listed policies.
func (o *observer) wrap(operator, plugins []policy.Loaded) thread.Policies {
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := o.wrapped
	o.wrapped = map[policy.Loaded]*timedPolicy{}
	o.policies = o.policies[:0]
	one := func(p policy.Loaded, kind string) decision.Policy {
		if p == nil {
			return nil
		}
		w := o.wrapped[p]
		if w == nil {
			if w = prev[p]; w == nil {
				w = newTimedPolicy(p, kind, o)
				if !o.closed {
					o.wg.Go(w.learnHooks)
				}
			}
			o.wrapped[p] = w
			o.policies = append(o.policies, w)
		}
		return w
	}
	var out thread.Policies
	out.Operator = make([]decision.Policy, len(operator))
	for i, p := range operator {
		out.Operator[i] = one(p, "operator")
	}
	out.Plugins = make([]decision.Policy, len(plugins))
	for i, p := range plugins {
		out.Plugins[i] = one(p, "plugin")
	}
	return out
}

// close stops notifying and waits for the hook-learning goroutines; call it after the policy
// cache is closed (which ends every load they wait for).
func (o *observer) close() {
	o.mu.Lock()
	o.closed = true
	clear(o.subs)
	o.mu.Unlock()
	o.wg.Wait()
}

// timedPolicy is a policy module as the engine gets it from the host: every call is timed
// into the metrics' histogram and a small ring per hook (the status page's p50/p99), and the
// newest failure is kept. Its method set is the engine's Policy plus ABIVersion, forwarded.
type timedPolicy struct {
	p    policy.Loaded
	kind string
	o    *observer

	hooks atomic.Pointer[abi.Hook] // nil while the module loads

	mu      sync.Mutex
	stats   map[abi.Hook]*hookStats
	lastErr string
}

type hookStats struct {
	calls, errors uint64
	ring          [LatencyWindow]time.Duration
	n             int // filled entries
	next          int
}

func newTimedPolicy(p policy.Loaded, kind string, o *observer) *timedPolicy {
	return &timedPolicy{p: p, kind: kind, o: o, stats: map[abi.Hook]*hookStats{}}
}

// learnHooks waits for the module to load (Hooks blocks until then), so the page can list
// its hooks without ever blocking on a compile.
func (w *timedPolicy) learnHooks() {
	h := w.p.Hooks()
	w.hooks.Store(&h)
	w.o.changed()
}

func (w *timedPolicy) ID() string       { return w.p.ID() }
func (w *timedPolicy) Digest() [32]byte { return w.p.Digest() }
func (w *timedPolicy) Hooks() abi.Hook  { return w.p.Hooks() }
func (w *timedPolicy) ABIVersion() int  { return w.p.ABIVersion() }

func (w *timedPolicy) Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error) {
	start := time.Now()
	out, err := w.p.Call(ctx, hook, input)
	d := time.Since(start)
	w.o.metrics.PolicyCall(w.p.ID(), hook.String(), d)
	w.mu.Lock()
	s := w.stats[hook]
	if s == nil {
		s = &hookStats{}
		w.stats[hook] = s
	}
	s.calls++
	s.ring[s.next] = d
	s.next = (s.next + 1) % LatencyWindow
	s.n = min(s.n+1, LatencyWindow)
	if err != nil {
		s.errors++
		w.lastErr = err.Error()
	}
	w.mu.Unlock()
	return out, err
}

func (w *timedPolicy) status() PolicyStatus {
	d := w.p.Digest()
	ps := PolicyStatus{ID: w.p.ID(), Kind: w.kind, PoolSize: w.o.poolSize, Latency: []HookLatency{}, Hooks: []string{}}
	if d != ([32]byte{}) {
		ps.Digest = hex.EncodeToString(d[:])
	}
	if h := w.hooks.Load(); h == nil {
		ps.Loading = true
	} else {
		for _, x := range abi.Hooks() {
			if h.Has(x) {
				ps.Hooks = append(ps.Hooks, x.String())
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ps.LastError = mcpconn.RedactURLs(w.lastErr)
	for _, x := range abi.Hooks() {
		s := w.stats[x]
		if s == nil {
			continue
		}
		recent := slices.Clone(s.ring[:s.n])
		slices.Sort(recent)
		ps.Latency = append(ps.Latency, HookLatency{Hook: x.String(), Calls: s.calls, Errors: s.errors,
			P50: quantile(recent, 0.50), P99: quantile(recent, 0.99)})
	}
	return ps
}

// quantile is the nearest-rank q-quantile of sorted durations (0 for none).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Status reads what the host is doing now (see Status). It never waits for a server, a
// module or an executor, so it is cheap enough to read every second.
func (h *Host) Status() Status {
	st := Status{Time: time.Now(), Home: h.homeDir, Threads: []ThreadStatus{}, Sessions: []SessionStatus{},
		Executors: []ExecutorStatus{}, Policies: []PolicyStatus{}, Denials: []Denial{}}
	if err := h.ConfigErrors(); err != nil {
		st.ConfigError = mcpconn.RedactURLs(err.Error())
	}
	users := map[string][]string{} // session key → thread ids
	for _, t := range h.threads.List() {
		v := t.View()
		envs := []string{}
		for _, r := range v.Roots {
			if !slices.Contains(envs, r.Environment) {
				envs = append(envs, r.Environment)
			}
		}
		env := "local"
		if len(envs) > 0 {
			env = strings.Join(envs, ", ")
		}
		for i := range v.Servers {
			s := &v.Servers[i]
			s.Reason = mcpconn.RedactURLs(s.Reason)
			if s.SessionKey != "" && !slices.Contains(users[s.SessionKey], v.ID) {
				users[s.SessionKey] = append(users[s.SessionKey], v.ID)
			}
		}
		st.Threads = append(st.Threads, ThreadStatus{View: v, Environment: env})
	}
	for _, s := range h.conns.Sessions() {
		ths := users[s.Key]
		if ths == nil {
			ths = []string{}
		}
		st.Sessions = append(st.Sessions, SessionStatus{SessionInfo: s, Threads: ths})
	}
	if h.execs != nil {
		st.Executors = h.execs.views()
	}
	h.obs.mu.Lock()
	pols := slices.Clone(h.obs.policies)
	for i := len(h.obs.denials) - 1; i >= 0; i-- {
		d := h.obs.denials[i]
		d.Reason = mcpconn.RedactURLs(d.Reason)
		st.Denials = append(st.Denials, d)
	}
	h.obs.mu.Unlock()
	for _, p := range pols {
		st.Policies = append(st.Policies, p.status())
	}
	// The operator's first, in config order (they run first, in that order), then the
	// plugins' by id.
	slices.SortStableFunc(st.Policies, func(a, b PolicyStatus) int {
		switch {
		case a.Kind != b.Kind && a.Kind == "operator":
			return -1
		case a.Kind != b.Kind:
			return 1
		case a.Kind == "operator":
			return 0
		}
		return strings.Compare(a.ID, b.ID)
	})
	return st
}

// Subscribe returns a channel that receives (coalesced: one pending value at most) whenever
// something Status reports may have changed — a server's state, a thread, an executor, a
// policy finishing its load, a refusal — until cancel is called. Latencies and counters
// change without a signal: a reader that shows them reads Status on a timer too.
func (h *Host) Subscribe() (changes <-chan struct{}, cancel func()) { return h.obs.subscribe() }

// Metrics is the host's Prometheus registry and series (see package host/metrics); serve it
// with Metrics().Handler() behind a listener's guard.
func (h *Host) Metrics() *metrics.Metrics { return h.obs.metrics }
