package abi

import "unsafe"

// The table-driven halves of the codecs: one reader of flat records and
// one decoder of protobuf outputs, driven by tables the generator writes
// from the schema (flat_gen.go, proto_gen.go), instead of a reader and a
// decoder per message. Both run on the host only (a guest reads its input
// through the views and never decodes an output), so they are written for
// clarity: a loop over a record's fields and a switch on each one's kind.
// The encoders and the views stay generated, straight-line code: a guest
// runs the views and the output encoders under the wasm cost model ("Cost
// model" in doc.go), and the host runs the input writers on every hook call
// (a table-driven writer measured twice as slow: 3.2 µs instead of 1.7 µs
// for a 20-server input).
//
// A table entry locates its Go field by offset in the message struct; the
// code below writes the field through a pointer of the field's type, which
// the generator guarantees by construction (a string field is a string, a
// list of T a []T, an enum an int32 type).

// listOps are the operations on a slice field of records (a []T whose
// element type the table code does not know).
type listOps struct {
	// grow extends the slice at p by one element, reusing its capacity
	// (and so the element's own slices), and returns the new element.
	grow func(p unsafe.Pointer) unsafe.Pointer
	// trunc truncates the slice at p to length 0, keeping its capacity.
	trunc func(p unsafe.Pointer)
}

func growOf[T any](p unsafe.Pointer) unsafe.Pointer {
	s := (*[]T)(p)
	*s = extend(*s)
	return unsafe.Pointer(&(*s)[len(*s)-1])
}

func truncOf[T any](p unsafe.Pointer) {
	s := (*[]T)(p)
	*s = (*s)[:0]
}

// listOf returns the listOps of []T.
func listOf[T any]() *listOps { return &listOps{grow: growOf[T], trunc: truncOf[T]} }

// ---------------------------------------------------------------- flat

// Kinds of flatField.
const (
	fString    = iota // a string slot into a string field
	fBytes            // a bytes slot into a RawJSON field
	fCheck            // a string slot derived by the writer (url_host): checked, not kept
	fStrings          // a list of strings into a []string field
	fList             // a list of records of elem into a []T field (ops)
	fMessage          // a message of elem into a T field
	fBit              // bit mask of a flags slot into a bool field
	fURL              // a string slot of a URL, whose host the writer puts in slot host
	fTransport        // the second u32 of a flags slot: the kind of the transport string field (written, not read)
)

// flatField is one field of a record type, for flatReader.record.
type flatField struct {
	kind uint8
	elem uint8   // fList, fMessage: the record type
	slot uint32  // the slot's byte offset in the record
	mask uint32  // fBit
	off  uintptr // the Go field's offset in the struct (not for fCheck)
	name string  // the wire name, for error paths
	ops  *listOps
	zero func(p unsafe.Pointer) // fMessage: zeroes the Go field
}

// record reads the record of type t at position at into the Go struct at
// m, reusing its slices (m's previous contents are overwritten: every
// field is set, a field the record does not have to its zero value).
func (r *flatReader) record(t int, m unsafe.Pointer, at uint32) {
	for i := range flatFields[t] {
		f := &flatFields[t][i]
		p := unsafe.Add(m, f.off)
		switch f.kind {
		case fString:
			*(*string)(p) = r.str(at, t, f.slot, f.name)
		case fBytes:
			*(*[]byte)(p) = r.bytes(at, t, f.slot, f.name)
		case fCheck:
			_ = r.str(at, t, f.slot, f.name)
		case fStrings:
			s := (*[]string)(p)
			*s = r.strs((*s)[:0], at, t, f.slot, f.name)
		case fList:
			f.ops.trunc(p)
			e := int(f.elem)
			o, n := r.records(at, t, f.slot, e, f.name)
			for i := 0; i < n; i++ {
				r.push(f.name, i)
				r.record(e, f.ops.grow(p), o+uint32(i)*r.h.strides[e])
				r.pop()
			}
		case fMessage:
			if q, ok := r.msg(at, t, f.slot, int(f.elem), f.name); ok {
				r.push(f.name, -1)
				r.record(int(f.elem), p, q)
				r.pop()
			} else {
				f.zero(p) // the zero message
			}
		case fBit:
			fl, _ := r.flags(at, t, f.slot)
			*(*bool)(p) = fl&f.mask != 0
		}
	}
}

