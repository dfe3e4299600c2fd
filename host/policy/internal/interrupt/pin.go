package interrupt

import (
	"cmp"
	"slices"
)

// Pinning the Go stack pointer: fewer memory bounds checks in Go guests.
//
// wazero (v1.12) checks every memory access against the memory's length,
// except an access through an SSA value it has already checked with an
// offset at least as high in the same function: its "known safe bounds",
// carried along the control flow and intersected where paths meet. Go
// guests defeat it. A Go function keeps its stack pointer ("SP") in local
// 1 and reaches most of its memory through it, but redefines local 1
// around every call (lowered to push the return address, reloaded from
// global 0 afterwards); it reloads every spilled pointer from the stack at
// each use; and three quirks of wazero's compiler drop the known bounds:
// the blocks it adds for a br_table's targets and for an if without an
// else start with none, and where paths meet, every read of a local after
// the first returns a new value (an alias). Measured on the allow-hosts
// example, the checks were a third of the call (patching them out of a
// copy of wazero: 1.19 → 0.78 µs).
//
// For a function in the exact shape Go's wasm backend emits (a dispatch
// loop, see thread.go, and its prologue, calls and epilogues), pin
// rewrites the code so that:
//
//   - local 1 holds SP (below the frame) throughout the loop. On entry it
//     is set to what the prologue would make it: global 0 minus the frame
//     size when the br_table picks segment 0 (a fresh call, or a restart
//     after morestack), else global 0 (a resumption: the frame exists).
//     The prologue's stack check and morestack call use a new local $e
//     (the entry SP), and its frame allocation only publishes local 1 to
//     global 0; morestack, which never returns normally (it unwinds), is
//     followed by `unreachable`.
//   - A call's return-address push lowers $e instead of local 1, and the
//     reload after the call becomes a comparison: when global 0 is not
//     local 1 after a normal return (the stack moved), local 1 is reloaded
//     and the function resumes at the call's resume point through the
//     dispatch loop, as after an unwound call; after a call without a
//     resume point (a write barrier, a panic call that returned) it traps.
//   - `local.get 1; local.set 1` follows every end and else in the loop
//     (it compiles to nothing: it makes later reads return the first
//     value, not aliases), and an if without an else gets an empty one.
//   - An address computed as SP plus a constant (Go's `local.get 1;
//     i64.extend_i32_u; i64.const K; i64.add; i32.wrap_i64`, used for
//     stores) feeding a load or store directly is folded into that
//     instruction's offset.
//   - A pointer reloaded from the stack (`local.get 1; i64.load offset=K;
//     i32.wrap_i64`) is kept in a local for the rest of a straight-line
//     stretch of code (see cachedLoad), and so is the address wrapped from
//     one of Go's i64 registers (`local.get R; i32.wrap_i64`, see
//     cachedWrap).
//   - Every segment with an access through local 1 starts with a probe,
//     `local.get 1; i32.load8_u offset=M-1; drop`: one check of M, the
//     highest offset plus size the function reaches from SP, covers the
//     segment's other accesses.
//
// Definitions of local 1 followed, in straight-line code, by a return (the
// epilogues) are left alone. A function that defines local 1 or sets
// global 0 in any other way, jumps to segment 0, or does not match exactly
// is left unchanged (in the example modules, about 70% of the functions
// are pinned; the rest are mostly leaf runtime functions in assembly).
//
// Equivalence: for a guest that follows Go's calling convention (a call
// that returns normally has popped what it pushed; a frame and its
// arguments lie in memory) the rewritten function computes exactly what
// the original computes. For any other guest the rewrite can only add
// traps (a probe past the memory, a folded address that would have
// wrapped past 2^32, a stack moved across a call without a resume point,
// morestack returning normally): it stays in the sandbox and fails closed.
// TestPin checks both on hand-written functions (testdata/pin.wat), the
// Go guests' tests on real ones.

// pinCacheSlots is how many pointers loaded from the stack pin keeps in
// locals at once (see cachedLoad).
const pinCacheSlots = 4

// pinMaxProbe bounds M: a function reaching further above its SP (a frame
// of more than 64 KiB) is left unchanged. The probe reads only inside the
// frame and its caller's arguments, which lie in the goroutine's stack;
// the bound keeps it near them even for a guest that lies about its shape.
const pinMaxProbe = 64 << 10

// pinInst is one decoded instruction of a body.
type pinInst struct {
	at, end int    // body offsets of the instruction and of the next one
	op      byte   // opcode (the prefix for 0xfc, 0xfd, 0xfe)
	u       uint32 // local/global/function index, label, block type byte, memarg alignment
	v       int64  // i32.const / i64.const value, memarg offset
}

