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
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-mcp/warden/host/internal/testbuild"
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
// test. It compiles through the test run's shared compilation cache
// (testbuild.WazeroCacheDir): the guests, original and instrumented, are the
// same modules in several tests and packages, and each compile takes seconds
// under the race detector. wazero still decodes and validates a module it
// finds there.
func newRuntime(t testing.TB, features api.CoreFeatures) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(testbuild.WazeroCache(t))
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(false).
		WithCoreFeatures(features).
		WithCompilationCache(cache))
	t.Cleanup(func() { _ = rt.Close(ctx); _ = cache.Close(ctx) })
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

// inst is one instruction as wasm-objdump prints it: its module offset and
// its text (indentation, names and locals dropped).
type inst struct {
	off  int
	text string
}

// disasm is what wasm-objdump -x -d says about a module.
type disasm struct {
	funcs       [][]inst          // per defined function, its instructions
	sizes       []int             // per defined function, its body size (locals included)
	funcImports int               // imported functions
	globals     int               // imported and defined globals
	tables      int               // imported and defined tables
	exports     map[string]string // export name -> "func[3]", "global[2]", …
}

var (
	objdumpSection = regexp.MustCompile(`^(\w+)(\[\d+\])?:$`)
	objdumpExport  = regexp.MustCompile(`^ - (\w+\[\d+\]).* -> "(.*)"$`)
	objdumpSize    = regexp.MustCompile(`^ - func\[\d+\] size=(\d+)`)
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
				if strings.HasPrefix(line, " - func[") {
					d.funcImports++
				}
			case "Export":
				if m := objdumpExport.FindStringSubmatch(line); m != nil {
					d.exports[m[2]] = m[1]
				}
			case "Code":
				if m := objdumpSize.FindStringSubmatch(line); m != nil {
					n, _ := strconv.Atoi(m[1])
					d.sizes = append(d.sizes, n)
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
		before, text, ok := strings.Cut(line, "|")
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
		offText, _, _ := strings.Cut(strings.TrimSpace(before), ":")
		off, err := strconv.ParseInt(offText, 16, 64)
		if err != nil {
			t.Fatalf("objdump: bad instruction line %q", line)
		}
		d.funcs[len(d.funcs)-1] = append(d.funcs[len(d.funcs)-1], inst{int(off), text})
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("wasm-objdump -d: %v\n%s", err, stderr.Bytes())
	}
	if len(d.sizes) != len(d.funcs) {
		t.Fatalf("objdump: %d function sizes for %d functions", len(d.sizes), len(d.funcs))
	}
	return d
}

// isLoop reports whether an objdump instruction text is a loop.
func isLoop(text string) bool { return text == "loop" || strings.HasPrefix(text, "loop ") }

// opens reports whether an objdump instruction text opens a frame.
func opens(text string) bool {
	for _, op := range []string{"block", "loop", "if", "try_table"} {
		if text == op || strings.HasPrefix(text, op+" ") {
			return true
		}
	}
	return false
}

// isBulkText reports whether an objdump instruction text is a bulk
// operation that `call $charge` precedes.
func isBulkText(text string) bool {
	for _, op := range []string{"memory.init", "memory.copy", "memory.fill", "table.init", "table.copy", "table.fill"} {
		if text == op || strings.HasPrefix(text, op+" ") {
			return true
		}
	}
	return false
}

// elidable reports whether the instructions of a function body before its
// first loop allow its entry check to be left out, and whether it has a
// loop at all.
func elidable(insts []inst) bool {
	for _, in := range insts {
		if isLoop(in.text) {
			return true
		}
		op, _, _ := strings.Cut(in.text, " ")
		switch op {
		case "block", "local.get", "local.set", "local.tee", "global.get", "global.set", "i32.const", "i64.const", "nop":
		default:
			return false
		}
	}
	return false
}

// structure counts what checkStructure found.
type structure struct {
	checks, elided, charges int
	threaded                int // branches to a dispatch loop that go to their segment instead
}

