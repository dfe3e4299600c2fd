package abi

import (
	"encoding/binary"
	"slices"
)

// The "warden flat" layout of hook inputs (docs/abi.md §6). Inputs are
// written by the host and read in place by guests: a header, then records
// of 8-byte slots, then string bytes. Every integer is a little-endian u32.
//
//	header   magic "WDNF", layout version, message kind, root offset,
//	         number of record types N, then N record strides
//	record   a fixed-size array of 8-byte slots:
//	         string   (offset, length) of its bytes
//	         list     (offset, count) of an array of records, or of string slots
//	         message  (offset, count) with count 0 (the zero message) or 1
//	         flags    (u32, u32) of bits and enums
//
// Offsets are from the start of the input. A list of records is indexed
// with the stride of the record type from the header, so that a newer host
// can append slots to a record type and an older guest still finds element
// i; a slot beyond a record's stride reads as zero.

// FlatMagic is the first u32 of a flat input: the bytes "WDNF".
const FlatMagic = 0x464E4457

// FlatVersion is the layout version of flat inputs that this package reads
// and writes. Compatible changes (new slots appended to a record type, new
// record types appended to the stride table) do not change it.
const FlatVersion = 1

// Header layout.
const (
	hdrMagic   = 0
	hdrVersion = 4
	hdrKind    = 8
	hdrRoot    = 12
	hdrTypes   = 16
	hdrStrides = 20
	// hdrSizeV1 is the header of an input of a version 1 hook: the
	// strides of the version 1 record types (typeServersInput through
	// typeRequirement), so that those inputs are the bytes version 1
	// wrote; the root record follows, at 56.
	hdrSizeV1 = hdrStrides + 4*numTypesV1
	// hdrSize is the header of an input of a version 2 hook (and of a
	// relaid-out input): every record type's stride, padded to 8 bytes
	// (72), so that the records after it stay aligned.
	hdrSize = (hdrStrides + 4*numTypes + 7) &^ 7
)

// numTypesV1 is the number of record types of ABI version 1.
const numTypesV1 = typeRequirement + 1

// headerOf returns the number of record types in the stride table of an
// input of kind, and the header's size (the root record's offset).
func headerOf(kind Hook) (types, size int) {
	if kind&V1Hooks != 0 {
		return numTypesV1, hdrSizeV1
	}
	return numTypes, hdrSize
}

// TransportKind is the transport of a server as an enum, in the flags slot
// of a flat Server record, so that a policy can test it without comparing
// strings. The Transport string is sent as well.
type TransportKind uint32

// The transport kinds. Values a reader does not know (from a newer host)
// must be treated like TransportOther.
const (
	TransportOther TransportKind = 0 // neither "stdio" nor "http" (or empty)
	TransportStdio TransportKind = 1 // "stdio"
	TransportHTTP  TransportKind = 2 // "http"
)

// TransportKindOf returns the kind of a transport string.
func TransportKindOf(transport string) TransportKind {
	switch transport {
	case "stdio":
		return TransportStdio
	case "http":
		return TransportHTTP
	}
	return TransportOther
}

