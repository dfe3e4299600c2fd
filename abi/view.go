package abi

import (
	"encoding/binary"
	"unsafe"
)

// Views: zero-copy, read-only access to a flat input, for guests. A view is
// two pointers (the parsed input and its record) and every accessor is a
// few loads: a string is a substring of the input, a list is an offset and
// a count, nothing is decoded ahead or copied. See "Cost model" in doc.go.
//
// Flat.Servers (and Credentials, ToolCall and the others) checks the header and the root
// record once per call. After that, each accessor checks what it reads when
// it reads it: a string or list that does not lie inside the input makes
// the accessor panic with an *InputError (the sdk recovers it and returns
// an error output: the host fails closed). Reading a field never traps and
// never reads outside the input.
//
// A view is valid only while the input buffer it was parsed from is
// unchanged: in a guest, during the hook call. Copy (strings.Clone) any
// string that must outlive it.

// Flat is a parsed flat input; views point into it. Reuse one Flat across
// calls: parsing allocates nothing (except for an input written by an older
// host, whose records are smaller than this version's: it is copied once
// into this version's layout, so that the views never check record sizes).
// The zero value is ready to use. A Flat must not be copied or reused while
// views of its previous input are in use.
type Flat struct {
	b       []byte
	strides [numTypes]uint64
	// Offsets of the root record's messages, resolved by parse: the thread
	// (every input), the server and the environment (credentials).
	thread, server, env uint64
	own                 []byte // the copy of an input that took the slow path
}

// The fast path of parsing is written for the wasm cost model ("Cost model"
// in doc.go): straight-line code with one branch, to the slow path.
// Offsets, not pointers, are stored in the Flat (a global in a guest), so
// that parsing costs one GC write-barrier check (for b).

// root parses the input b of kind and returns its root record (size bytes
// of it). It checks the header (magic, version, kind, a stride table with
// every stride a multiple of 8 and at least this version's record size),
// the root record of type root, and the root's messages (count 1, inside
// b). An input that fails a check takes the slow path, which reports the
// error, or copies an older host's input into this version's layout.
func (f *Flat) root(b []byte, kind Hook, root int, size uint64) ([]byte, error) {
	if len(b) < hdrSizeV1 {
		return f.slow(b, kind, root, size)
	}
	h := (*[hdrSizeV1]byte)(b)
	n := uint64(len(b))
	bad := (u32(h[hdrMagic:]) ^ FlatMagic) | (u32(h[hdrVersion:]) ^ FlatVersion) | (u32(h[hdrKind:]) ^ uint64(kind))
	bad |= (u32(h[hdrTypes:]) - numTypesV1) >> 63 // fewer types than version 1 knows
	// Written out, not looped: a loop costs an interrupt check per iteration.
	s0, s1, s2 := u32(h[hdrStrides:]), u32(h[hdrStrides+4:]), u32(h[hdrStrides+8:])
	s3, s4, s5 := u32(h[hdrStrides+12:]), u32(h[hdrStrides+16:]), u32(h[hdrStrides+20:])
	s6, s7, s8 := u32(h[hdrStrides+24:]), u32(h[hdrStrides+28:]), u32(h[hdrStrides+32:])
	bad |= (s0 | s1 | s2 | s3 | s4 | s5 | s6 | s7 | s8) & 7
	bad |= ((s0 - sizeServersInput) | (s1 - sizeCredentialsInput) | (s2 - sizeToolCallInput) |
		(s3 - sizeThread) | (s4 - sizeRoot) | (s5 - sizeEnvironment) |
		(s6 - sizeServer) | (s7 - sizeCredential) | (s8 - sizeRequirement)) >> 63
	// The version 1 types' strides; those of the types version 2 added are
	// set by root2 before it calls root (an input of a version 1 hook
	// never refers to them).
	*(*[numTypesV1]uint64)(f.strides[:numTypesV1]) = [numTypesV1]uint64{s0, s1, s2, s3, s4, s5, s6, s7, s8}
	r := u32(h[hdrRoot:])
	bad |= (n - r - f.strides[root]) >> 63 // (all values below 2^33: no wrap)
	if bad != 0 {
		return f.slow(b, kind, root, size)
	}
	// Set f.b to b: see newBuffer. (The rare call is a one-sided if, so
	// that the common path falls through: see "Cost model" in doc.go.)
	if b2u(unsafe.SliceData(f.b) != unsafe.SliceData(b))|b2u(cap(b) != cap(f.b)) != 0 {
		f.newBuffer(b)
	}
	f.b = f.b[:len(b)]
	// The root's messages: count 1 and the record inside b. (A zero message,
	// count 0, takes the slow path, which writes it out.) Slot 0 of every
	// root record is the thread; credentials has the server and the
	// environment too (their slots are read for every kind, without a
	// branch: every root record is at least 32 bytes).
	var bad1, bad2, bad3 uint64
	f.thread, bad1 = f.message(b[r:], s3)
	f.server, bad2 = f.message(b[r+ciServer:], s6)
	f.env, bad3 = f.message(b[r+ciEnvironment:], s5)
	// The fast path is the then-branch (see "Cost model" in doc.go: written
	// the other way round, the branch to the call would count as likelier).
	if bad1|(bad2|bad3)&-uint64(b2u(kind == HookCredentials)) == 0 {
		return b[r : r+size], nil
	}
	return f.slow(b, kind, root, size)
}

