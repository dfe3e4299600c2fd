package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/policy/internal/interrupt"
)

// Defaults applied to zero-valued Config and Limits fields.
const (
	DefaultMemoryMB              = 64
	DefaultTimeout               = 50 * time.Millisecond
	DefaultInitTimeout           = 2 * time.Second
	DefaultMaxOutputBytes        = 1 << 20
	DefaultMaxInputBytes         = 4 << 20
	DefaultPoolSize              = 2
	DefaultMaxInstances          = 8
	DefaultMemoEntries           = 1024
	DefaultMemoMaxBytes          = 32 << 20
	DefaultMaxLogMessageBytes    = 4 << 10
	DefaultMaxLogMessagesPerCall = 32
	DefaultCompileTimeout        = 60 * time.Second
	DefaultMaxConcurrentCompiles = 2

	// MaxMemoryMB is the largest accepted Limits.MemoryMB: a wasm32 memory
	// holds at most 65536 pages of 64 KiB.
	MaxMemoryMB = 4096
)

// Limits bound one plugin's resource use. Every zero field means "inherit":
// LoadOptions.Limits inherits from Config.Limits, which inherits from the
// Default* constants.
type Limits struct {
	// MemoryMB caps what one instance of the guest costs the host in
	// memory, in MiB (1..4096): its linear memory plus the static
	// footprint its module declares outside it, 8 bytes per entry of its
	// tables' minimum sizes and globalBytes (160) per global. Load refuses
	// a module whose static footprint alone exceeds the limit
	// (ErrModuleLimit), and the linear memory gets what is left.
	// Zero: inherit (default 64).
	MemoryMB uint32
	// Timeout bounds one hook call, including a warden_alloc call the host
	// makes before it. Zero: inherit (default 50ms).
	Timeout time.Duration
	// InitTimeout bounds the _initialize, warden_abi_version, warden_hooks
	// and first warden_alloc calls made when an instance is created (off the
	// request path). Zero: inherit (default 2s).
	InitTimeout time.Duration
	// MaxOutputBytes caps the encoded output of one hook call. Zero: inherit
	// (default 1 MiB).
	MaxOutputBytes int
	// MaxInputBytes caps the encoded input of one hook call; a larger input
	// is refused before the guest runs. Zero: inherit (default 4 MiB).
	MaxInputBytes int
}

// merge returns l with its zero fields taken from def.
func (l Limits) merge(def Limits) Limits {
	if l.MemoryMB == 0 {
		l.MemoryMB = def.MemoryMB
	}
	if l.Timeout == 0 {
		l.Timeout = def.Timeout
	}
	if l.InitTimeout == 0 {
		l.InitTimeout = def.InitTimeout
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = def.MaxOutputBytes
	}
	if l.MaxInputBytes == 0 {
		l.MaxInputBytes = def.MaxInputBytes
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.MemoryMB > MaxMemoryMB:
		return fmt.Errorf("memory limit %d MiB exceeds the maximum of %d MiB", l.MemoryMB, MaxMemoryMB)
	case l.Timeout < 0, l.InitTimeout < 0:
		return errors.New("negative timeout")
	case l.MaxOutputBytes < 0 || l.MaxOutputBytes > 1<<31:
		return fmt.Errorf("max output bytes %d out of range", l.MaxOutputBytes)
	case l.MaxInputBytes < 0 || l.MaxInputBytes > 1<<31:
		return fmt.Errorf("max input bytes %d out of range", l.MaxInputBytes)
	}
	return nil
}

// defaultLimits are the Default* constants as Limits.
func defaultLimits() Limits {
	return Limits{
		MemoryMB:       DefaultMemoryMB,
		Timeout:        DefaultTimeout,
		InitTimeout:    DefaultInitTimeout,
		MaxOutputBytes: DefaultMaxOutputBytes,
		MaxInputBytes:  DefaultMaxInputBytes,
	}
}