// decode decodes body b's instructions from pc (the body already passed
// walk, so b is valid). It returns nil if an instruction it must read is
// not one it handles (a memory index in a memarg, try_table).
func (w *walker) decode(b []byte, pc int, out []pinInst) []pinInst {
	for pc < len(b) {
		in := pinInst{at: pc, op: b[pc]}
		pc++
		var st int
		switch w.ops[in.op] {
		case kNone, kEnd, kReturn:
		case kU32, kBr, kFunc, kGlobal, kTable, kRetRef:
			in.u, pc, st = readU32(b, pc)
		case kU32x2:
			if in.u, pc, st = readU32(b, pc); st == lebOK {
				_, pc, st = readU32(b, pc)
			}
		case kBlock, kLoop:
			in.u = uint32(b[pc])
			var msg string
			if pc, msg = blockType(b, pc); msg != "" {
				return nil
			}
		case kBrTable:
			var n uint32
			if n, pc, st = readU32(b, pc); st != lebOK {
				return nil
			}
			for i := uint64(0); i <= uint64(n) && st == lebOK; i++ {
				_, pc, st = readU32(b, pc)
			}
		case kMemarg:
			if in.u, pc, st = readU32(b, pc); st != lebOK || in.u&0x40 != 0 {
				return nil
			}
			var off uint64
			if off, pc, st = readLEB64(b, pc, false); off > 1<<32-1 {
				return nil
			}
			in.v = int64(off)
		case kZeroByte:
			pc++
		case kI32Const, kI64Const:
			var v uint64
			v, pc, st = readLEB64(b, pc, true)
			in.v = int64(v)
		case kF32Const:
			pc += 4
		case kF64Const:
			pc += 8
		case kSelectT:
			var n uint32
			if n, pc, st = readU32(b, pc); st != lebOK || n != 1 {
				return nil
			}
			var msg string
			if pc, msg = valType(b, pc); msg != "" {
				return nil
			}
		case kRefNull:
			var msg string
			if pc, msg = heapType(b, pc); msg != "" {
				return nil
			}
		case kPrefixFC:
			var msg string
			if pc, _, msg = w.miscOp(b, pc); msg != "" {
				return nil
			}
		case kPrefixFD:
			var msg string
			if pc, msg = w.simdOp(b, pc); msg != "" {
				return nil
			}
		case kPrefixFE:
			var msg string
			if pc, msg = atomicOp(b, pc); msg != "" {
				return nil
			}
		default: // try_table, anything unexpected
			return nil
		}
		if st != lebOK || pc > len(b) {
			return nil
		}
		in.end = pc
		out = append(out, in)
	}
	return out
}

// Kinds of open frames in pin's scan.
const (
	frameOther = iota
	frameChain // a block of the dispatch chain: its end starts a segment
	frameIf    // an if without an else so far
)

// Opcodes pin matches.
const (
	opUnreachable = 0x00
	opBlock       = 0x02
	opLoop        = 0x03
	opIf          = 0x04
	opElse        = 0x05
	opEnd         = 0x0b
	opBrIf        = 0x0d
	opBrTable     = 0x0e
	opReturn      = 0x0f
	opCall        = 0x10
	opCallInd     = 0x11
	opDrop        = 0x1a
	opSelect      = 0x1b
	opLocalGet    = 0x20
	opLocalSet    = 0x21
	opLocalTee    = 0x22
	opGlobalGet   = 0x23
	opGlobalSet   = 0x24
	opI32Load     = 0x28
	opI64Load     = 0x29
	opI32Load8U   = 0x2d
	opI64Store    = 0x37
	opI32Const    = 0x41
	opI64Const    = 0x42
	opF32Const    = 0x43
	opF64Const    = 0x44
	opI32Ne       = 0x47
	opI32LtU      = 0x49
	opI32LeU      = 0x4d
	opI32Add      = 0x6a
	opI32Sub      = 0x6b
	opI64Add      = 0x7c
	opI64ShrU     = 0x88
	opI32WrapI64  = 0xa7
	opI64ExtendU  = 0xad
)

// accessSize is the number of bytes a load or store opcode (0x28–0x3e)
// reads or writes.
var accessSize = [...]uint8{4, 8, 4, 8, 1, 1, 2, 2, 1, 1, 2, 2, 4, 4, 4, 8, 4, 8, 1, 2, 1, 2, 4}

