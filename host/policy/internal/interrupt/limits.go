package interrupt

import (
	"errors"
	"fmt"
)

// Module complexity limits. wazero compiles every function of a module
// before it can run any, some of its passes are superlinear, and it
// allocates for declared sizes before it validates them: a few kilobytes
// can cost it minutes of CPU or gigabytes of memory. Instrument and Scan
// refuse a module past any of these limits, naming the limit, before any
// of it is compiled.
//
// Each limit is at least 4x the largest value measured in the real guests
// (the four Go example policies and the Go conformance guest, about 2 MB
// each, built by Go 1.25 with -buildmode=c-shared, and the C conformance
// guest):
//
//	functions 1376, types 14, globals 8, tables 1, table entries 5461,
//	data segments 23358, exports 10, code section 1.27 MB, largest body
//	12435 bytes, control nesting 296, loop nesting 2 (C; Go: 1),
//	br_table targets 535.
//
// Measured costs of wazero v1.12's compiler (amd64) that they bound: 1000
// nested loops compile in 0.09 s, 4000 in 1.2 s, 10000 (30 KB) in 18.6 s
// (superlinear in the loop nesting; the same nesting of blocks takes 0.3
// s, of ifs 1.5 s); a br_table of 10⁵ targets takes 2 s and of 10⁶ 195 s
// (superlinear in its target count); 10⁵ empty functions 1.4 s (linear).
// Instrument itself runs in milliseconds on all of them.
const (
	// MaxFunctions bounds the functions, imported and defined.
	MaxFunctions = 50_000
	// MaxTypes bounds the type section's entries.
	MaxTypes = 10_000
	// MaxGlobals bounds the globals, imported and defined. Each costs the
	// host about 140 bytes (wazero v1.12: 50 in the compiled module, 88
	// per instance), outside linear memory.
	MaxGlobals = 10_000
	// MaxTables bounds the tables, imported and defined.
	MaxTables = 100
	// MaxTableEntries bounds the sum of the tables' minimum sizes (each
	// entry costs 8 bytes per instance, allocated at instantiation).
	MaxTableEntries = 1 << 20
	// MaxElementEntries bounds the entries of all element segments.
	MaxElementEntries = 1 << 20
	// MaxDataSegments bounds the data section's segments.
	MaxDataSegments = 1 << 17
	// MaxExports bounds the export section's entries.
	MaxExports = 10_000
	// MaxCodeBytes bounds the code section's size.
	MaxCodeBytes = 8 << 20
	// MaxBodyBytes bounds one function body's size.
	MaxBodyBytes = 1 << 20
	// MaxNesting bounds the control nesting depth of a function body:
	// the blocks, loops, ifs and try_tables open at one instruction.
	MaxNesting = 2048
	// MaxLoopNesting bounds the loops open at one instruction, which
	// wazero's compiler pays for superlinearly (Go's wasm backend opens
	// one dispatch loop per function and a block per resume point).
	MaxLoopNesting = 32
	// MaxBrTableTargets bounds the targets of one br_table, its default
	// included.
	MaxBrTableTargets = 4096
)

// ErrLimit is wrapped by every error of Scan and Instrument that reports a
// module past one of the limits above (errors.Is tells it from a malformed
// module).
var ErrLimit = errors.New("module complexity limit")

// Footprint is what every instance of a module costs the host outside its
// linear memory, as declared by the module.
type Footprint struct {
	// Globals counts the globals, imported and defined.
	Globals uint64
	// TableEntries sums the minimum sizes of the tables, imported and
	// defined.
	TableEntries uint64
}

// Scan checks the module-level limits of wasm (every limit above but the
// per-instruction ones, MaxNesting, MaxLoopNesting and MaxBrTableTargets,
// which Instrument checks as it walks the code) and returns its
// footprint. It reads the section headers and the import, table, element
// and code section entries (the code only for the body sizes), so it
// costs microseconds where a compilation can cost seconds. Instrument
// makes the same checks.
func Scan(wasm []byte) (Footprint, error) {
	sections, err := readSections(wasm)
	if err != nil {
		return Footprint{}, err
	}
	return checkLimits(wasm, sections)
}