// Config configures a Runtime. The zero Config is valid: every zero field
// takes the documented default.
type Config struct {
	// CompilationCacheDir is a directory for wazero's on-disk compilation
	// cache, so that a restarted host loads already-compiled modules in
	// milliseconds. Default "": no on-disk cache (compiled code is still
	// shared in memory by every module of this Runtime with the same digest).
	CompilationCacheDir string

	// Limits are the default limits for every module (each field may be
	// overridden per module by LoadOptions.Limits). Zero fields: the
	// Default* constants (64 MiB, 50ms, 2s init, 1 MiB out, 4 MiB in).
	Limits Limits

	// PoolSize is the number of warm instances created per module at Load
	// and kept available. Default 0: 2.
	PoolSize int
	// MaxInstances caps the instances per module; a call that finds all of
	// them busy waits (bounded by its ctx) for one to be returned. Default
	// 0: 8 (raised to PoolSize if smaller).
	MaxInstances int

	// MemoEntries bounds the per-module memo of outputs keyed by (hook,
	// input). Default 0: 1024 entries; negative: memoisation off.
	MemoEntries int
	// MemoMaxBytes bounds the bytes held by one module's memo: outputs and
	// the copies of their inputs it compares on a hit. Default 0: 32 MiB.
	MemoMaxBytes int

	// Logger receives runtime events and, through logger.Named(pluginID),
	// each guest's warden.log messages and stdout (debug) / stderr (warn)
	// lines. Default nil: hclog.NewNullLogger().
	Logger hclog.Logger
	// MaxLogMessageBytes truncates each guest log message (and stdout/stderr
	// line). Default 0: 4 KiB.
	MaxLogMessageBytes int
	// MaxLogMessagesPerCall rate-limits guest logging: messages beyond this
	// count within one guest call are dropped (and counted in a single
	// warning). Default 0: 32.
	MaxLogMessagesPerCall int

	// CompileTimeout bounds how long a Load waits for its module to be
	// instrumented and compiled (the wait for a compile slot included);
	// past it the Load fails with ErrCompileBudget. wazero's compiler does
	// not stop when asked (see acquireCompiled): the compilation finishes
	// in the background, bounded by the module complexity limits checked
	// before it starts, and its result is discarded (a later Load of the
	// same bytes may find it in the compilation cache). A 2 MB Go guest
	// compiles in under a second on an idle core, ten times that on a
	// loaded host or under the race detector; the module complexity
	// limits keep a bomb's compilation to seconds too. Default 0: 60s.
	CompileTimeout time.Duration
	// MaxConcurrentCompiles bounds the compilations that run at once in
	// this Runtime, so that a directory full of compile bombs cannot take
	// every core; a Load waiting for a slot honours its ctx and
	// CompileTimeout. Default 0: 2.
	MaxConcurrentCompiles int
}

// Runtime hosts policy modules. Create one per host with NewRuntime and
// Close it on shutdown.
//
// Memory limits: wazero's page limit (RuntimeConfig.WithMemoryLimitPages)
// is per wazero.Runtime and a grow past it is rejected silently, so the host
// could not tell a memory-limit hit from any other trap. Instead the Runtime
// uses a single wazero.Runtime whose page limit is the wasm32 maximum, and
// enforces each module's own Limits.MemoryMB with a bounded linear-memory
// allocator per instance (wazero's experimental.MemoryAllocator): a
// memory.grow past the module's limit fails (returns -1 to the guest,
// exactly as with a page limit) and is recorded, so a guest that then traps
// or exits is reported with CauseMemory. One wazero.Runtime also means one
// compiled module per digest, whatever the limits of the modules sharing it.
//
// A Runtime is safe for concurrent use.
type Runtime struct {
	cfg    Config // defaults applied
	logger hclog.Logger
	cache  wazero.CompilationCache
	rt     wazero.Runtime
	// wasiFuncs are the functions the WASI sandbox offers, by name.
	wasiFuncs map[string]api.FunctionDefinition
	// instances maps each live guest api.Module to its *instance, for the
	// host functions (which receive the calling api.Module).
	instances sync.Map

	// bufs pools input encoding buffers (*[]byte) for the typed wrappers.
	bufs sync.Pool

	// watchdog interrupts calls that outlive their deadline.
	watchdog *watchdog

	// uninstrumented compiles modules as they are, without the interrupt checks, so
	// that no deadline can stop them. Only the differential test sets it
	// (export_test.go), to compare instrumented and original guests.
	uninstrumented bool

	// compileSlots holds a token per running compilation
	// (Config.MaxConcurrentCompiles).
	compileSlots chan struct{}
	// compiling counts the compile goroutines; Close waits for them.
	compiling sync.WaitGroup

	mu       sync.Mutex
	compiled map[[32]byte]*compiledEntry
	modules  map[*Module]struct{}
	closed   bool
}

// compiledEntry is one compiled module, shared by all Modules with the same
// digest. ready is closed once cm/err are set.
type compiledEntry struct {
	ready chan struct{}
	cm    wazero.CompiledModule
	err   error
	refs  int
}

