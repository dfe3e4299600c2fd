package policy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// The WASI sandbox
//
// Guests import wazero's wasi_snapshot_preview1, with every builtin whose
// host cost grows with a guest-supplied count or length replaced by a
// bounded implementation (wazero supports overriding builtins through
// NewFunctionExporter). One WASI call runs in Go, outside the interrupt
// checks of the guest's own code: a builtin looping over a million iovecs
// that each cover all of memory would keep the host busy for hours while
// the watchdog's flag waited for the guest to return. So each replacement
//
//   - first stops the guest (a panic, which wazero returns from the call as
//     an error, the way proc_exit works) when the watchdog has interrupted
//     the current call, and checks again inside any loop over guest data;
//   - caps what one call may ask for (MaxIOVecs, MaxPollSubscriptions;
//     EINVAL beyond, as POSIX does past IOV_MAX), and bounds the stdout and
//     stderr bytes scanned for lines per guest call
//     (MaxStdioScanBytesPerCall);
//   - never copies guest data it does not need: path functions check that
//     the path lies in memory and answer from the descriptor alone.
//
// The sandbox's descriptor table is fixed for an instance's life: 0 is an
// empty stdin, 1 and 2 are stdout and stderr (routed to the plugin logger),
// and no other descriptor can exist (no preopens, no sockets; fd_renumber
// refuses stdio, as wazero treats it like a preopen, and fd_close refuses it
// too), so the replacements need not consult wazero's table. Their results
// (errno, counts, events) are those of wazero's builtins for that table,
// except that a path function does not check the path's syntax (EPERM for
// an absolute or escaping path): it fails on the descriptor either way.
// The remaining builtins do a constant amount of work per call.

// Caps on one WASI call.
const (
	// MaxIOVecs caps the iovecs of one fd_read, fd_pread, fd_write,
	// fd_pwrite, sock_recv or sock_send call (POSIX's IOV_MAX); more is
	// EINVAL.
	MaxIOVecs = 1024
	// MaxPollSubscriptions caps the subscriptions of one poll_oneoff call
	// (a guest of this sandbox has three descriptors and one clock to wait
	// on); more is EINVAL.
	MaxPollSubscriptions = 64
	// MaxStdioScanBytesPerCall caps the stdout and stderr bytes the host
	// scans for lines during one guest call (init or hook). Bytes past it
	// are dropped unread but reported written, so that a guest runtime
	// does not retry them forever; the drop is logged once per call.
	MaxStdioScanBytesPerCall = 1 << 20
	// randomChunk is how many bytes random_get generates between two
	// checks of the interrupt flag.
	randomChunk = 64 << 10
)

// WASI errno values (wasi_snapshot_preview1's errno enum).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNotdir  = 54
	errnoNotsup  = 58
)

// The sandbox's descriptors.
const (
	fdStdin  = 0
	fdStdout = 1
	fdStderr = 2
)

// WASI event types and layout sizes (poll_oneoff).
const (
	eventTypeClock   = 0
	eventTypeFdRead  = 1
	eventTypeFdWrite = 2
	subscriptionSize = 48
	eventSize        = 32
)

// errInterrupted is the panic value that stops a guest inside a host
// function once the watchdog interrupted its call; classify reports the
// watchdog's reason, not this error.
var errInterrupted = errors.New("policy call interrupted inside a host function")

// errNoInstance stops a guest that calls a host function while it is not a
// live instance of this Runtime (it cannot happen: instantiation runs no
// guest code).
var errNoInstance = errors.New("host function called outside a policy instance")

var le = binary.LittleEndian

// wasiOverride is one replaced builtin: fn gets the calling instance and the
// call's parameters and returns the errno.
type wasiOverride struct {
	name   string
	params []string // names, all i32 unless listed in i64s
	i64s   []int    // indexes of i64 parameters
	fn     func(in *instance, mem api.Memory, p []uint64) uint32
}

