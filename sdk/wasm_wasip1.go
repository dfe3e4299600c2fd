//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

// The ABI v1 exports. //go:wasmexport works from this non-main package: the
// exports are part of any module whose main package imports sdk (checked by
// the examples/plugins tests).

//go:wasmexport warden_abi_version
func wardenABIVersion() int32 { return abi.Version }

//go:wasmexport warden_hooks
func wardenHooks() int32 { return int32(guest.hooks) }

// maxInput bounds warden_alloc; larger requests get 0 (out of memory) rather
// than a runtime abort.
const maxInput = 1 << 30

// wardenAlloc returns a buffer of at least size bytes for the next hook
// input. The buffer is reused while it is big enough, so the host calls
// warden_alloc only when an input outgrows it.
//
//go:wasmexport warden_alloc
func wardenAlloc(size uint32) uint32 {
	if size > maxInput {
		return 0
	}
	if int(size) > len(guest.in) || len(guest.in) == 0 {
		n := (int(size) + 4095) &^ 4095 // whole 4 KiB blocks, at least one
		if n == 0 {
			n = 4096
		}
		guest.in = make([]byte, n)
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(guest.in))))
}

//go:wasmexport warden_servers
func wardenServers(ptr, n uint32) uint64 { return callHook(abi.HookServers, ptr, n) }

//go:wasmexport warden_credentials
func wardenCredentials(ptr, n uint32) uint64 { return callHook(abi.HookCredentials, ptr, n) }

//go:wasmexport warden_tool_call
func wardenToolCall(ptr, n uint32) uint64 { return callHook(abi.HookToolCall, ptr, n) }

// callHook runs hook h on the input at [ptr, ptr+n), which must lie in the
// warden_alloc buffer, and returns (out_ptr << 32) | out_len.
func callHook(h abi.Hook, ptr, n uint32) uint64 {
	var in []byte
	if n > 0 {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(guest.in)))
		off := uintptr(ptr) - base // wraps around when ptr < base
		if len(guest.in) == 0 || uintptr(ptr) < base || off+uintptr(n) > uintptr(len(guest.in)) {
			guest.out = (&abi.ServersOutput{Error: "sdk: hook input is not inside the warden_alloc buffer"}).AppendTo(guest.out[:0])
			return pack(guest.out)
		}
		in = guest.in[off : off+uintptr(n)]
	}
	out, _ := guest.invoke(h, in)
	return pack(out)
}

func pack(out []byte) uint64 {
	if len(out) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}