// threaded returns the texts of insts (one function) with the jump
// threading described in thread.go applied, and how many branches that
// changes. It works on wasm-objdump's text, apart from Instrument's
// decoder: a dispatch is `loop`, one or more `block`, `local.get X`, then
// a br_table whose labels all name those blocks; a branch to its loop
// right after `i32.const K` and `local.set X` goes instead to the block
// the br_table picks for K (the default past its labels), if that block
// is still open.
func threaded(insts []inst) ([]string, int) {
	texts := make([]string, len(insts))
	for i, in := range insts {
		texts[i] = in.text
	}
	var (
		stack   = []int{0} // open frames by id; 0 is the function's
		nextID  = 1
		loopID  = -1 // the dispatch loop, or -1
		local   string
		targets []int // per br_table label, the id of the frame it names
		n       int
	)
	depthOf := func(id int) int { // relative depth of the open frame id, or -1
		for d := 0; d < len(stack); d++ {
			if stack[len(stack)-1-d] == id {
				return d
			}
		}
		return -1
	}
	for i, text := range texts {
		op, arg, _ := strings.Cut(text, " ")
		switch {
		case opens(text):
			stack = append(stack, nextID)
			nextID++
			if text != "loop" || loopID >= 0 && depthOf(loopID) >= 0 {
				continue
			}
			// A dispatch starting here?
			j := i + 1
			for j < len(texts) && texts[j] == "block" {
				j++
			}
			blocks := j - i - 1
			if blocks == 0 || j+1 >= len(texts) || !strings.HasPrefix(texts[j], "local.get ") || !strings.HasPrefix(texts[j+1], "br_table ") {
				continue
			}
			var ids []int
			for _, f := range strings.Fields(strings.TrimPrefix(texts[j+1], "br_table ")) {
				l, err := strconv.Atoi(f)
				if err != nil || l >= blocks {
					ids = nil
					break
				}
				// The loop's id is nextID-1; the chain's blocks follow it,
				// the innermost (label 0) last.
				ids = append(ids, nextID-1+blocks-l)
			}
			if ids != nil {
				loopID, local, targets = nextID-1, strings.TrimPrefix(texts[j], "local.get "), ids
			}
		case text == "end":
			stack = stack[:len(stack)-1]
		case op == "br" && i >= 2 && loopID >= 0 &&
			strings.HasPrefix(texts[i-2], "i32.const ") && texts[i-1] == "local.set "+local:
			l, _ := strconv.Atoi(arg)
			if l >= len(stack) || stack[len(stack)-1-l] != loopID {
				continue
			}
			k, _ := strconv.ParseInt(strings.TrimPrefix(texts[i-2], "i32.const "), 10, 64)
			t := targets[min(uint64(uint32(k)), uint64(len(targets)-1))]
			if d := depthOf(t); d >= 0 {
				texts[i] = "br " + strconv.Itoa(d)
				n++
			}
		}
	}
	return texts, n
}

