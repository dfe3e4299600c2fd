package interrupt

import "fmt"

// Immediate kinds of the one-byte opcodes (the index of the ops table).
// kInvalid is zero so that every opcode not listed is rejected.
const (
	kInvalid  = iota
	kNone     // no immediate
	kU32      // one u32: an index or a label
	kU32x2    // call_indirect, return_call_indirect: a type index, then a table index (checked)
	kFunc     // call, return_call, ref.func: a u32 checked against the function count
	kTable    // table.get, table.set: a u32 checked against the table count
	kGlobal   // global.get, global.set: a u32 checked against the global count
	kBlock    // block, if: a block type; opens a frame
	kLoop     // loop: a block type; opens a frame; its body gets a check
	kTryTable // try_table: a block type and a vector of catch clauses; opens a frame
	kEnd      // end: closes a frame (the last one ends the body)
	kBrTable  // br_table: vec(label) label
	kMemarg   // loads and stores
	kZeroByte // memory.size, memory.grow: the reserved byte 0x00
	kI32Const // s32
	kI64Const // s64
	kF32Const // 4 bytes
	kF64Const // 8 bytes
	kSelectT  // select t*: vec(valtype), restricted to one one-byte type
	kRefNull  // ref.null: a heap type
	kPrefixFC // misc (saturating truncation, bulk memory, tables): u32 sub-opcode
	kPrefixFD // SIMD: sub-opcode (see walker.simdOp)
	kPrefixFE // threads (atomics): one-byte sub-opcode
	kReturn   // return: leaves the function
	kRetRef   // return_call_ref: a u32 (a type index); leaves the function
	kBr       // br: a label (a candidate for jump threading, see thread.go)
)

// Immediate kinds of the SIMD (0xfd) sub-opcodes (the index of the simd table).
const (
	sInvalid    = iota
	sNone       // no immediate
	sMemarg     // v128 loads and stores
	sBytes16    // v128.const, i8x16.shuffle: 16 bytes
	sLane       // extract_lane, replace_lane: a lane index byte
	sMemargLane // load_lane, store_lane
)

// opTables classifies opcodes by the immediates that follow them. It is
// filled by each Instrument call (on the stack: 512 bytes, well under a
// microsecond) so that the package has no package-level state.
type opTables struct {
	ops  [256]uint8
	simd [256]uint8
}