// zeroOf sets the T at p to its zero value: a zero message (count 0).
func zeroOf[T any](p unsafe.Pointer) {
	var zero T
	*(*T)(p) = zero
}

// unmarshalFlat is every root record's Unmarshal: it decodes the flat
// input b of kind into m, leaving m unchanged on error.
func unmarshalFlat[T any](m *T, b []byte, kind Hook) error {
	r, err := newReader(b, kind)
	if err != nil {
		return err
	}
	x := *m
	r.record(rootType(kind), unsafe.Pointer(&x), r.h.root)
	if err := r.done(); err != nil {
		return err
	}
	*m = x
	return nil
}

// sizer is what the generator writes for every record type: the bytes of
// records below it and of strings it needs.
type sizer interface{ size() (records, strs int) }

// root begins the flat message of kind whose root record m is size bytes,
// and returns the root record's position: every root record's AppendTo is
//
//	w := flatWriter{b: b}
//	m.write(&w, w.root(kind, size, m))
//	return w.end()
func (w *flatWriter) root(kind Hook, size int, m sizer) int {
	records, strs := m.size()
	w.begin(kind, size+records, strs)
	return w.rec(size)
}

// ---------------------------------------------------------------- protobuf

// Kinds of protoField.
const (
	pString   = iota // string
	pBytes           // bytes into a RawJSON field
	pStrings         // repeated string
	pMessages        // repeated embedded message of elem (ops)
	pBool            // bool
	pUint32          // uint32 (a larger value is ErrRange)
	pEnum            // an enum (an int32 type) whose largest defined value is max
)

// protoField is one field of an output message, for decodeMessage.
type protoField struct {
	tag  uint64 // field number << 3 | wire type
	kind uint8
	max  uint64 // pEnum
	off  uintptr
	elem *protoMsg
	ops  *listOps
}

// protoMsg is an output message's table.
type protoMsg struct {
	name   string
	known  uint32 // bit n set: field n is defined (see skip)
	fields []protoField
}

// decodeMessage is every output's Unmarshal: it resets the message at m
// (keeping its slices' capacity) and decodes b into it. See decode.go for
// the semantics.
func decodeMessage(b []byte, d *protoMsg, m unsafe.Pointer) error {
	for i := range d.fields {
		f := &d.fields[i]
		p := unsafe.Add(m, f.off)
		switch f.kind {
		case pString:
			*(*string)(p) = ""
		case pBytes:
			*(*[]byte)(p) = nil
		case pStrings:
			s := (*[]string)(p)
			*s = (*s)[:0]
		case pMessages:
			f.ops.trunc(p)
		case pBool:
			*(*bool)(p) = false
		case pUint32:
			*(*uint32)(p) = 0
		case pEnum:
			*(*int32)(p) = 0
		}
	}
	return decodeFields(b, d, m)
}

// field decodes field t of the message at m, with value or length v,
// whose payload starts at b[j]: see decodeFields. A tag that matches no
// field (an unknown field, or a known one with the wrong wire type)
// returns codeUnknown.
func (d *protoMsg) field(m unsafe.Pointer, b []byte, t, v uint64, j int) (int, error) {
	for i := range d.fields {
		f := &d.fields[i]
		if f.tag != t {
			continue
		}
		p := unsafe.Add(m, f.off)
		switch f.kind {
		case pString:
			*(*string)(p), j = str(b, j, v)
		case pBytes:
			*(*[]byte)(p), j = view(b, j, v)
		case pStrings:
			return appendStr((*[]string)(p), b, j, v), nil
		case pMessages:
			k := j + int(v)
			return k, decodeMessage(b[j:k], f.elem, f.ops.grow(p))
		case pBool:
			*(*bool)(p) = v != 0
		case pUint32:
			*(*uint32)(p), j = uint32(v), inRange32(v, j)
		case pEnum:
			*(*int32)(p), j = int32(v), enumEnd(v, f.max, j)
		}
		return j, nil
	}
	return codeUnknown, nil
}