// NewRuntime creates a Runtime. ctx is used only while creating it.
func NewRuntime(ctx context.Context, cfg Config) (*Runtime, error) {
	cfg.Limits = cfg.Limits.merge(defaultLimits())
	if err := cfg.Limits.validate(); err != nil {
		return nil, fmt.Errorf("policy runtime: %w", err)
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = DefaultMaxInstances
	}
	if cfg.MaxInstances < cfg.PoolSize {
		cfg.MaxInstances = cfg.PoolSize
	}
	if cfg.MemoEntries == 0 {
		cfg.MemoEntries = DefaultMemoEntries
	}
	if cfg.MemoMaxBytes <= 0 {
		cfg.MemoMaxBytes = DefaultMemoMaxBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxLogMessageBytes <= 0 {
		cfg.MaxLogMessageBytes = DefaultMaxLogMessageBytes
	}
	if cfg.MaxLogMessagesPerCall <= 0 {
		cfg.MaxLogMessagesPerCall = DefaultMaxLogMessagesPerCall
	}
	if cfg.CompileTimeout <= 0 {
		cfg.CompileTimeout = DefaultCompileTimeout
	}
	if cfg.MaxConcurrentCompiles <= 0 {
		cfg.MaxConcurrentCompiles = DefaultMaxConcurrentCompiles
	}

	r := &Runtime{
		cfg:      cfg,
		logger:   cfg.Logger,
		compiled: make(map[[32]byte]*compiledEntry),
		modules:  make(map[*Module]struct{}),

		compileSlots: make(chan struct{}, cfg.MaxConcurrentCompiles),
	}
	var err error
	if cfg.CompilationCacheDir != "" {
		if r.cache, err = wazero.NewCompilationCacheWithDir(cfg.CompilationCacheDir); err != nil {
			return nil, fmt.Errorf("policy runtime: compilation cache %s: %w", cfg.CompilationCacheDir, err)
		}
	} else {
		r.cache = wazero.NewCompilationCache()
	}
	r.watchdog = newWatchdog() // stopped by closeWazero
	rcfg := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		// Off: guests are interrupted through the flag every module gets
		// at load (see watchdog.go), which costs a few instructions where
		// wazero's checks cost a trip to Go.
		WithCloseOnContextDone(false).
		// The wasm32 maximum: per-module limits are enforced by the
		// instance allocator (see the Runtime doc).
		WithMemoryLimitPages(MaxMemoryMB * 16).
		WithMemoryCapacityFromMax(false).
		WithDebugInfoEnabled(true).
		WithCustomSections(false)
	r.rt = wazero.NewRuntimeWithConfig(ctx, rcfg)

	// WASI: wazero's builtins, with bounded replacements for those whose
	// cost a guest could scale (see wasi.go).
	wasi, err := r.instantiateWASI(ctx)
	if err != nil {
		_ = r.closeWazero(ctx)
		return nil, fmt.Errorf("policy runtime: %w", err)
	}
	r.wasiFuncs = wasi.ExportedFunctionDefinitions()

	_, err = r.rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(r.hostLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(abi.ImportLog).
		Instantiate(ctx)
	if err != nil {
		_ = r.closeWazero(ctx)
		return nil, fmt.Errorf("policy runtime: instantiate host module %q: %w", abi.ImportModule, err)
	}
	return r, nil
}

// Close closes every Module loaded by r, then the wazero runtime and the
// compilation cache. Calls in flight fail with CauseClosed. Close is
// idempotent.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	mods := make([]*Module, 0, len(r.modules))
	for m := range r.modules {
		mods = append(mods, m)
	}
	r.mu.Unlock()

	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close(ctx))
	}
	r.watchdog.interruptAll()
	// A compilation whose loads gave up (its budget, their ctx) still runs on wazero's
	// runtime, and closing that under it crashes wazero. Close waits for them until ctx
	// ends; past that the last of them closes wazero when it is done, so that a host
	// that must stop now (SIGTERM) does not wait for a compile. Compilations are bounded
	// by the module limits.
	compiled := make(chan struct{})
	go func() { r.compiling.Wait(); close(compiled) }()
	select {
	case <-compiled:
		errs = append(errs, r.closeWazero(ctx))
	case <-ctx.Done():
		go func() {
			<-compiled
			_ = r.closeWazero(context.Background())
		}()
	}
	return errors.Join(errs...)
}

func (r *Runtime) closeWazero(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if cerr := r.cache.Close(ctx); err == nil {
		err = cerr
	}
	r.watchdog.stop()
	return err
}

