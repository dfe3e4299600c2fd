package interrupt

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Section ids.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secGlobal   = 6
	secExport   = 7
	secCode     = 10
)

// budgetRefill is the budget, in bytes of code, between two trips to Go
// (see the package documentation): small enough that a stop-the-world or
// an interrupt never waits long for a running guest (about a millisecond
// of the slowest code), large enough that the trips cost nothing
// measurable. It is also the most one check charges.
const budgetRefill = 1 << 20

// MaxStack bounds the estimated size of the guest's call stack on wazero's
// native stack, which is outside the module's linear memory and so outside
// any memory limit: each call adds its function's frame weight (see
// frameWeight) to $depth, and a call that takes $depth above MaxStack
// traps ("unreachable"; not a call to a function, which makes wazero's
// compiler slow the function's loops). $depth is exported under the flag's
// name with DepthSuffix appended, so that the host can tell this trap from
// others. Without the bound a recursing guest
// makes wazero grow its stack, a Go allocation copied at each doubling, to
// its ceiling: ≈160 MB allocated on the host per call.
const MaxStack = 8 << 20

// DepthSuffix is appended to the export name of the flag to export $depth.
const DepthSuffix = ".depth"

// maxWeight caps one function's frame weight.
const maxWeight = 1 << 20

// sectionRank is the position of each known section id in the order the
// spec requires (custom sections, rank 0, may appear anywhere); ids
// without a rank are unknown.
func sectionRank(id byte) int {
	switch id {
	case 1, 2, 3, 4, 5: // type, import, function, table, memory
		return int(id)
	case 13: // tag
		return 6
	case 6, 7, 8, 9: // global, export, start, element
		return int(id) + 1
	case 12: // data count
		return 11
	case 10: // code
		return 12
	case 11: // data
		return 13
	}
	return -1
}

// isVector reports whether a section's contents are a vector (a count,
// then entries): all known sections but custom, start and data count.
func isVector(id byte) bool {
	return id != secCustom && id != 8 && id != 12 && sectionRank(id) > 0
}

// section is one section of the input: wasm[start:end] is the whole
// section, id and size included, and wasm[body:end] its contents.
type section struct {
	id         byte
	start, end int
	body       int
}

// vecSection is a vector section (type, function, table, global, export)
// as it will be written: the input's count and entries (none when the
// input has no such section) followed by the new entries. A section that
// gets no new entry is copied as it is (or stays missing).
type vecSection struct {
	id    byte
	index int    // in the section table; -1: missing from the input
	count uint32 // entries in the input
	rest  []byte // the input's entries, as encoded
	add   int    // entries appended
	added []byte // their encoding
	after int    // when missing: the section it goes after (-1: the header)
}

func (v *vecSection) appendTo(out []byte) ([]byte, error) {
	n := uint64(v.count) + uint64(v.add)
	if n > 1<<32-1 {
		return nil, fmt.Errorf("interrupt: section %d: too many entries", v.id)
	}
	size := uint64(sizeU32(uint32(n))) + uint64(len(v.rest)) + uint64(len(v.added))
	if size > 1<<32-1 {
		return nil, fmt.Errorf("interrupt: section %d: too large", v.id)
	}
	out = append(out, v.id)
	out = appendU32(out, uint32(size))
	out = appendU32(out, uint32(n))
	out = append(out, v.rest...)
	return append(out, v.added...), nil
}