// root2 is root for the input of a version 2 hook: it reads the strides
// of the record types version 2 added (its root types) first.
func (f *Flat) root2(b []byte, kind Hook, root int, size uint64) ([]byte, error) {
	if f.moreStrides(b) != 0 {
		return f.slow(b, kind, root, size)
	}
	return f.root(b, kind, root, size)
}

// moreStrides reads the strides of the record types that version 2 added
// (the roots of its hooks' inputs) into f.strides, and returns nonzero
// unless there are as many as this version knows, each a multiple of 8
// and at least this version's record size.
func (f *Flat) moreStrides(b []byte) uint64 {
	if len(b) < hdrStrides+4*numTypes {
		return 1
	}
	h := (*[hdrStrides + 4*numTypes]byte)(b)
	bad := (u32(h[hdrTypes:]) - numTypes) >> 63
	s9, s10, s11 := u32(h[hdrStrides+36:]), u32(h[hdrStrides+40:]), u32(h[hdrStrides+44:])
	bad |= (s9 | s10 | s11) & 7
	bad |= ((s9 - sizeResourceReadInput) | (s10 - sizePromptGetInput) | (s11 - sizeToolResultInput)) >> 63
	f.strides[typeResourceReadInput], f.strides[typePromptGetInput], f.strides[typeToolResultInput] = s9, s10, s11
	return bad
}

// newBuffer sets f.b to the new buffer b, with length 0. A guest passes
// the same buffer every call: then root only changes the length, and
// re-slicing f.b stores no pointer, which saves a GC write-barrier check.
//
//go:noinline
func (f *Flat) newBuffer(b []byte) { f.b = b[:0:cap(b)] }

// message returns the record offset of a message slot, and zero if the
// message has count 1 and lies inside the input (nonzero otherwise).
func (f *Flat) message(s []byte, stride uint64) (uint64, uint64) {
	x := ld64(s)
	o := x & (1<<32 - 1)
	return o, x>>32 ^ 1 | (uint64(len(f.b))-o-stride)>>63 // (o+stride < 2^34: no wrap)
}

// b2u converts a bool to 0 or 1 without a branch (a select).
func b2u(b bool) uint64 {
	var u uint64
	if b {
		u = 1
	}
	return u
}

// u32 reads a little-endian u32, widened so that subtractions can borrow.
func u32(b []byte) uint64 { return uint64(binary.LittleEndian.Uint32(b)) }

// slow is the slow path of root: it copies the input into this version's
// layout (relayout.go), which checks the whole input and reports the error
// of a malformed one, and parses the copy.
func (f *Flat) slow(b []byte, kind Hook, root int, size uint64) ([]byte, error) {
	if len(b) > 0 && unsafe.SliceData(b) == unsafe.SliceData(f.own) {
		panic("abi: re-laid-out input does not parse") // a bug in this package
	}
	own, err := f.relayout(b, kind)
	if err != nil {
		return badRoot[:], err
	}
	if kind&V1Hooks == 0 {
		return f.root2(own, kind, root, size)
	}
	return f.root(own, kind, root, size)
}

// Servers parses b as the flat input of the servers hook and returns a
// view of it. It checks the header, the root record and the thread; the
// rest is checked as it is read. A malformed input returns an *InputError.
func (f *Flat) Servers(b []byte) (ServersView, error) {
	r, err := f.root(b, HookServers, typeServersInput, sizeServersInput)
	return ServersView{f, (*[sizeServersInput]byte)(r)}, err
}

// Credentials parses b as the flat input of the credentials hook; see
// Servers. It also checks the server and the environment.
func (f *Flat) Credentials(b []byte) (CredentialsView, error) {
	r, err := f.root(b, HookCredentials, typeCredentialsInput, sizeCredentialsInput)
	return CredentialsView{f, (*[sizeCredentialsInput]byte)(r)}, err
}

// ToolCall parses b as the flat input of the tool_call hook; see Servers.
func (f *Flat) ToolCall(b []byte) (ToolCallView, error) {
	r, err := f.root(b, HookToolCall, typeToolCallInput, sizeToolCallInput)
	return ToolCallView{f, (*[sizeToolCallInput]byte)(r)}, err
}