func wasiOverrides() []wasiOverride {
	return []wasiOverride{
		{name: "fd_write", params: []string{"fd", "iovs", "iovs_len", "result.nwritten"}, fn: fdWrite},
		{name: "fd_pwrite", params: []string{"fd", "iovs", "iovs_len", "offset", "result.nwritten"}, i64s: []int{3}, fn: fdPwrite},
		{name: "fd_read", params: []string{"fd", "iovs", "iovs_len", "result.nread"}, fn: fdRead},
		{name: "fd_pread", params: []string{"fd", "iovs", "iovs_len", "offset", "result.nread"}, i64s: []int{3}, fn: fdPread},
		{name: "fd_close", params: []string{"fd"}, fn: fdClose},
		{name: "poll_oneoff", params: []string{"in", "out", "nsubscriptions", "result.nevents"}, fn: pollOneoff},
		{name: "random_get", params: []string{"buf", "buf_len"}, fn: randomGet},
		{name: "sock_recv", params: []string{"fd", "ri_data", "ri_data_len", "ri_flags", "result.ro_datalen", "result.ro_flags"}, fn: sockIO},
		{name: "sock_send", params: []string{"fd", "si_data", "si_data_len", "si_flags", "result.so_datalen"}, fn: sockIO},
		// Path functions: wazero copies and cleans the path (up to all of
		// memory) before it looks at the descriptor.
		{name: "path_create_directory", params: []string{"fd", "path", "path_len"}, fn: pathFn(0, 1)},
		{name: "path_filestat_get", params: []string{"fd", "flags", "path", "path_len", "result.filestat"}, fn: pathFn(0, 2)},
		{name: "path_filestat_set_times", params: []string{"fd", "flags", "path", "path_len", "atim", "mtim", "fst_flags"}, i64s: []int{4, 5}, fn: pathFn(0, 2)},
		{name: "path_link", params: []string{"old_fd", "old_flags", "old_path", "old_path_len", "new_fd", "new_path", "new_path_len"}, fn: pathLink},
		{name: "path_open", params: []string{"fd", "dirflags", "path", "path_len", "oflags", "fs_rights_base", "fs_rights_inheriting", "fdflags", "result.opened_fd"}, i64s: []int{5, 6}, fn: pathFn(0, 2)},
		{name: "path_readlink", params: []string{"fd", "path", "path_len", "buf", "buf_len", "result.bufused"}, fn: pathReadlink},
		{name: "path_remove_directory", params: []string{"fd", "path", "path_len"}, fn: pathFn(0, 1)},
		{name: "path_rename", params: []string{"fd", "old_path", "old_path_len", "new_fd", "new_path", "new_path_len"}, fn: pathRename},
		{name: "path_symlink", params: []string{"old_path", "old_path_len", "fd", "new_path", "new_path_len"}, fn: pathSymlink},
		{name: "path_unlink_file", params: []string{"fd", "path", "path_len"}, fn: pathFn(0, 1)},
	}
}

// instantiateWASI instantiates the sandbox's wasi_snapshot_preview1 module:
// wazero's builtins with the bounded replacements above.
func (r *Runtime) instantiateWASI(ctx context.Context) (api.Module, error) {
	b := r.rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	for _, o := range wasiOverrides() {
		types := make([]api.ValueType, len(o.params))
		for i := range types {
			types[i] = api.ValueTypeI32
		}
		for _, i := range o.i64s {
			types[i] = api.ValueTypeI64
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(r.wasiHostFunc(o.fn), types, []api.ValueType{api.ValueTypeI32}).
			WithParameterNames(o.params...).
			WithResultNames("errno").
			Export(o.name)
	}
	mod, err := b.Instantiate(ctx)
	if err != nil {
		return nil, fmt.Errorf("instantiate %s: %w", wasi_snapshot_preview1.ModuleName, err)
	}
	return mod, nil
}

func (r *Runtime) wasiHostFunc(fn func(*instance, api.Memory, []uint64) uint32) api.GoModuleFunc {
	return func(_ context.Context, mod api.Module, stack []uint64) {
		in := r.callerInstance(mod)
		in.stopIfInterrupted()
		stack[0] = uint64(fn(in, mod.Memory(), stack))
	}
}

// callerInstance returns the instance calling a host function, stopping
// the guest if there is none.
func (r *Runtime) callerInstance(mod api.Module) *instance {
	v, ok := r.instances.Load(mod)
	if !ok {
		panic(errNoInstance)
	}
	return v.(*instance)
}

// stopIfInterrupted unwinds the guest call (see errInterrupted) when the
// watchdog has interrupted it.
func (in *instance) stopIfInterrupted() {
	in.guard.mu.Lock()
	why := in.guard.interrupted
	in.guard.mu.Unlock()
	if why != notInterrupted {
		panic(errInterrupted)
	}
}

// stdioOpen reports whether fd is one of the sandbox's descriptors.
func stdioOpen(fd int32) bool { return fd >= fdStdin && fd <= fdStderr }

// iovecs returns the count iovecs at ptr (8 bytes each: offset, length).
func iovecs(mem api.Memory, ptr, count uint32) ([]byte, uint32) {
	if count > MaxIOVecs {
		return nil, errnoInval
	}
	buf, ok := mem.Read(ptr, count*8)
	if !ok {
		return nil, errnoFault
	}
	return buf, errnoSuccess
}

// fdWrite implements fd_write(fd, iovs, iovs_len, result.nwritten).
func fdWrite(in *instance, mem api.Memory, p []uint64) uint32 {
	fd, iovs, count, result := int32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	var w *lineWriter
	switch fd {
	case fdStdout:
		w = in.stdout
	case fdStderr:
		w = in.stderr
	case fdStdin:
	default:
		return errnoBadf
	}
	buf, errno := iovecs(mem, iovs, count)
	if errno != errnoSuccess {
		return errno
	}
	var total uint64
	for i := uint32(0); i < count; i++ {
		if i%64 == 63 {
			in.stopIfInterrupted()
		}
		b, ok := mem.Read(le.Uint32(buf[i*8:]), le.Uint32(buf[i*8+4:]))
		if !ok {
			return errnoFault
		}
		if w == nil {
			return errnoBadf // stdin is not writable
		}
		total += uint64(len(b))
		if total > 1<<32-1 {
			return errnoInval // the count would not fit the result (POSIX: EINVAL)
		}
		w.write(b)
	}
	if !mem.WriteUint32Le(result, uint32(total)) {
		return errnoFault
	}
	return errnoSuccess
}

// fdPwrite implements fd_pwrite: no sandbox descriptor is seekable, so the
// first non-empty iovec fails (EBADF, as wazero answers for stdio).
func fdPwrite(_ *instance, mem api.Memory, p []uint64) uint32 {
	return positioned(mem, int32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[4]))
}