func isLoad(op byte) bool  { return op >= 0x28 && op <= 0x35 }
func isStore(op byte) bool { return op >= 0x36 && op <= 0x3e }

// pinEdit is one change pin makes: at body offset at, skip bytes of the
// input are replaced by pinner.code[off:off+n] (an insertion when skip is
// 0).
type pinEdit struct {
	at, skip int
	off, n   int
	first    bool // at an offset shared with the walker's sites: before them (else after)
}

// pinner is pin's state for one function. The walker keeps one, so that
// its slices are reused from function to function.
type pinner struct {
	ins      []pinInst
	e        uint32 // the index of $e
	edits    []pinEdit
	code     []byte                // the code of the edits
	ceil     int64                 // the highest offset+size seen through local 1
	after    int                   // prologue: the index after it
	segments []int                 // body offsets where a segment's code starts (segment 0: after the prologue)
	accesses []int                 // the accesses through local 1 in each segment
	frames   []byte                // the open frames (frameOther, frameChain, frameIf)
	merged   []site                // pinBody's scratch
	sorted   []pinEdit             // pinBody's scratch
	cache    [pinCacheSlots]int64  // the offsets from SP whose loaded pointer the cache locals hold
	ncache   int                   // how many of them are valid
	used     int                   // the most cache locals used at once: the function gets that many
	wraps    [pinCacheSlots]uint32 // the locals whose i32.wrap_i64 the wrap locals hold (see cachedWrap)
	nwraps   int
	wused    int
	late     int // edits[late:] were made after the scan, in offset order
	locals   int // the locals pin adds: $e, then the cache locals
}

func (p *pinner) is(i int, op byte, u uint32) bool {
	return i < len(p.ins) && p.ins[i].op == op && p.ins[i].u == u
}

func (p *pinner) op(i int, op byte) bool { return i < len(p.ins) && p.ins[i].op == op }

func (p *pinner) i32const(i int, v int64) bool { return p.op(i, opI32Const) && p.ins[i].v == v }

// emit records an edit at body offset at.
func (p *pinner) emit(at, skip int, first bool, code ...byte) {
	p.edits = append(p.edits, pinEdit{at: at, skip: skip, off: len(p.code), n: len(code), first: first})
	p.code = append(p.code, code...)
}

// replace records the replacement of instructions i..j-1 by code.
func (p *pinner) replace(i, j int, code ...byte) {
	p.emit(p.ins[i].at, p.ins[j-1].end-p.ins[i].at, false, code...)
}

// replaceLocal replaces instruction i by op (local.get/set/tee) of local x.
func (p *pinner) replaceLocal(i int, op byte, x uint32) {
	var b [6]byte
	p.replace(i, i+1, appendU32(append(b[:0], op), x)...)
}

// insertAfter records code inserted after instruction i.
func (p *pinner) insertAfter(i int, code ...byte) { p.emit(p.ins[i].end, 0, false, code...) }

// see records an access of size bytes at offset off from local 1.
func (p *pinner) see(off int64, size uint8) {
	p.ceil = max(p.ceil, off+int64(size))
	if n := len(p.accesses); n > 0 {
		p.accesses[n-1]++
	}
}

// simpleValue reports how many instructions from i push one value without
// side effects or traps (a local.get, global.get or constant), or a load
// through local 1 (which it records): 1, 2, or 0 for none.
func (p *pinner) simpleValue(i int) int {
	if i >= len(p.ins) {
		return 0
	}
	switch p.ins[i].op {
	case opLocalGet:
		if p.ins[i].u == 1 && i+1 < len(p.ins) && isLoad(p.ins[i+1].op) {
			p.see(p.ins[i+1].v, accessSize[p.ins[i+1].op-0x28])
			return 2
		}
		return 1
	case opGlobalGet, opI32Const, opI64Const, opF32Const, opF64Const:
		return 1
	}
	return 0
}

// push matches Go's return-address push at i (`local.get 1; i32.const 8;
// i32.sub; local.tee 1; global.set 0; local.get 1; i64.const R; i64.store`)
// and returns the index after it, and R.
func (p *pinner) push(i int) (int, int64, bool) {
	if p.is(i, opLocalGet, 1) && p.i32const(i+1, 8) && p.op(i+2, opI32Sub) && p.is(i+3, opLocalTee, 1) &&
		p.is(i+4, opGlobalSet, 0) && p.is(i+5, opLocalGet, 1) && p.op(i+6, opI64Const) &&
		p.op(i+7, opI64Store) && p.ins[i+7].v == 0 {
		return i + 8, p.ins[i+6].v, true
	}
	return 0, 0, false
}

