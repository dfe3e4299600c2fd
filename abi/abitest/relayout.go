package abitest

import (
	"encoding/binary"
	"errors"

	"github.com/warden-mcp/warden/abi"
)

// Relayout re-encodes flat inputs with another, equally valid layout, to
// check that readers follow the layout rules of docs/abi.md §6 rather than
// the exact bytes the host writes. It is written from the document's
// rules, independently of package abi's writer; its record types and
// Schema (schema_gen.go) are generated from the ABI's schema, as the slot
// tables of the document are.

// Slot kinds.
const (
	slotString  = iota // (offset, length) of bytes
	slotStrings        // (offset, count) of an array of string slots
	slotList           // (offset, count) of an array of records of elem
	slotMessage        // (offset, count 0 or 1) of a record of elem
	slotFlags          // two u32s
)

type slotDesc struct{ kind, elem int }

var (
	str   = slotDesc{kind: slotString}
	strl  = slotDesc{kind: slotStrings}
	flags = slotDesc{kind: slotFlags}
)

func list(elem int) slotDesc { return slotDesc{slotList, elem} }
func msg(elem int) slotDesc  { return slotDesc{slotMessage, elem} }

// RootType returns the record type of hook h's input.
func RootType(h abi.Hook) int {
	switch h {
	case abi.HookCredentials:
		return TypeCredentialsInput
	case abi.HookToolCall:
		return TypeToolCallInput
	case abi.HookResourceRead:
		return TypeResourceReadInput
	case abi.HookPromptGet:
		return TypePromptGetInput
	case abi.HookToolResult:
		return TypeToolResultInput
	}
	return TypeServersInput
}

// Layout says how Relayout writes an input.
type Layout struct {
	// Strides holds a stride per record type (a multiple of 8); 0 keeps the
	// input's. A stride below the type's slots drops the slots past it (an
	// older writer: readers see them as zero); above, the extra slots are
	// filled with Fill (a newer writer: readers ignore them).
	Strides [NumTypes]uint32
	// ExtraTypes record types (stride 16) are appended to the stride table,
	// as a newer writer with new record types would.
	ExtraTypes int
	// Fill is the byte of the slots beyond the known ones.
	Fill byte
	// StringsFirst puts the string bytes before the records, each string
	// written where it is first referenced from the end of the walk.
	StringsFirst bool
	// Dedup writes each distinct string once, shared by every slot.
	Dedup bool
}

var errBad = errors.New("abitest: malformed input")

type relay struct {
	src, dst []byte
	in, out  [NumTypes]uint32 // strides
	l        Layout
	strings  map[string]uint32
	pending  []pendingString // StringsFirst: slots to patch
}

