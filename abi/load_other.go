//go:build !wasm

package abi

import "encoding/binary"

// Loads for the views in native builds; see load_wasm.go. (Unaligned
// pointer loads would trip the race detector's checkptr.)

func ld64(s []byte) uint64 { return binary.LittleEndian.Uint64(s) }
func ld32(s []byte) uint32 { return binary.LittleEndian.Uint32(s) }