// ResourceRead parses b as the flat input of the resource_read hook; see
// Servers.
func (f *Flat) ResourceRead(b []byte) (ResourceReadView, error) {
	r, err := f.root2(b, HookResourceRead, typeResourceReadInput, sizeResourceReadInput)
	return ResourceReadView{f, (*[sizeResourceReadInput]byte)(r)}, err
}

// PromptGet parses b as the flat input of the prompt_get hook; see Servers.
func (f *Flat) PromptGet(b []byte) (PromptGetView, error) {
	r, err := f.root2(b, HookPromptGet, typePromptGetInput, sizePromptGetInput)
	return PromptGetView{f, (*[sizePromptGetInput]byte)(r)}, err
}

// ToolResult parses b as the flat input of the tool_result hook; see
// Servers.
func (f *Flat) ToolResult(b []byte) (ToolResultView, error) {
	r, err := f.root2(b, HookToolResult, typeToolResultInput, sizeToolResultInput)
	return ToolResultView{f, (*[sizeToolResultInput]byte)(r)}, err
}

// badRoot is the root record returned with an error: the views of a
// malformed input are never used, but converting it must not panic. It is
// as large as the largest root record.
var badRoot [max(sizeServersInput, sizeCredentialsInput, sizeToolCallInput,
	sizeResourceReadInput, sizePromptGetInput, sizeToolResultInput)]byte

// errRead is the panic value of an accessor that reads a reference lying
// outside the input. The sdk recovers it and reports the input as
// malformed (with the precise error from a full check).
var errRead = &InputError{Message: "input", Path: "a field read by the policy", Err: ErrBounds}

// inRange panics like an index expression on a slice (a runtime error
// "index out of range [i] with length n") unless 0 <= i < n. It costs no
// allocation: the slice has zero-size elements.
func inRange(i int, n uint64) { _ = unsafe.Slice(&zeroSize, n)[i] }

var zeroSize struct{}

// ref reads a slot holding a reference: (offset, count) as two u32s,
// returned as the offset and the end offset for count elements of size
// bytes (no overflow: both are below 2^64).
func ref(s []byte, size uint64) (o, n, end uint64) {
	x := ld64(s)
	o, n = x&(1<<32-1), x>>32
	return o, n, o + n*size
}

// str returns the string of the string slot that starts at s[0].
func (f *Flat) str(s []byte) string { return f.strx(ld64(s)) }

// strx returns the string of a string slot read as one u64.
func (f *Flat) strx(x uint64) string {
	o, n := x&(1<<32-1), x>>32
	if o+n > uint64(len(f.b)) {
		panic(errRead)
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.b)), o)), n)
}

// bytes returns the bytes of a bytes slot, capacity clipped; nil when empty.
func (f *Flat) bytes(s []byte) []byte {
	o, n, e := ref(s, 1)
	if e > uint64(len(f.b)) {
		panic(errRead)
	}
	if n == 0 {
		return nil
	}
	return f.b[o:e:e]
}

// list is a list read from a list slot: n elements from offset o.
type list struct {
	f    *Flat
	o, n uint64
}

// list returns the list of a list slot whose elements are stride bytes,
// after checking that the whole list lies inside the input.
func (f *Flat) list(s []byte, stride uint64) list {
	x := ld64(s)
	o, n := x&(1<<32-1), x>>32
	if o+n*stride > uint64(len(f.b)) {
		panic(errRead)
	}
	return list{f, o, n}
}

// at returns the record of element i of a list of type t at offset o with
// n elements.
func (f *Flat) at(o, n uint64, i int, t int, size uint64) []byte {
	inRange(i, n)
	p := o + uint64(i)*f.strides[t]
	return f.b[p : p+size]
}

func bit(s []byte, mask uint32) bool { return ld32(s)&mask != 0 }

// ---------------------------------------------------------------- records

// The view and list types of the records are generated from the schema
// (view_gen.go). Hand-written here: the accessors that are not one slot.

// IsStdio reports whether the transport is "stdio".
func (v ServerView) IsStdio() bool { return v.TransportKind() == TransportStdio }

// IsHTTP reports whether the transport is "http".
func (v ServerView) IsHTTP() bool { return v.TransportKind() == TransportHTTP }

// ---------------------------------------------------------------- lists

// StringList is a list of strings (arguments, tool names): an array of
// string slots.
type StringList struct{ l list }

// Len returns the number of strings.
func (l StringList) Len() int { return int(l.l.n) }

// At returns string i.
func (l StringList) At(i int) string {
	inRange(i, l.l.n)
	return l.l.f.strx(ld64(l.l.f.b[l.l.o+8*uint64(i):]))
}

// Contains reports whether s is in the list. It is a loop over the list
// (in a wasm guest, an interrupt check per element), and the one accessor
// that is not inlined.
func (l StringList) Contains(s string) bool {
	for p, e := l.l.o, l.l.o+8*l.l.n; p < e; p += 8 {
		if l.l.f.strx(ld64(l.l.f.b[p:])) == s {
			return true
		}
	}
	return false
}