type pendingString struct {
	slot int
	s    string
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// Relayout re-encodes the flat input b of hook h with layout l. The result
// reads as the same message, except for the slots an older writer (a
// smaller stride) does not have, which read as zero.
func Relayout(b []byte, h abi.Hook, l Layout) ([]byte, error) {
	if len(b) < 20 {
		return nil, errBad
	}
	r := &relay{src: b, l: l, strings: map[string]uint32{}}
	n := le32(b[16:])
	if 20+4*uint64(n) > uint64(len(b)) {
		return nil, errBad
	}
	for t := 0; t < NumTypes && t < int(n); t++ {
		r.in[t] = le32(b[20+4*t:])
	}
	for t := range r.out {
		r.out[t] = l.Strides[t]
		if r.out[t] == 0 {
			r.out[t] = r.in[t]
		}
	}
	// As many types as the input's table has (a version 1 hook's input
	// has only the version 1 types), then the extra ones.
	types := int(n) + l.ExtraTypes
	hdr := 20 + 4*types
	r.dst = make([]byte, hdr, 4*len(b))
	put := func(at int, v uint32) { binary.LittleEndian.PutUint32(r.dst[at:], v) }
	copy(r.dst, b[:12]) // magic, version, kind
	put(16, uint32(types))
	for t := 0; t < types; t++ {
		s := uint32(16)
		if t < NumTypes && t < int(n) {
			s = r.out[t]
		}
		put(20+4*t, s)
	}
	if l.StringsFirst {
		// Reserve room for the strings: at most the input's size.
		r.dst = append(r.dst, make([]byte, len(b))...)
	}
	root := le32(b[12:])
	rt := RootType(h)
	at := r.alloc(int(r.out[rt]))
	put(12, uint32(at))
	if err := r.record(rt, root, at); err != nil {
		return nil, err
	}
	if l.StringsFirst {
		// Strings from the start of the reserved area, in reverse order of
		// reference.
		pos := hdr
		for i := len(r.pending) - 1; i >= 0; i-- {
			p := r.pending[i]
			o, ok := r.strings[p.s]
			if !ok || !l.Dedup {
				o = uint32(pos)
				copy(r.dst[pos:], p.s)
				pos += len(p.s)
				r.strings[p.s] = o
			}
			binary.LittleEndian.PutUint32(r.dst[p.slot:], o)
			binary.LittleEndian.PutUint32(r.dst[p.slot+4:], uint32(len(p.s)))
		}
	}
	return r.dst, nil
}

func (r *relay) alloc(n int) int {
	at := len(r.dst)
	r.dst = append(r.dst, make([]byte, n)...)
	return at
}

// ref checks the reference in the 8 bytes at src[p:] for elements of size
// bytes and returns it.
func (r *relay) ref(p uint32, size uint32) (uint32, uint32, error) {
	o, n := le32(r.src[p:]), le32(r.src[p+4:])
	if uint64(o)+uint64(n)*uint64(size) > uint64(len(r.src)) {
		return 0, 0, errBad
	}
	return o, n, nil
}

// str writes string s into the slot at dst[slot:].
func (r *relay) str(slot int, s string) {
	if s == "" {
		return
	}
	if r.l.StringsFirst {
		r.pending = append(r.pending, pendingString{slot, s})
		return
	}
	o, ok := r.strings[s]
	if !ok || !r.l.Dedup {
		o = uint32(len(r.dst))
		r.dst = append(r.dst, s...)
		r.strings[s] = o
	}
	binary.LittleEndian.PutUint32(r.dst[slot:], o)
	binary.LittleEndian.PutUint32(r.dst[slot+4:], uint32(len(s)))
}

// record copies the record of type t at src[off:] to dst[at:].
func (r *relay) record(t int, off uint32, at int) error {
	if uint64(off)+uint64(r.in[t]) > uint64(len(r.src)) {
		return errBad
	}
	for i := range r.out[t] / 8 {
		if i >= uint32(len(Schema[t])) {
			for k := range 8 {
				r.dst[at+8*int(i)+k] = r.l.Fill
			}
			continue
		}
		if 8*i+8 > r.in[t] {
			continue // the input's writer did not have this slot: zero
		}
		p := off + 8*i
		slot := at + 8*int(i)
		switch d := Schema[t][i]; d.kind {
		case slotFlags:
			copy(r.dst[slot:slot+8], r.src[p:p+8])
		case slotString:
			o, n, err := r.ref(p, 1)
			if err != nil {
				return err
			}
			r.str(slot, string(r.src[o:o+n]))
		case slotStrings:
			o, n, err := r.ref(p, 8)
			if err != nil {
				return err
			}
			arr := r.alloc(8 * int(n))
			binary.LittleEndian.PutUint32(r.dst[slot:], uint32(arr))
			binary.LittleEndian.PutUint32(r.dst[slot+4:], n)
			for j := range n {
				so, sn, err := r.ref(o+8*j, 1)
				if err != nil {
					return err
				}
				r.str(arr+8*int(j), string(r.src[so:so+sn]))
			}
		case slotList, slotMessage:
			o, n, err := r.ref(p, r.in[d.elem])
			if err != nil {
				return err
			}
			if d.kind == slotMessage && n > 1 {
				return errBad
			}
			arr := r.alloc(int(n) * int(r.out[d.elem]))
			if n > 0 {
				binary.LittleEndian.PutUint32(r.dst[slot:], uint32(arr))
				binary.LittleEndian.PutUint32(r.dst[slot+4:], n)
			}
			for j := range n {
				if err := r.record(d.elem, o+j*r.in[d.elem], arr+int(j)*int(r.out[d.elem])); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