// Instrument returns a copy of the binary WebAssembly module wasm that the
// host can interrupt, and that lets the Go runtime preempt the goroutine
// running it, within a bounded amount of executed code.
//
// It adds three (mut i32) globals after the module's own: $flag,
// initialised to 0 and exported under the name export, $budget, private,
// initialised to budgetRefill (2^20), and $depth, initialised to 0 and
// exported under export+DepthSuffix; a private empty funcref table $yield
// after the module's own tables; and two functions after the module's own
// (the function section and code section get them; their types, () -> ()
// and (i32) -> (i32), are appended to the type section unless it has them
// already): $slow, which traps ("unreachable") if $flag is non-zero, else
// refills $budget and makes a trip to Go (a table.grow of $yield by 0,
// which wazero runs in Go); and $charge, which charges a bulk operation's
// length. No existing index changes.
//
// Every function body (unless it begins with a loop, see below) and every
// loop body begins with a budget check, which subtracts from $budget the
// byte length of the code it covers (the function body, or the loop from
// its opcode to its end, at most budgetRefill) and calls $slow when
// $budget drops below 0; and every memory.init, memory.copy, memory.fill,
// table.init, table.copy and table.fill is preceded by `call $charge`,
// which subtracts an eighth of its length operand. So a set flag makes the
// guest trap after at most about budgetRefill bytes of executed code (or
// 8·budgetRefill bytes moved by bulk operations), and the Go runtime gets
// a chance to preempt it as often. A function whose first loop is
// reached without a branch, call or trap (only blocks, local and global
// accesses and constants before it: the shape of every Go function)
// gets no entry check: that loop's check charges the whole body instead.
// Every function also gets the depth bound's code (see MaxStack and the
// package documentation): a call traps when the estimated call stack
// exceeds MaxStack.
// See the package documentation for the exact code and the bounds.
//
// Every section other than the type, function, table, global, export and
// code sections is copied byte for byte; a missing section that gets
// entries is created at its place in the section order.
//
// Instrument parses every instruction of every function body and fails —
// it never guesses — on anything it does not understand: an unknown
// opcode, a truncated or over-long immediate, a body without its final
// end, a size that disagrees with the bytes, or an encoding that wazero
// v1.12 reads differently from the spec or compiles differently from how it
// validates it (such as select with a (ref …) type; see the package
// documentation). It also fails if the module already exports the name
// export or export+DepthSuffix; on any table.grow (an unbounded table.grow is a host memory bomb,
// outside the module's memory limit); and on any global, table or function
// index, in the code or the exports, at or beyond the module's own count
// (an invalid module, which would otherwise reach the new globals, table
// or functions). Errors begin with "interrupt: "; errors in a function
// body name the function (its index in the function index space, imports
// included) and the module byte offset of the instruction at fault.
//
// Limits protect wazero, which allocates before it validates and compiles
// some shapes superlinearly: a vector section may not declare more entries
// than it has bytes, a function may not declare more than 50000 locals,
// and the module must be within the complexity limits of limits.go (Scan's
// checks, then MaxNesting, MaxLoopNesting and MaxBrTableTargets as the code
// is walked); an error past one of those wraps ErrLimit.
//
// Instrument does not validate the module otherwise: compile the result
// with wazero, which does.
func Instrument(wasm []byte, export string) ([]byte, error) {
	if !utf8.ValidString(export) {
		return nil, errors.New("interrupt: export name is not valid UTF-8")
	}
	sections, err := readSections(wasm)
	if err != nil {
		return nil, err
	}
	if _, err := checkLimits(wasm, sections); err != nil {
		return nil, err
	}

	// The sections we rewrite.
	var (
		imports   = -1
		code      = -1
		types     = vecSection{id: secType, index: -1}
		functions = vecSection{id: secFunction, index: -1}
		tables    = vecSection{id: secTable, index: -1}
		globals   = vecSection{id: secGlobal, index: -1}
		exports   = vecSection{id: secExport, index: -1}
	)
	for i, s := range sections {
		switch s.id {
		case secType:
			types.index = i
		case secImport:
			imports = i
		case secFunction:
			functions.index = i
		case secTable:
			tables.index = i
		case secGlobal:
			globals.index = i
		case secExport:
			exports.index = i
		case secCode:
			code = i
		}
	}

	var imported importCounts
	if imports >= 0 {
		var err error
		if imported, err = scanImports(wasm, sections[imports]); err != nil {
			return nil, err
		}
	}
	// The entry counts of the function, table and global sections (their
	// entries are copied as they are).
	for _, v := range []*vecSection{&functions, &tables, &globals} {
		if v.index < 0 {
			continue
		}
		s := sections[v.index]
		n, pos, st := readU32(wasm[:s.end], s.body)
		if st != lebOK {
			return nil, fmt.Errorf("interrupt: section %d at offset %#x: %s", s.id, s.body, lebMessage(st, "entry count"))
		}
		v.count, v.rest = n, wasm[pos:s.end]
	}
	voidType, i32Type := int64(-1), int64(-1) // () -> () and (i32) -> (i32) in the input
	var typeList []typeInfo
	if types.index >= 0 {
		var err error
		if typeList, voidType, i32Type, err = scanTypes(wasm, sections[types.index], &types); err != nil {
			return nil, err
		}
	}
	totalGlobals := uint64(imported.globals) + uint64(globals.count)
	totalTables := uint64(imported.tables) + uint64(tables.count)
	totalFuncs := uint64(imported.funcs) + uint64(functions.count)
	if totalGlobals >= 1<<32-3 || totalTables >= 1<<32-1 || totalFuncs >= 1<<32-2 {
		return nil, errors.New("interrupt: too many globals, tables or functions")
	}
	flag := uint32(totalGlobals) // the new globals', table's and functions' indexes
	budget := flag + 1
	depth := flag + 2
	yieldTable := uint32(totalTables)
	slow := uint32(totalFuncs)
	charge := slow + 1

	if exports.index >= 0 {
		s := sections[exports.index]
		n, entries, err := scanExports(wasm, s, export, importCounts{funcs: slow, tables: yieldTable, globals: flag})
		if err != nil {
			return nil, err
		}
		exports.count, exports.rest = n, wasm[entries:s.end]
	}

	// The type of every defined function, for its parameter count and the
	// block type of the wrapper around its body.
	var fnTypes []uint32
	if functions.index >= 0 {
		end := sections[functions.index].end
		c := &cursor{b: wasm[:end], pos: end - len(functions.rest), sec: "function section"} // the entries
		fnTypes = make([]uint32, 0, functions.count)                                         // count ≤ the section's size: checked above
		for i := uint32(0); i < functions.count && c.err == nil; i++ {
			at := c.pos
			ti := c.u32("type index")
			if c.err == nil && uint64(ti) >= uint64(len(typeList)) {
				c.fail(at, "function %d has type %d but the module has only %d types", uint64(imported.funcs)+uint64(i), ti, len(typeList))
			}
			fnTypes = append(fnTypes, ti)
		}
		c.end()
		if c.err != nil {
			return nil, c.err
		}
	}
	multi := map[string]uint32{} // results of the wrapper types added, by encoding
	fnInfoOf := func(i uint32) fnInfo {
		if i >= uint32(len(fnTypes)) {
			// More bodies than functions: reported after the code
			// section is read.
			return fnInfo{bt: []byte{0x40}}
		}
		ft := typeList[fnTypes[i]]
		switch ft.nres {
		case 0:
			return fnInfo{params: ft.params, bt: []byte{0x40}}
		case 1:
			return fnInfo{params: ft.params, bt: ft.results}
		}
		idx, ok := multi[string(ft.results)]
		if !ok { // a type () -> results for the wrapper block
			idx = uint32(uint64(types.count) + uint64(types.add))
			types.add++
			types.added = append(types.added, 0x60, 0x00)
			types.added = appendU32(types.added, ft.nres)
			types.added = append(types.added, ft.results...)
			multi[string(ft.results)] = idx
		}
		return fnInfo{params: ft.params, bt: appendS33(nil, int64(idx))}
	}

	// Parse the code section: every body, and where code is inserted.
	var t opTables
	t.init()
	w := walker{opTables: &t, globals: flag, tables: yieldTable, funcs: slow}
	var bodies []fnBody
	if code >= 0 {
		s := sections[code]
		lim := wasm[:s.end]
		n, pos, st := readU32(lim, s.body)
		if st != lebOK {
			return nil, fmt.Errorf("interrupt: code section at offset %#x: %s", s.body, lebMessage(st, "function count"))
		}
		bodies = make([]fnBody, 0, n) // n ≤ the section's size: checked above
		// A guess: three sites per function (its entry, its check, its
		// end) and one per loop or threaded branch, one per 64 bytes of
		// code or so.
		w.sites = make([]site, 0, 3*int(n)+(s.end-s.body)/64)
		for i := uint32(0); i < n; i++ {
			fn := uint64(imported.funcs) + uint64(i)
			size, start, st := readU32(lim, pos)
			if st != lebOK {
				return nil, fmt.Errorf("interrupt: function %d (code offset %#x): %s", fn, pos, lebMessage(st, "body size"))
			}
			if uint64(size) > uint64(s.end-start) {
				return nil, fmt.Errorf("interrupt: function %d (code offset %#x): body size %d exceeds the %d bytes left in the code section", fn, pos, size, s.end-start)
			}
			end := start + int(size)
			bodies = append(bodies, fnBody{start: start, end: end, sites: len(w.sites)})
			fi := fnInfoOf(i)
			bodies[len(bodies)-1].bt = fi.bt
			if at, msg := w.body(wasm[start:end], start, fi); msg != "" {
				msg = fmt.Sprintf("interrupt: function %d (code offset %#x): %s", fn, start+at, msg)
				if w.limit {
					return nil, limitErr(msg)
				}
				return nil, errors.New(msg)
			}
			bodies[len(bodies)-1].decls, bodies[len(bodies)-1].declsEnd, bodies[len(bodies)-1].saved = w.decls, w.declsEnd, w.saved
			pos = end
		}
		if pos != s.end {
			return nil, fmt.Errorf("interrupt: code section at offset %#x: %d bytes after the last function body", pos, s.end-pos)
		}
		if n != functions.count {
			return nil, fmt.Errorf("interrupt: the function section declares %d functions but the code section has %d bodies", functions.count, n)
		}
	}

	// The new entries. $slow and $charge only when there is code to call
	// them.
	if len(bodies) > 0 {
		if voidType < 0 {
			voidType = int64(types.count) + int64(types.add)
			types.add++
			types.added = append(types.added, 0x60, 0x00, 0x00)
		}
		if i32Type < 0 {
			i32Type = int64(types.count) + int64(types.add)
			types.add++
			types.added = append(types.added, 0x60, 0x01, 0x7f, 0x01, 0x7f)
		}
		if uint64(types.count)+uint64(types.add) > 1<<32-1 {
			return nil, errors.New("interrupt: too many types")
		}
		functions.add = 2
		functions.added = appendU32(functions.added, uint32(voidType))
		functions.added = appendU32(functions.added, uint32(i32Type))
	}
	tables.add, tables.added = 1, []byte{0x70, 0x00, 0x00} // funcref, min 0, no max
	globals.add = 3
	globals.added = []byte{0x7f, 0x01, 0x41, 0x00, 0x0b} // $flag: (mut i32) (i32.const 0)
	globals.added = append(globals.added, 0x7f, 0x01, 0x41)
	globals.added = appendS32(globals.added, budgetRefill) // $budget: (mut i32) (i32.const budgetRefill)
	globals.added = append(globals.added, 0x0b)
	globals.added = append(globals.added, 0x7f, 0x01, 0x41, 0x00, 0x0b) // $depth: (mut i32) (i32.const 0)
	exports.add = 2
	exports.added = appendU32(nil, uint32(len(export)))
	exports.added = append(exports.added, export...)
	exports.added = append(exports.added, 0x03) // global
	exports.added = appendU32(exports.added, flag)
	exports.added = appendU32(exports.added, uint32(len(export)+len(DepthSuffix)))
	exports.added = append(exports.added, export...)
	exports.added = append(exports.added, DepthSuffix...)
	exports.added = append(exports.added, 0x03) // global
	exports.added = appendU32(exports.added, depth)

	// Where to put a missing section: right after the last section that
	// must precede it (-1: right after the header).
	vecs := []*vecSection{&types, &functions, &tables, &globals, &exports} // in section order
	for _, v := range vecs {
		v.after = -1
		for i, s := range sections {
			if s.id != secCustom && sectionRank(s.id) < sectionRank(v.id) {
				v.after = i
			}
		}
	}

	ins := newInserts(flag, budget, depth, yieldTable, slow, charge)
	grow := len(w.sites)*ins.maxSite() + len(ins.slowBody) + len(ins.chargeBody) + 16*len(bodies) + len(export) + 64
	out := make([]byte, 0, len(wasm)+grow)
	out = append(out, wasm[:8]...)
	emitMissing := func(after int) (err error) {
		for _, v := range vecs {
			if v.index < 0 && v.after == after && v.add > 0 {
				if out, err = v.appendTo(out); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := emitMissing(-1); err != nil {
		return nil, err
	}
	for i, s := range sections {
		var err error
		v := vecOf(vecs, i)
		switch {
		case i == code && len(bodies) > 0:
			out, err = appendCode(out, wasm, bodies, w.sites, &ins, imported.funcs)
		case v != nil && v.add > 0:
			out, err = v.appendTo(out)
		default:
			out = append(out, wasm[s.start:s.end]...)
		}
		if err != nil {
			return nil, err
		}
		if err := emitMissing(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readSections checks the header and returns the section table, in order:
// every section's size fits in the module, known sections are in the
// spec's order and not repeated, and a vector section declares no more
// entries than it has bytes.
func readSections(wasm []byte) ([]section, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("interrupt: not a WebAssembly binary module (bad magic number)")
	}
	if !bytes.Equal(wasm[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("interrupt: unsupported WebAssembly binary version % x", wasm[4:8])
	}
	var sections []section
	lastRank := 0
	for pos := 8; pos < len(wasm); {
		id := wasm[pos]
		size, body, st := readU32(wasm, pos+1)
		if st != lebOK {
			return nil, fmt.Errorf("interrupt: section %d at offset %#x: %s", id, pos, lebMessage(st, "size"))
		}
		if uint64(size) > uint64(len(wasm)-body) {
			return nil, fmt.Errorf("interrupt: section %d at offset %#x: size %d exceeds the %d bytes left in the module", id, pos, size, len(wasm)-body)
		}
		if isVector(id) {
			// Every entry takes at least one byte. wazero allocates for
			// the declared count before it reads the entries: a few bytes
			// declaring 10⁸ globals cost it gigabytes.
			n, next, st := readU32(wasm[:body+int(size)], body)
			if st != lebOK {
				return nil, fmt.Errorf("interrupt: section %d at offset %#x: %s", id, pos, lebMessage(st, "entry count"))
			}
			if left := body + int(size) - next; uint64(n) > uint64(left) {
				return nil, fmt.Errorf("interrupt: section %d at offset %#x: %d entries cannot fit in %d bytes", id, pos, n, left)
			}
		}
		if id != secCustom {
			rank := sectionRank(id)
			if rank < 0 {
				return nil, fmt.Errorf("interrupt: unknown section id %d at offset %#x", id, pos)
			}
			if rank <= lastRank {
				return nil, fmt.Errorf("interrupt: section %d at offset %#x is out of order or repeated", id, pos)
			}
			lastRank = rank
		}
		end := body + int(size)
		sections = append(sections, section{id: id, start: pos, end: end, body: body})
		pos = end
	}
	return sections, nil
}

// vecOf returns the vector section among vecs whose index in the section
// table is i, or nil.
func vecOf(vecs []*vecSection, i int) *vecSection {
	for _, v := range vecs {
		if v.index == i {
			return v
		}
	}
	return nil
}

// inserts is the code Instrument inserts, for one module's indexes.
type inserts struct {
	checkPre   []byte // the budget check up to its cost: global.get $budget; i32.const
	checkPost  []byte // after the cost: i32.sub … end
	callCharge []byte // call $charge
	slowBody   []byte // $slow's body, size included
	chargeBody []byte // $charge's body, size included
	depth      uint32 // $depth
}

// newInserts builds the inserted code:
//
//	;; the budget check (COST: the site's cost)
//	global.get $budget
//	i32.const COST
//	i32.sub
//	global.set $budget
//	global.get $budget
//	i32.const 0
//	i32.lt_s
//	if
//	  call $slow
//	end
//
//	;; before a bulk operation
//	call $charge
//
//	(func $slow
//	  global.get $flag
//	  if
//	    unreachable
//	  end
//	  i32.const budgetRefill
//	  global.set $budget
//	  ref.null func          ;; table.grow $yield by 0: a trip to Go
//	  i32.const 0
//	  table.grow $yield
//	  drop)
//
//	(func $charge (param $n i32) (result i32)
//	  global.get $budget
//	  local.get $n
//	  i32.const 3
//	  i32.shr_u
//	  i32.sub
//	  global.set $budget
//	  global.get $budget
//	  i32.const 0
//	  i32.lt_s
//	  if
//	    call $slow
//	  end
//	  local.get $n)
//
// The depth bound's code (see appendSite) is built per site: it holds the
// function's frame weight and $saved local.
func newInserts(flag, budget, depth, yieldTable, slow, charge uint32) inserts {
	c := inserts{depth: depth}
	c.checkPre = appendU32([]byte{0x23}, budget)
	c.checkPre = append(c.checkPre, 0x41)
	c.checkPost = []byte{0x6b, 0x24}
	c.checkPost = appendU32(c.checkPost, budget)
	c.checkPost = append(c.checkPost, 0x23)
	c.checkPost = appendU32(c.checkPost, budget)
	c.checkPost = append(c.checkPost, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10)
	c.checkPost = appendU32(c.checkPost, slow)
	c.checkPost = append(c.checkPost, 0x0b)
	c.callCharge = appendU32([]byte{0x10}, charge)

	s := []byte{0x00, 0x23} // no locals; global.get $flag
	s = appendU32(s, flag)
	s = append(s, 0x04, 0x40, 0x00, 0x0b, 0x41)
	s = appendS32(s, budgetRefill)
	s = append(s, 0x24)
	s = appendU32(s, budget)
	s = append(s, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x0f)
	s = appendU32(s, yieldTable)
	s = append(s, 0x1a, 0x0b)
	c.slowBody = append(appendU32(nil, uint32(len(s))), s...)

	h := []byte{0x00, 0x23} // no locals; global.get $budget
	h = appendU32(h, budget)
	h = append(h, 0x20, 0x00, 0x41, 0x03, 0x76, 0x6b, 0x24)
	h = appendU32(h, budget)
	h = append(h, 0x23)
	h = appendU32(h, budget)
	h = append(h, 0x41, 0x00, 0x48, 0x04, 0x40, 0x10)
	h = appendU32(h, slow)
	h = append(h, 0x0b, 0x20, 0x00, 0x0b)
	c.chargeBody = append(appendU32(nil, uint32(len(h))), h...)
	return c
}

// appendSite appends the code inserted at s:
//
//	;; siteEnter, at the first instruction (W: the frame weight)
//	(local $saved i32)     ;; a new local declaration group (with try_table only)
//	global.get $depth
//	local.tee $saved       ;; (with try_table only)
//	i32.const W
//	i32.add
//	global.set $depth
//	global.get $depth
//	i32.const MaxStack
//	i32.gt_u
//	if
//	  unreachable          ;; past the bound
//	end
//	block (result …)       ;; the wrapper: a branch to the function's label ends here
//
//	;; siteReturn, before return, return_call, return_call_indirect, return_call_ref
//	local.get $saved       ;; with try_table; else: global.get $depth; i32.const W; i32.sub
//	global.set $depth
//
//	;; siteRestore, after a block's end and at a loop's start, in a function with try_table
//	local.get $saved
//	i32.const W
//	i32.add
//	global.set $depth
//
//	;; siteLeave, before the function's final end
//	end                    ;; the wrapper
//	local.get $saved       ;; or, as for siteReturn, the weight subtracted
//	global.set $depth
func (c *inserts) appendSite(out []byte, s site) []byte {
	switch s.kind {
	case siteCheck:
		out = append(out, c.checkPre...)
		out = appendS32(out, s.cost)
		return append(out, c.checkPost...)
	case siteCharge:
		return append(out, c.callCharge...)
	case siteEnter:
		if s.local != noLocal {
			out = append(out, 0x01, 0x7f, 0x23) // (local $saved i32); global.get $depth
			out = appendU32(out, c.depth)
			out = append(out, 0x22) // local.tee $saved
			out = appendU32(out, s.local)
		} else {
			out = append(out, 0x23) // global.get $depth
			out = appendU32(out, c.depth)
		}
		out = append(out, 0x41)
		out = appendS32(out, s.cost)
		out = append(out, 0x6a, 0x24)
		out = appendU32(out, c.depth)
		out = append(out, 0x23)
		out = appendU32(out, c.depth)
		out = append(out, 0x41)
		out = appendS32(out, MaxStack)
		return append(out, 0x4b, 0x04, 0x40, 0x00, 0x0b, 0x02) // i32.gt_u; if; unreachable; end; block (appendCode adds its type)
	case siteReturn:
		return c.appendLeave(out, s)
	case siteBranch:
		return appendU32(append(out, 0x0c), uint32(s.cost))
	case siteRestore:
		out = append(out, 0x20)
		out = appendU32(out, s.local)
		out = append(out, 0x41)
		out = appendS32(out, s.cost)
		out = append(out, 0x6a, 0x24)
		return appendU32(out, c.depth)
	default: // siteLeave
		return c.appendLeave(append(out, 0x0b), s)
	}
}

// appendLeave appends the depth's restore when the function leaves:
// `local.get $saved; global.set $depth` with a $saved local, else
// `global.get $depth; i32.const W; i32.sub; global.set $depth`.
func (c *inserts) appendLeave(out []byte, s site) []byte {
	if s.local != noLocal {
		out = append(out, 0x20)
		out = appendU32(out, s.local)
	} else {
		out = append(out, 0x23)
		out = appendU32(out, c.depth)
		out = append(out, 0x41)
		out = appendS32(out, s.cost)
		out = append(out, 0x6b)
	}
	out = append(out, 0x24)
	return appendU32(out, c.depth)
}

// b2i converts a bool to 0 or 1.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// size is the length of the code inserted at s.
func (c *inserts) size(s site) int {
	var buf [64]byte
	return len(c.appendSite(buf[:0], s))
}

// maxSite is the most code inserted at one site, but for a wrapper's block
// type longer than maxBlockType.
func (c *inserts) maxSite() int {
	return c.size(site{kind: siteEnter, cost: maxWeight, local: noLocal - 1}) + maxBlockType
}

// maxBlockType bounds the block types counted by maxSite (a value type,
// or an s33 type index).
const maxBlockType = 8

// appendCode appends the instrumented code section: the input's function
// count plus 2, each body with the code inserted at its sites, then the
// bodies of $slow and $charge.
func appendCode(out, wasm []byte, bodies []fnBody, sites []site, ins *inserts, importedFuncs uint32) ([]byte, error) {
	size := uint64(sizeU32(uint32(len(bodies)+2))) + uint64(len(ins.slowBody)) + uint64(len(ins.chargeBody))
	for j := range bodies {
		b := &bodies[j]
		// With $saved, the local declaration count gets one more
		// (siteEnter's group).
		n := uint64(sizeU32(b.decls+uint32(b2i(b.saved)))) + uint64(b.end-b.declsEnd)
		for _, st := range sites[b.sites:nextSite(j, bodies, sites)] {
			n += uint64(ins.size(st)) - uint64(st.skip)
			if st.kind == siteEnter {
				n += uint64(len(b.bt))
			}
		}
		if n > 1<<32-1 || b.decls == 1<<32-1 {
			return nil, fmt.Errorf("interrupt: function %d: instrumented body too large", uint64(importedFuncs)+uint64(j))
		}
		b.size = uint32(n)
		size += uint64(sizeU32(b.size)) + n
	}
	if size > 1<<32-1 {
		return nil, errors.New("interrupt: instrumented code section too large")
	}
	out = append(out, secCode)
	out = appendU32(out, uint32(size))
	out = appendU32(out, uint32(len(bodies)+2)) // below 2^32 - 2: checked with the function count
	for j, b := range bodies {
		out = appendU32(out, b.size)
		out = appendU32(out, b.decls+uint32(b2i(b.saved)))
		from := b.declsEnd
		for _, st := range sites[b.sites:nextSite(j, bodies, sites)] {
			out = append(out, wasm[from:st.pos]...)
			out = ins.appendSite(out, st)
			if st.kind == siteEnter {
				out = append(out, b.bt...)
			}
			from = st.pos + int(st.skip)
		}
		out = append(out, wasm[from:b.end]...)
	}
	out = append(out, ins.slowBody...)
	return append(out, ins.chargeBody...), nil
}

// fnBody is one function body of the input: wasm[start:end], its size
// excluded. Its sites are walker.sites[sites:] up to the next body's; size
// is its instrumented size.
type fnBody struct {
	start, end, sites int
	size              uint32
	decls             uint32 // its local declaration count
	declsEnd          int    // the module offset right after that count
	saved             bool   // it gets the $saved local: one more declaration
	bt                []byte // the block type of the wrapper around its code
}

// nextSite is the index in sites of the first site of the body after
// bodies[j].
func nextSite(j int, bodies []fnBody, sites []site) int {
	if j+1 < len(bodies) {
		return bodies[j+1].sites
	}
	return len(sites)
}

// cursor reads the contents of one section (b is the module cut at the
// section's end, so no read goes past it). The first error sticks.
type cursor struct {
	b   []byte
	pos int
	sec string // "import section"
	err error
}

func (c *cursor) fail(at int, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("interrupt: %s at offset %#x: %s", c.sec, at, fmt.Sprintf(format, args...))
	}
}

func (c *cursor) u32(what string) uint32 {
	if c.err != nil {
		return 0
	}
	v, next, st := readU32(c.b, c.pos)
	if st != lebOK {
		c.fail(c.pos, "%s", lebMessage(st, what))
		return 0
	}
	c.pos = next
	return v
}

func (c *cursor) byte(what string) byte {
	if c.err != nil {
		return 0
	}
	if c.pos >= len(c.b) {
		c.fail(c.pos, "truncated %s", what)
		return 0
	}
	c.pos++
	return c.b[c.pos-1]
}

// name reads a vec(byte) (a name) and returns it.
func (c *cursor) name(what string) []byte {
	n := c.u32(what + " length")
	if c.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(c.b)-c.pos) {
		c.fail(c.pos, "%s of %d bytes exceeds the section", what, n)
		return nil
	}
	c.pos += int(n)
	return c.b[c.pos-int(n) : c.pos]
}

// skip runs a (pos -> pos, message) skipper such as valType.
func (c *cursor) skip(f func([]byte, int) (int, string)) {
	if c.err != nil {
		return
	}
	next, msg := f(c.b, c.pos)
	if msg != "" {
		c.fail(c.pos, "%s", msg)
		return
	}
	c.pos = next
}

// limits skips a limits: flags 0x00–0x03 (bit 0: a maximum follows; bit
// 1: shared), a u32 minimum and the optional u32 maximum.
// It returns the minimum.
func (c *cursor) limits() uint32 {
	at := c.pos
	flags := c.byte("limits")
	if c.err != nil {
		return 0
	}
	if flags > 3 {
		c.fail(at, "unsupported limits flags %#02x", flags)
		return 0
	}
	low := c.u32("limits minimum")
	if flags&1 != 0 {
		c.u32("limits maximum")
	}
	return low
}

// end fails unless the whole section was read.
func (c *cursor) end() {
	if c.err == nil && c.pos != len(c.b) {
		c.fail(c.pos, "%d bytes after the last entry", len(c.b)-c.pos)
	}
}

// importCounts counts imports by kind.
type importCounts struct {
	funcs, tables, globals uint32
	tableEntries           uint64 // the imported tables' minimum sizes, summed
}

// scanImports counts the imported functions, tables and globals. It parses
// every import descriptor exactly — the new globals' and table's indexes
// depend on the counts — and fails on any it does not know.
func scanImports(wasm []byte, s section) (counts importCounts, err error) {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "import section"}
	n := c.u32("import count")
	for i := uint32(0); i < n && c.err == nil; i++ {
		c.name("module name")
		c.name("import name")
		at := c.pos
		switch kind := c.byte("import kind"); kind {
		case 0x00: // func typeidx
			c.u32("function type index")
			counts.funcs++
		case 0x01: // table: reftype limits
			if c.err == nil && c.pos < len(c.b) && c.b[c.pos] == 0x40 {
				c.fail(c.pos, "table import with an initializer expression")
				break
			}
			c.skip(refType)
			counts.tableEntries += uint64(c.limits())
			counts.tables++
		case 0x02: // memory: limits
			c.limits()
		case 0x03: // global: valtype mut
			c.skip(valType)
			at := c.pos
			if m := c.byte("global mutability"); m > 1 {
				c.fail(at, "invalid global mutability %#02x", m)
			}
			counts.globals++
		case 0x04: // tag: attribute 0x00, typeidx
			at := c.pos
			if a := c.byte("tag attribute"); a != 0 {
				c.fail(at, "invalid tag attribute %#02x", a)
			}
			c.u32("tag type index")
		default:
			if c.err == nil {
				c.fail(at, "unknown import kind %#02x", kind)
			}
		}
	}
	c.end()
	return counts, c.err
}

// refType skips a reference type: funcref, externref, exnref, or 0x63/0x64
// and a heap type.
func refType(b []byte, pc int) (int, string) {
	if pc < len(b) {
		switch b[pc] {
		case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b:
			return pc, fmt.Sprintf("%#02x is not a reference type", b[pc])
		}
	}
	return valType(b, pc)
}

// scanExports reads the export section. It fails if name is already
// exported or if an export names a function, table or global index at or
// beyond the module's count (in counts: imported and defined). It returns
// the export count and where the entries begin.
func scanExports(wasm []byte, s section, name string, counts importCounts) (count uint32, entries int, err error) {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "export section"}
	count = c.u32("export count")
	entries = c.pos
	for i := uint32(0); i < count && c.err == nil; i++ {
		at := c.pos
		n := c.name("export name")
		kindAt := c.pos
		kind := c.byte("export kind")
		idx := c.u32("export index")
		if c.err != nil {
			break
		}
		if string(n) == name || string(n) == name+DepthSuffix {
			c.fail(at, "the module already exports %q", n)
		}
		switch {
		case kind > 0x04:
			c.fail(kindAt, "unknown export kind %#02x", kind)
		case kind == 0x00 && idx >= counts.funcs:
			c.fail(at, "export %q names function %d but the module has only %d functions", n, idx, counts.funcs)
		case kind == 0x01 && idx >= counts.tables:
			c.fail(at, "export %q names table %d but the module has only %d tables", n, idx, counts.tables)
		case kind == 0x03 && idx >= counts.globals:
			c.fail(at, "export %q names global %d but the module has only %d globals", n, idx, counts.globals)
		}
	}
	c.end()
	return count, entries, c.err
}

// typeInfo is what Instrument needs of a function type: its parameter
// count and its results (their encoded value types, without the count).
type typeInfo struct {
	params  uint32
	nres    uint32
	results []byte
}

// scanTypes reads the type section into v (its count and entries) and
// returns every type and the indexes of the first function types () -> ()
// and (i32) -> (i32), or -1. Every entry must be a function type (0x60):
// wazero v1.12 supports no other.
func scanTypes(wasm []byte, s section, v *vecSection) (types []typeInfo, voidType, i32Type int64, err error) {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "type section"}
	v.count = c.u32("type count")
	entries := c.pos
	voidType, i32Type = -1, -1
	types = make([]typeInfo, 0, v.count) // count ≤ the section's size: checked by Instrument
	for i := uint32(0); i < v.count && c.err == nil; i++ {
		at := c.pos
		if form := c.byte("type form"); c.err == nil && form != 0x60 {
			c.fail(at, "unsupported type form %#02x (only function types, 0x60, are supported)", form)
			break
		}
		var sig [2][]byte // params, results: one-byte types only (else nil)
		var ft typeInfo
		for k := range sig {
			n := c.u32("type vector length")
			one := n == 1
			from := c.pos
			for j := uint32(0); j < n && c.err == nil; j++ {
				t := c.pos
				c.skip(valType)
				if one && c.pos == t+1 {
					sig[k] = c.b[t:c.pos]
				}
			}
			if n == 0 {
				sig[k] = []byte{}
			}
			if k == 0 {
				ft.params = n
			} else if c.err == nil {
				ft.nres, ft.results = n, c.b[from:c.pos]
			}
		}
		if c.err != nil {
			break
		}
		types = append(types, ft)
		switch {
		case voidType < 0 && len(sig[0]) == 0 && sig[0] != nil && len(sig[1]) == 0 && sig[1] != nil:
			voidType = int64(i)
		case i32Type < 0 && bytes.Equal(sig[0], []byte{0x7f}) && bytes.Equal(sig[1], []byte{0x7f}):
			i32Type = int64(i)
		}
	}
	c.end()
	v.rest = wasm[entries:s.end]
	return types, voidType, i32Type, c.err
}