func (t *opTables) init() {
	set := func(tab *[256]uint8, kind uint8, lo, hi int) {
		for op := lo; op <= hi; op++ {
			tab[op] = kind
		}
	}
	o := &t.ops
	set(o, kNone, 0x00, 0x01) // unreachable, nop
	set(o, kBlock, 0x02, 0x02)
	set(o, kLoop, 0x03, 0x03)
	set(o, kBlock, 0x04, 0x04)
	set(o, kNone, 0x05, 0x05) // else
	// 0x06 try, 0x07 catch, 0x09 rethrow, 0x18 delegate, 0x19 catch_all
	// (legacy exception handling) are rejected: wazero rejects them too.
	set(o, kU32, 0x08, 0x08)  // throw tag
	set(o, kNone, 0x0a, 0x0a) // throw_ref
	set(o, kEnd, 0x0b, 0x0b)
	set(o, kBr, 0x0c, 0x0c)
	set(o, kU32, 0x0d, 0x0d) // br_if
	set(o, kBrTable, 0x0e, 0x0e)
	set(o, kReturn, 0x0f, 0x0f) // return
	set(o, kFunc, 0x10, 0x10)   // call
	set(o, kU32x2, 0x11, 0x11)  // call_indirect type table
	set(o, kFunc, 0x12, 0x12)   // return_call
	set(o, kU32x2, 0x13, 0x13)  // return_call_indirect type table
	set(o, kU32, 0x14, 0x14)    // call_ref (typed function references)
	set(o, kRetRef, 0x15, 0x15) // return_call_ref
	set(o, kNone, 0x1a, 0x1b)   // drop, select
	set(o, kSelectT, 0x1c, 0x1c)
	set(o, kTryTable, 0x1f, 0x1f)
	set(o, kU32, 0x20, 0x22) // local.get, local.set, local.tee
	set(o, kGlobal, 0x23, 0x24)
	set(o, kTable, 0x25, 0x26)  // table.get, table.set
	set(o, kMemarg, 0x28, 0x3e) // loads and stores
	set(o, kZeroByte, 0x3f, 0x40)
	set(o, kI32Const, 0x41, 0x41)
	set(o, kI64Const, 0x42, 0x42)
	set(o, kF32Const, 0x43, 0x43)
	set(o, kF64Const, 0x44, 0x44)
	set(o, kNone, 0x45, 0xc4) // numeric instructions, including sign extension 0xc0–0xc4
	set(o, kRefNull, 0xd0, 0xd0)
	set(o, kNone, 0xd1, 0xd1) // ref.is_null
	set(o, kFunc, 0xd2, 0xd2) // ref.func
	set(o, kNone, 0xd4, 0xd4) // ref.as_non_null
	set(o, kU32, 0xd5, 0xd6)  // br_on_null, br_on_non_null
	set(o, kPrefixFC, 0xfc, 0xfc)
	set(o, kPrefixFD, 0xfd, 0xfd)
	set(o, kPrefixFE, 0xfe, 0xfe)

	s := &t.simd
	set(s, sMemarg, 0x00, 0x0b) // v128.load*, v128.store
	set(s, sBytes16, 0x0c, 0x0d)
	set(s, sNone, 0x0e, 0x14)       // swizzle, splats
	set(s, sLane, 0x15, 0x22)       // extract_lane, replace_lane
	set(s, sNone, 0x23, 0x53)       // comparisons, bitwise, any_true
	set(s, sMemargLane, 0x54, 0x5b) // load_lane, store_lane
	set(s, sMemarg, 0x5c, 0x5d)     // load32_zero, load64_zero
	set(s, sNone, 0x5e, 0xff)       // arithmetic and conversions
	for _, op := range [...]byte{   // opcodes the SIMD proposal left unassigned
		0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee,
	} {
		s[op] = sInvalid
	}
}

// maxLocals is the most locals a function may declare: the WebAssembly JS
// API's implementation limit (50000, which V8 enforces). wazero has none:
// a 46-byte module declaring 10⁹ locals makes it allocate gigabytes, then
// panic in CompileModule.
const maxLocals = 50000

// walker parses function bodies and records where code is inserted.
type walker struct {
	*opTables
	globals uint32 // the module's global count before instrumentation
	tables  uint32 // its table count (imported and defined)
	funcs   uint32 // its function count (imported and defined)
	sites   []site // where code is inserted, by ascending offset
	frames  []frame
	loops   int // the loops among frames
	// limit is set when the body last parsed failed on a limit
	// (MaxNesting, MaxLoopNesting, MaxBrTableTargets).
	limit   bool
	targets []int // the dispatch loop's br_table targets (see thread.go)

	// Of the body last parsed: its local declaration count, the module
	// offset right after that count (body rewrites the count), and whether
	// it gets the $saved local (a function with try_table).
	decls    uint32
	declsEnd int
	saved    bool
}

// noLocal in site.local: the function has no $saved local.
const noLocal = 1<<32 - 1

// siteKind is what is inserted at a site.
type siteKind uint8

const (
	siteCheck   siteKind = iota // the budget check, charging cost bytes
	siteCharge                  // call $charge
	siteEnter                   // the $saved local, the depth increment and its check, the wrapper block
	siteReturn                  // $depth = $saved, before return and the tail calls
	siteRestore                 // $depth = $saved + weight, where a caught exception may land
	siteLeave                   // the wrapper block's end, then $depth = $saved
	siteBranch                  // a br to a dispatch loop replaced by a br to its target (thread.go)
)

// site is one place where code is inserted: before the instruction at
// module offset pos.
type site struct {
	pos   int
	kind  siteKind
	cost  int32  // siteCheck: the bytes charged; the depth sites: the function's frame weight; siteBranch: the new label
	skip  int32  // siteBranch: the length of the input it replaces
	local uint32 // the depth sites: the index of $saved, or noLocal
}