// fdPread implements fd_pread, like fdPwrite.
func fdPread(_ *instance, mem api.Memory, p []uint64) uint32 {
	return positioned(mem, int32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[4]))
}

func positioned(mem api.Memory, fd int32, iovs, count, result uint32) uint32 {
	if !stdioOpen(fd) {
		return errnoBadf
	}
	buf, errno := iovecs(mem, iovs, count)
	if errno != errnoSuccess {
		return errno
	}
	for i := uint32(0); i < count; i++ {
		l := le.Uint32(buf[i*8+4:])
		if _, ok := mem.Read(le.Uint32(buf[i*8:]), l); !ok {
			return errnoFault
		}
		if l > 0 {
			return errnoBadf
		}
	}
	if !mem.WriteUint32Le(result, 0) {
		return errnoFault
	}
	return errnoSuccess
}

// fdRead implements fd_read: stdin is empty (every read is at EOF) and
// stdout and stderr are not readable.
func fdRead(_ *instance, mem api.Memory, p []uint64) uint32 {
	fd, iovs, count, result := int32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	if !stdioOpen(fd) {
		return errnoBadf
	}
	buf, errno := iovecs(mem, iovs, count)
	if errno != errnoSuccess {
		return errno
	}
	for i := uint32(0); i < count; i++ {
		l := le.Uint32(buf[i*8+4:])
		if l == 0 {
			continue // a zero-length iovec may precede another
		}
		if _, ok := mem.Read(le.Uint32(buf[i*8:]), l); !ok {
			return errnoFault
		}
		if fd != fdStdin {
			return errnoBadf
		}
		break // read 0 bytes (EOF): less than asked, so stop
	}
	if !mem.WriteUint32Le(result, 0) {
		return errnoFault
	}
	return errnoSuccess
}

// fdClose implements fd_close: the sandbox's stdio stays open for the
// instance's life (ENOTSUP, as fd_renumber answers for it), which keeps the
// descriptor table fixed; no other descriptor exists.
func fdClose(_ *instance, _ api.Memory, p []uint64) uint32 {
	if stdioOpen(int32(p[0])) {
		return errnoNotsup
	}
	return errnoBadf
}

// sockIO implements sock_recv and sock_send: no descriptor is a socket.
func sockIO(_ *instance, _ api.Memory, _ []uint64) uint32 { return errnoBadf }

// randomGet implements random_get(buf, buf_len) from the instance's
// deterministic source, in chunks between which the interrupt flag is
// checked.
func randomGet(in *instance, mem api.Memory, p []uint64) uint32 {
	buf, ok := mem.Read(uint32(p[0]), uint32(p[1]))
	if !ok {
		return errnoFault
	}
	for len(buf) > 0 {
		n := min(len(buf), randomChunk)
		_, _ = in.rand.Read(buf[:n]) // always fills buf and returns nil
		buf = buf[n:]
		if len(buf) > 0 {
			in.stopIfInterrupted()
		}
	}
	return errnoSuccess
}

