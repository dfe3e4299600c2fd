package interrupt

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Section ids.
const (
	secCustom = 0
	secImport = 2
	secTable  = 4
	secGlobal = 6
	secExport = 7
	secCode   = 10
)

// yieldEvery is how many checks run between two trips to Go (see the
// package documentation): small enough that a stop-the-world never waits
// long for a running guest, large enough that the trips cost nothing
// measurable. The countdown's i32.const below assumes it fits in two LEB128
// bytes.
const yieldEvery = 1000

// yieldEvery must take exactly two LEB128 bytes.
const (
	_ uint = yieldEvery - 0x80
	_ uint = 0x3fff - yieldEvery
)

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

// vecSection is a vector section (table, global, export) as it will be
// written: the input's count and entries (none when the input has no such
// section) followed by the new entries.
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

// Instrument returns a copy of the binary WebAssembly module wasm in which
// the body of every function defined by the module begins with, and every
// `loop` instruction's body begins with, the sequence
//
//	global.get $flag; if (empty blocktype); unreachable; end
//
// where $flag is a new (mut i32) global initialised to (i32.const 0),
// appended after the module's own globals (so no existing index changes)
// and exported under the name export. Setting the exported global to a
// non-zero value makes the running guest trap ("unreachable") at its next
// function entry or loop iteration.
//
// Each check is followed by a countdown that, once every 1000 checks, makes
// a trip to Go (a table.grow by 0 of a new, empty, private table, which
// wazero runs in Go): the Go runtime cannot preempt native code, so without
// it a running guest would block every garbage collection's stop-the-world
// — and with it the whole process, including the goroutine that would set
// the flag. The countdown is a second new (mut i32) global, not exported;
// the table is appended after the module's own tables. See the package
// documentation for the exact code.
//
// Every section other than the table, global, export and code sections is
// copied byte for byte; a missing table, global or export section is
// created at its place in the section order.
//
// Instrument parses every instruction of every function body and fails —
// it never guesses — on anything it does not understand: an unknown
// opcode, a truncated or over-long immediate, a body without its final
// end, a size that disagrees with the bytes, or an encoding that wazero
// v1.12 reads differently from the spec or compiles differently from how it
// validates it (such as select with a (ref …) type; see the package
// documentation). It also fails if the module
// already exports the name export, or if any global.get or global.set
// names a global index at or beyond the module's global count (an invalid
// module, which would otherwise reach the new globals). Errors begin with
// "interrupt: "; errors in a function body name the function (its index in
// the function index space, imports included) and the module byte offset
// of the instruction at fault.
//
// Two limits protect wazero, which allocates before it validates: a vector
// section may not declare more entries than it has bytes, and a function may
// not declare more than 50000 locals.
//
// Instrument does not validate the module otherwise: compile the result
// with wazero, which does.
func Instrument(wasm []byte, export string) ([]byte, error) {
	if !utf8.ValidString(export) {
		return nil, errors.New("interrupt: export name is not valid UTF-8")
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("interrupt: not a WebAssembly binary module (bad magic number)")
	}
	if !bytes.Equal(wasm[4:8], []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("interrupt: unsupported WebAssembly binary version % x", wasm[4:8])
	}

	// The section table, in order, and the sections we rewrite.
	var (
		sections []section
		imports  = -1
		code     = -1
		lastRank = 0
		tables   = vecSection{id: secTable, index: -1}
		globals  = vecSection{id: secGlobal, index: -1}
		exports  = vecSection{id: secExport, index: -1}
	)
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
			switch id {
			case secImport:
				imports = len(sections)
			case secTable:
				tables.index = len(sections)
			case secGlobal:
				globals.index = len(sections)
			case secExport:
				exports.index = len(sections)
			case secCode:
				code = len(sections)
			}
		}
		end := body + int(size)
		sections = append(sections, section{id: id, start: pos, end: end, body: body})
		pos = end
	}

	var imported importCounts
	if imports >= 0 {
		var err error
		if imported, err = scanImports(wasm, sections[imports]); err != nil {
			return nil, err
		}
	}
	// The entry counts of the table and global sections (their entries are
	// copied as they are).
	for _, v := range []*vecSection{&tables, &globals} {
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
	totalGlobals := uint64(imported.globals) + uint64(globals.count)
	totalTables := uint64(imported.tables) + uint64(tables.count)
	if totalGlobals >= 1<<32-2 || totalTables >= 1<<32-1 {
		return nil, errors.New("interrupt: too many globals or tables")
	}
	flag := uint32(totalGlobals) // the new globals' and table's indexes
	countdown := flag + 1
	yieldTable := uint32(totalTables)

	if exports.index >= 0 {
		s := sections[exports.index]
		n, entries, err := scanExports(wasm, s, export, flag)
		if err != nil {
			return nil, err
		}
		exports.count, exports.rest = n, wasm[entries:s.end]
	}

	// Parse the code section: every body, and where its checks go.
	var t opTables
	t.init()
	w := walker{opTables: &t, globals: flag}
	var bodies []fnBody
	codeCountEnd := 0
	if code >= 0 {
		s := sections[code]
		lim := wasm[:s.end]
		n, pos, st := readU32(lim, s.body)
		if st != lebOK {
			return nil, fmt.Errorf("interrupt: code section at offset %#x: %s", s.body, lebMessage(st, "function count"))
		}
		codeCountEnd = pos
		bodies = make([]fnBody, 0, n)           // n ≤ the section's size: checked above
		w.ins = make([]int, 0, int(n)+int(n)/2) // a guess: many functions have no loop
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
			bodies = append(bodies, fnBody{start: start, end: end, ins: len(w.ins)})
			if at, msg := w.body(wasm[start:end], start); msg != "" {
				return nil, fmt.Errorf("interrupt: function %d (code offset %#x): %s", fn, start+at, msg)
			}
			pos = end
		}
		if pos != s.end {
			return nil, fmt.Errorf("interrupt: code section at offset %#x: %d bytes after the last function body", pos, s.end-pos)
		}
	}

	check := checkCode(flag, countdown, yieldTable)

	// The new entries.
	tables.add, tables.added = 1, []byte{0x70, 0x00, 0x00} // funcref, min 0, no max
	globals.add, globals.added = 2, []byte{
		0x7f, 0x01, 0x41, 0x00, 0x0b, // $flag: (mut i32) (i32.const 0)
		0x7f, 0x01, 0x41, 0x80 | yieldEvery&0x7f, yieldEvery >> 7, 0x0b, // $countdown: (mut i32) (i32.const yieldEvery)
	}
	exports.add = 1
	exports.added = appendU32(nil, uint32(len(export)))
	exports.added = append(exports.added, export...)
	exports.added = append(exports.added, 0x03) // global
	exports.added = appendU32(exports.added, flag)

	// Where to put a missing section: right after the last section that
	// must precede it (-1: right after the header).
	vecs := []*vecSection{&tables, &globals, &exports} // in section order
	for _, v := range vecs {
		v.after = -1
		for i, s := range sections {
			if s.id != secCustom && sectionRank(s.id) < sectionRank(v.id) {
				v.after = i
			}
		}
	}

	grow := len(w.ins)*len(check) + 5*len(bodies) + len(export) + 64
	out := make([]byte, 0, len(wasm)+grow)
	out = append(out, wasm[:8]...)
	emitMissing := func(after int) (err error) {
		for _, v := range vecs {
			if v.index < 0 && v.after == after {
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
		switch i {
		case tables.index:
			out, err = tables.appendTo(out)
		case globals.index:
			out, err = globals.appendTo(out)
		case exports.index:
			out, err = exports.appendTo(out)
		case code:
			out, err = appendCode(out, wasm, s, codeCountEnd, bodies, w.ins, check, imported.funcs)
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

// checkCode is the code inserted at every function entry and loop header:
// the interrupt check, then the countdown to the next trip to Go.
//
//	global.get $flag            ;; the interrupt check
//	if
//	  unreachable
//	end
//	global.get $countdown       ;; $countdown -= 1
//	i32.const -1
//	i32.add
//	global.set $countdown
//	global.get $countdown
//	i32.eqz
//	if                          ;; every yieldEvery checks:
//	  i32.const yieldEvery      ;;   $countdown = yieldEvery
//	  global.set $countdown
//	  ref.null func             ;;   table.grow $yield by 0: a trip to Go
//	  i32.const 0
//	  table.grow $yield
//	  drop
//	end
func checkCode(flag, countdown, yieldTable uint32) []byte {
	c := []byte{0x23}
	c = appendU32(c, flag)
	c = append(c, 0x04, 0x40, 0x00, 0x0b)
	c = append(c, 0x23)
	c = appendU32(c, countdown)
	c = append(c, 0x41, 0x7f, 0x6a, 0x24)
	c = appendU32(c, countdown)
	c = append(c, 0x23)
	c = appendU32(c, countdown)
	c = append(c, 0x45, 0x04, 0x40)
	c = append(c, 0x41, 0x80|yieldEvery&0x7f, yieldEvery>>7, 0x24)
	c = appendU32(c, countdown)
	c = append(c, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x0f)
	c = appendU32(c, yieldTable)
	return append(c, 0x1a, 0x0b)
}

// appendCode appends the instrumented code section: the input's function
// count as it was encoded, then each body with check inserted at its
// offsets in ins.
func appendCode(out, wasm []byte, s section, countEnd int, bodies []fnBody, ins []int, check []byte, importedFuncs uint32) ([]byte, error) {
	size := uint64(countEnd - s.body)
	for j, b := range bodies {
		n := uint64(b.end-b.start) + uint64(nextIns(j, bodies, ins)-b.ins)*uint64(len(check))
		if n > 1<<32-1 {
			return nil, fmt.Errorf("interrupt: function %d: instrumented body too large", uint64(importedFuncs)+uint64(j))
		}
		size += uint64(sizeU32(uint32(n))) + n
	}
	if size > 1<<32-1 {
		return nil, errors.New("interrupt: instrumented code section too large")
	}
	out = append(out, secCode)
	out = appendU32(out, uint32(size))
	out = append(out, wasm[s.body:countEnd]...)
	for j, b := range bodies {
		at := ins[b.ins:nextIns(j, bodies, ins)]
		out = appendU32(out, uint32(b.end-b.start+len(at)*len(check)))
		from := b.start
		for _, p := range at {
			out = append(out, wasm[from:p]...)
			out = append(out, check...)
			from = p
		}
		out = append(out, wasm[from:b.end]...)
	}
	return out, nil
}

// fnBody is one function body of the input: wasm[start:end], its size
// excluded. Its checks go at walker.ins[ins:] up to the next body's ins.
type fnBody struct{ start, end, ins int }

// nextIns is the index in ins of the first check of the body after bodies[j].
func nextIns(j int, bodies []fnBody, ins []int) int {
	if j+1 < len(bodies) {
		return bodies[j+1].ins
	}
	return len(ins)
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
func (c *cursor) limits() {
	at := c.pos
	flags := c.byte("limits")
	if c.err != nil {
		return
	}
	if flags > 3 {
		c.fail(at, "unsupported limits flags %#02x", flags)
		return
	}
	c.u32("limits minimum")
	if flags&1 != 0 {
		c.u32("limits maximum")
	}
}

// end fails unless the whole section was read.
func (c *cursor) end() {
	if c.err == nil && c.pos != len(c.b) {
		c.fail(c.pos, "%d bytes after the last entry", len(c.b)-c.pos)
	}
}

// importCounts counts imports by kind.
type importCounts struct{ funcs, tables, globals uint32 }

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
			c.limits()
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
// exported or if a global export names an index at or beyond the global
// count (flag, the index the new global gets). It returns the export count
// and where the entries begin.
func scanExports(wasm []byte, s section, name string, flag uint32) (count uint32, entries int, err error) {
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
		if string(n) == name {
			c.fail(at, "the module already exports %q", name)
		}
		switch {
		case kind > 0x04:
			c.fail(kindAt, "unknown export kind %#02x", kind)
		case kind == 0x03 && idx >= flag:
			c.fail(at, "export %q names global %d but the module has only %d globals", n, idx, flag)
		}
	}
	c.end()
	return count, entries, c.err
}
