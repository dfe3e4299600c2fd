package abi

import "encoding/binary"

// The slow path of Flat: an input whose layout the views cannot read in
// place (a stride smaller than this version's record, a record type missing
// from the stride table, a zero message) is copied into this version's
// layout. The copy keeps every slot as written (flags included: a derived
// field such as the transport kind is not recomputed), drops the slots this
// version does not know, zeroes those the writer did not have, and checks
// every reference, so it also finds any malformed part of the input.

// Slot kinds of the schema.
const (
	kString  = iota // (offset, length) of bytes
	kStrings        // (offset, count) of an array of string slots
	kList           // (offset, count) of an array of records of elem
	kMessage        // (offset, count 0 or 1) of a record of elem
	kFlags          // two u32s
)

// slotDesc is a slot of the schema table (layout_gen.go).
type slotDesc struct{ kind, elem uint8 }

// relayer copies the records of src into dst: dst is this version's header,
// then src itself (so strings keep their bytes, at offsets shifted by the
// header's size), then the copied records.
type relayer struct {
	src, dst []byte
	h        header
	ok       bool
}

// relayout copies input b of kind into f.own in this version's layout, or
// returns the error of the malformed input.
func (f *Flat) relayout(b []byte, kind Hook) ([]byte, error) {
	h, err := parseHeader(b, kind)
	if err != nil {
		return nil, err
	}
	r := relayer{src: b, h: h, ok: true}
	r.dst = append(append(f.own[:0], make([]byte, hdrSize)...), b...)
	rt := rootType(kind)
	root := r.alloc(knownSize[rt])
	r.record(rt, h.root, root)
	if !r.ok {
		return nil, ValidateInput(kind, b) // the precise error
	}
	w := flatWriter{b: r.dst}
	w.header(kind, numTypes, hdrSize)
	binary.LittleEndian.PutUint32(r.dst[hdrRoot:], uint32(root))
	f.own = r.dst
	return r.dst, nil
}

func (r *relayer) alloc(n uint32) int {
	at := len(r.dst)
	r.dst = append(r.dst, make([]byte, n)...)
	return at
}

func (r *relayer) put(at int, a, b uint32) {
	binary.LittleEndian.PutUint32(r.dst[at:], a)
	binary.LittleEndian.PutUint32(r.dst[at+4:], b)
}

// fits reports whether n elements of size bytes from offset o lie in src.
func (r *relayer) fits(o, n, size uint32) bool {
	return uint64(o)+uint64(n)*uint64(size) <= uint64(len(r.src))
}

// record copies the record of type t at src offset off (known to fit) to
// dst position at (this version's size of t).
func (r *relayer) record(t int, off uint32, at int) {
	for k, d := range schema[t] {
		if !r.ok {
			return
		}
		var a, n uint32 // a slot the writer did not have reads as zero
		if uint32(8*k+8) <= r.h.strides[t] {
			p := off + uint32(8*k)
			a, n = le32(r.src[p:]), le32(r.src[p+4:])
		}
		slot := at + 8*k
		switch d.kind {
		case kFlags:
			r.put(slot, a, n)
		case kString:
			r.str(slot, a, n)
		case kStrings:
			if !r.fits(a, n, 8) {
				r.ok = false
				return
			}
			arr := r.alloc(8 * n)
			r.put(slot, uint32(arr), n)
			for i := range n {
				q := a + 8*i
				r.str(arr+8*int(i), le32(r.src[q:]), le32(r.src[q+4:]))
			}
		case kList, kMessage:
			stride, elem := r.h.strides[d.elem], int(d.elem)
			if !r.fits(a, n, stride) || stride == 0 && n > 0 || d.kind == kMessage && n > 1 {
				r.ok = false
				return
			}
			copies := n
			if d.kind == kMessage {
				n = 1 // the zero message (count 0) is written out as a record of zeros
			}
			size := knownSize[elem]
			arr := r.alloc(n * size)
			if n > 0 {
				r.put(slot, uint32(arr), n)
			}
			for i := range copies {
				r.record(elem, a+i*stride, arr+int(i*size))
			}
		}
	}
}

// str copies string slot (o, n), checked against src, shifting its offset.
func (r *relayer) str(slot int, o, n uint32) {
	if !r.fits(o, n, 1) {
		r.ok = false
		return
	}
	if n > 0 {
		r.put(slot, o+hdrSize, n)
	}
}