// acquireCompiled returns the compiled module for digest, compiling wasm at
// most once per digest (concurrent loads of the same bytes wait for the
// first). The caller must releaseCompiled it.
//
// The compilation runs in a goroutine of its own, never under r.mu, once
// it holds one of r.compileSlots; every load waiting for it gives up when
// its ctx is done or after Config.CompileTimeout (counted from the start
// of acquireCompiled, the wait for a slot included). wazero v1.12's
// CompileModule does not honour ctx while it compiles a function (it looks
// at it only between functions, and only with several compilation
// workers), so a compilation cannot be stopped: the goroutine holds a
// reference and its slot until it ends, then drops them, closing the
// compiled module if no load wants it any more. What it can cost is bounded
// by the complexity limits interrupt.Scan and interrupt.Instrument check
// before wazero sees the module.
func (r *Runtime) acquireCompiled(ctx context.Context, digest [32]byte, wasm []byte) (wazero.CompiledModule, error) {
	budget := time.NewTimer(r.cfg.CompileTimeout)
	defer budget.Stop()
	overBudget := func() error {
		return detail(ErrCompileBudget, "compilation did not finish within the %v compile budget", r.cfg.CompileTimeout)
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := r.compiled[digest]
	if !ok {
		e = &compiledEntry{ready: make(chan struct{})}
		r.compiled[digest] = e
	}
	e.refs++
	r.mu.Unlock()

	if !ok {
		var err error
		select {
		case r.compileSlots <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		case <-budget.C:
			err = detail(ErrCompileBudget, "no compile slot became free within the %v compile budget (%d compilations run at once)", r.cfg.CompileTimeout, r.cfg.MaxConcurrentCompiles)
		}
		if err != nil {
			// Loads of the same digest that joined meanwhile get the
			// same answer; the entry is forgotten with its last
			// reference.
			e.err = err
			close(e.ready)
			r.releaseCompiled(ctx, digest)
			return nil, err
		}
		r.mu.Lock()
		if r.closed {
			// Close has begun (and may be waiting for compilations): none starts now.
			r.mu.Unlock()
			<-r.compileSlots
			e.err = ErrClosed
			close(e.ready)
			r.releaseCompiled(ctx, digest)
			return nil, ErrClosed
		}
		e.refs++ // the compiling goroutine's
		r.compiling.Add(1)
		r.mu.Unlock()
		cctx := context.WithoutCancel(ctx)
		go func() {
			defer r.compiling.Done()
			e.cm, e.err = r.compile(cctx, wasm)
			close(e.ready)
			r.releaseCompiled(cctx, digest)
			<-r.compileSlots // last: a free slot means the entry is settled
		}()
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		r.releaseCompiled(ctx, digest)
		return nil, ctx.Err()
	case <-budget.C:
		r.releaseCompiled(ctx, digest)
		return nil, overBudget()
	}
	if e.err != nil {
		err := e.err
		r.releaseCompiled(ctx, digest)
		return nil, err
	}
	return e.cm, nil
}

// compile instruments wasm with the interrupt checks (see watchdog.go) and
// compiles the result. The original bytes are never compiled: the
// instrumentation refuses some modules that would crash or exhaust wazero
// 1.12's compiler (see package interrupt), so its error is the answer.
func (r *Runtime) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	if r.uninstrumented {
		return r.rt.CompileModule(ctx, wasm)
	}
	patched, err := interrupt.Instrument(wasm, interruptExport)
	if err != nil {
		return nil, limitDetail(err)
	}
	return r.rt.CompileModule(ctx, patched)
}

// limitDetail turns an interrupt error past a module complexity limit into
// one wrapping ErrModuleLimit; other errors are returned as they are.
func limitDetail(err error) error {
	if errors.Is(err, interrupt.ErrLimit) {
		return detail(ErrModuleLimit, "%s", strings.TrimPrefix(err.Error(), "interrupt: "))
	}
	return err
}

// Per-instance costs of a module's static footprint outside its linear
// memory, charged against Limits.MemoryMB. Measured with wazero v1.12:
// a table entry is a pointer-sized slot allocated at instantiation; a
// global costs 88 bytes in each instance and 50 in the compiled module.
const (
	tableEntryBytes = 8
	globalBytes     = 160
)

// staticBytes is what fp costs each instance (see Limits.MemoryMB).
func staticBytes(fp interrupt.Footprint) uint64 {
	return fp.TableEntries*tableEntryBytes + fp.Globals*globalBytes
}

// releaseCompiled drops one reference; the last one closes the compiled
// module (a failed compilation is forgotten so that it can be retried).
func (r *Runtime) releaseCompiled(ctx context.Context, digest [32]byte) {
	r.mu.Lock()
	e, ok := r.compiled[digest]
	if !ok {
		r.mu.Unlock()
		return
	}
	e.refs--
	last := e.refs == 0
	if last {
		delete(r.compiled, digest)
	}
	r.mu.Unlock()
	if last {
		<-e.ready // the compiling goroutine holds a reference, so this never blocks long
		if e.cm != nil {
			_ = e.cm.Close(ctx)
		}
	}
}

func (r *Runtime) register(m *Module) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.modules[m] = struct{}{}
	return nil
}

func (r *Runtime) unregister(m *Module) {
	r.mu.Lock()
	delete(r.modules, m)
	r.mu.Unlock()
}