// callSeq matches what follows a push up to and including the call:
// nothing, `i32.const 0`, or call_indirect's `i64.const 16; i64.shr_u;
// i32.wrap_i64; local.set 0; i32.const 0; local.get 0`, then call or
// call_indirect. It returns the index after the call.
func (p *pinner) callSeq(i int) (int, bool) {
	switch {
	case p.op(i, opCall):
		return i + 1, true
	case p.i32const(i, 0) && p.op(i+1, opCall):
		return i + 2, true
	case p.op(i, opI64Const) && p.ins[i].v == 16 && p.op(i+1, opI64ShrU) && p.op(i+2, opI32WrapI64) &&
		p.is(i+3, opLocalSet, 0) && p.i32const(i+4, 0) && p.is(i+5, opLocalGet, 0) && p.op(i+6, opCallInd):
		return i + 7, true
	}
	return 0, false
}

// reload matches `global.get 0; local.set 1` at i.
func (p *pinner) reload(i int) bool { return p.is(i, opGlobalGet, 0) && p.is(i+1, opLocalSet, 1) }

// pin decides how to rewrite function body b (see the top of this file),
// whose code starts at body offset code, whose only parameter is an i32
// and whose first local (local 1) is an i32; e is the index of the new
// local $e (the cache locals follow it). It records the edits in
// w.pinner.edits and reports true, or reports false to leave the function
// as it is.
func (w *walker) pin(b []byte, code int, e uint32) bool {
	// The shape's first bytes, before decoding: global.get 0; local.set 1;
	// block; loop.
	if len(b)-code < 8 || string(b[code:code+8]) != "\x23\x00\x21\x01\x02\x40\x03\x40" {
		return false
	}
	p := &w.pinner
	p.ins = w.decode(b, code, p.ins[:0])
	p.e, p.edits, p.code, p.ceil, p.ncache, p.used = e, p.edits[:0], p.code[:0], 0, 0, 0
	p.nwraps, p.wused = 0, 0
	ins := p.ins
	// Entry: global.get 0; local.set 1; block; loop; block × k; local.get
	// 0; br_table with every label naming a chain block.
	if !p.reload(0) || !p.is(2, opBlock, 0x40) || !p.is(3, opLoop, 0x40) {
		return false
	}
	k := 0
	for p.is(4+k, opBlock, 0x40) {
		k++
	}
	bt := 5 + k
	if k == 0 || !p.is(4+k, opLocalGet, 0) || !p.op(bt, opBrTable) {
		return false
	}
	// n0: the PC_B values below it pick segment 0 (label 0), and no other
	// does; or n0 = -1: every one does (a single segment).
	labels := b[ins[bt].at+1 : ins[bt].end]
	n, pc, _ := readU32(labels, 0)
	n0, zeros := int64(0), 0
	for i := uint32(0); i <= n; i++ {
		var l uint32
		l, pc, _ = readU32(labels, pc)
		if l >= uint32(k) {
			return false
		}
		if l == 0 {
			zeros++
			if i < n && int64(i) == n0 {
				n0++
			}
		}
	}
	switch {
	case zeros == int(n)+1:
		n0 = -1
	case n0 == 0 || zeros != int(n0):
		return false // segment 0 is not exactly the PC_B values below n0
	}

	// Frames: 0 the body, 1 the outer block, 2 the loop, 3… the chain.
	const loopFrame = 2
	p.frames = append(p.frames[:0], frameOther, frameOther, frameOther)
	for range k {
		p.frames = append(p.frames, frameChain)
	}
	i := bt + 1
	if !p.op(i, opEnd) {
		return false
	}
	p.frames = p.frames[:len(p.frames)-1]                  // segment 0 starts after this end
	p.replace(i, i+1, opEnd, opLocalGet, 1, opLocalSet, 1) // refresh: see pinRefresh
	i++

	frame := p.prologue(i)
	if frame < 0 {
		return false
	}
	i = p.after
	if i >= len(ins) {
		return false
	}
	p.segments = append(p.segments[:0], ins[i].at)
	p.accesses = append(p.accesses[:0], 0)
	loopEnd := false
	for i < len(ins) && !loopEnd {
		in := ins[i]
		if resetsCache(in) {
			p.ncache = 0
			if in.op != opCall && in.op != opCallInd && !isStore(in.op) {
				p.nwraps = 0 // control flow (calls and stores leave locals alone)
			}
		}
		switch in.op {
		case opBlock, opLoop:
			p.frames = append(p.frames, frameOther)
		case opIf:
			p.frames = append(p.frames, frameIf)
		case opEnd:
			f := p.frames[len(p.frames)-1]
			p.frames = p.frames[:len(p.frames)-1]
			if loopEnd = len(p.frames) == loopFrame; loopEnd {
				break
			}
			if f == frameIf {
				// wazero gives an implicit else no known bounds: an
				// explicit one keeps them (see the top of this file).
				p.replace(i, i+1, opElse, opEnd, opLocalGet, 1, opLocalSet, 1)
				break
			}
			p.replace(i, i+1, opEnd, opLocalGet, 1, opLocalSet, 1) // refresh: see pinRefresh
			if f == frameChain {
				p.segments = append(p.segments, in.end)
				p.accesses = append(p.accesses, 0)
			}
		case opElse:
			p.frames[len(p.frames)-1] = frameOther
			p.replace(i, i+1, opElse, opLocalGet, 1, opLocalSet, 1)
		case opI32Const:
			if p.is(i+1, opLocalSet, 0) && in.v >= 0 && (n0 < 0 || in.v < n0) {
				return false // a jump to segment 0
			}
		case opGlobalGet:
			if in.u == 0 && i > 0 && (ins[i-1].op == opCall || ins[i-1].op == opCallInd) && p.is(i+1, opLocalSet, 1) {
				// The reload after a call that pushed nothing (a write
				// barrier: not Go's calling convention).
				p.replace(i, i+2, trapIfMoved...)
				i += 2
				continue
			}
		case opGlobalSet:
			if in.u == 0 {
				return false // not after a definition of local 1 (those skip to their return)
			}
		case opLocalSet, opLocalTee:
			if in.u == 1 && !p.toReturn(&i) {
				return false
			}
			p.forgetWrap(in.u)
		case opLocalGet:
			if in.u != 1 {
				if in.u != 0 && p.cachedWrap(i) {
					i += 2
					continue
				}
				break
			}
			if next, ok := p.call(i, loopFrame); ok {
				if next < 0 {
					return false
				}
				i, p.ncache = next, 0
				continue
			}
			if p.cachedLoad(i) {
				i += 3
				continue
			}
			p.access(i)
		}
		i++
	}
	if !loopEnd || p.ceil == 0 || p.ceil > pinMaxProbe {
		return false
	}
	// The edits made from here on come before some made above (the entry
	// is the first instruction); they are kept apart and merged in
	// pinBody.
	p.late = len(p.edits)
	// The declaration of $e and the cache locals, before the walker's
	// siteEnter; then the entry (see the top of this file).
	var buf [48]byte
	p.locals = 1 + p.used
	if p.wused > 0 {
		p.locals = 1 + pinCacheSlots + p.wused
	}
	p.emit(code, 0, true, append(appendU32(buf[:0], uint32(p.locals)), 0x7f)...)
	entry := append(buf[:0], opGlobalGet, 0)
	if frame > 0 {
		// local 1 = e - F when PC_B < n0 (the br_table picks segment 0,
		// whose prologue allocates the frame), else e.
		entry = appendU32(append(entry, opLocalSet), e)
		entry = appendU32(append(entry, opLocalGet), e)
		entry = appendS32(append(entry, opI32Const), int32(frame))
		entry = append(entry, opI32Sub)
		if n0 >= 0 {
			entry = appendU32(append(entry, opLocalGet), e)
			entry = append(entry, opLocalGet, 0, opI32Const)
			entry = appendS32(entry, int32(n0))
			entry = append(entry, opI32LtU, opSelect)
		}
	}
	p.replace(0, 2, append(entry, opLocalSet, 1)...)
	// After the walker's check at the loop's head (its if ends there).
	p.emit(ins[4].at, 0, false, opLocalGet, 1, opLocalSet, 1)
	probe := appendU32(append(buf[:0], opLocalGet, 1, opI32Load8U, 0), uint32(p.ceil-1))
	probe = append(probe, opDrop)
	for k, at := range p.segments {
		// A segment without an access through local 1 needs no probe.
		if p.accesses[k] > 0 {
			p.emit(at, 0, true, probe...)
		}
	}
	return true
}

