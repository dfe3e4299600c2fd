package interrupt

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// oneBody is simpleModule with a single function whose body is code (no
// locals), and the module offset of the body's first instruction: the body
// is the module's last bytes.
func oneBody(code ...byte) (wasm []byte, start int) {
	wasm = simpleModule([][]byte{fn(code...)})
	return wasm, len(wasm) - len(code)
}

func TestErrors(t *testing.T) {
	type tc struct {
		name   string
		wasm   []byte
		export string // default testExport
		want   string // the error text, or a part of it
		exact  bool   // want is the whole error text
	}
	var tests []tc
	add := func(name string, wasm []byte, want string) {
		tests = append(tests, tc{name: name, wasm: wasm, want: want})
	}
	// exactAt adds a single-function module whose error is at offset
	// start+at of its body.
	exactAt := func(name string, at int, msg string, code ...byte) {
		wasm, start := oneBody(code...)
		want := fmt.Sprintf("interrupt: function 0 (code offset %#x): %s", start+at, msg)
		tests = append(tests, tc{name: name, wasm: wasm, want: want, exact: true})
	}

	valid, _ := oneBody(0x41, 0x00, 0x0b)

	// The module.
	add("empty input", nil, "interrupt: not a WebAssembly binary module (bad magic number)")
	add("short header", []byte("\x00asm\x01"), "bad magic number")
	add("bad version", []byte("\x00asm\x02\x00\x00\x00"), "interrupt: unsupported WebAssembly binary version 02 00 00 00")
	add("truncated code section", valid[:len(valid)-2], "exceeds the 4 bytes left in the module")
	add("truncated section size", cat(header, []byte{0x01, 0x80}), "interrupt: section 1 at offset 0x8: truncated size")
	add("section size LEB too long", cat(header, []byte{0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), "size: LEB128 too long")
	add("section out of order", cat(header, sec(10, vec()), sec(1, vec())), "interrupt: section 1 at offset 0xb is out of order or repeated")
	add("repeated section", cat(header, sec(1, vec()), sec(1, vec())), "is out of order or repeated")
	add("unknown section", cat(header, sec(14, nil)), "interrupt: unknown section id 14 at offset 0x8")
	tests = append(tests, tc{name: "invalid export name", wasm: valid, export: "\xff", want: "interrupt: export name is not valid UTF-8", exact: true})

	// Imports and exports.
	add("unknown import kind", cat(header, sec(2, vec(cat(str("m"), str("n"), []byte{0x05})))), "unknown import kind 0x05")
	add("table import with initializer", cat(header, sec(2, vec(cat(str("m"), str("n"), []byte{0x01, 0x40, 0x00, 0x70, 0x00, 0x01})))), "table import with an initializer expression")
	add("global import of unknown type", cat(header, sec(2, vec(cat(str("m"), str("n"), []byte{0x03, 0x55, 0x00})))), "unknown value type 0x55")
	add("bytes after the last import", cat(header, sec(2, vec(cat(str("m"), str("n"), []byte{0x03, 0x7f, 0x00})), []byte{0x00})), "1 bytes after the last entry")
	add("duplicate export name", cat(header, sec(7, vec(cat(str(testExport), []byte{0x02}, leb(0))))),
		`interrupt: export section at offset 0xb: the module already exports "warden.interrupt"`)
	add("duplicate depth export name", cat(header, sec(7, vec(cat(str(testExport+DepthSuffix), []byte{0x02}, leb(0))))),
		`interrupt: export section at offset 0xb: the module already exports "warden.interrupt.depth"`)
	add("export of a global out of range", cat(header, sec(7, vec(cat(str("g"), []byte{0x03}, leb(0))))),
		`export "g" names global 0 but the module has only 0 globals`)
	add("truncated export name", cat(header, sec(7, []byte{0x01, 0x05, 'a'})), "export name of 5 bytes exceeds the section")

	// The code section and function bodies.
	add("function count too large", cat(header, sec(10, leb(1000))), "interrupt: section 10 at offset 0x8: 1000 entries cannot fit in 0 bytes")
	add("global count too large", []byte("\x00asm\x01\x00\x00\x00\x06\f\xcb\xd2\xd20\xd2\xd2\xd200000"), // a fuzz find
		"interrupt: section 6 at offset 0x8: 102017355 entries cannot fit in 8 bytes")
	add("empty vector section", cat(header, sec(1, nil)), "interrupt: section 1 at offset 0x8: truncated entry count")
	add("body size beyond the section", cat(header, sec(10, leb(1), leb(9), []byte{0x00, 0x0b})),
		"interrupt: function 0 (code offset 0xb): body size 9 exceeds the 2 bytes left in the code section")
	add("bytes after the last body", cat(header, sec(10, vec(fn(0x0b)), []byte{0x01})), "1 bytes after the last function body")
	exactAt("unknown opcode", 0, "unknown opcode 0xfc 0x55", 0xfc, 0x55, 0x0b)
	exactAt("unknown one-byte opcode", 2, "unknown opcode 0x27", 0x41, 0x00, 0x27, 0x0b)
	exactAt("legacy try", 0, "unknown opcode 0x06", 0x06, 0x40, 0x0b, 0x0b)
	exactAt("LEB too long", 0, "immediate of opcode 0x41: LEB128 too long", 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b)
	exactAt("u32 overflow", 0, "immediate of opcode 0x20: LEB128 overflows its type", 0x20, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x0b)
	exactAt("s32 overflow", 0, "immediate of opcode 0x41: LEB128 overflows its type", 0x41, 0xff, 0xff, 0xff, 0xff, 0x4f, 0x0b)
	exactAt("s64 too long", 0, "immediate of opcode 0x42: LEB128 too long", 0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x0b)
	exactAt("truncated f64", 0, "truncated immediate of opcode 0x44", 0x44, 0x00, 0x0b)
	exactAt("truncated br_table", 0, "truncated immediate of opcode 0x0e", 0x0e, 0x05, 0x00, 0x0b)
	exactAt("br_table count past the limit", 0, "br_table with 4294967296 targets exceeds the limit of 4096", 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x0b)
	exactAt("body without end", 2, "function body ends without its final end", 0x41, 0x00)
	exactAt("block without end", 3, "function body ends without its final end", 0x02, 0x40, 0x0b)
	exactAt("bytes after the final end", 1, "1 bytes after the function's final end", 0x0b, 0x01)
	exactAt("invalid block type", 0, "opcode 0x02: invalid block type -48", 0x02, 0x50, 0x0b, 0x0b)
	exactAt("unknown heap type", 0, "ref.null: unknown heap type -18", 0xd0, 0x6e, 0x0b)
	exactAt("unknown catch kind", 0, "try_table: unknown catch kind 0x04", 0x1f, 0x40, 0x01, 0x04, 0x00, 0x0b, 0x0b)
	exactAt("memory.grow reserved byte", 2, "opcode 0x40: reserved byte 0x01 is not 0x00", 0x41, 0x00, 0x40, 0x01, 0x1a, 0x0b)
	exactAt("memory.fill reserved byte", 6, "opcode 0xfc 0x0b: reserved byte 0x80 is not 0x00",
		0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0b, 0x80, 0x00, 0x0b)
	exactAt("relaxed SIMD", 0, "relaxed SIMD opcode 0xfd 0x100 is not supported", 0xfd, 0x80, 0x02, 0x0b)
	exactAt("non-minimal SIMD sub-opcode", 0, "opcode 0xfd 0x0c has a non-minimal encoding", 0xfd, 0x8c, 0x00, 0x0b)
	exactAt("unassigned SIMD sub-opcode", 0, "unknown opcode 0xfd 0x9a", 0xfd, 0x9a, 0x01, 0x0b)
	exactAt("atomic sub-opcode with a continuation bit", 0, "unknown opcode 0xfe 0x90", 0xfe, 0x90, 0x00, 0x0b)
	exactAt("truncated memarg", 2, "opcode 0x28: truncated memarg offset", 0x41, 0x00, 0x28, 0x02)
	// wazero v1.12 validates select (result (ref null func)), 1c 01 63 70,
	// then its compiler skips two bytes, reads 0x70 as an instruction and
	// panics: the whole process dies in CompileModule.
	exactAt("select with a (ref …) type", 6, "select: (ref …) types are not supported (wazero v1.12 compiles them wrongly)",
		0xd0, 0x70, 0xd0, 0x70, 0x41, 0x01, 0x1c, 0x01, 0x63, 0x70, 0xd1, 0x0b)
	exactAt("select with two types", 6, "select: type vector 0x02…: only one type, encoded as 0x01 then a one-byte type, is supported",
		0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0x1c, 0x02, 0x7f, 0x7f, 0x0b)
	exactAt("select with a padded type count", 6, "select: type vector 0x81…: only one type, encoded as 0x01 then a one-byte type, is supported",
		0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0x1c, 0x81, 0x00, 0x7f, 0x0b)
	exactAt("global.get out of range", 0, "global.get 0: the module has only 0 globals", 0x23, 0x00, 0x0b)
	exactAt("global.set out of range", 2, "global.set 0: the module has only 0 globals", 0x41, 0x00, 0x24, 0x00, 0x0b)
	// Tables: no table.grow at all; no table index at or beyond the table
	// count (the yield table's index).
	growMsg := "table.grow is not allowed in a policy module (it can grow a table without bound)"
	exactAt("table.grow", 4, growMsg, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x0f, 0x00, 0x1a, 0x41, 0x00, 0x0b)
	exactAt("table.grow in unreachable code", 1, growMsg, 0x00, 0xfc, 0x0f, 0x00, 0x1a, 0x41, 0x00, 0x0b)
	exactAt("call_indirect table out of range", 2, "call_indirect table 0: the module has only 0 tables", 0x41, 0x00, 0x11, 0x00, 0x00, 0x0b)
	exactAt("return_call_indirect table out of range", 2, "return_call_indirect table 0: the module has only 0 tables", 0x41, 0x00, 0x13, 0x00, 0x00, 0x0b)
	exactAt("table.get out of range", 2, "table.get 0: the module has only 0 tables", 0x41, 0x00, 0x25, 0x00, 0x1a, 0x41, 0x00, 0x0b)
	exactAt("table.set out of range", 4, "table.set 0: the module has only 0 tables", 0x41, 0x00, 0xd0, 0x70, 0x26, 0x00, 0x41, 0x00, 0x0b)
	exactAt("table.size out of range", 0, "table.size 0: the module has only 0 tables", 0xfc, 0x10, 0x00, 0x0b)
	exactAt("table.fill out of range", 0, "table.fill 0: the module has only 0 tables", 0xfc, 0x11, 0x00, 0x0b)
	exactAt("table.copy out of range", 0, "table.copy 0: the module has only 0 tables", 0xfc, 0x0e, 0x00, 0x00, 0x0b)
	exactAt("table.init table out of range", 0, "table.init table 0: the module has only 0 tables", 0xfc, 0x0c, 0x00, 0x00, 0x0b)
	{
		// With one table, index 1 (padded to two bytes) is the would-be
		// yield table.
		oneTable := func(name string, at int, msg string, code ...byte) {
			wasm := cat(header,
				sec(1, vec(funcType(nil, []byte{0x7f}))),
				sec(3, vec(leb(0))),
				sec(4, vec([]byte{0x70, 0x00, 0x01})),
				sec(10, vec(fn(code...))))
			start := len(wasm) - len(code)
			tests = append(tests, tc{name: name, wasm: wasm, exact: true,
				want: fmt.Sprintf("interrupt: function 0 (code offset %#x): %s", start+at, msg)})
		}
		oneTable("table.size of the yield table's index", 0, "table.size 1: the module has only 1 tables", 0xfc, 0x10, 0x81, 0x00, 0x0b)
		oneTable("table.copy to the yield table's index", 0, "table.copy 1: the module has only 1 tables", 0xfc, 0x0e, 0x01, 0x00, 0x0b)
		oneTable("table.copy from the yield table's index", 0, "table.copy 1: the module has only 1 tables", 0xfc, 0x0e, 0x00, 0x01, 0x0b)
		oneTable("call_indirect of the yield table's index", 2, "call_indirect table 1: the module has only 1 tables", 0x41, 0x00, 0x11, 0x00, 0x01, 0x0b)
		oneTable("table.get of the yield table's index", 2, "table.get 1: the module has only 1 tables", 0x41, 0x00, 0x25, 0x01, 0x1a, 0x41, 0x00, 0x0b)
		oneTable("table.grow of a real table", 4, growMsg, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x0f, 0x00, 0x0b)
	}
	add("export of a table out of range", cat(header, sec(7, vec(cat(str("t"), []byte{0x01}, leb(0))))),
		`export "t" names table 0 but the module has only 0 tables`)
	// Functions: nothing names $slow's or $charge's index.
	exactAt("call of $slow's index", 0, "call 1: the module has only 1 functions", 0x10, 0x01, 0x0b)
	exactAt("return_call of $charge's index", 0, "return_call 2: the module has only 1 functions", 0x12, 0x02, 0x0b)
	exactAt("ref.func out of range", 0, "ref.func 1: the module has only 1 functions", 0xd2, 0x01, 0x1a, 0x41, 0x00, 0x0b)
	add("export of a function out of range", cat(header, sec(7, vec(cat(str("f"), []byte{0x00}, leb(0))))),
		`export "f" names function 0 but the module has only 0 functions`)
	add("function and code counts differ", cat(header, sec(1, vec(funcType(nil, nil))), sec(3, vec(leb(0), leb(0))), sec(10, vec(fn(0x0b)))),
		"interrupt: the function section declares 2 functions but the code section has 1 bodies")
	add("code without a function section", cat(header, sec(10, vec(fn(0x0b)))),
		"interrupt: the function section declares 0 functions but the code section has 1 bodies")
	add("non-function type", cat(header, sec(1, vec([]byte{0x5f, 0x00}))),
		"interrupt: type section at offset 0xb: unsupported type form 0x5f (only function types, 0x60, are supported)")
	add("truncated function type", cat(header, sec(1, vec([]byte{0x60, 0x01}))), "interrupt: type section at offset 0xd: truncated value type")
	{
		// With one global, index 1 (padded to two bytes) is the would-be flag.
		global := sec(6, vec([]byte{0x7f, 0x01, 0x41, 0x00, 0x0b}))
		wasm := simpleModule([][]byte{fn(0x41, 0x01, 0x24, 0x81, 0x00, 0x41, 0x00, 0x0b)}, global)
		tests = append(tests, tc{name: "global.set of the flag's index", wasm: wasm,
			want: "global.set 1: the module has only 1 globals"})
	}
	{
		locals := cat(leb(2), leb(40000), []byte{0x7f}, leb(10001), []byte{0x7e})
		wasm := simpleModule([][]byte{fnLocals(locals, 0x41, 0x00, 0x0b)})
		tests = append(tests, tc{name: "too many locals", wasm: wasm, want: "more than 50000 locals"})
	}
	{
		locals := cat(leb(1), leb(1), []byte{0x55})
		wasm := simpleModule([][]byte{fnLocals(locals, 0x0b)})
		tests = append(tests, tc{name: "invalid local type", wasm: wasm, want: "local type: unknown value type 0x55"})
	}
	{
		// Errors name the function index, imports included.
		imp := sec(2, vec(cat(str("m"), str("f"), []byte{0x00}, leb(0)), cat(str("m"), str("g"), []byte{0x00}, leb(0))))
		m := simpleModule([][]byte{fn(0x0b), fn(0x27, 0x0b)})
		wasm := cat(header, m[8:8+len(sec(1, vec(funcType(nil, []byte{0x7f}))))], imp, m[8+len(sec(1, vec(funcType(nil, []byte{0x7f})))):])
		tests = append(tests, tc{name: "function index counts imports", wasm: wasm,
			want: "interrupt: function 3 (code offset " + fmt.Sprintf("%#x", len(wasm)-2) + "): unknown opcode 0x27", exact: true})
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			export := tt.export
			if export == "" {
				export = testExport
			}
			out, err := Instrument(tt.wasm, export)
			if err == nil {
				t.Fatalf("Instrument succeeded (%d bytes), want error %q", len(out), tt.want)
			}
			if out != nil {
				t.Errorf("Instrument returned %d bytes with its error", len(out))
			}
			got := err.Error()
			if tt.exact && got != tt.want || !tt.exact && !strings.Contains(got, tt.want) {
				t.Fatalf("error:\n got %q\nwant %q", got, tt.want)
			}
			if !strings.HasPrefix(got, "interrupt: ") {
				t.Fatalf("error %q lacks the package prefix", got)
			}
		})
	}
}

