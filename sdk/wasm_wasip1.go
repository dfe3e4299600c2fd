//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

// The ABI exports (version 2: every hook's export is defined; warden_hooks
// says which handlers are registered). //go:wasmexport works from this non-main package: the
// exports are part of any module whose main package imports sdk (checked by
// the examples/plugins tests). Each hook export is the whole call: check
// the input range, then the run function shared with Invoke.

//go:wasmexport warden_abi_version
func wardenABIVersion() int32 { return abi.Version }

//go:wasmexport warden_hooks
func wardenHooks() int32 { return int32(module.hooks) }

// wardenLogLevel records the lowest level the host records: Log skips the
// host call for anything below it.
//
//go:wasmexport warden_log_level
func wardenLogLevel(level int32) { module.minLog = LogLevel(level) }

// wardenHostFeatures records the optional ABI features the host
// implements: with abi.FeatureGatheredOutput, hook outputs refer to
// strings in place instead of copying them (see out in output.go).
//
//go:wasmexport warden_host_features
func wardenHostFeatures(features uint32) {
	g := features&abi.FeatureGatheredOutput != 0
	module.serversOut.setGather(g)
	module.credentialsOut.setGather(g)
}

// setGather switches gathered outputs on or off, with an output buffer
// large enough for reset to store the header unchecked.
func (o *out) setGather(on bool) {
	if len(o.buf) < 512 {
		o.grow(512)
	}
	o.gather = on
}

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
	if int(size) > len(module.in) || len(module.in) == 0 {
		n := (int(size) + 4095) &^ 4095 // whole 4 KiB blocks, at least one
		if n == 0 {
			n = 4096
		}
		module.in = make([]byte, n)
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(module.in))))
}

//go:wasmexport warden_servers
func wardenServers(ptr, n uint32) uint64 {
	out, _ := module.runServers(input(ptr, n))
	return pack(out)
}

//go:wasmexport warden_credentials
func wardenCredentials(ptr, n uint32) uint64 {
	out, _ := module.runCredentials(input(ptr, n))
	return pack(out)
}

//go:wasmexport warden_tool_call
func wardenToolCall(ptr, n uint32) uint64 {
	out, _ := module.runToolCall(input(ptr, n))
	return pack(out)
}

//go:wasmexport warden_resource_read
func wardenResourceRead(ptr, n uint32) uint64 {
	out, _ := module.runResourceRead(input(ptr, n))
	return pack(out)
}

//go:wasmexport warden_prompt_get
func wardenPromptGet(ptr, n uint32) uint64 {
	out, _ := module.runPromptGet(input(ptr, n))
	return pack(out)
}

//go:wasmexport warden_tool_result
func wardenToolResult(ptr, n uint32) uint64 {
	out, _ := module.runToolResult(input(ptr, n))
	return pack(out)
}

// input returns the hook input at [ptr, ptr+n), which must lie in the
// warden_alloc buffer; an input outside it gives an empty slice, which the
// parser rejects (an error output: the host fails closed). It is
// branch-free: see "Performance" in doc.go.
func input(ptr, n uint32) []byte {
	size := uint64(len(module.in))
	off := uint64(ptr) - uint64(uintptr(unsafe.Pointer(unsafe.SliceData(module.in)))) // wraps when ptr is below the buffer
	bad := (size-off)>>63 | (size-off-uint64(n))>>63                                  // off > size, or n > size-off
	keep := bad - 1                                                                   // all ones when the input is inside
	off, m := off&keep, uint64(n)&keep
	return module.in[off : off+m]
}

// pack returns (ptr << 32) | len, or 0 for an empty output.
func pack(out []byte) uint64 {
	n := uint64(len(out))
	p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))
	return (p<<32)&-((n|-n)>>63) | n
}
