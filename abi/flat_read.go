package abi

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Reading flat inputs, host side: Unmarshal validates a whole input and
// fills the Go structs (by the tables of flat_gen.go: table.go). Guests read inputs in place with the views of
// view.go instead; a view checks what it reads, when it reads it.

// Sentinel errors wrapped by [InputError]; test with errors.Is.
var (
	ErrMagic   = errors.New("not a warden flat input (bad magic)")
	ErrVersion = errors.New("unsupported flat layout version")
	ErrKind    = errors.New("wrong message kind")
	ErrStride  = errors.New("record stride is not a positive multiple of 8")
	ErrBounds  = errors.New("reference past end of input")
	ErrCount   = errors.New("message count is not 0 or 1")
)

// InputError reports a malformed flat input.
type InputError struct {
	Message string // the input message: "ServersInput", "CredentialsInput", "ToolCallInput", ...
	Path    string // where: e.g. "servers[3].url"; "" for the header
	Offset  int    // byte offset of the bad header field or slot
	Err     error  // ErrTruncated, ErrMagic, ErrVersion, ErrKind, ErrStride, ErrBounds or ErrCount
}

// Error implements error, e.g.
//
//	abi: malformed ServersInput: servers[3].url (slot at byte 312): reference past end of input
func (e *InputError) Error() string {
	s := "abi: malformed " + e.Message + ": "
	if e.Path == "" {
		s += "header"
	} else {
		s += e.Path
	}
	return s + " (at byte " + strconv.Itoa(e.Offset) + "): " + e.Err.Error()
}

// Unwrap returns the sentinel.
func (e *InputError) Unwrap() error { return e.Err }

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// header is the parsed header of a flat input.
type header struct {
	strides [numTypes]uint32 // 0 for types the writer did not know
	root    uint32           // offset of the root record
	small   bool             // some stride is smaller than knownSize: views need a copy
}

// parseHeader checks the header of b for a message of the given kind: the
// magic, the layout version, the kind, the stride table (multiples of 8) and
// that the root record lies inside b.
func parseHeader(b []byte, kind Hook) (h header, err *InputError) {
	msg := kindName(kind)
	bad := func(off int, e error) *InputError { return &InputError{Message: msg, Offset: off, Err: e} }
	if len(b) < hdrStrides {
		return h, bad(len(b), ErrTruncated)
	}
	if le32(b[hdrMagic:]) != FlatMagic {
		return h, bad(hdrMagic, ErrMagic)
	}
	if le32(b[hdrVersion:]) != FlatVersion {
		return h, bad(hdrVersion, ErrVersion)
	}
	if Hook(le32(b[hdrKind:])) != kind {
		return h, bad(hdrKind, ErrKind)
	}
	n := uint64(le32(b[hdrTypes:]))
	if uint64(hdrStrides)+4*n > uint64(len(b)) {
		return h, bad(hdrTypes, ErrTruncated)
	}
	for t := uint64(0); t < n; t++ {
		s := le32(b[hdrStrides+4*t:])
		if s%8 != 0 || s == 0 {
			return h, bad(hdrStrides+4*int(t), ErrStride)
		}
		if t < numTypes {
			h.strides[t] = s
		}
	}
	for t := range h.strides {
		if h.strides[t] < knownSize[t] {
			h.small = true
		}
	}
	h.root = le32(b[hdrRoot:])
	if uint64(h.root)+uint64(h.strides[rootType(kind)]) > uint64(len(b)) {
		return h, bad(hdrRoot, ErrBounds)
	}
	return h, nil
}

func rootType(kind Hook) int {
	switch kind {
	case HookCredentials:
		return typeCredentialsInput
	case HookToolCall:
		return typeToolCallInput
	case HookResourceRead:
		return typeResourceReadInput
	case HookPromptGet:
		return typePromptGetInput
	case HookToolResult:
		return typeToolResultInput
	}
	return typeServersInput
}

func kindName(kind Hook) string { return typeName[rootType(kind)] }

// flatReader walks a whole flat input for Unmarshal, checking every
// reference. The first error stops the walk (later reads return zero
// values); path names where the walk is, for the error.
type flatReader struct {
	b    []byte
	h    header
	name string // the input message, for errors
	err  *InputError
	path []pathElem
}

type pathElem struct {
	name  string
	index int // -1: not a list element
}

func (r *flatReader) fail(at uint32, name string, e error) {
	if r.err != nil {
		return
	}
	p := ""
	for _, x := range r.path {
		if p != "" {
			p += "."
		}
		p += x.name
		if x.index >= 0 {
			p += "[" + strconv.Itoa(x.index) + "]"
		}
	}
	if p != "" {
		p += "."
	}
	r.err = &InputError{Message: r.name, Path: p + name, Offset: int(at), Err: e}
}