// fnInfo is what body needs of a function's type: its parameter count
// and the block type of the wrapper around its body (its results).
type fnInfo struct {
	params uint32
	bt     []byte
}

// frame is an open block, loop, if or try_table: for a loop whose check
// charges its own length, the index of its site in walker.sites and the
// offset of its loop opcode in the body; otherwise site is -1. loop tells
// loops from the other frames.
type frame struct {
	site, start int
	loop        bool
}

// frameWeight is the weight a call of a function with the given number of
// parameters and locals and body size adds to $depth: an estimate of its
// frame on wazero's native stack (a header, a slot per parameter and local,
// and spill slots in proportion to its code), capped at maxWeight.
func frameWeight(params uint32, locals uint64, bodySize int) int32 {
	w := 32 + 8*(uint64(params)+locals+1) + uint64(bodySize)/8
	return int32(min(w, maxWeight))
}

// capCost is the cost charged for n bytes of code: n, capped at
// budgetRefill (a site that costs the whole budget makes a trip to Go
// every time).
func capCost(n int) int32 {
	if n > budgetRefill {
		return budgetRefill
	}
	return int32(n)
}

// isBulk reports whether the 0xfc sub-opcode sub is a bulk operation whose
// length operand (an i32, on top of the stack) is charged by `call
// $charge`: memory.init, memory.copy, memory.fill, table.init, table.copy,
// table.fill.
func isBulk(sub uint32) bool {
	switch sub {
	case 8, 10, 11, 12, 14, 17:
		return true
	}
	return false
}

// prologue reports whether the expression b[pc:] begins with instructions
// that cannot branch, call or trap — block (any block type), local.get,
// local.set, local.tee, global.get, global.set, i32.const, i64.const, nop —
// followed by a loop, and if so the offset of that loop opcode. Such a
// function needs no entry check: its first loop's check runs right away,
// on every call. Anything it cannot parse ends the prologue (body then
// reports the error).
func prologue(b []byte, pc int) (bool, int) {
	for pc < len(b) {
		at := pc
		op := b[pc]
		pc++
		var st int
		switch op {
		case 0x01: // nop
		case 0x02: // block
			var msg string
			if pc, msg = blockType(b, pc); msg != "" {
				return false, 0
			}
		case 0x20, 0x21, 0x22, 0x23, 0x24: // local.get/set/tee, global.get/set
			_, pc, st = readU32(b, pc)
		case 0x41:
			pc, st = skipLEB(b, pc, 5, maskS32, true)
		case 0x42:
			pc, st = skipLEB(b, pc, 10, maskS64, true)
		case 0x03: // loop
			return true, at
		default:
			return false, 0
		}
		if st != lebOK {
			return false, 0
		}
	}
	return false, 0
}

// body parses one function body b (locals and expression), which starts at
// module offset base, and appends to w.sites: the budget check at its
// first instruction, costing len(b) (unless prologue elides it: then its
// first loop's check costs len(b) instead); the budget check right after
// every loop's block type, costing the loop's length from its opcode to its
// end; and `call $charge` before every bulk operation. On failure it
// returns the offset in b of the instruction at fault and a description;
// on success it returns -1 and "".
//
// A function with try_table is walked twice: the first walk stops at the
// try_table, the second also records the depth restores where a caught
// exception may land and gives the function the $saved local (w.saved).
// Without try_table no exception lands in a function, and leaving
// subtracts the weight instead of reading a saved depth (no new local, one
// value less to keep live).
func (w *walker) body(b []byte, base int, fn fnInfo) (int, string) {
	first := len(w.sites)
	w.saved = false
	at, msg := w.walk(b, base, fn)
	if at == restartWithTry {
		w.sites, w.saved = w.sites[:first], true
		at, msg = w.walk(b, base, fn)
	}
	return at, msg
}

// restartWithTry is what walk returns when it meets a try_table in its
// first walk of a function.
const restartWithTry = -2