// limitError is the error for a count past its limit.
func limitError(what string, n uint64, limit int) error {
	return limitErr(fmt.Sprintf("interrupt: %s %d exceeds the limit of %d", what, n, limit))
}

// checkLimits is Scan on the section table.
func checkLimits(wasm []byte, sections []section) (Footprint, error) {
	var (
		fp       Footprint
		imported importCounts
		funcs    uint64
		tables   uint64
	)
	for _, s := range sections {
		if s.id == secCustom {
			continue
		}
		count, _, _ := readU32(wasm[:s.end], s.body) // read by readSections for vector sections
		switch s.id {
		case secType:
			if count > MaxTypes {
				return fp, limitError("type count", uint64(count), MaxTypes)
			}
		case secImport:
			var err error
			if imported, err = scanImports(wasm, s); err != nil {
				return fp, err
			}
		case secFunction:
			funcs = uint64(count)
		case secTable:
			n, entries, err := scanTables(wasm, s)
			if err != nil {
				return fp, err
			}
			tables, fp.TableEntries = uint64(n), entries
		case secGlobal:
			fp.Globals = uint64(count)
		case secExport:
			if count > MaxExports {
				return fp, limitError("export count", uint64(count), MaxExports)
			}
		case 9: // element
			if err := scanElements(wasm, s); err != nil {
				return fp, err
			}
		case 11: // data
			if count > MaxDataSegments {
				return fp, limitError("data segment count", uint64(count), MaxDataSegments)
			}
		case secCode:
			if size := s.end - s.body; size > MaxCodeBytes {
				return fp, limitError("code section size", uint64(size), MaxCodeBytes)
			}
			if err := scanBodySizes(wasm, s, imported.funcs); err != nil {
				return fp, err
			}
		}
	}
	fp.Globals += uint64(imported.globals)
	fp.TableEntries += imported.tableEntries
	switch {
	case funcs+uint64(imported.funcs) > MaxFunctions:
		return fp, limitError("function count (imported and defined)", funcs+uint64(imported.funcs), MaxFunctions)
	case fp.Globals > MaxGlobals:
		return fp, limitError("global count (imported and defined)", fp.Globals, MaxGlobals)
	case tables+uint64(imported.tables) > MaxTables:
		return fp, limitError("table count (imported and defined)", tables+uint64(imported.tables), MaxTables)
	case fp.TableEntries > MaxTableEntries:
		return fp, limitError("total table minimum size", fp.TableEntries, MaxTableEntries)
	}
	return fp, nil
}

// scanTables reads the table section and returns its table count and the
// sum of their minimum sizes. An entry is a table type (a reference type
// and limits) or, with the function references proposal, 0x40 0x00, a
// table type and an initializer expression.
func scanTables(wasm []byte, s section) (uint32, uint64, error) {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "table section"}
	n := c.u32("table count")
	var entries uint64
	for i := uint32(0); i < n && c.err == nil; i++ {
		init := c.pos+1 < len(c.b) && c.b[c.pos] == 0x40 && c.b[c.pos+1] == 0x00
		if init {
			c.pos += 2
		}
		c.skip(refType)
		entries += uint64(c.limits())
		if init {
			c.constExpr()
		}
	}
	c.end()
	return n, entries, c.err
}

