//go:build wasm

package abi

import "unsafe"

// The decode fast-path primitives for wasm guests: branch-free (see "Cost
// model" in doc.go). fast_other.go has the branchy versions for native
// code, with identical results; the examples/plugins tests check the wasm
// build against the native one.

// field reads the header of the field at b[i]: its tag t and, for wire types
// 0 and 2, the varint that follows (the value, or the payload length, which
// is checked against len(b)). j is the offset after them (the payload start
// for wire type 2). For other wire types v is garbage and the caller must
// re-read the field with skip.
//
// field is only the fast path (a one-byte tag and a one-byte value: every
// field number of ABI v1, every varint below 128 and every string shorter
// than 128 bytes). It returns t == 0 (and garbage j) when the caller must
// use fieldSlow instead, or is at the end of b; tag 0 matches no field, and
// a real tag byte 0 is rejected by fieldSlow.
//
// field must only be called with len(b) >= 2: the loads are clamped into b
// instead of guarded, and the result is masked instead of chosen.
func field(b []byte, i int) (t, v uint64, j int) {
	d := len(b) - 2 - i // < 0: fewer than two bytes left
	k := i + d&(d>>63)  // min(i, len(b)-2)
	t, v = uint64(b[k]), uint64(b[k+1])
	n := v & -(t >> 1 & 1)                 // v is a length iff the wire type is 2 (or 3, 6, 7: rejected later)
	bad := (t|v)>>7 | uint64(d-int(n))>>63 // d-n < 0 also when d < 0
	ok := bad - 1                          // all ones when bad == 0
	return t & ok, v & ok, i + 2
}

// present returns all ones if t == want, else 0.
func present(t, want uint64) uint64 {
	d := t ^ want
	return (d|-d)>>63 - 1
}

// takeStr consumes a singular string field: if t == want it returns the
// string at b[j:j+v] (a view) and the offset after it, otherwise "" and i.
// t == want implies that field validated the field, so j+v <= len(b).
func takeStr(b []byte, i int, t, v, want uint64, j int) (string, int) {
	pm := present(t, want)
	n := v & pm
	off := uint64(j) & -((n | -n) >> 63) // 0 for an empty string: never point past b
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), off)
	return unsafe.String((*byte)(p), n), i + int((uint64(j)+n-uint64(i))&pm)
}

// takeBool consumes a singular bool field like takeStr.
func takeBool(i int, t, v, want uint64, j int) (bool, int) {
	pm := present(t, want)
	return v&pm != 0, i + int((uint64(j)-uint64(i))&pm)
}
