package policy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/warden-mcp/warden/abi"
)

// Module is one loaded policy plugin: a compiled module plus a pool of warm
// instances and a memo of outputs.
//
// Concurrency: every Module method is safe for concurrent use. The wasm
// instances behind it are not (an instance runs one call at a time); the
// Module hands each call an instance of its own, so up to
// Config.MaxInstances calls run in parallel and further callers wait.
type Module struct {
	rt     *Runtime
	id     string
	digest [32]byte
	hooks  abi.Hook
	// version is the ABI version the module declared (warden_abi_version),
	// set from the first instance before any other exists.
	version int
	limits  Limits
	// memLimit caps each instance's linear memory, in bytes: what
	// limits.MemoryMB leaves after the module's tables and globals.
	memLimit uint64
	logger   hclog.Logger
	compiled wazero.CompiledModule
	memo     *memo // nil when memoisation is off

	poolSize     int
	maxInstances int
	// idle holds warm instances; its capacity is maxInstances, and sends
	// happen under mu after checking closed, so they never block.
	idle chan *instance
	// hot is a one-instance cache in front of idle: a caller that finds
	// an instance there takes it with one atomic swap, and release puts
	// one back with one compare-and-swap, where a channel operation and a
	// lock would cost ≈50 ns a call. closed (set by Close before it
	// drains hot) tells release and acquire not to use it any more.
	hot atomic.Pointer[instance]
	// ctx is canceled by Close; it bounds background instantiations.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	// created counts successful instantiations (observability and tests).
	created atomic.Int64

	mu     sync.Mutex
	live   int         // instances that exist or are being created
	closed atomic.Bool // set by Close (under mu), read with or without mu
	// growFailed is closed (and replaced) when a background instantiation
	// fails, waking callers waiting for an instance; growErr says why.
	growFailed chan struct{}
	growErr    error
}

// newModule validates the compiled module, creates the first instance
// synchronously (checking the ABI version and hooks), then pre-warms the
// rest of the pool.
func (r *Runtime) newModule(ctx context.Context, opts LoadOptions, limits Limits, memLimit uint64, digest [32]byte, cm wazero.CompiledModule) (*Module, error) {
	present, err := r.validateModule(cm, limits, memLimit)
	if err != nil {
		return nil, err
	}
	memoEntries := r.cfg.MemoEntries
	if opts.MemoEntries != 0 {
		memoEntries = opts.MemoEntries
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Module{
		rt:           r,
		id:           opts.ID,
		digest:       digest,
		hooks:        present,
		limits:       limits,
		memLimit:     memLimit,
		logger:       r.logger.Named(opts.ID),
		compiled:     cm,
		poolSize:     r.cfg.PoolSize,
		maxInstances: r.cfg.MaxInstances,
		ctx:          mctx,
		cancel:       cancel,
		done:         make(chan struct{}),
		growFailed:   make(chan struct{}),
	}
	if memoEntries > 0 {
		m.memo = newMemo(memoEntries, r.cfg.MemoMaxBytes)
	}
	m.idle = make(chan *instance, m.maxInstances)

	first, err := m.newInstance(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	m.version = first.version
	// A guest is held to the version it declared: it may not implement a
	// later version's hook.
	if later := present &^ abi.HooksOf(m.version); later != 0 {
		first.close(ctx)
		cancel()
		return nil, detail(ErrABIVersion, "the module exports %s, a hook of ABI version %d, but %s() returned %d", exportNames(later), abi.Version, abi.ExportABIVersion, m.version)
	}
	// warden_hooks narrows (never widens) the set of hook exports.
	if first.hooksMask != nil {
		mask := abi.Hook(*first.hooksMask)
		if extra := mask &^ abi.HooksOf(m.version); extra != 0 {
			first.close(ctx)
			cancel()
			return nil, detail(ErrBadExport, "%s() returned %#x, which has bits for no hook of ABI version %d (%s)", abi.ExportHooks, uint32(mask), m.version, extra)
		}
		if missing := mask &^ present; missing != 0 {
			first.close(ctx)
			cancel()
			return nil, detail(ErrBadExport, "%s() reports %s but the module does not export %s", abi.ExportHooks, missing, exportNames(missing))
		}
		m.hooks = mask
		if mask == 0 {
			first.close(ctx)
			cancel()
			return nil, detail(ErrNoHooks, "%s() returned 0: the module implements no hook", abi.ExportHooks)
		}
	}
	instances := []*instance{first}
	for len(instances) < m.poolSize {
		in, err := m.newInstance(ctx)
		if err != nil {
			for _, in := range instances {
				in.close(ctx)
			}
			cancel()
			return nil, err
		}
		instances = append(instances, in)
	}
	m.live = len(instances)
	for _, in := range instances {
		m.idle <- in
	}
	if err := r.register(m); err != nil { // the Runtime was closed meanwhile
		for _, in := range instances {
			in.close(ctx)
		}
		cancel()
		return nil, err // the caller releases the compiled module
	}
	return m, nil
}

func exportNames(h abi.Hook) string {
	var s string
	for _, x := range abi.Hooks() {
		if h.Has(x) {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%q", x.Export())
		}
	}
	return s
}

// ID returns the plugin ID given to Load.
func (m *Module) ID() string { return m.id }

// Digest returns the sha256 of the module bytes.
func (m *Module) Digest() [32]byte { return m.digest }

// Hooks returns the set of hooks the module implements (a bitmask of
// abi.Hook values). Calling a hook outside this set fails with
// CauseMissingHook; callers usually skip such plugins instead.
func (m *Module) Hooks() abi.Hook { return m.hooks }

// ABIVersion returns the ABI version the module declared (from
// abi.MinVersion to abi.Version). A caller decoding the module's outputs
// holds them to it: see abi.ServersOutput.HoldTo and abi.ToolCallOutput.HoldTo.
func (m *Module) ABIVersion() int { return m.version }

// Limits returns the module's effective limits.
func (m *Module) Limits() Limits { return m.limits }

// Close closes the module's idle instances and releases its compiled code.
// Calls in flight finish (or fail with CauseClosed if the Runtime is being
// closed) and their instances are closed when returned; new calls fail with
// CauseClosed. Close is idempotent.
func (m *Module) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil
	}
	m.closed.Store(true)
	close(m.done)
	var idle []*instance
	if in := m.hot.Swap(nil); in != nil {
		idle = append(idle, in)
	}
	for {
		select {
		case in := <-m.idle:
			idle = append(idle, in)
			continue
		default:
		}
		break
	}
	m.live -= len(idle)
	m.mu.Unlock()

	m.cancel()
	for _, in := range idle {
		in.close(ctx)
	}
	m.wg.Wait() // background instantiations see closed and close their instance
	m.rt.unregister(m)
	m.rt.releaseCompiled(ctx, m.digest)
	return nil
}