// checkStructure verifies, with wasm-objdump as an independent decoder,
// that out is in instrumented: out has two more globals (the first
// exported as testExport), one more table and, if in defines functions,
// two more functions, $slow and $charge, with exactly their documented
// code; every function of out starts with the budget check charging its
// body size, unless its instructions before its first loop are only block,
// local, global, constant and nop instructions — then its first loop's
// check charges the body size; every other loop is followed by the check
// charging the loop's length; every bulk operation is preceded by `call
// $charge`; and removing the inserted code from out gives back exactly the
// instructions of in.
func checkStructure(t testing.TB, in, out []byte) structure {
	t.Helper()
	din, dout := objdump(t, in), objdump(t, out)
	if dout.globals != din.globals+3 || dout.tables != din.tables+1 || dout.funcImports != din.funcImports {
		t.Fatalf("objdump: %d globals, %d tables, %d imported functions in the output, want %d, %d, %d",
			dout.globals, dout.tables, dout.funcImports, din.globals+3, din.tables+1, din.funcImports)
	}
	flag := fmt.Sprintf("global[%d]", din.globals)
	if got := dout.exports[testExport]; got != flag {
		t.Fatalf("objdump: export %q is %q, want %q", testExport, got, flag)
	}
	if got, want := dout.exports[testExport+DepthSuffix], fmt.Sprintf("global[%d]", din.globals+2); got != want {
		t.Fatalf("objdump: export %q is %q, want %q", testExport+DepthSuffix, got, want)
	}
	if len(dout.exports) != len(din.exports)+2 {
		t.Fatalf("objdump: %d exports in the output, want %d", len(dout.exports), len(din.exports)+2)
	}
	var s structure
	if len(din.funcs) == 0 {
		if len(dout.funcs) != 0 {
			t.Fatalf("objdump: %d functions in the output of a module without any", len(dout.funcs))
		}
		return s
	}
	if len(dout.funcs) != len(din.funcs)+2 {
		t.Fatalf("objdump: %d functions in the input, %d in the output (want 2 more)", len(din.funcs), len(dout.funcs))
	}
	f, b, d := din.globals, din.globals+1, din.globals+2
	slow, charge := din.funcImports+len(din.funcs), din.funcImports+len(din.funcs)+1
	texts := func(insts []inst) []string {
		var ts []string
		for _, in := range insts {
			ts = append(ts, in.text)
		}
		return ts
	}
	wantSlow := []string{
		fmt.Sprintf("global.get %d", f), "if", "unreachable", "end",
		fmt.Sprintf("i32.const %d", budgetRefill), fmt.Sprintf("global.set %d", b),
		"ref.null func", "i32.const 0", fmt.Sprintf("table.grow %d", din.tables), "drop", "end",
	}
	wantCharge := []string{
		fmt.Sprintf("global.get %d", b), "local.get 0", "i32.const 3", "i32.shr_u", "i32.sub", fmt.Sprintf("global.set %d", b),
		fmt.Sprintf("global.get %d", b), "i32.const 0", "i32.lt_s", "if", fmt.Sprintf("call %d", slow), "end",
		"local.get 0", "end",
	}
	if got := texts(dout.funcs[len(din.funcs)]); !slices.Equal(got, wantSlow) {
		t.Fatalf("$slow:\n got %q\nwant %q", got, wantSlow)
	}
	if got := texts(dout.funcs[len(din.funcs)+1]); !slices.Equal(got, wantCharge) {
		t.Fatalf("$charge:\n got %q\nwant %q", got, wantCharge)
	}
	// The depth bound's code, in a function without try_table (the only
	// kind here: wasm-objdump does not decode try_table): enter at the
	// first instruction (WEIGHT: positive), then the wrapper block; the
	// weight taken off before return and the tail calls and before the
	// final end (after the wrapper's end).
	enter := []string{
		fmt.Sprintf("global.get %d", d), "i32.const WEIGHT", "i32.add", fmt.Sprintf("global.set %d", d),
		fmt.Sprintf("global.get %d", d), fmt.Sprintf("i32.const %d", MaxStack), "i32.gt_u", "if", "unreachable", "end",
	}
	setDepth := fmt.Sprintf("global.set %d", d)
	// enterAt returns the weight in the enter code at insts[0], or -1.
	enterAt := func(insts []inst) int {
		if len(insts) < len(enter)+1 || !strings.HasPrefix(insts[len(enter)].text, "block") {
			return -1
		}
		weight := -1
		for k, c := range enter {
			text := insts[k].text
			if c == "i32.const WEIGHT" {
				v, ok := strings.CutPrefix(text, "i32.const ")
				n, err := strconv.Atoi(v)
				if !ok || err != nil || n <= 0 {
					return -1
				}
				weight = n
			} else if text != c {
				return -1
			}
		}
		return weight
	}
	check := []string{
		fmt.Sprintf("global.get %d", b), "i32.const COST", "i32.sub", fmt.Sprintf("global.set %d", b),
		fmt.Sprintf("global.get %d", b), "i32.const 0", "i32.lt_s", "if", fmt.Sprintf("call %d", slow), "end",
	}
	callCharge := fmt.Sprintf("call %d", charge)
	// checkAt returns the cost of the check at insts[i], or -1.
	checkAt := func(insts []inst, i int) int {
		if i+len(check) > len(insts) {
			return -1
		}
		cost := -1
		for k, c := range check {
			if c == "i32.const COST" {
				v, ok := strings.CutPrefix(insts[i+k].text, "i32.const ")
				n, err := strconv.Atoi(v)
				if !ok || err != nil {
					return -1
				}
				cost = n
			} else if insts[i+k].text != c {
				return -1
			}
		}
		return cost
	}
	// loopCosts is the cost each loop of the input must charge, in order.
	loopCosts := func(insts []inst, size int, elided bool) []int {
		var costs []int
		var stack []int // per open frame: its index in costs, or -1
		for _, in := range insts {
			switch {
			case isLoop(in.text):
				stack = append(stack, len(costs))
				costs = append(costs, in.off)
			case opens(in.text):
				stack = append(stack, -1)
			case in.text == "end" && len(stack) > 0:
				if i := stack[len(stack)-1]; i >= 0 {
					costs[i] = min(in.off+1-costs[i], budgetRefill)
				}
				stack = stack[:len(stack)-1]
			}
		}
		if elided {
			costs[0] = min(size, budgetRefill)
		}
		return costs
	}
	for fi, insts := range din.funcs {
		got := dout.funcs[fi]
		weight := enterAt(got)
		if weight < 0 {
			t.Fatalf("function %d (defined): does not begin with the depth bound's entry code: %q", fi, texts(got[:min(len(got), len(enter)+1)]))
		}
		leave := []string{fmt.Sprintf("global.get %d", d), fmt.Sprintf("i32.const %d", weight), "i32.sub", setDepth}
		// leaveAt reports whether insts[i:] begins with leave.
		leaveAt := func(insts []inst, i int) bool {
			if i < 0 || i+len(leave) > len(insts) {
				return false
			}
			for k, c := range leave {
				if insts[i+k].text != c {
					return false
				}
			}
			return true
		}
		n := len(got)
		if n < len(enter)+7 || got[n-6].text != "end" || !leaveAt(got, n-5) || got[n-1].text != "end" {
			t.Fatalf("function %d (defined): does not end with the wrapper's end and the depth restore: %q", fi, texts(got[max(0, n-6):]))
		}
		got = slices.Concat(got[len(enter)+1:n-6], got[n-1:])
		bodyCost := min(din.sizes[fi], budgetRefill)
		elided := elidable(insts)
		i := 0
		if elided {
			s.elided++
			if checkAt(got, 0) >= 0 {
				t.Fatalf("function %d (defined): begins with the check, but its entry check should be elided: %q", fi, texts(insts[:min(len(insts), 8)]))
			}
		} else {
			if c := checkAt(got, 0); c != bodyCost {
				t.Fatalf("function %d (defined): does not begin with the check charging %d (cost %d): %q", fi, bodyCost, c, texts(got[:min(len(got), 4)]))
			}
			s.checks++
			i = len(check)
		}
		costs := loopCosts(insts, din.sizes[fi], elided)
		loop, restores := 0, 0
		var stripped []string
		for ; i < len(got); i++ {
			text := got[i].text
			if text == callCharge && i+1 < len(got) && isBulkText(got[i+1].text) {
				s.charges++
				continue
			}
			if leaveAt(got, i) && i+len(leave) < len(got) && leaves(got[i+len(leave)].text) {
				i += len(leave) - 1 // the depth restore before a return or tail call
				restores++
				continue
			}
			stripped = append(stripped, text)
			if isLoop(text) {
				if c := checkAt(got, i+1); c != costs[loop] {
					t.Fatalf("function %d (defined): %q at instruction %d is not followed by the check charging %d (cost %d)", fi, text, i, costs[loop], c)
				}
				loop++
				s.checks++
				i += len(check)
			}
		}
		want, n := threaded(insts)
		if !slices.Equal(stripped, want) {
			for k := range min(len(stripped), len(want)) {
				if stripped[k] != want[k] {
					t.Fatalf("function %d (defined): the output without the inserted code differs from the input (threaded %d times) at instruction %d: %q, want %q", fi, n, k, stripped[k], want[k])
				}
			}
			t.Fatalf("function %d (defined): the output without the inserted code differs from the input (threaded %d times)", fi, n)
		}
		s.threaded += n
		exits := 0
		for _, in := range insts {
			if leaves(in.text) {
				exits++
			}
		}
		if restores != exits {
			t.Fatalf("function %d (defined): %d depth restores before %d returns and tail calls", fi, restores, exits)
		}
		for _, in := range insts {
			if isBulkText(in.text) {
				s.charges--
			}
		}
		if s.charges != 0 {
			t.Fatalf("function %d (defined): `call $charge` count differs from the bulk operation count by %d", fi, s.charges)
		}
	}
	// Recount the bulk operations (s.charges was balanced per function).
	for _, insts := range din.funcs {
		for _, in := range insts {
			if isBulkText(in.text) {
				s.charges++
			}
		}
	}
	// Every check in the output is one of those found above: nothing else
	// calls $slow but $charge.
	calls := 0
	for _, insts := range dout.funcs[:len(din.funcs)] {
		for _, in := range insts {
			if in.text == fmt.Sprintf("call %d", slow) {
				calls++
			}
		}
	}
	if calls != s.checks {
		t.Fatalf("%d calls of $slow in the output, %d checks", calls, s.checks)
	}
	return s
}

// leaves reports whether the instruction text is one that leaves the
// function: return or a tail call.
func leaves(text string) bool {
	return text == "return" || strings.HasPrefix(text, "return_call")
}
