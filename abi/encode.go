package abi

// Encoding of outputs: protobuf wire format (docs/abi.md §7). Every field
// number of ABI v1 is below 16, so every tag is one byte. Outputs omit zero
// values (proto3). Embedded messages are written with a one-byte length
// placeholder that is widened in place when the body turns out to be 128
// bytes or longer, so encoding is a single pass and allocates nothing beyond
// growing the destination slice. (Inputs use the flat layout: flat.go.)

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// putField writes length-delimited field t with value s, even when s is
// empty (an element of a repeated field).
func putField[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	b = append(b, t)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendField is putField that omits an empty value (outputs omit zero
// values). It is written for a wasm guest's cost model ("Cost model" in
// doc.go): a standalone function whose rare cases (growing b) leave through
// an early return, and whose common case runs straight through, writing the
// header with putHeader.
func appendField[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	n := len(s)
	if n == 0 {
		return b
	}
	if cap(b)-len(b) < n+9 {
		return appendFieldGrow(b, t, s)
	}
	k := putHeader(b, t, uint64(n))
	b = b[:k+n]
	copy(b[k:], s)
	return b
}

// appendFieldGrow is the rare path of appendField, kept out of line.
//
//go:noinline
func appendFieldGrow[T ~string | ~[]byte](b []byte, t byte, s T) []byte {
	return appendField(append(b, make([]byte, len(s)+9)...)[:len(b)], t, s)
}

// putHeader writes tag t and the varint n (< 2^35) after len(b), in the
// capacity of b (which must have room for 6 bytes), without branching, and
// returns the offset just after them.
func putHeader(b []byte, t byte, n uint64) int {
	if n >= 1<<35 {
		panic("abi: field longer than 2^35-1 bytes")
	}
	x := n&0x7f | n<<1&0x7f00 | n<<2&0x7f0000 | n<<3&0x7f000000 | n<<4&0x7f00000000
	size := 1 + (-(n >> 7))>>63 + (-(n >> 14))>>63 + (-(n >> 21))>>63 + (-(n >> 28))>>63
	x |= 0x80808080 & (1<<(8*(size-1)) - 1) // continuation bits on all but the last byte
	k := len(b)
	p := b[k : k+6]
	p[0] = t
	p[1], p[2], p[3], p[4], p[5] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24), byte(x>>32)
	return k + 1 + int(size)
}

func appendBool(b []byte, t byte, v bool) []byte {
	if v {
		b = append(b, t, 1)
	}
	return b
}

func appendUint(b []byte, t byte, v uint64) []byte {
	if v != 0 {
		b = appendVarint(append(b, t), v)
	}
	return b
}

// appendStrings writes a repeated string field. Unlike a singular field, an
// empty element is written, so the element count survives a round trip.
func appendStrings(b []byte, t byte, ss []string) []byte {
	for _, s := range ss {
		b = putField(b, t, s)
	}
	return b
}

// beginMessage writes tag t and a one-byte length placeholder; it returns the
// offset of the message body, to pass to endMessage.
func beginMessage(b []byte, t byte) ([]byte, int) {
	b = append(b, t, 0)
	return b, len(b)
}

// endMessage patches the length of the embedded message whose body starts at
// start. A short body (the common case) only patches the placeholder.
func endMessage(b []byte, start int) []byte {
	n := len(b) - start
	b[start-1] = byte(n)
	if n >= 0x80 {
		b = widenLength(b, start, n)
	}
	return b
}

// widenLength makes room for a multi-byte length before the body at start.
func widenLength(b []byte, start, n int) []byte {
	extra := 0
	for v := n >> 7; v > 0; v >>= 7 {
		extra++
	}
	for i := 0; i < extra; i++ {
		b = append(b, 0)
	}
	copy(b[start+extra:], b[start:start+n])
	i := start - 1
	v := uint64(n)
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return b
}

// appendMessages writes a repeated embedded message field. (Each message's
// AppendTo is generated from the schema: proto_gen.go.)
func appendMessages[T any, P interface {
	*T
	AppendTo([]byte) []byte
}](b []byte, t byte, ms []T) []byte {
	for i := range ms {
		var s int
		b, s = beginMessage(b, t)
		b = P(&ms[i]).AppendTo(b)
		b = endMessage(b, s)
	}
	return b
}
