//go:build wasm

package abi

import "unsafe"

// Loads for the views in wasm guests: one i64.load / i32.load each (wasm
// is little-endian and allows unaligned access). binary.LittleEndian costs
// the inliner eight byte loads on wasm, which would keep the accessors from
// inlining; load_other.go has the portable versions for native builds.
// Callers guarantee len(s) >= 8 (or 4): s is a slot of a record whose
// bounds were checked.

func ld64(s []byte) uint64 { return *(*uint64)(unsafe.Pointer(unsafe.SliceData(s))) }
func ld32(s []byte) uint32 { return *(*uint32)(unsafe.Pointer(unsafe.SliceData(s))) }
