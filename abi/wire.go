package abi

import (
	"errors"
	"strconv"
	"unsafe"
)

// Sentinel errors wrapped by [DecodeError]; test with errors.Is.
var (
	ErrTruncated   = errors.New("unexpected end of input")
	ErrOverflow    = errors.New("varint longer than 10 bytes")
	ErrLength      = errors.New("length past end of input")
	ErrWireType    = errors.New("wrong or unsupported wire type")
	ErrFieldNumber = errors.New("invalid field number")
	ErrEnum        = errors.New("undefined enum value")
	ErrRange       = errors.New("value out of range")
)

// Negative offsets returned by the field readers in place of an error value,
// so that the hot path passes plain integers around.
const (
	codeTruncated   = -1
	codeOverflow    = -2
	codeLength      = -3
	codeWireType    = -4
	codeFieldNumber = -5
	codeEnum        = -6
	codeRange       = -7
)

// maxField is the largest valid protobuf field number.
const maxField = 1<<29 - 1

func codeErr(code int) error {
	switch code {
	case codeTruncated:
		return ErrTruncated
	case codeOverflow:
		return ErrOverflow
	case codeLength:
		return ErrLength
	case codeWireType:
		return ErrWireType
	case codeFieldNumber:
		return ErrFieldNumber
	case codeEnum:
		return ErrEnum
	}
	return ErrRange
}

// DecodeError reports malformed input to an Unmarshal method. Errors in an
// embedded message are wrapped by the DecodeError of the enclosing message,
// so Error reads as a path, e.g.
//
//	abi: ServersInput field 3 at byte 0: Server field 9 at byte 27: Credential field 2 at byte 4: length past end of input
type DecodeError struct {
	Message string // message type being decoded, e.g. "Server"
	Field   uint64 // field number, 0 if the tag itself could not be read
	Offset  int    // offset of the field's tag within the message's bytes
	Err     error  // a sentinel (ErrTruncated, ...) or a nested *DecodeError
}

// Error implements error.
func (e *DecodeError) Error() string {
	s := "abi: "
	for {
		s += e.Message
		if e.Field != 0 {
			s += " field " + strconv.FormatUint(e.Field, 10)
		}
		s += " at byte " + strconv.Itoa(e.Offset) + ": "
		next, ok := e.Err.(*DecodeError)
		if !ok {
			break
		}
		e = next
	}
	if e.Err == nil {
		return s + "malformed"
	}
	return s + e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *DecodeError) Unwrap() error { return e.Err }

// decodeErr builds the error for a failure code at offset i of b. It
// re-reads the tag to name the field; it runs only on the error path.
func decodeErr(msg string, b []byte, i, code int) error {
	t, j := uvarint(b, i)
	var f uint64
	if j > 0 {
		f = t >> 3
	}
	return &DecodeError{Message: msg, Field: f, Offset: i, Err: codeErr(code)}
}

// nestedErr wraps the error of an embedded message.
func nestedErr(msg string, field uint64, i int, err error) error {
	return &DecodeError{Message: msg, Field: field, Offset: i, Err: err}
}

// uvarint reads a base-128 varint at b[i]. It returns the value and the
// offset after it, or a negative code on truncated or overlong input.
func uvarint(b []byte, i int) (uint64, int) {
	var v uint64
	for s := uint(0); s < 64; s += 7 {
		if i >= len(b) {
			return 0, codeTruncated
		}
		c := b[i]
		i++
		if s == 63 && c > 1 {
			return 0, codeOverflow
		}
		v |= uint64(c&0x7f) << s
		if c < 0x80 {
			return v, i
		}
	}
	return 0, codeOverflow
}

// fieldSlow is field for any input. It returns a negative j (an error code)
// on truncated or overlong varints and on a length past the end of b.
func fieldSlow(b []byte, i int) (t, v uint64, j int) {
	t, j = uvarint(b, i)
	if j < 0 {
		return 0, 0, j
	}
	switch t & 7 {
	case wireVarint:
		v, j = uvarint(b, j)
	case wireBytes:
		v, j = uvarint(b, j)
		if j >= 0 && v > uint64(len(b)-j) {
			j = codeLength
		}
	}
	return t, v, j
}

// skip steps over the field at b[i] whose tag matched no known case: an
// unknown field (skipped, whatever its wire type) or a known field (bit set
// in known) with the wrong wire type (an error). It returns the offset after
// the field or a negative code.
func skip(b []byte, i int, known uint32) int {
	t, j := uvarint(b, i)
	if j < 0 {
		return j
	}
	num := t >> 3
	if num == 0 || num > maxField {
		return codeFieldNumber
	}
	if num < 32 && known&(1<<num) != 0 {
		return codeWireType
	}
	switch t & 7 {
	case wireVarint:
		_, j = uvarint(b, j)
		return j
	case wireFixed64:
		if len(b)-j < 8 {
			return codeTruncated
		}
		return j + 8
	case wireBytes:
		n, j := uvarint(b, j)
		if j < 0 {
			return j
		}
		if n > uint64(len(b)-j) {
			return codeLength
		}
		return j + int(n)
	case wireFixed32:
		if len(b)-j < 4 {
			return codeTruncated
		}
		return j + 4
	}
	return codeWireType // groups (3, 4) and the undefined 6, 7
}

// str returns the n bytes at b[j:] as a string sharing b's memory, and the
// offset after them. The caller has checked j+n <= len(b) (field does).
func str(b []byte, j int, n uint64) (string, int) {
	k := j + int(n)
	s := b[j:k]
	return unsafe.String(unsafe.SliceData(s), len(s)), k
}

// view returns the n bytes at b[j:] as a subslice of b with its capacity
// clipped (so appending to it cannot overwrite b), and the offset after them.
// An empty value is nil.
func view(b []byte, j int, n uint64) ([]byte, int) {
	if n == 0 {
		return nil, j // proto3: empty bytes and absent bytes are the same
	}
	k := j + int(n)
	return b[j:k:k], k
}

// extend grows s by one element, reusing its capacity (and so the element's
// own slices) when it can. The caller resets the new element. (Written as a
// one-sided branch whose rare side calls append, so that the common path is
// straight-line code; see "Cost model" in doc.go.)
func extend[T any](s []T) []T {
	if len(s) == cap(s) {
		var zero T
		s = append(s, zero)[:len(s)]
	}
	return s[:len(s)+1]
}

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