// walk is one walk of body: with w.saved, it records the restores.
func (w *walker) walk(b []byte, base int, fn fnInfo) (int, string) {
	nDecls, pc, st := readU32(b, 0)
	if st != lebOK {
		return 0, lebMessage(st, "local declaration count")
	}
	w.decls, w.declsEnd = nDecls, base+pc
	var locals uint64
	for i := uint32(0); i < nDecls; i++ {
		at := pc
		var n uint32
		if n, pc, st = readU32(b, pc); st != lebOK {
			return at, lebMessage(st, "local count")
		}
		if locals += uint64(n); locals > maxLocals {
			return at, fmt.Sprintf("more than %d locals", maxLocals)
		}
		var msg string
		if pc, msg = valType(b, pc); msg != "" {
			return at, "local type: " + msg
		}
	}
	// The depth bound (see Instrument): $saved is a new local after the
	// others.
	saved := uint64(fn.params) + locals
	if saved >= 1<<32-1 {
		return 0, "too many parameters and locals"
	}
	local := uint32(saved)
	if !w.saved {
		local = noLocal
	}
	weight := frameWeight(fn.params, locals, len(b))
	depthSite := func(kind siteKind, pos int) {
		w.sites = append(w.sites, site{pos: pos, kind: kind, cost: weight, local: local})
	}
	w.sites = append(w.sites, site{pos: base + pc, kind: siteEnter, cost: weight, local: local})

	bodyCost := capCost(len(b))
	elide, firstLoop := prologue(b, pc)
	if !elide {
		w.sites = append(w.sites, site{pos: base + pc, cost: bodyCost})
	}

	ops := &w.ops
	w.frames = append(w.frames[:0], frame{site: -1}) // the function body's own frame
	w.loops, w.limit = 0, false
	th := newThreader()
	for pc < len(b) {
		at := pc
		op := b[pc]
		pc++
		k := ops[op]
		// The two most frequent kinds first, with a conditional branch
		// each: cheaper than the switch's indirect jump.
		if k == kNone {
			continue
		}
		if k == kU32 {
			if pc < len(b) && b[pc] < 0x80 { // most immediates take one byte
				pc++
				continue
			}
			if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
				return at, immMessage(st, op)
			}
			continue
		}
		switch k {
		case kMemarg:
			if pc+1 < len(b) && b[pc]|b[pc+1] < 0x80 { // align and offset in one byte each
				if b[pc]&0x40 == 0 {
					pc += 2
					continue
				}
			}
			var msg string
			if pc, msg = memarg(b, pc); msg != "" {
				return at, fmt.Sprintf("opcode %#02x: %s", op, msg)
			}
		case kI32Const:
			th.constAt = at
			if pc < len(b) && b[pc] < 0x80 {
				pc++
				th.constEnd = pc
				continue
			}
			if pc, st = skipLEB(b, pc, 5, maskS32, true); st != lebOK {
				return at, immMessage(st, op)
			}
			th.constEnd = pc
		case kBr:
			var l uint32
			if l, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if d := th.branch(b, at, l, len(w.frames), w.targets); d >= 0 {
				w.sites = append(w.sites, site{pos: base + at, kind: siteBranch, cost: int32(d), skip: int32(pc - at)})
			}
		case kI64Const:
			if pc, st = skipLEB(b, pc, 10, maskS64, true); st != lebOK {
				return at, immMessage(st, op)
			}
		case kGlobal:
			var idx uint32
			if idx, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if idx >= w.globals {
				name := "global.get"
				if op == 0x24 {
					name = "global.set"
				}
				return at, fmt.Sprintf("%s %d: the module has only %d globals", name, idx, w.globals)
			}
		case kFunc:
			var idx uint32
			if idx, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if idx >= w.funcs {
				name := map[byte]string{0x10: "call", 0x12: "return_call", 0xd2: "ref.func"}[op]
				return at, fmt.Sprintf("%s %d: the module has only %d functions", name, idx, w.funcs)
			}
			if op == 0x12 { // return_call leaves this function
				depthSite(siteReturn, base+at)
			}
		case kReturn:
			depthSite(siteReturn, base+at)
		case kRetRef:
			if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
				return at, immMessage(st, op)
			}
			depthSite(siteReturn, base+at)
		case kTable:
			var idx uint32
			if idx, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if idx >= w.tables {
				name := "table.get"
				if op == 0x26 {
					name = "table.set"
				}
				return at, w.tableMessage(name, idx)
			}
		case kBlock:
			var msg string
			if pc, msg = blockType(b, pc); msg != "" {
				return at, fmt.Sprintf("opcode %#02x: %s", op, msg)
			}
			if op == 0x02 {
				th.onBlock(b, at, pc)
			}
			w.frames = append(w.frames, frame{site: -1})
			if msg := w.checkNesting(); msg != "" {
				return at, msg
			}
		case kLoop:
			var msg string
			if pc, msg = blockType(b, pc); msg != "" {
				return at, fmt.Sprintf("opcode %#02x: %s", op, msg)
			}
			if elide && at == firstLoop {
				// Its check is also the function's entry check: it
				// charges the whole body (the code after the loop runs
				// once per call, and no other check charges it).
				w.sites = append(w.sites, site{pos: base + pc, cost: bodyCost})
				w.frames = append(w.frames, frame{site: -1, loop: true})
			} else {
				w.frames = append(w.frames, frame{site: len(w.sites), start: at, loop: true})
				w.sites = append(w.sites, site{pos: base + pc}) // cost: at its end
			}
			if w.loops++; w.loops > MaxLoopNesting {
				w.limit = true
				return at, fmt.Sprintf("loop nesting depth %d exceeds the limit of %d", w.loops, MaxLoopNesting)
			}
			if msg := w.checkNesting(); msg != "" {
				return at, msg
			}
			th.onLoop(b, at, pc, len(w.frames)-1)
			if w.saved { // a branch to the loop's label lands here
				depthSite(siteRestore, base+pc)
			}
		case kEnd:
			f := w.frames[len(w.frames)-1]
			w.frames = w.frames[:len(w.frames)-1]
			th.onEnd(len(w.frames))
			if f.loop {
				w.loops--
			}
			if f.site >= 0 {
				w.sites[f.site].cost = capCost(pc - f.start)
			}
			if len(w.frames) == 0 {
				if pc != len(b) {
					return pc, fmt.Sprintf("%d bytes after the function's final end", len(b)-pc)
				}
				depthSite(siteLeave, base+at)
				return -1, ""
			}
			if w.saved && !f.loop { // a branch to this block's label lands after its end
				depthSite(siteRestore, base+pc)
			}
		case kU32x2:
			if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
				return at, immMessage(st, op)
			}
			var idx uint32
			if idx, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if idx >= w.tables {
				name := "call_indirect"
				if op == 0x13 {
					name = "return_call_indirect"
				}
				return at, w.tableMessage(name+" table", idx)
			}
			if op == 0x13 { // return_call_indirect leaves this function
				depthSite(siteReturn, base+at)
			}
		case kBrTable:
			var n uint32
			countAt := pc
			if n, pc, st = readU32(b, pc); st != lebOK {
				return at, immMessage(st, op)
			}
			if uint64(n)+1 > MaxBrTableTargets {
				w.limit = true
				return at, fmt.Sprintf("br_table with %d targets exceeds the limit of %d", uint64(n)+1, MaxBrTableTargets)
			}
			// n+1 labels. Each takes at least one byte, so a bogus n ends
			// in a truncation error after at most len(b) iterations.
			for i := uint64(0); i <= uint64(n); i++ {
				if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
					return at, immMessage(st, op)
				}
			}
			w.targets = th.onBrTable(b, at, countAt, len(w.frames), w.targets)
		case kZeroByte:
			if pc >= len(b) {
				return at, immMessage(lebTruncated, op)
			}
			if b[pc] != 0 {
				return at, fmt.Sprintf("opcode %#02x: reserved byte %#02x is not 0x00", op, b[pc])
			}
			pc++
		case kF32Const:
			if pc += 4; pc > len(b) {
				return at, immMessage(lebTruncated, op)
			}
		case kF64Const:
			if pc += 8; pc > len(b) {
				return at, immMessage(lebTruncated, op)
			}
		case kSelectT:
			// select t*: vec(valtype). Only one type is valid, and wazero's
			// compiler skips exactly two bytes here (v1.12, whatever its
			// validator accepted): accept only 0x01 and a one-byte type,
			// not 0x63/0x64 and a heap type, which that compiler would
			// read as instructions.
			if pc+1 >= len(b) {
				return at, immMessage(lebTruncated, op)
			}
			if b[pc] != 0x01 {
				return at, fmt.Sprintf("select: type vector %#02x…: only one type, encoded as 0x01 then a one-byte type, is supported", b[pc])
			}
			if c := b[pc+1]; c == 0x63 || c == 0x64 {
				return at, "select: (ref …) types are not supported (wazero v1.12 compiles them wrongly)"
			}
			var msg string
			if pc, msg = valType(b, pc+1); msg != "" {
				return at, "select: " + msg
			}
		case kRefNull:
			var msg string
			if pc, msg = heapType(b, pc); msg != "" {
				return at, "ref.null: " + msg
			}
		case kTryTable:
			var msg string
			if pc, msg = blockType(b, pc); msg != "" {
				return at, "try_table: " + msg
			}
			var n uint32
			if n, pc, st = readU32(b, pc); st != lebOK {
				return at, lebMessage(st, "try_table catch count")
			}
			for i := uint32(0); i < n; i++ {
				if pc >= len(b) {
					return at, "truncated try_table catch clause"
				}
				kind := b[pc]
				pc++
				var imms int
				switch kind {
				case 0x00, 0x01: // catch, catch_ref: tag label
					imms = 2
				case 0x02, 0x03: // catch_all, catch_all_ref: label
					imms = 1
				default:
					return at, fmt.Sprintf("try_table: unknown catch kind %#02x", kind)
				}
				for range imms {
					if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
						return at, lebMessage(st, "try_table catch clause")
					}
				}
			}
			if !w.saved {
				return restartWithTry, ""
			}
			w.frames = append(w.frames, frame{site: -1})
			if msg := w.checkNesting(); msg != "" {
				return at, msg
			}
		case kPrefixFC:
			var (
				sub uint32
				msg string
			)
			if pc, sub, msg = w.miscOp(b, pc); msg != "" {
				return at, msg
			}
			if isBulk(sub) {
				w.sites = append(w.sites, site{pos: base + at, kind: siteCharge})
			}
		case kPrefixFD:
			var msg string
			if pc, msg = w.simdOp(b, pc); msg != "" {
				return at, msg
			}
		case kPrefixFE:
			var msg string
			if pc, msg = atomicOp(b, pc); msg != "" {
				return at, msg
			}
		default:
			return at, fmt.Sprintf("unknown opcode %#02x", op)
		}
	}
	return len(b), "function body ends without its final end"
}