// TestNoPanic feeds Instrument every truncation and many single-byte
// corruptions of the fixtures: it must return (an error or a module),
// never panic or hang.
func TestNoPanic(t *testing.T) {
	inputs := [][]byte{
		testbuild.WAT(t, "testdata/features.wat"),
		testbuild.WAT(t, "testdata/imports.wat"),
		ehModule(), typedRefsModule(), paddedModule(),
	}
	for _, in := range inputs {
		for n := range len(in) {
			_, _ = Instrument(in[:n], testExport)
		}
		buf := make([]byte, len(in))
		for i := range len(in) {
			for _, v := range []byte{0x00, 0x01, 0x0b, 0x40, 0x7f, 0x80, 0xff} {
				copy(buf, in)
				buf[i] = v
				if out, err := Instrument(buf, testExport); err == nil && len(out) <= len(buf) {
					t.Fatalf("output (%d bytes) not larger than its input (%d bytes)", len(out), len(buf))
				}
			}
		}
	}
}

// TestLocalsLimit: 50000 declared locals are accepted, as wazero compiles
// them; one more is rejected (TestErrors).
func TestLocalsLimit(t *testing.T) {
	locals := cat(leb(2), leb(40000), []byte{0x7f}, leb(10000), []byte{0x7e})
	wasm := simpleModule([][]byte{fnLocals(locals, 0x41, 0x00, 0x0b)})
	out := mustInstrument(t, wasm)
	if _, err := newRuntime(t, api.CoreFeaturesV2).CompileModule(context.Background(), out); err != nil {
		t.Fatalf("wazero rejects the output: %v", err)
	}
}
