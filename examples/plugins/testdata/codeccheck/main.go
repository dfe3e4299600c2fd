// Command codeccheck is a test module (not a policy): it parses an input
// with the abi views as compiled for wasm (abi.Flat: the loop-free fast path
// and its wasm-only loads, load_wasm.go), reads every field, and re-encodes
// the result, so that wasm_test.go can compare the wasm build of the views
// with the native build.
package main

import (
	"unsafe"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/examples/plugins/testdata/codeccheck/roundtrip"
)

func main() {}

var (
	buf, out []byte
	flat     abi.Flat
)

//go:wasmexport alloc
func alloc(n uint32) uint32 {
	if int(n) > cap(buf) {
		buf = make([]byte, n+1)
	}
	buf = buf[:cap(buf)]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// roundTrip runs roundtrip.RoundTrip on buf[:n] as the input of hook (1, 2
// or 4) and returns the result as (ptr << 32) | len.
//
//go:wasmexport roundtrip
func roundTrip(hook, n uint32) uint64 {
	out = append(out[:0], roundtrip.RoundTrip(&flat, abi.Hook(hook), buf[:n:n])...)
	out = append(out, 0) // never empty
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out)-1)
}
