package interrupt

// LEB128 decoding. The decoders take the buffer and a position and return
// the position after the number and a status; they never read past
// len(b). Every variant stops at the first byte without the continuation
// bit (0x80), so a number is always the same length whatever its
// signedness: that is what keeps our view of the instruction stream
// aligned with any other correct decoder's.

// Status of a LEB128 read.
const (
	lebOK        = iota
	lebTruncated // the buffer ended inside the number
	lebTooLong   // more bytes than the type allows
	lebOverflow  // the last byte has bits set beyond the type's width
)

// lebMessage describes a failed read of a what.
func lebMessage(status int, what string) string {
	switch status {
	case lebTruncated:
		return "truncated " + what
	case lebTooLong:
		return what + ": LEB128 too long"
	default:
		return what + ": LEB128 overflows its type"
	}
}

// readU32 decodes an unsigned 32-bit LEB128 number (at most 5 bytes; the
// fifth may only use its low 4 bits).
func readU32(b []byte, i int) (uint32, int, int) {
	if i < len(b) && b[i] < 0x80 { // fast path: one byte
		return uint32(b[i]), i + 1, lebOK
	}
	var v uint32
	for n := 0; n < 5; n++ {
		if i >= len(b) {
			return 0, i, lebTruncated
		}
		c := b[i]
		i++
		if n == 4 {
			if c&0x80 != 0 {
				return 0, i, lebTooLong
			}
			if c&0x70 != 0 {
				return 0, i, lebOverflow
			}
		}
		v |= uint32(c&0x7f) << (7 * n)
		if c < 0x80 {
			return v, i, lebOK
		}
	}
	return 0, i, lebTooLong // not reached: n == 4 returns
}

// skipLEB skips a LEB128 number of at most maxLen bytes. If the number
// takes all maxLen bytes, the bits of its last byte selected by mask must
// be all zero, or, when signed, all zero or all one (the sign extension).
//
//	u32: maxLen 5, mask 0x70    s32: maxLen 5, mask 0x78
//	u64: maxLen 10, mask 0x7e   s64: maxLen 10, mask 0x7f
func skipLEB(b []byte, i, maxLen int, mask byte, signed bool) (int, int) {
	if i < len(b) && b[i] < 0x80 { // fast path: one byte
		return i + 1, lebOK
	}
	for n := 1; n <= maxLen; n++ {
		if i >= len(b) {
			return i, lebTruncated
		}
		c := b[i]
		i++
		if c < 0x80 {
			if n == maxLen {
				if m := c & mask; m != 0 && (!signed || m != mask) {
					return i, lebOverflow
				}
			}
			return i, lebOK
		}
	}
	return i, lebTooLong
}

const (
	maskU32 = 0x70
	maskS32 = 0x78
	maskU64 = 0x7e
	maskS64 = 0x7f
)

// readS33 decodes a signed 33-bit LEB128 number (at most 5 bytes; in the
// fifth, bits 5 and 6 must repeat the sign bit 4), as used by block types
// and heap types.
func readS33(b []byte, i int) (int64, int, int) {
	if i < len(b) && b[i] < 0x80 { // fast path: one byte, sign in bit 6
		return int64(int8(b[i]<<1) >> 1), i + 1, lebOK
	}
	var v int64
	for n := 0; n < 5; n++ {
		if i >= len(b) {
			return 0, i, lebTruncated
		}
		c := b[i]
		i++
		v |= int64(c&0x7f) << (7 * n)
		if c < 0x80 {
			if n == 4 {
				if m := c & 0x70; m != 0 && m != 0x70 {
					return 0, i, lebOverflow
				}
				// 35 bits read; bit 32 is the sign.
				return v << 31 >> 31, i, lebOK
			}
			shift := 7 * (n + 1)
			return v << (64 - shift) >> (64 - shift), i, lebOK
		}
	}
	return 0, i, lebTooLong
}

// appendU32 appends the minimal unsigned LEB128 encoding of v.
func appendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// sizeU32 is the length of the minimal unsigned LEB128 encoding of v.
func sizeU32(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// appendS32 appends the minimal signed LEB128 encoding of v.
func appendS32(dst []byte, v int32) []byte { return appendS33(dst, int64(v)) }

// appendS33 appends the minimal signed LEB128 encoding of v (an s32, or a
// block type's type index, 0 ≤ v < 2^32).
func appendS33(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}
