package abi

import "unsafe"

// The output decoders, used by the host: protobuf wire format (docs/abi.md
// §7). Each message's table is generated from the schema (proto_gen.go);
// decodeMessage and protoMsg.field (table.go) decode any message by its
// table; the loop over the fields and the helpers of the field decoder are
// here.
//
// Each Unmarshal resets the message and merges b into it:
//
//   - ZERO-COPY: every string (and []byte) field of the result is a view into
//     b. The decoded message is valid only while b is unchanged and alive;
//     overwrite or reuse b and the strings change under you. Copy
//     (strings.Clone) what must outlive b.
//   - Repeated fields are truncated to [:0] and refilled in place, reusing
//     their capacity and the capacity of their elements' own slices, so
//     decoding into a warm message allocates nothing.
//   - Unknown fields of any wire type (0, 1, 2, 5) are skipped.
//   - Malformed input returns a *DecodeError and never panics; m is then
//     partially filled and must not be used.
//   - A singular embedded message that appears more than once is merged, as
//     in protobuf; other singular fields: last one wins.

// codeUnknown is returned by protoMsg.field for a tag it does not know:
// decodeFields then skips the field (or reports a known field with the
// wrong wire type).
const codeUnknown = -100

// decodeFields decodes the fields of b in order into the message at m,
// calling d.field for each with its tag t, its value (wire type 0) or
// length (wire type 2) v and the offset j after them. d.field returns the
// offset after the field, a negative code, or codeUnknown; an error of an
// embedded message is wrapped as field t's.
func decodeFields(b []byte, d *protoMsg, m unsafe.Pointer) error {
	msg, known := d.name, d.known
	for i := 0; i < len(b); {
		var t, v uint64
		var j int
		if len(b)-i >= 2 { // field needs two bytes
			t, v, j = field(b, i)
		}
		if t == 0 {
			if t, v, j = fieldSlow(b, i); j < 0 {
				return decodeErr(msg, b, i, j)
			}
		}
		k, err := d.field(m, b, t, v, j)
		if err != nil {
			return nestedErr(msg, t>>3, i, err)
		}
		if k == codeUnknown {
			k = skip(b, i, known)
		}
		if k < 0 {
			return decodeErr(msg, b, i, k)
		}
		i = k
	}
	return nil
}

// enumEnd returns j, or codeEnum when v is above max, the largest value of
// the field's enum.
func enumEnd(v, max uint64, j int) int {
	if v > max {
		return codeEnum
	}
	return j
}

// inRange32 returns j, or codeRange when v does not fit a uint32.
func inRange32(v uint64, j int) int {
	if v > 1<<32-1 {
		return codeRange
	}
	return j
}

// appendStr appends the string of length v at b[j:] to *s (an element of a
// repeated string field) and returns the offset after it.
func appendStr(s *[]string, b []byte, j int, v uint64) int {
	x, k := str(b, j, v)
	*s = append(*s, x)
	return k
}