// String returns "stdio", "http", "other" or "TransportKind(N)".
func (k TransportKind) String() string {
	switch k {
	case TransportOther:
		return "other"
	case TransportStdio:
		return "stdio"
	case TransportHTTP:
		return "http"
	}
	return "TransportKind(" + itoa(uint64(k)) + ")"
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// ---------------------------------------------------------------- writing

// The record types, their slot offsets and sizes, and each record's writer
// (size, write, AppendTo) are generated from the schema: layout_gen.go and
// flat_gen.go. What follows are the primitives they use.

// flatWriter writes one flat message. Records are placed in a region
// reserved up front, in the order they are written (depth first); strings
// follow it, in a region sized up front too (the callers count every byte),
// so that writing a string is a copy, not an append. All positions are
// indexes into b; offsets written into slots are relative to base, the
// start of the message.
type flatWriter struct {
	b    []byte
	base int // start of the message in b
	next int // next free byte of the record region
	s    int // next free byte of the string region
}

// begin reserves the header, a zeroed record region of records bytes (root
// record included) and a string region of strBytes bytes after it, and
// writes the header.
func (w *flatWriter) begin(kind Hook, records, strBytes int) {
	w.base = len(w.b)
	_, hs := headerOf(kind)
	total := hs + records + strBytes
	if uint64(total) > 1<<32-1 {
		panic("abi: flat input larger than 4 GiB")
	}
	w.b = slices.Grow(w.b, total)[:w.base+total]
	w.s = w.base + hs + records
	clear(w.b[w.base:w.s])
	w.header(kind, numTypesOf(kind), hs)
	w.next = w.base + hs
}

// numTypesOf is the first result of headerOf.
func numTypesOf(kind Hook) int {
	n, _ := headerOf(kind)
	return n
}

// end returns the message, checking that the string region was exactly
// filled (a wrong count is a bug in this package).
func (w *flatWriter) end() []byte {
	if w.s != len(w.b) {
		panic("abi: flat writer: string bytes miscounted")
	}
	return w.b
}

// header writes the header of a message of kind at w.base: the first
// types of this version's strides, and the root record at root (right
// after the header).
func (w *flatWriter) header(kind Hook, types, root int) {
	h := w.b[w.base:]
	binary.LittleEndian.PutUint32(h[hdrMagic:], FlatMagic)
	binary.LittleEndian.PutUint32(h[hdrVersion:], FlatVersion)
	binary.LittleEndian.PutUint32(h[hdrKind:], uint32(kind))
	binary.LittleEndian.PutUint32(h[hdrRoot:], uint32(root))
	binary.LittleEndian.PutUint32(h[hdrTypes:], uint32(types))
	for t, size := range knownSize[:types] {
		binary.LittleEndian.PutUint32(h[hdrStrides+4*t:], size)
	}
}

// rec reserves n bytes of the record region and returns their position.
func (w *flatWriter) rec(n int) int {
	at := w.next
	w.next += n
	return at
}

func (w *flatWriter) put(at int, a, b uint32) {
	binary.LittleEndian.PutUint64(w.b[at:], uint64(a)|uint64(b)<<32)
}

// ref writes (offset of position at, n) into the slot at position slot.
func (w *flatWriter) ref(slot, at, n int) { w.put(slot, uint32(at-w.base), uint32(n)) }

// str writes string s into the slot at position slot: (0, 0) when empty.
// It returns the position of the string's bytes.
func (w *flatWriter) str(slot int, s string) int {
	if s == "" {
		return 0
	}
	at := w.s
	w.ref(slot, at, len(s))
	w.s = at + copy(w.b[at:], s)
	return at
}

// bytes is str for a bytes field.
func (w *flatWriter) bytes(slot int, s []byte) {
	if len(s) == 0 {
		return
	}
	at := w.s
	w.ref(slot, at, len(s))
	w.s = at + copy(w.b[at:], s)
}

// strs writes a list of strings: an array of string slots.
func (w *flatWriter) strs(slot int, ss []string) {
	if len(ss) == 0 {
		return
	}
	at := w.rec(8 * len(ss))
	w.ref(slot, at, len(ss))
	for i, s := range ss {
		w.str(at+8*i, s)
	}
}

// list reserves an array of n records of size bytes for the slot at
// position slot, and returns the position of its first record.
func (w *flatWriter) list(slot, n, size int) int {
	if n == 0 {
		return 0
	}
	at := w.rec(n * size)
	w.ref(slot, at, n)
	return at
}

// msg reserves a record of size bytes for the message slot at position
// slot (count 1: the host always writes every message).
func (w *flatWriter) msg(slot, size int) int {
	at := w.rec(size)
	w.ref(slot, at, 1)
	return at
}

func strsLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	return n
}