// checkNesting returns the error for a control nesting deeper than
// MaxNesting (the function body's own frame is not counted), or "".
func (w *walker) checkNesting() string {
	if d := len(w.frames) - 1; d > MaxNesting {
		w.limit = true
		return fmt.Sprintf("control nesting depth %d exceeds the limit of %d", d, MaxNesting)
	}
	return ""
}

// immMessage describes a failed read of op's immediate.
func immMessage(status int, op byte) string {
	return lebMessage(status, fmt.Sprintf("immediate of opcode %#02x", op))
}

// valType skips a value type: a one-byte number, vector or reference type,
// or 0x63 (ref null) / 0x64 (ref) followed by a heap type.
func valType(b []byte, pc int) (int, string) {
	if pc >= len(b) {
		return pc, "truncated value type"
	}
	switch c := b[pc]; c {
	case 0x7f, 0x7e, 0x7d, 0x7c, // i32 i64 f32 f64
		0x7b,             // v128
		0x70, 0x6f, 0x69: // funcref externref exnref
		return pc + 1, ""
	case 0x63, 0x64:
		return heapType(b, pc+1)
	default:
		return pc, fmt.Sprintf("unknown value type %#02x", c)
	}
}

// heapType skips a heap type: an s33 that is a type index or one of the
// abstract types func (-0x10), extern (-0x11) and exn (-0x17).
func heapType(b []byte, pc int) (int, string) {
	v, next, st := readS33(b, pc)
	if st != lebOK {
		return pc, lebMessage(st, "heap type")
	}
	if v < 0 && !abstractHeap(v) {
		return pc, fmt.Sprintf("unknown heap type %d", v)
	}
	return next, ""
}