// pinRefresh: pin adds `local.get 1; local.set 1` after every end and
// else in the loop (and after the loop's check). Where paths meet,
// wazero's compiler gives each read of a local after the first a new value
// (an alias of the first), and an alias has none of the first value's
// known bounds; a local.set makes every later read return the first one.
// It compiles to nothing.

// trapIfMoved traps when the stack moved across a call without a resume
// point: global 0 is not local 1.
var trapIfMoved = []byte{opGlobalGet, 0, opLocalGet, 1, opI32Ne, opIf, 0x40, opUnreachable, opEnd}

// prologue matches segment 0's prologue at i: the stack check (`local.get
// 1; global.get g; i32.wrap_i64; i32.load; [i32.const; i32.add;] i32.le_u;
// if` with a morestack call) then the frame allocation (`local.get 1;
// i32.const F; i32.sub; local.tee 1; global.set 0`), or the allocation
// alone, or neither (a frameless function). It returns F (0: frameless; -1:
// no match) and sets p.after.
func (p *pinner) prologue(i int) int {
	p.after = i
	if !(p.is(i, opLocalGet, 1) && p.op(i+1, opGlobalGet) && p.op(i+2, opI32WrapI64) && p.op(i+3, opI32Load)) {
		return max(p.alloc(i), 0)
	}
	c := i + 4
	if p.op(c, opI32Const) && p.op(c+1, opI32Add) {
		c += 2
	}
	if !p.op(c, opI32LeU) || !p.is(c+1, opIf, 0x40) {
		return -1
	}
	q, _, ok := p.push(c + 2)
	if !ok {
		return -1
	}
	r, ok := p.callSeq(q)
	if !ok || !p.reload(r) || !p.op(r+2, opBrIf) || !p.op(r+3, opEnd) {
		return -1
	}
	// The check and the morestack call use the entry SP, $e.
	p.replaceLocal(i, opLocalGet, p.e)
	p.replaceLocal(c+2, opLocalGet, p.e)
	p.replaceLocal(c+5, opLocalTee, p.e)
	p.replaceLocal(c+7, opLocalGet, p.e)
	p.replaceLocal(r+1, opLocalSet, p.e)
	p.insertAfter(r+2, opUnreachable) // morestack does not return normally
	f := p.alloc(r + 4)
	if f <= 0 {
		return -1
	}
	return f
}

