package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/policy/internal/interrupt"
)

// instance is one instantiated guest. It is not safe for concurrent use: the
// pool gives it to one call at a time. All of its mutable fields are touched
// only by the goroutine that holds it (host functions and the allocator run
// on that goroutine, inside the guest call).
type instance struct {
	m     *Module
	mod   api.Module
	mem   api.Memory
	alloc api.Function
	// logLevelFn is warden_log_level (nil when not exported) and
	// sentLevel the level it was last called with.
	logLevelFn api.Function
	sentLevel  int32
	hookFn     [abi.NumHooks]api.Function // by bit index of abi.Hook
	version    int                        // what warden_abi_version returned
	stack      [2]uint64
	guard      guard      // the interrupt flag and the watchdog's view of the current call
	depth      api.Global // the estimated call stack (interrupt.MaxStack)

	bufPtr, bufCap uint32 // the current warden_alloc buffer

	// hooksMask is warden_hooks() when exported (set at init).
	hooksMask *uint32

	// per-call state
	hook       abi.Hook // hook being called (0 during init)
	memHit     bool     // a memory.grow past the limit was refused
	logLeft    int      // remaining log budget for this call
	logDropped int      // messages dropped in this call
	stdioLeft  int      // stdout/stderr bytes this call may still have scanned
	stdioDrop  int64    // stdout/stderr bytes dropped unscanned in this call
	stdout     *lineWriter
	stderr     *lineWriter

	rand *rand.ChaCha8 // random_get's deterministic source
}

// Sandbox clock: deterministic, starting at 2022-01-01T00:00:00Z and
// advancing 1ms per reading (wazero's default fake clocks, made explicit and
// per instance).
const fakeEpochNanos = 1640995200 * int64(time.Second)