// abstractHeap reports whether the s33 v is one of the abstract heap types
// wazero knows: func (-0x10), extern (-0x11) and exn (-0x17); as a value
// type, funcref, externref and exnref.
func abstractHeap(v int64) bool { return v == -0x10 || v == -0x11 || v == -0x17 }

// blockType skips a block type: the s33 -0x40 (empty), a one-byte value
// type (negative), 0x63/0x64 and a heap type, or a type index
// (non-negative). It is decoded as an s33 whatever its first byte, as
// wazero does, so that both agree on where it ends.
func blockType(b []byte, pc int) (int, string) {
	v, next, st := readS33(b, pc)
	if st != lebOK {
		return pc, lebMessage(st, "block type")
	}
	switch {
	case v >= 0: // type index
	case v == -0x40, // empty
		v >= -5,         // i32 i64 f32 f64 v128
		abstractHeap(v): // funcref externref exnref
	case v == -0x1d || v == -0x1c: // 0x63 ref null, 0x64 ref
		var msg string
		if next, msg = heapType(b, next); msg != "" {
			return pc, "block type: " + msg
		}
	default:
		return pc, fmt.Sprintf("invalid block type %d", v)
	}
	return next, ""
}

// memarg skips a memory argument: align (u32; bit 6 announces a memory
// index u32), then offset (u64).
func memarg(b []byte, pc int) (int, string) {
	align, pc, st := readU32(b, pc)
	if st != lebOK {
		return pc, lebMessage(st, "memarg alignment")
	}
	if align&0x40 != 0 {
		if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
			return pc, lebMessage(st, "memarg memory index")
		}
	}
	if pc, st = skipLEB(b, pc, 10, maskU64, false); st != lebOK {
		return pc, lebMessage(st, "memarg offset")
	}
	return pc, ""
}

