//go:build wasm

package sdk

// fastHelpers selects the loop-free versions of URLHost and HostIn
// (helpers_fast.go) in wasm guests, where loops and byte accesses cost
// more than word arithmetic; native builds use the plain loops, which are
// faster on a real CPU. The tests check that both give the same answers.
import "unsafe"

const fastHelpers = true

// addr is the address of s's bytes in linear memory (0 for an empty s):
// a gathered output's reference (output.go).
func addr(s string) uint64 { return uint64(uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))) }

// load64 reads the first 8 bytes of s as a little-endian word: one i64.load
// (wasm is little-endian and allows unaligned loads).
func load64(s string) uint64 {
	_ = s[7]
	return *(*uint64)(unsafe.Pointer(unsafe.StringData(s)))
}