// deterministicSeed seeds each instance's WASI random_get source.
func deterministicSeed() [32]byte {
	var seed [32]byte
	copy(seed[:], "warden policy sandbox rand seed")
	return seed
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	in := &instance{m: m, logLeft: m.rt.cfg.MaxLogMessagesPerCall, stdioLeft: MaxStdioScanBytesPerCall, rand: rand.NewChaCha8(deterministicSeed())}
	in.stdout = &lineWriter{in: in, level: hclog.Debug, stream: "stdout"}
	in.stderr = &lineWriter{in: in, level: hclog.Warn, stream: "stderr"}

	wall := fakeEpochNanos - int64(time.Millisecond)
	mono := -int64(time.Millisecond)
	cfg := wazero.NewModuleConfig().
		WithName("").         // anonymous: many instances of one module coexist
		WithStartFunctions(). // none: _initialize is called below, with a deadline
		WithArgs().
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithWalltime(func() (int64, int32) {
			wall += int64(time.Millisecond)
			return wall / 1e9, int32(wall % 1e9)
		}, sys.ClockResolution(time.Microsecond)).
		WithNanotime(func() int64 {
			mono += int64(time.Millisecond)
			return mono
		}, sys.ClockResolution(time.Nanosecond)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(in.rand)
	// No WithFS/WithFSConfig (no preopens) and no WithEnv: the guest sees
	// an empty filesystem and environment. Stdin is empty (wazero default).
	// The WASI functions that write stdout/stderr or read random bytes are
	// the host's bounded replacements (wasi.go), which use in.stdout,
	// in.stderr and in.rand directly.

	// What Limits.MemoryMB leaves once the tables and globals are charged.
	limit := m.memLimit
	parent := experimental.WithMemoryAllocator(ctx, memoryAllocator{in: in, limit: limit})
	// Instantiation runs no guest code: no start functions, and Load
	// refuses a module with a start section (scanSections). The init calls
	// below do, each under the watchdog with the InitTimeout.
	mod, err := m.rt.rt.InstantiateModule(parent, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	flag, _ := mod.ExportedGlobal(interruptExport).(api.MutableGlobal)
	depth := mod.ExportedGlobal(interruptExport + interrupt.DepthSuffix)
	if (flag == nil || depth == nil) && !m.rt.uninstrumented {
		_ = mod.Close(context.Background())
		return nil, errors.New("instantiate: the interrupt flag or depth is missing") // added at load; defensive
	}
	in.mod = mod
	in.guard.flag = flag
	in.depth = depth
	m.rt.instances.Store(mod, in)
	m.rt.watchdog.add(&in.guard)
	ok := false
	defer func() {
		if !ok {
			in.close(context.Background())
		}
	}()

	in.mem = mod.ExportedMemory(abi.ExportMemory)
	in.alloc = mod.ExportedFunction(abi.ExportAlloc)
	for _, h := range abi.Hooks() {
		in.hookFn[hookIndex(h)] = mod.ExportedFunction(h.Export())
	}
	if in.mem == nil || in.alloc == nil {
		return nil, errors.New("instantiate: exports vanished") // validated at load; defensive
	}

	if f := mod.ExportedFunction(abi.ExportInitialize); f != nil {
		if err := in.initCall(parent, f); err != nil {
			return nil, err
		}
	}
	if err := in.initCall(parent, mod.ExportedFunction(abi.ExportABIVersion)); err != nil {
		return nil, err
	}
	v := int32(in.stack[0])
	if v < abi.MinVersion || v > abi.Version {
		return nil, detail(ErrABIVersion, "%s() returned %d, but this host implements ABI versions %d to %d", abi.ExportABIVersion, v, abi.MinVersion, abi.Version)
	}
	if m.version != 0 && int(v) != m.version {
		return nil, detail(ErrABIVersion, "%s() returned %d, but the module's first instance returned %d", abi.ExportABIVersion, v, m.version)
	}
	in.version = int(v)
	if f := mod.ExportedFunction(abi.ExportHooks); f != nil {
		if err := in.initCall(parent, f); err != nil {
			return nil, err
		}
		mask := uint32(in.stack[0])
		in.hooksMask = &mask
	}
	if f := mod.ExportedFunction(abi.ExportHostFeatures); f != nil {
		in.stack[0] = abi.FeatureGatheredOutput
		if err := in.initCall(parent, f); err != nil {
			return nil, err
		}
	}
	in.logLevelFn, in.sentLevel = mod.ExportedFunction(abi.ExportLogLevel), -1
	if err := in.syncLogLevel(parent, m.limits.InitTimeout); err != nil {
		return nil, err.Err
	}
	if err := in.growBuffer(parent, minInputBuffer, m.limits.InitTimeout); err != nil {
		return nil, err.Err
	}
	in.endCall()
	ok = true
	m.created.Add(1)
	return in, nil
}

// minInputBuffer is the input buffer requested from warden_alloc at init.
const minInputBuffer = 4 << 10

// initCall runs one parameterless init-time export (its result, if any, is
// left in in.stack[0]); failures are classified like hook failures and
// reported (by the caller) as load errors.
func (in *instance) initCall(ctx context.Context, f api.Function) error {
	if e := in.callGuest(ctx, f, 0, in.m.limits.InitTimeout); e != nil {
		return fmt.Errorf("%s(): %w", strings.Join(f.Definition().ExportNames(), "/"), e.Err)
	}
	return nil
}

// callGuest runs f on in.stack for hook (0 during init) under the
// watchdog: the call is interrupted (see watchdog.go) when it outlives
// timeout, when ctx is done or when the Runtime closes. A failed or
// interrupted call returns a non-nil *Error.
func (in *instance) callGuest(ctx context.Context, f api.Function, hook abi.Hook, timeout time.Duration) *Error {
	done := ctx.Done()
	if done != nil {
		if err := ctx.Err(); err != nil {
			return &Error{PluginID: in.m.id, Hook: hook, Cause: CauseCanceled, Err: detail(err, "canceled: %v", err)}
		}
	}
	in.memHit = false
	w := in.m.rt.watchdog
	w.begin(&in.guard, timeout, done)
	err := f.CallWithStack(ctx, in.stack[:])
	why := w.end(&in.guard)
	if err == nil && why == notInterrupted {
		return nil
	}
	return in.classify(ctx, err, why, hook, timeout)
}

// minLogLevel returns the lowest level l records, in the ABI's numbering,
// which is hclog's: 1 trace … 5 error, 6 nothing.
func minLogLevel(l hclog.Logger) int32 {
	if lvl := l.GetLevel(); lvl != hclog.NoLevel {
		return int32(lvl)
	}
	// A logger without a level of its own (hclog's null logger, or a
	// wrapper) answers the Is* questions.
	switch {
	case l.IsTrace():
		return int32(hclog.Trace)
	case l.IsDebug():
		return int32(hclog.Debug)
	case l.IsInfo():
		return int32(hclog.Info)
	case l.IsWarn():
		return int32(hclog.Warn)
	case l.IsError():
		return int32(hclog.Error)
	}
	return int32(hclog.Off)
}

// syncLogLevel tells the guest the plugin logger's level (warden_log_level)
// when it exports the function and the level changed since it was last
// told.
func (in *instance) syncLogLevel(ctx context.Context, timeout time.Duration) *Error {
	if in.logLevelFn == nil {
		return nil
	}
	level := minLogLevel(in.m.logger)
	if level == in.sentLevel {
		return nil
	}
	in.stack[0] = uint64(uint32(level))
	if err := in.callGuest(ctx, in.logLevelFn, in.hook, timeout); err != nil {
		return err
	}
	in.sentLevel = level
	return nil
}

func hookIndex(h abi.Hook) int { return bits.TrailingZeros32(uint32(h)) }

// growBuffer makes the input buffer at least n bytes, calling warden_alloc
// with n rounded up to a power of two, within timeout.
func (in *instance) growBuffer(ctx context.Context, n uint32, timeout time.Duration) *Error {
	size := uint32(minInputBuffer)
	for size < n {
		size <<= 1
		if size == 0 { // n > 2 GiB: cannot happen with MaxInputBytes <= 2 GiB
			size = n
			break
		}
	}
	in.stack[0] = uint64(size)
	if err := in.callGuest(ctx, in.alloc, in.hook, timeout); err != nil {
		return err
	}
	ptr := uint32(in.stack[0])
	if ptr == 0 {
		return in.fail(CauseMemory, nil, "%s(%d) returned 0 (out of memory)", abi.ExportAlloc, size)
	}
	if uint64(ptr)+uint64(size) > uint64(in.mem.Size()) {
		return in.fail(CauseMalformedOutput, nil, "%s(%d) returned buffer [%#x, %#x) outside the %d-byte memory", abi.ExportAlloc, size, ptr, uint64(ptr)+uint64(size), in.mem.Size())
	}
	in.bufPtr, in.bufCap = ptr, size
	return nil
}

func (in *instance) fail(c Cause, wrapped error, format string, args ...any) *Error {
	return &Error{PluginID: in.m.id, Hook: in.hook, Cause: c, Err: detail(wrapped, format, args...)}
}

// invoke runs one hook call. On success it returns dst with a copy of the
// output appended (dst itself for an empty output). A non-nil *Error means
// the instance must be discarded unless its Cause is CauseGuestError.
func (in *instance) invoke(ctx context.Context, hook abi.Hook, input, dst []byte) ([]byte, *Error) {
	in.hook = hook
	defer in.endCall()
	if err := in.syncLogLevel(ctx, in.m.limits.Timeout); err != nil {
		return nil, err
	}
	n := uint32(len(input))
	if n > in.bufCap {
		if err := in.growBuffer(ctx, n, in.m.limits.Timeout); err != nil {
			return nil, err
		}
	}
	if n > 0 && !in.mem.Write(in.bufPtr, input) {
		return nil, in.fail(CauseMalformedOutput, nil, "input buffer [%#x, +%d) is outside guest memory", in.bufPtr, n)
	}
	in.stack[0], in.stack[1] = uint64(in.bufPtr), uint64(n)
	if err := in.callGuest(ctx, in.hookFn[hookIndex(hook)], hook, in.m.limits.Timeout); err != nil {
		return nil, err
	}
	ret := in.stack[0]
	outPtr, outLen := uint32(ret>>32), uint32(ret)
	if outLen == 0 {
		return dst, nil
	}
	if uint64(outLen) > uint64(in.m.limits.MaxOutputBytes) {
		return nil, in.fail(CauseOutputTooLarge, nil, "output of %d bytes exceeds the %d-byte cap", outLen, in.m.limits.MaxOutputBytes)
	}
	buf, ok := in.mem.Read(outPtr, outLen)
	if !ok {
		return nil, in.fail(CauseMalformedOutput, nil, "malformed output: [%#x, %#x) is outside the %d-byte guest memory", outPtr, uint64(outPtr)+uint64(outLen), in.mem.Size())
	}
	if buf[0] == abi.GatheredOutputMark {
		return in.gather(buf, dst)
	}
	return append(dst, buf...), nil
}

// gather appends to dst the output the gathered output buf describes
// (gatherOutput), reading references from the instance's memory.
func (in *instance) gather(buf, dst []byte) ([]byte, *Error) {
	mem, _ := in.mem.Read(0, in.mem.Size())
	out, cause, err := gatherOutput(dst, buf, mem, in.m.limits.MaxOutputBytes)
	if err != nil {
		return nil, in.fail(cause, nil, "%v", err)
	}
	return out, nil
}

// classify turns the outcome of a guest call into a *Error: err is what
// wazero returned (nil when the guest returned; then why is not
// notInterrupted) and why the watchdog's reason for setting the interrupt
// flag, if it did. A call the watchdog interrupted is reported so even if
// the guest returned meanwhile: the flag stays set, so the instance must go.
func (in *instance) classify(ctx context.Context, err error, why int, hook abi.Hook, timeout time.Duration) *Error {
	e := &Error{PluginID: in.m.id, Hook: hook}
	if in.m.isClosed() || why == interruptedClosed {
		e.Cause, e.Err = CauseClosed, detail(err, "module closed during the call")
		return e
	}
	switch why {
	case interruptedTimeout:
		e.Cause, e.Err = CauseTimeout, detail(context.DeadlineExceeded, "timed out after %v (limit %v)", in.elapsed(), timeout)
		return e
	case interruptedCanceled:
		cerr := ctx.Err()
		e.Cause, e.Err = CauseCanceled, detail(cerr, "canceled: %v", cerr)
		return e
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		if in.memHit {
			e.Cause, e.Err = CauseMemory, detail(err, "hit the %d MiB memory limit (guest exited with code %d)", in.m.limits.MemoryMB, exit.ExitCode())
		} else {
			e.Cause, e.Err = CauseExit, detail(err, "guest exited with code %d", exit.ExitCode())
		}
		return e
	}
	in.m.logger.Debug("guest trapped", "hook", hook.String(), "error", err.Error())
	if in.depth != nil && in.depth.Get() > interrupt.MaxStack {
		e.Cause, e.Err = CauseTrap, detail(err, "trapped: call stack too deep (over the %d MiB the host allows)", interrupt.MaxStack>>20)
		return e
	}
	msg := firstLine(err.Error())
	if in.memHit {
		e.Cause, e.Err = CauseMemory, detail(err, "hit the %d MiB memory limit (trapped: %s)", in.m.limits.MemoryMB, msg)
	} else {
		e.Cause, e.Err = CauseTrap, detail(err, "trapped: %s", msg)
	}
	return e
}

// elapsed is how long the current (interrupted) call ran, measured from
// when the watchdog first saw it: at most one tick after it began, so the
// call itself costs no clock reading (see watchdog.go).
func (in *instance) elapsed() time.Duration {
	in.guard.mu.Lock()
	start := in.guard.deadline.Add(-in.guard.timeout)
	in.guard.mu.Unlock()
	return time.Since(start).Round(100 * time.Microsecond)
}

// endCall flushes partial stdout/stderr lines, reports dropped log
// messages and output, and resets the per-call log budgets.
func (in *instance) endCall() {
	in.stdout.flush()
	in.stderr.flush()
	if in.logDropped > 0 {
		in.m.logger.Warn("guest log messages dropped (per-call limit)", "hook", in.hook.String(), "dropped", in.logDropped, "limit", in.m.rt.cfg.MaxLogMessagesPerCall)
	}
	if in.stdioDrop > 0 {
		in.m.logger.Warn("guest stdout/stderr bytes dropped unread (per-call limit)", "hook", in.hook.String(), "dropped_bytes", in.stdioDrop, "limit_bytes", MaxStdioScanBytesPerCall)
	}
	in.logDropped = 0
	in.logLeft = in.m.rt.cfg.MaxLogMessagesPerCall
	in.stdioLeft, in.stdioDrop = MaxStdioScanBytesPerCall, 0
	in.hook = 0
}

func (in *instance) close(ctx context.Context) {
	if in.mod == nil {
		return
	}
	in.m.rt.instances.Delete(in.mod)
	in.m.rt.watchdog.remove(&in.guard)
	_ = in.mod.Close(ctx)
	in.mod = nil
}

// guestLog emits one guest message through the plugin logger, subject to
// the per-call budget and the message size cap.
func (in *instance) guestLog(level hclog.Level, msg []byte, stream string) {
	if in.logLeft <= 0 {
		in.logDropped++
		return
	}
	in.logLeft--
	args := []any{"hook", in.hook.String()}
	if stream != "" {
		args = append(args, "stream", stream)
	}
	if max := in.m.rt.cfg.MaxLogMessageBytes; len(msg) > max {
		args = append(args, "truncated", true)
		msg = msg[:max]
	}
	s := string(msg)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	in.m.logger.Log(level, s, args...)
}

// hostLog implements warden.log(level, ptr, len).
func (r *Runtime) hostLog(_ context.Context, mod api.Module, stack []uint64) {
	v, ok := r.instances.Load(mod)
	if !ok {
		return
	}
	in := v.(*instance)
	in.stopIfInterrupted()
	level, ptr, n := abi.LogLevel(int32(stack[0])), uint32(stack[1]), uint32(stack[2])
	if int32(hclogLevel(level)) < minLogLevel(in.m.logger) {
		return // below the plugin logger's level: dropped unread, and not counted
	}
	if max := uint32(r.cfg.MaxLogMessageBytes); n > max {
		n = max + 1 // read one more so guestLog records the truncation
	}
	msg, ok := mod.Memory().Read(ptr, n)
	if !ok {
		in.guestLog(hclog.Warn, []byte("warden.log called with an out-of-bounds message"), "")
		return
	}
	in.guestLog(hclogLevel(level), msg, "")
}

func hclogLevel(l abi.LogLevel) hclog.Level {
	switch l {
	case abi.LogTrace:
		return hclog.Trace
	case abi.LogDebug:
		return hclog.Debug
	case abi.LogInfo:
		return hclog.Info
	case abi.LogWarn:
		return hclog.Warn
	case abi.LogError:
		return hclog.Error
	}
	return hclog.Info
}

// lineWriter turns a guest's stdout/stderr into log lines. Lines longer
// than MaxLogMessageBytes are cut. The bytes scanned per guest call are
// bounded (MaxStdioScanBytesPerCall, shared by both streams): past it, bytes
// are dropped unread, so that one fd_write of many huge iovecs costs the
// host a bounded scan and then constant work per iovec.
type lineWriter struct {
	in     *instance
	level  hclog.Level
	stream string
	buf    []byte
}

// Write is the io.Writer wazero's module config wants; the guest's
// fd_write reaches write directly (wasi.go). It always reports p written,
// dropped or not, so that a guest runtime does not retry forever.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.write(p)
	return len(p), nil
}

func (w *lineWriter) write(p []byte) {
	in := w.in
	if len(p) > in.stdioLeft {
		in.stdioDrop += int64(len(p) - in.stdioLeft)
		p = p[:in.stdioLeft]
	}
	in.stdioLeft -= len(p)
	max := in.m.rt.cfg.MaxLogMessageBytes
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := max + 1 - len(w.buf)
			if room > 0 {
				w.buf = append(w.buf, p[:min(room, len(p))]...)
			}
			break
		}
		room := max + 1 - len(w.buf)
		if room > 0 {
			w.buf = append(w.buf, p[:min(room, i)]...)
		}
		w.flush()
		p = p[i+1:]
	}
}

func (w *lineWriter) flush() {
	if len(w.buf) == 0 {
		return
	}
	w.in.guestLog(w.level, w.buf, w.stream)
	w.buf = w.buf[:0]
}

// memoryAllocator backs a guest's linear memory and enforces the module's
// memory limit: a grow past limit fails (memory.grow returns -1) and is
// recorded on the instance, so a subsequent trap or exit is reported as
// CauseMemory.
type memoryAllocator struct {
	in    *instance
	limit uint64
}

func (a memoryAllocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &linearMemory{in: a.in, limit: a.limit, buf: make([]byte, 0, min(capacity, a.limit))}
}

type linearMemory struct {
	in    *instance
	limit uint64
	buf   []byte
}

func (l *linearMemory) Reallocate(size uint64) []byte {
	if size > l.limit {
		l.in.memHit = true
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	// Double the capacity (capped at the limit) so that a guest growing
	// page by page costs amortized O(1) copies; the new bytes are zero.
	newCap := min(max(size, 2*uint64(cap(l.buf))), l.limit)
	buf := make([]byte, size, newCap)
	copy(buf, l.buf)
	l.buf = buf
	return l.buf
}

func (l *linearMemory) Free() { l.buf = nil }