// alloc matches the frame allocation at i and returns F (else 0): local 1
// already holds SP (the entry sets it), so only `local.get 1; global.set
// 0` is kept.
func (p *pinner) alloc(i int) int {
	if p.is(i, opLocalGet, 1) && p.op(i+1, opI32Const) && p.op(i+2, opI32Sub) && p.is(i+3, opLocalTee, 1) &&
		p.is(i+4, opGlobalSet, 0) && p.ins[i+1].v > 0 && p.ins[i+1].v < 1<<30 {
		p.replace(i+1, i+4)
		p.after = i + 5
		return int(p.ins[i+1].v)
	}
	return 0
}

// call matches a call at i (its push) and rewrites it: the push lowers $e,
// the reload after it becomes a comparison (see the top of this file). It
// returns the index of the next instruction to scan, and false if i is not
// a push; -1 if it is one in a shape pin does not know.
func (p *pinner) call(i int, loopFrame int) (int, bool) {
	frames := p.frames
	q, ret, ok := p.push(i)
	if !ok {
		return 0, false
	}
	c, ok := p.callSeq(q)
	if !ok || !p.reload(c) {
		return -1, true
	}
	p.replaceLocal(i+3, opLocalTee, p.e)
	p.replaceLocal(i+5, opLocalGet, p.e)
	p.replace(c, c+2)
	a := c + 2
	switch {
	case p.op(a, opBrIf) && p.op(a+1, opEnd) && frames[len(frames)-1] == frameChain:
		// A resume point: the segment after the end is where the call's
		// return address (PC_B, its low 16 bits) resumes.
		var buf [32]byte
		code := append(buf[:0], opGlobalGet, 0, opLocalGet, 1, opI32Ne, opIf, 0x40, opGlobalGet, 0, opLocalSet, 1, opI32Const)
		code = appendS32(code, int32(ret&0xffff))
		code = append(code, opLocalSet, 0, 0x0c)                  // local.set 0; br to the loop:
		code = appendU32(code, uint32(len(frames)-1-loopFrame+1)) // (+1: inside the if)
		p.insertAfter(a, append(code, opEnd)...)
		return a + 1, true
	case p.op(a, opBrIf):
		p.insertAfter(a, trapIfMoved...)
		return a + 1, true
	case p.is(a, opIf, 0x40) && p.op(a+1, opUnreachable) && p.op(a+2, opEnd):
		p.insertAfter(a+2, trapIfMoved...)
		return a + 3, true
	}
	return -1, true
}

