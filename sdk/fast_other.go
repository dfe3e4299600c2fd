//go:build !wasm

package sdk

// fastHelpers: see fast_wasm.go.
const fastHelpers = false

// addr is never called natively: outputs are gathered in wasm guests only.
func addr(string) uint64 { panic("sdk: gathered output in a native build") }

// load64 reads the first 8 bytes of s as a little-endian word.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