// tableMessage describes an instruction named what whose table index idx
// is at or beyond the module's table count.
func (w *walker) tableMessage(what string, idx uint32) string {
	return fmt.Sprintf("%s %d: the module has only %d tables", what, idx, w.tables)
}

// miscOp skips the 0xfc-prefixed instruction whose u32 sub-opcode starts
// at pc and returns the sub-opcode. It rejects table.grow, and any table
// index at or beyond the module's table count.
func (w *walker) miscOp(b []byte, pc int) (int, uint32, string) {
	sub, pc, st := readU32(b, pc)
	if st != lebOK {
		return pc, 0, lebMessage(st, "0xfc sub-opcode")
	}
	var (
		u32s, zeros int
		tables      []string // the names of the table immediates, after the other u32s
	)
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // saturating truncation
	case 8: // memory.init data mem
		u32s, zeros = 1, 1
	case 9: // data.drop data
		u32s = 1
	case 10: // memory.copy mem mem
		zeros = 2
	case 11: // memory.fill mem
		zeros = 1
	case 12: // table.init elem table
		u32s, tables = 1, []string{"table.init table"}
	case 13: // elem.drop elem
		u32s = 1
	case 14: // table.copy table table
		tables = []string{"table.copy", "table.copy"}
	case 15: // table.grow table
		return pc, sub, "table.grow is not allowed in a policy module (it can grow a table without bound)"
	case 16: // table.size table
		tables = []string{"table.size"}
	case 17: // table.fill table
		tables = []string{"table.fill"}
	default:
		return pc, sub, fmt.Sprintf("unknown opcode 0xfc %#02x", sub)
	}
	for range u32s {
		if pc, st = skipLEB(b, pc, 5, maskU32, false); st != lebOK {
			return pc, sub, lebMessage(st, fmt.Sprintf("immediate of opcode 0xfc %#02x", sub))
		}
	}
	for _, name := range tables {
		var idx uint32
		if idx, pc, st = readU32(b, pc); st != lebOK {
			return pc, sub, lebMessage(st, fmt.Sprintf("immediate of opcode 0xfc %#02x", sub))
		}
		if idx >= w.tables {
			return pc, sub, w.tableMessage(name, idx)
		}
	}
	for range zeros {
		if pc >= len(b) {
			return pc, sub, fmt.Sprintf("truncated immediate of opcode 0xfc %#02x", sub)
		}
		if b[pc] != 0 {
			return pc, sub, fmt.Sprintf("opcode 0xfc %#02x: reserved byte %#02x is not 0x00", sub, b[pc])
		}
		pc++
	}
	return pc, sub, ""
}

