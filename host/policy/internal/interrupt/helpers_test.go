package interrupt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// testExport is the flag's export name in the tests (the one warden uses).
const testExport = "warden.interrupt"

// allFeatures are the wasm features wazero v1.12 implements.
const allFeatures = api.CoreFeaturesV2 |
	experimental.CoreFeaturesThreads |
	experimental.CoreFeaturesTailCall |
	experimental.CoreFeaturesExtendedConst |
	experimental.CoreFeaturesExceptionHandling |
	experimental.CoreFeaturesTypedFunctionReferences

// newRuntime returns a wazero runtime with the given features, with
// WithCloseOnContextDone(false) as warden runs it; it is closed with the
// test.
func newRuntime(t testing.TB, features api.CoreFeatures) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(false).
		WithCoreFeatures(features))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	return rt
}

// mustInstrument instruments wasm under testExport or fails the test.
func mustInstrument(t testing.TB, wasm []byte) []byte {
	t.Helper()
	out, err := Instrument(wasm, testExport)
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	return out
}

// ---- hand-made modules ----------------------------------------------------

// leb is the minimal unsigned LEB128 encoding of v.
func leb(v uint32) []byte { return appendU32(nil, v) }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// sec is a section: id, size, contents.
func sec(id byte, contents ...[]byte) []byte {
	c := cat(contents...)
	return cat([]byte{id}, leb(uint32(len(c))), c)
}

// vec is a vector: count, items.
func vec(items ...[]byte) []byte { return cat(leb(uint32(len(items))), cat(items...)) }

// str is a name: length, bytes.
func str(s string) []byte { return cat(leb(uint32(len(s))), []byte(s)) }

// fn is a function body without locals: size, 0 local declarations, code.
func fn(code ...byte) []byte { return fnLocals(nil, code...) }

// fnLocals is a function body with the given local declarations (already
// encoded as vec(locals)); nil means none.
func fnLocals(locals []byte, code ...byte) []byte {
	if locals == nil {
		locals = []byte{0}
	}
	b := cat(locals, code)
	return cat(leb(uint32(len(b))), b)
}

// header is the module preamble.
var header = []byte("\x00asm\x01\x00\x00\x00")

// funcType is the encoding of a function type.
func funcType(params, results []byte) []byte {
	return cat([]byte{0x60}, leb(uint32(len(params))), params, leb(uint32(len(results))), results)
}

// simpleModule is a module with one type () -> (i32), a function per body,
// each exported as f0, f1, …, one memory, and the extra sections given
// (already encoded, in order, placed between memory and export).
func simpleModule(bodies [][]byte, extra ...[]byte) []byte {
	funcs := make([][]byte, len(bodies))
	exports := make([][]byte, len(bodies))
	for i := range bodies {
		funcs[i] = leb(0)
		exports[i] = cat(str(fmt.Sprintf("f%d", i)), []byte{0x00}, leb(uint32(i)))
	}
	return cat(header,
		sec(1, vec(funcType(nil, []byte{0x7f}))),
		sec(3, vec(funcs...)),
		sec(5, vec([]byte{0x00, 0x01})),
		cat(extra...),
		sec(7, vec(exports...)),
		sec(10, vec(bodies...)),
	)
}

// ---- an independent decoder: wabt's wasm-objdump -------------------------

// disasm is what wasm-objdump -x -d says about a module.
type disasm struct {
	funcs   [][]string        // per defined function, its instructions (indentation and locals dropped)
	globals int               // imported and defined globals
	tables  int               // imported and defined tables
	exports map[string]string // export name -> "func[3]", "global[2]", …
}

var (
	objdumpSection = regexp.MustCompile(`^(\w+)(\[\d+\])?:$`)
	objdumpExport  = regexp.MustCompile(`^ - (\w+\[\d+\]).* -> "(.*)"$`)
)