// scanElements reads the element section and checks its total entry
// count. Each segment is one of the eight forms of the spec (flags 0–7):
// bit 0 passive or declarative, bit 1 an explicit table index (active) or
// declarative (passive), bit 2 expressions instead of function indexes.
func scanElements(wasm []byte, s section) error {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "element section"}
	n := c.u32("element segment count")
	var total uint64
	for i := uint32(0); i < n && c.err == nil; i++ {
		at := c.pos
		flags := c.u32("element segment flags")
		if c.err != nil {
			break
		}
		if flags > 7 {
			c.fail(at, "unknown element segment flags %#x", flags)
			break
		}
		if flags&3 == 2 {
			c.u32("element table index")
		}
		if flags&1 == 0 {
			c.constExpr() // the offset of an active segment
		}
		if flags&3 != 0 { // an element kind (0x00) or a reference type
			if flags&4 == 0 {
				c.byte("element kind")
			} else {
				c.skip(refType)
			}
		}
		countAt := c.pos
		k := c.u32("element count")
		if c.err != nil {
			break
		}
		if uint64(k) > uint64(len(c.b)-c.pos) {
			c.fail(countAt, "%d elements cannot fit in %d bytes", k, len(c.b)-c.pos)
			break
		}
		if total += uint64(k); total > MaxElementEntries {
			return limitError("element entry count", total, MaxElementEntries)
		}
		for j := uint32(0); j < k && c.err == nil; j++ {
			if flags&4 == 0 {
				c.u32("element function index")
			} else {
				c.constExpr()
			}
		}
	}
	c.end()
	return c.err
}

// scanBodySizes checks the size of every function body in the code
// section (the body loop of Instrument parses them).
func scanBodySizes(wasm []byte, s section, importedFuncs uint32) error {
	c := &cursor{b: wasm[:s.end], pos: s.body, sec: "code section"}
	n := c.u32("function count")
	for i := uint32(0); i < n && c.err == nil; i++ {
		size := c.u32("body size")
		if c.err != nil {
			break
		}
		if size > MaxBodyBytes {
			return limitErr(fmt.Sprintf("interrupt: function %d: body size %d exceeds the limit of %d", uint64(importedFuncs)+uint64(i), size, MaxBodyBytes))
		}
		if uint64(size) > uint64(len(c.b)-c.pos) {
			break // Instrument reports it
		}
		c.pos += int(size)
	}
	return c.err
}

// constExpr skips a constant expression up to and including its end:
// the constant instructions of wasm 2.0 and of the extended constant
// expressions proposal.
func (c *cursor) constExpr() {
	for c.err == nil {
		at := c.pos
		switch op := c.byte("constant expression"); op {
		case 0x0b: // end
			return
		case 0x41: // i32.const
			c.skip(func(b []byte, pc int) (int, string) { return skipConst(b, pc, 5, maskS32, "i32.const") })
		case 0x42: // i64.const
			c.skip(func(b []byte, pc int) (int, string) { return skipConst(b, pc, 10, maskS64, "i64.const") })
		case 0x43, 0x44: // f32.const, f64.const
			if n := 4 + 4*int(op-0x43); len(c.b)-c.pos >= n {
				c.pos += n
			} else {
				c.fail(at, "truncated constant")
			}
		case 0xd0: // ref.null
			c.skip(heapType)
		case 0x23, 0xd2: // global.get, ref.func
			c.u32("constant expression index")
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // i32/i64 add, sub, mul
		case 0xfd: // v128.const
			if sub := c.u32("SIMD opcode"); c.err == nil {
				if sub != 12 || len(c.b)-c.pos < 16 {
					c.fail(at, "unsupported instruction 0xfd %d in a constant expression", sub)
				} else {
					c.pos += 16
				}
			}
		default:
			if c.err == nil {
				c.fail(at, "unsupported instruction %#02x in a constant expression", op)
			}
		}
	}
}

// skipConst skips a signed LEB128 immediate for cursor.skip.
func skipConst(b []byte, pc, maxLen int, mask byte, what string) (int, string) {
	next, st := skipLEB(b, pc, maxLen, mask, true)
	if st != lebOK {
		return pc, lebMessage(st, what)
	}
	return next, ""
}

// limitErr is an error past a limit: its message, wrapping ErrLimit for
// errors.Is without adding to the text.
type limitErr string

func (e limitErr) Error() string { return string(e) }
func (e limitErr) Unwrap() error { return ErrLimit }