// access records a load or store through local 1 at i (`local.get 1` then
// a load, or a simple value and a store), or folds SP + K into the offset
// of the load or store it feeds.
func (p *pinner) access(i int) {
	ins := p.ins
	if i+1 < len(ins) && isLoad(ins[i+1].op) {
		p.see(ins[i+1].v, accessSize[ins[i+1].op-0x28])
		return
	}
	if n := p.simpleValue(i + 1); n > 0 && i+1+n < len(ins) && isStore(ins[i+1+n].op) {
		p.see(ins[i+1+n].v, accessSize[ins[i+1+n].op-0x28])
		return
	}
	if !(p.op(i+1, opI64ExtendU) && p.op(i+2, opI64Const) && p.op(i+3, opI64Add) && p.op(i+4, opI32WrapI64)) {
		return
	}
	k := ins[i+2].v
	if k < 0 || k >= 1<<31 {
		return
	}
	m := i + 5
	if !(m < len(ins) && isLoad(ins[m].op)) {
		n := p.simpleValue(m)
		if n == 0 || m+n >= len(ins) || !isStore(ins[m+n].op) {
			return
		}
		m += n
	}
	off := ins[m].v + k
	if off > 1<<32-1 {
		return
	}
	p.replace(i+1, i+5)
	var buf [16]byte
	code := appendU32(append(buf[:0], ins[m].op), ins[m].u)
	p.replace(m, m+1, appendU32(code, uint32(off))...) // off < 2^32: checked above
	p.see(off, accessSize[ins[m].op-0x28])
}

// toReturn reports whether the instructions after *i run straight to a
// return (no branch or block between, calls allowed), and if so sets *i
// to the return.
func (p *pinner) toReturn(i *int) bool {
	for j := *i + 1; j < len(p.ins); j++ {
		switch p.ins[j].op {
		case opReturn:
			*i = j
			return true
		case opBlock, opLoop, opIf, 0x05, opEnd, 0x0c, opBrIf, opBrTable, opUnreachable,
			0x08, 0x0a, 0x12, 0x13, 0x14, 0x15, 0x1f, 0xd5, 0xd6:
			return false
		}
	}
	return false
}

// pinBody runs pin on body b, at module offset base, whose walker sites
// are w.sites[first:]. When pin rewrites it, it adds the data sites, merged
// in offset order (at one offset: the edits marked first, the walker's
// sites, the other edits; edits keep the order pin made them in), and
// reports true.
func (w *walker) pinBody(b []byte, base, first int) bool {
	if w.locals+1+pinCacheSlots > maxLocals || len(w.data) > 1<<30 || !w.pin(b, w.codeStart, uint32(1+w.locals)) {
		return false
	}
	p := &w.pinner
	// Both runs of edits are in offset order as made; merge them (a
	// stable sort would do, at a cost that shows on a 2 MB module).
	order := func(x, y pinEdit) int {
		if x.at != y.at {
			return cmp.Compare(x.at, y.at)
		}
		return cmp.Compare(b2i(!x.first), b2i(!y.first))
	}
	a, l := p.edits[:p.late], p.edits[p.late:]
	if !slices.IsSortedFunc(a, order) || !slices.IsSortedFunc(l, order) {
		slices.SortStableFunc(a, order) // not reached: kept for safety
		slices.SortStableFunc(l, order)
	}
	edits := p.sorted[:0]
	for len(a) > 0 && len(l) > 0 {
		if order(l[0], a[0]) < 0 {
			edits, l = append(edits, l[0]), l[1:]
		} else {
			edits, a = append(edits, a[0]), a[1:]
		}
	}
	edits = append(append(edits, a...), l...)
	p.sorted = edits
	data, merged, old := len(w.data), p.merged[:0], w.sites[first:]
	for _, e := range edits {
		for len(old) > 0 && (old[0].pos < base+e.at || old[0].pos == base+e.at && !e.first) {
			merged, old = append(merged, old[0]), old[1:]
		}
		kind := siteData
		if e.first {
			kind = siteDataFirst
		}
		merged = append(merged, site{pos: base + e.at, kind: kind, cost: int32(len(w.data)), skip: int32(e.skip), local: uint32(e.n)})
		w.data = append(w.data, p.code[e.off:e.off+e.n]...)
	}
	merged = append(merged, old...)
	p.merged = merged
	// The budget: each check charges, with the original code it covers,
	// all the code pin adds to the function (an over-approximation: the
	// function's checks are its loop's and, rarely, its entry's), so the
	// bound on the code run between two trips to Go still holds.
	added := 0
	for _, e := range edits {
		added += max(e.n-e.skip, 0)
	}
	// The depth bound: the frame weight counts pin's locals and code too.
	weight := frameWeight(1, w.locals+uint64(p.locals), len(b)+added)
	for i := range merged {
		switch merged[i].kind {
		case siteCheck:
			merged[i].cost = capCost(int(merged[i].cost) + added)
		case siteEnter, siteReturn, siteRestore, siteLeave:
			merged[i].cost = weight
		}
	}
	for i := 1; i < len(merged); i++ {
		if merged[i].pos < merged[i-1].pos+int(merged[i-1].skip) { // overlapping rewrites: a bug; leave the function
			w.data = w.data[:data]
			return false
		}
	}
	w.sites = append(w.sites[:first], merged...)
	w.dataSites += len(edits)
	return true
}