// simdOp skips the 0xfd-prefixed instruction whose sub-opcode starts at pc.
//
// The sub-opcode is a u32 LEB128 in the spec, but wazero (v1.12) reads one
// byte: for 0x00–0x7f the two agree; for 0x80–0xff the minimal encoding is
// that byte then 0x01, which wazero runs as the instruction then a nop, so
// both still agree on where every following instruction starts. Any other
// encoding (a non-minimal one, or a sub-opcode above 0xff such as the
// relaxed SIMD instructions, which wazero does not implement) would make
// wazero see different instructions from the ones we see — possibly a loop
// we would not have instrumented — so it is rejected.
func (w *walker) simdOp(b []byte, pc int) (int, string) {
	if pc >= len(b) {
		return pc, "truncated 0xfd sub-opcode"
	}
	sub := b[pc]
	pc++
	if sub >= 0x80 {
		if pc >= len(b) || b[pc] != 0x01 {
			v, _, st := readU32(b, pc-1)
			switch {
			case st != lebOK:
				return pc, lebMessage(st, "0xfd sub-opcode")
			case v >= 0x100 && v <= 0x113:
				return pc, fmt.Sprintf("relaxed SIMD opcode 0xfd %#x is not supported", v)
			case v < 0x100:
				return pc, fmt.Sprintf("opcode 0xfd %#02x has a non-minimal encoding", v)
			default:
				return pc, fmt.Sprintf("unknown opcode 0xfd %#x", v)
			}
		}
		pc++
	}
	switch w.simd[sub] {
	case sNone:
	case sMemarg:
		var msg string
		if pc, msg = memarg(b, pc); msg != "" {
			return pc, fmt.Sprintf("opcode 0xfd %#02x: %s", sub, msg)
		}
	case sBytes16:
		if pc += 16; pc > len(b) {
			return pc, fmt.Sprintf("truncated immediate of opcode 0xfd %#02x", sub)
		}
	case sLane:
		if pc++; pc > len(b) {
			return pc, fmt.Sprintf("truncated immediate of opcode 0xfd %#02x", sub)
		}
	case sMemargLane:
		var msg string
		if pc, msg = memarg(b, pc); msg != "" {
			return pc, fmt.Sprintf("opcode 0xfd %#02x: %s", sub, msg)
		}
		if pc++; pc > len(b) {
			return pc, fmt.Sprintf("truncated immediate of opcode 0xfd %#02x", sub)
		}
	default:
		return pc, fmt.Sprintf("unknown opcode 0xfd %#02x", sub)
	}
	return pc, ""
}

// atomicOp skips the 0xfe-prefixed instruction whose sub-opcode starts at
// pc. The sub-opcode is a u32 LEB128 in the spec but every atomic opcode is
// below 0x80, and wazero reads one byte: a byte with the continuation bit
// is rejected rather than read two ways.
func atomicOp(b []byte, pc int) (int, string) {
	if pc >= len(b) {
		return pc, "truncated 0xfe sub-opcode"
	}
	sub := b[pc]
	pc++
	switch {
	case sub == 0x03: // atomic.fence: reserved byte
		if pc >= len(b) {
			return pc, "truncated immediate of opcode 0xfe 0x03"
		}
		if b[pc] != 0 {
			return pc, fmt.Sprintf("opcode 0xfe 0x03: reserved byte %#02x is not 0x00", b[pc])
		}
		return pc + 1, ""
	case sub <= 0x02 || (sub >= 0x10 && sub <= 0x4e): // notify, wait, loads, stores, rmw
		var msg string
		if pc, msg = memarg(b, pc); msg != "" {
			return pc, fmt.Sprintf("opcode 0xfe %#02x: %s", sub, msg)
		}
		return pc, ""
	default:
		return pc, fmt.Sprintf("unknown opcode 0xfe %#02x", sub)
	}
}
