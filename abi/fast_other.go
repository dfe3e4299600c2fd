//go:build !wasm

package abi

// The decode fast-path primitives for native code: ordinary, well-predicted
// branches. fast_wasm.go has the branch-free versions used in wasm guests
// (see "Cost model" in doc.go), with identical results.

// field reads the header of the field at b[i]: its tag t and, for wire types
// 0 and 2, the varint that follows (the value, or the payload length, which
// is checked against len(b)). j is the offset after them (the payload start
// for wire type 2). For other wire types v is garbage and the caller must
// re-read the field with skip.
//
// field is only the fast path (a one-byte tag and a one-byte value: every
// field number of ABI v1, every varint below 128 and every string shorter
// than 128 bytes). It returns t == 0 when the caller must use fieldSlow
// instead, or is at the end of b; tag 0 matches no field, and a real tag
// byte 0 is rejected by fieldSlow.
func field(b []byte, i int) (t, v uint64, j int) {
	if i+1 < len(b) {
		t, v = uint64(b[i]), uint64(b[i+1])
		n := v & -(t >> 1 & 1) // v is a length iff the wire type is 2 (or 3, 6, 7: rejected later)
		if (t|v)>>7|uint64(len(b)-i-2-int(n))>>63 == 0 {
			return t, v, i + 2
		}
	}
	return 0, 0, 0
}

// takeStr consumes a singular string field: if t == want it returns the
// string at b[j:j+v] (a view) and the offset after it, otherwise "" and i.
// t == want implies that field validated the field, so j+v <= len(b).
func takeStr(b []byte, i int, t, v, want uint64, j int) (string, int) {
	if t == want {
		return str(b, j, v)
	}
	return "", i
}

// takeBool consumes a singular bool field like takeStr.
func takeBool(i int, t, v, want uint64, j int) (bool, int) {
	if t == want {
		return v != 0, j
	}
	return false, i
}