// objdump disassembles wasm with wasm-objdump -d (from wabt, like wat2wasm;
// `make tools` installs it). A missing tool fails the test.
func objdump(t testing.TB, wasm []byte) disasm {
	t.Helper()
	tool, err := exec.LookPath("wasm-objdump")
	if err != nil {
		t.Fatalf("wasm-objdump (from wabt) not found in PATH: run `make tools` to install it")
	}
	path := filepath.Join(t.TempDir(), "m.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, "-x", "-d", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := disasm{exports: map[string]string{}}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	section := ""
	for sc.Scan() {
		line := sc.Text()
		if section != "disassembly" { // the -x part: few lines
			if line == "Code Disassembly:" {
				section = "disassembly"
				continue
			}
			if m := objdumpSection.FindStringSubmatch(line); m != nil {
				section = m[1]
				continue
			}
			switch section {
			case "Import", "Global", "Table":
				if strings.HasPrefix(line, " - global[") {
					d.globals++
				}
				if strings.HasPrefix(line, " - table[") {
					d.tables++
				}
			case "Export":
				if m := objdumpExport.FindStringSubmatch(line); m != nil {
					d.exports[m[2]] = m[1]
				}
			}
			continue
		}
		// The disassembly: hundreds of thousands of lines, parsed without
		// regular expressions. A function starts with "<offset> func[i]…";
		// an instruction line is " <offset>: <bytes> | <text>".
		if line == "" {
			continue
		}
		if line[0] != ' ' {
			if strings.Contains(line, " func[") {
				d.funcs = append(d.funcs, nil)
			}
			continue
		}
		_, text, ok := strings.Cut(line, "|")
		if !ok || len(d.funcs) == 0 {
			continue
		}
		text = strings.TrimSpace(text)
		// Names (from exports or the name section) would differ: drop them.
		if strings.HasSuffix(text, ">") {
			if i := strings.LastIndex(text, " <"); i >= 0 {
				text = text[:i]
			}
		}
		if text == "" || strings.HasPrefix(text, "local[") {
			continue // a continuation line of a long immediate, or a local declaration
		}
		d.funcs[len(d.funcs)-1] = append(d.funcs[len(d.funcs)-1], text)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wasm-objdump -d: %v\n%s", err, stderr.Bytes())
	}
	return d
}

// isLoop reports whether an objdump instruction text is a loop.
func isLoop(text string) bool { return text == "loop" || strings.HasPrefix(text, "loop ") }

// checkStructure verifies, with wasm-objdump as an independent decoder,
// that out is in instrumented: out has two more globals, the first exported
// as testExport, and one more table, all after in's own; every function of
// out starts with the check, every loop is followed by the check, the
// number of checks is the number of functions plus the number of loops of
// in, and removing the checks from out gives back exactly the instructions
// of in. It returns the number of checks.
func checkStructure(t testing.TB, in, out []byte) int {
	t.Helper()
	din, dout := objdump(t, in), objdump(t, out)
	if dout.globals != din.globals+2 || dout.tables != din.tables+1 {
		t.Fatalf("objdump: %d globals and %d tables in the output, want %d and %d", dout.globals, dout.tables, din.globals+2, din.tables+1)
	}
	flag := fmt.Sprintf("global[%d]", din.globals)
	if got := dout.exports[testExport]; got != flag {
		t.Fatalf("objdump: export %q is %q, want %q", testExport, got, flag)
	}
	if len(dout.exports) != len(din.exports)+1 {
		t.Fatalf("objdump: %d exports in the output, want %d", len(dout.exports), len(din.exports)+1)
	}
	f, c := din.globals, din.globals+1
	check := []string{
		fmt.Sprintf("global.get %d", f), "if", "unreachable", "end",
		fmt.Sprintf("global.get %d", c), "i32.const 4294967295", "i32.add", fmt.Sprintf("global.set %d", c),
		fmt.Sprintf("global.get %d", c), "i32.eqz", "if",
		fmt.Sprintf("i32.const %d", yieldEvery), fmt.Sprintf("global.set %d", c),
		"ref.null func", "i32.const 0", fmt.Sprintf("table.grow %d", din.tables), "drop",
		"end",
	}
	isCheck := func(insts []string, i int) bool {
		if i+len(check) > len(insts) {
			return false
		}
		for k, c := range check {
			if insts[i+k] != c {
				return false
			}
		}
		return true
	}
	if len(din.funcs) != len(dout.funcs) {
		t.Fatalf("objdump: %d functions in the input, %d in the output", len(din.funcs), len(dout.funcs))
	}
	loops, checks := 0, 0
	for f, insts := range din.funcs {
		for _, text := range insts {
			if isLoop(text) {
				loops++
			}
		}
		got := dout.funcs[f]
		if !isCheck(got, 0) {
			t.Fatalf("function %d (defined): does not begin with the check: %q", f, got[:min(len(got), 4)])
		}
		// Strip the checks (at entry and after each loop) and compare.
		var stripped []string
		for i := len(check); i < len(got); i++ {
			stripped = append(stripped, got[i])
			if isLoop(got[i]) {
				if !isCheck(got, i+1) {
					t.Fatalf("function %d (defined): %q at instruction %d is not followed by the check", f, got[i], i)
				}
				i += len(check)
			}
		}
		for i := range got {
			if isCheck(got, i) {
				checks++
			}
		}
		if !slicesEqual(stripped, insts) {
			t.Fatalf("function %d (defined): the output without its checks differs from the input", f)
		}
	}
	if want := len(din.funcs) + loops; checks != want {
		t.Fatalf("%d checks in the output, want %d (%d functions + %d loops)", checks, want, len(din.funcs), loops)
	}
	return checks
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