func (r *flatReader) push(name string, index int) { r.path = append(r.path, pathElem{name, index}) }
func (r *flatReader) pop()                        { r.path = r.path[:len(r.path)-1] }

// slot returns the two u32s of the slot at byte off of the record of type
// typ at position at: zeros when the slot lies beyond the type's stride (a
// field the writer did not know), or after an error.
func (r *flatReader) slot(at uint32, typ int, off uint32) (uint32, uint32) {
	if r.err != nil || off+8 > r.h.strides[typ] {
		return 0, 0
	}
	p := at + off // the record was checked to lie inside b
	return le32(r.b[p:]), le32(r.b[p+4:])
}

// str reads a string slot.
func (r *flatReader) str(at uint32, typ int, off uint32, name string) string {
	o, n := r.slot(at, typ, off)
	return r.text(o, n, at+off, name)
}

// text returns the n bytes at offset o as a string (a view), checking them.
func (r *flatReader) text(o, n, slot uint32, name string) string {
	if uint64(o)+uint64(n) > uint64(len(r.b)) {
		r.fail(slot, name, ErrBounds)
		return ""
	}
	s, _ := str(r.b, int(o), uint64(n))
	return s
}

// flags reads the two u32s of a flags slot.
func (r *flatReader) flags(at uint32, typ int, off uint32) (uint32, uint32) {
	return r.slot(at, typ, off)
}

// list reads a list slot of n elements of size bytes and returns the
// position of the first element and n.
func (r *flatReader) list(at uint32, typ int, off uint32, size uint32, name string) (uint32, int) {
	o, n := r.slot(at, typ, off)
	// (size is 0 only for a record type missing from the stride table: a
	// list of it must be empty, and every list costs 8 bytes per element.)
	if uint64(o)+uint64(n)*uint64(size) > uint64(len(r.b)) || size == 0 && n > 0 {
		r.fail(at+off, name, ErrBounds)
		return 0, 0
	}
	return o, int(n)
}

// records reads a list slot of records of type elem.
func (r *flatReader) records(at uint32, typ int, off uint32, elem int, name string) (uint32, int) {
	return r.list(at, typ, off, r.h.strides[elem], name)
}

// msg reads a message slot of type elem: ok is false for the zero message
// (count 0) and after an error.
func (r *flatReader) msg(at uint32, typ int, off uint32, elem int, name string) (uint32, bool) {
	o, n := r.slot(at, typ, off)
	if n > 1 {
		r.fail(at+off, name, ErrCount)
		return 0, false
	}
	if uint64(o)+uint64(n)*uint64(r.h.strides[elem]) > uint64(len(r.b)) || r.h.strides[elem] == 0 && n > 0 {
		r.fail(at+off, name, ErrBounds)
		return 0, false
	}
	return o, n == 1 && r.err == nil
}

// strs reads a list of strings, appending to dst.
func (r *flatReader) strs(dst []string, at uint32, typ int, off uint32, name string) []string {
	o, n := r.list(at, typ, off, 8, name)
	if n > 0 {
		r.push(name, -1)
		for i := 0; i < n && r.err == nil; i++ {
			p := o + 8*uint32(i) // inside b: checked by list
			dst = append(dst, r.text(le32(r.b[p:]), le32(r.b[p+4:]), p, "["+strconv.Itoa(i)+"]"))
		}
		r.pop()
	}
	return dst
}

// bytes reads a bytes slot (nil when empty).
func (r *flatReader) bytes(at uint32, typ int, off uint32, name string) []byte {
	o, n := r.slot(at, typ, off)
	if uint64(o)+uint64(n) > uint64(len(r.b)) {
		r.fail(at+off, name, ErrBounds)
		return nil
	}
	if n == 0 {
		return nil
	}
	return r.b[o : o+n : o+n]
}

func newReader(b []byte, kind Hook) (*flatReader, error) {
	h, err := parseHeader(b, kind)
	if err != nil {
		return nil, err
	}
	return &flatReader{b: b, h: h, name: kindName(kind)}, nil
}

func (r *flatReader) done() error {
	if r.err != nil {
		return r.err
	}
	return nil
}

// ValidateInput checks the whole flat input b of hook h, as Unmarshal does,
// without keeping the result.
func ValidateInput(h Hook, b []byte) error {
	switch h {
	case HookServers:
		return new(ServersInput).Unmarshal(b)
	case HookCredentials:
		return new(CredentialsInput).Unmarshal(b)
	case HookToolCall:
		return new(ToolCallInput).Unmarshal(b)
	case HookResourceRead:
		return new(ResourceReadInput).Unmarshal(b)
	case HookPromptGet:
		return new(PromptGetInput).Unmarshal(b)
	case HookToolResult:
		return new(ToolResultInput).Unmarshal(b)
	}
	return &InputError{Message: "input", Err: ErrKind}
}