// cachedLoad handles `local.get 1; i64.load offset=K; i32.wrap_i64` at i,
// Go's reload of a pointer spilled to the stack, which it repeats at every
// use: the first time in a straight-line stretch of code (no branch, block
// end, call or store: nothing between can change memory or local 1) the
// pointer is also kept in a cache local (local.tee), and the next times the
// cache local is read instead. Apart from the load saved, wazero's compiler
// then sees one base value for the accesses through the pointer, and
// checks their bounds once. It reports whether it handled i.
func (p *pinner) cachedLoad(i int) bool {
	if !p.op(i+1, opI64Load) || !p.op(i+2, opI32WrapI64) {
		return false
	}
	k := p.ins[i+1].v
	for j := range p.ncache {
		if p.cache[j] == k {
			p.replaceLocal3(i, opLocalGet, p.e+1+uint32(j))
			return true
		}
	}
	if p.ncache == len(p.cache) {
		return false
	}
	p.cache[p.ncache] = k
	var b [6]byte
	p.insertAfter(i+2, appendU32(append(b[:0], opLocalTee), p.e+1+uint32(p.ncache))...)
	p.ncache++
	p.used = max(p.used, p.ncache)
	p.see(k, 8)
	return true
}

// replaceLocal3 replaces instructions i..i+2 by op of local x.
func (p *pinner) replaceLocal3(i int, op byte, x uint32) {
	var b [6]byte
	p.replace(i, i+3, appendU32(append(b[:0], op), x)...)
}

// resetsCache reports whether in ends cachedLoad's straight-line stretch:
// control flow, a call, a store, a bulk memory or atomic instruction, or a
// definition of local 1.
func resetsCache(in pinInst) bool {
	switch in.op {
	case opUnreachable, opBlock, opLoop, opIf, opElse, 0x08, 0x0a, opEnd, 0x0c, opBrIf, opBrTable, opReturn,
		opCall, opCallInd, 0x12, 0x13, 0x14, 0x15, 0x1f, 0xd5, 0xd6, 0xfc, 0xfd, 0xfe:
		return true
	case opLocalSet, opLocalTee:
		return in.u == 1
	}
	return isStore(in.op)
}

// cachedWrap handles `local.get R; i32.wrap_i64` at i, with R one of Go's
// i64 registers, which Go's code wraps to an address afresh at every
// access through it: the first time in a stretch of code without control
// flow or a new value of R the address is also kept in a wrap local, and
// the next times that local is read instead, so that wazero's compiler
// sees one base value for those accesses. It reports whether it handled i.
func (p *pinner) cachedWrap(i int) bool {
	if !p.op(i+1, opI32WrapI64) {
		return false
	}
	r := p.ins[i].u
	slot := p.e + 1 + pinCacheSlots
	for j := range p.nwraps {
		if p.wraps[j] == r {
			p.replaceLocal2(i, opLocalGet, slot+uint32(j))
			return true
		}
	}
	if p.nwraps == len(p.wraps) {
		return false
	}
	p.wraps[p.nwraps] = r
	var b [6]byte
	p.insertAfter(i+1, appendU32(append(b[:0], opLocalTee), slot+uint32(p.nwraps))...)
	p.nwraps++
	p.wused = max(p.wused, p.nwraps)
	return true
}

// forgetWrap drops local x from the wrap locals: it gets a new value. (Its
// slot stays taken until the stretch ends: each slot is a local.)
func (p *pinner) forgetWrap(x uint32) {
	for j := range p.nwraps {
		if p.wraps[j] == x {
			p.wraps[j] = noLocal
		}
	}
}

// replaceLocal2 replaces instructions i..i+1 by op of local x.
func (p *pinner) replaceLocal2(i int, op byte, x uint32) {
	var b [6]byte
	p.replace(i, i+2, appendU32(append(b[:0], op), x)...)
}
