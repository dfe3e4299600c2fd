// Command codeccheck is a test module (not a policy): it decodes an input
// message with the abi package as compiled for wasm and re-encodes it, so
// that wasm_test.go can compare the wasm build of the codec (which uses the
// branch-free fast path of abi/fast_wasm.go) with the native build.
package main

import (
	"unsafe"

	"github.com/warden-mcp/warden/abi"
)

func main() {}

var (
	buf, out []byte
	servers  abi.ServersInput
	creds    abi.CredentialsInput
	toolCall abi.ToolCallInput
)

//go:wasmexport alloc
func alloc(n uint32) uint32 {
	if int(n) > cap(buf) {
		buf = make([]byte, n+1)
	}
	buf = buf[:cap(buf)]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// roundtrip decodes buf[:n] as the input of hook (1, 2 or 4) and returns the
// re-encoding, or "ERR:" and the error text, as (ptr << 32) | len.
//
//go:wasmexport roundtrip
func roundtrip(hook, n uint32) uint64 {
	in := buf[:n:n]
	var err error
	switch abi.Hook(hook) {
	case abi.HookServers:
		if err = servers.Unmarshal(in); err == nil {
			out = servers.AppendTo(out[:0])
		}
	case abi.HookCredentials:
		if err = creds.Unmarshal(in); err == nil {
			out = creds.AppendTo(out[:0])
		}
	case abi.HookToolCall:
		if err = toolCall.Unmarshal(in); err == nil {
			out = toolCall.AppendTo(out[:0])
		}
	}
	if err != nil {
		out = append(append(out[:0], "ERR:"...), err.Error()...)
	}
	out = append(out, 0) // never empty
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out)-1)
}