func (m *Module) isClosed() bool { return m.closed.Load() }

// acquire takes an idle instance, or waits (bounded by ctx) for one,
// starting a background instantiation when the pool may still grow.
func (m *Module) acquire(ctx context.Context) (*instance, error) {
	if in := m.hot.Swap(nil); in != nil {
		if !m.closed.Load() {
			return in, nil
		}
		m.retire(in) // released while Close ran
		return nil, ErrClosed
	}
	select {
	case in := <-m.idle:
		return in, nil
	default:
	}
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if m.live < m.maxInstances {
		m.live++
		m.wg.Add(1)
		go m.grow()
	}
	failed := m.growFailed
	m.mu.Unlock()

	select {
	case in := <-m.idle:
		return in, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.done:
		return nil, ErrClosed
	case <-failed:
		m.mu.Lock()
		err := m.growErr
		m.mu.Unlock()
		return nil, err
	}
}

// release returns a healthy instance to the pool.
func (m *Module) release(in *instance) {
	if m.hot.CompareAndSwap(nil, in) {
		// Close stores closed before it drains hot, so either it finds
		// in there or this load sees closed (and then one of the two
		// swaps takes in; an instance another release put there after
		// is handled by that release the same way).
		if m.closed.Load() {
			if in := m.hot.Swap(nil); in != nil {
				m.retire(in)
			}
		}
		return
	}
	m.mu.Lock()
	if !m.closed.Load() {
		select {
		case m.idle <- in:
			m.mu.Unlock()
			return
		default: // cannot happen: cap(idle) == maxInstances >= live
		}
	}
	m.mu.Unlock()
	m.retire(in)
}

// retire closes a healthy instance that can no longer be pooled (the
// module is closed).
func (m *Module) retire(in *instance) {
	m.mu.Lock()
	m.live--
	m.mu.Unlock()
	in.close(context.Background())
}

// discard closes an instance that failed (it is never reused) and starts a
// replacement in the background, off the request path.
func (m *Module) discard(in *instance) {
	in.close(context.Background())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		m.live--
		return
	}
	// live is unchanged: the replacement takes the discarded one's slot.
	m.wg.Add(1)
	go m.grow()
}

// grow creates one instance in the background for a slot already counted
// in live.
func (m *Module) grow() {
	defer m.wg.Done()
	in, err := m.newInstance(m.ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.live--
		if !m.closed.Load() {
			m.logger.Error("cannot create a policy instance", "error", err)
			m.growErr = err
			close(m.growFailed)
			m.growFailed = make(chan struct{})
		}
		return
	}
	if m.closed.Load() {
		m.live--
		in.close(context.Background())
		return
	}
	select {
	case m.idle <- in:
	default: // cannot happen
		m.live--
		in.close(context.Background())
	}
}

// newInstance instantiates the compiled module in its sandbox and runs the
// init sequence: _initialize, warden_abi_version, warden_hooks, and a first
// warden_alloc so that small inputs never need one on the request path.
func (m *Module) newInstance(ctx context.Context) (in *instance, err error) {
	in, err = m.instantiate(ctx)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &Error{PluginID: m.id, Cause: CauseLoad, Err: err}
	}
	return in, nil
}