// pollOneoff implements poll_oneoff(in, out, nsubscriptions,
// result.nevents): clock subscriptions expire at once (sleep is a no-op in
// the sandbox), reads are ready (stdin is at EOF; wazero treats stdout and
// stderr reads the same way), writes are ENOTSUP, and a descriptor outside
// the sandbox's three is EBADF, exactly as wazero's builtin answers for this
// descriptor table.
func pollOneoff(_ *instance, mem api.Memory, p []uint64) uint32 {
	inPtr, outPtr, n, result := uint32(p[0]), uint32(p[1]), uint32(p[2]), uint32(p[3])
	if n == 0 || n > MaxPollSubscriptions {
		return errnoInval
	}
	subs, ok := mem.Read(inPtr, n*subscriptionSize)
	if !ok {
		return errnoFault
	}
	out, ok := mem.Read(outPtr, n*eventSize)
	if !ok {
		return errnoFault
	}
	clear(out)
	if !mem.WriteUint32Le(result, n) {
		return errnoFault
	}
	// Reads of a sandbox descriptor are acknowledged after the others,
	// in order (wazero polls stdin for them last, and it is always ready).
	var deferred [MaxPollSubscriptions]uint32
	nDeferred, nevents := 0, uint32(0)
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize:]
		eventType, args := sub[8], sub[16:]
		errno := uint16(errnoSuccess)
		switch eventType {
		case eventTypeClock:
			switch le.Uint16(args[24:]) { // subclockflags
			case 0: // relative
			case 1: // absolute
				return errnoNotsup
			default:
				return errnoInval
			}
		case eventTypeFdRead, eventTypeFdWrite:
			fd := int32(le.Uint32(args))
			switch {
			case fd < 0:
				return errnoBadf
			case !stdioOpen(fd):
				errno = errnoBadf
			case eventTypeFdRead == eventType:
				deferred[nDeferred] = i
				nDeferred++
				continue
			default:
				errno = errnoNotsup
			}
		default:
			return errnoInval
		}
		writeEvent(out[nevents*eventSize:], sub, eventType, errno)
		nevents++
	}
	for _, i := range deferred[:nDeferred] {
		sub := subs[i*subscriptionSize:]
		writeEvent(out[nevents*eventSize:], sub, sub[8], errnoSuccess)
		nevents++
	}
	return errnoSuccess
}

// writeEvent writes one poll_oneoff event: the subscription's userdata, the
// errno and the event type.
func writeEvent(out, sub []byte, eventType byte, errno uint16) {
	copy(out, sub[:8])
	le.PutUint16(out[8:], errno)
	le.PutUint32(out[10:], uint32(eventType))
}

// pathAt answers a path function's (fd, path) pair: the path must lie in
// memory (EFAULT), and no sandbox descriptor is a directory (ENOTDIR for
// stdio, EBADF for any other).
func pathAt(mem api.Memory, fd int32, path, pathLen uint32) uint32 {
	if _, ok := mem.Read(path, pathLen); !ok {
		return errnoFault
	}
	if stdioOpen(fd) {
		return errnoNotdir
	}
	return errnoBadf
}

// pathFn is a path function whose descriptor and path are parameters fdIdx
// and pathIdx (its length follows).
func pathFn(fdIdx, pathIdx int) func(*instance, api.Memory, []uint64) uint32 {
	return func(_ *instance, mem api.Memory, p []uint64) uint32 {
		return pathAt(mem, int32(p[fdIdx]), uint32(p[pathIdx]), uint32(p[pathIdx+1]))
	}
}

// pathLink and pathRename fail on their first (descriptor, path) pair.
func pathLink(_ *instance, mem api.Memory, p []uint64) uint32 {
	return pathAt(mem, int32(p[0]), uint32(p[2]), uint32(p[3]))
}

func pathRename(_ *instance, mem api.Memory, p []uint64) uint32 {
	return pathAt(mem, int32(p[0]), uint32(p[1]), uint32(p[2]))
}

// pathSymlink checks its descriptor first, as wazero's builtin does.
func pathSymlink(_ *instance, _ api.Memory, p []uint64) uint32 {
	if stdioOpen(int32(p[2])) {
		return errnoNotdir
	}
	return errnoBadf
}

func pathReadlink(_ *instance, mem api.Memory, p []uint64) uint32 {
	if uint32(p[2]) == 0 || uint32(p[4]) == 0 {
		return errnoInval
	}
	return pathAt(mem, int32(p[0]), uint32(p[1]), uint32(p[2]))
}
