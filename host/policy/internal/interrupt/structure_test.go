package interrupt

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// rawSection is one section as the test splits a module (independently of
// the package's own parser): id and all its bytes.
type rawSection struct {
	id    byte
	bytes []byte
}

// splitSections splits a well-formed module into its sections.
func splitSections(t testing.TB, wasm []byte) []rawSection {
	t.Helper()
	var ss []rawSection
	for pos := 8; pos < len(wasm); {
		size, body, st := readU32(wasm, pos+1)
		if st != lebOK || body+int(size) > len(wasm) {
			t.Fatalf("malformed section at %#x", pos)
		}
		ss = append(ss, rawSection{wasm[pos], wasm[pos : body+int(size)]})
		pos = body + int(size)
	}
	return ss
}

// checkSections verifies that out has in's sections in the same order,
// byte for byte, except the type, function, table, global, export and
// code sections: out has exactly one table, global and export section,
// a code section if in has one, a type and a function section if in has
// them or defines functions (then their entries begin with in's), all in
// the spec's order.
func checkSections(t testing.TB, in, out []byte) {
	t.Helper()
	if !bytes.Equal(in[:8], out[:8]) {
		t.Fatalf("header changed: % x", out[:8])
	}
	keep := func(ss []rawSection) (kept []rawSection, ids []byte, byID map[byte][]byte) {
		byID = map[byte][]byte{}
		for _, s := range ss {
			switch s.id {
			case secType, secFunction, secTable, secGlobal, secExport, secCode:
				byID[s.id] = s.bytes
			default:
				kept = append(kept, s)
			}
			ids = append(ids, s.id)
		}
		return kept, ids, byID
	}
	sin, sout := splitSections(t, in), splitSections(t, out)
	kin, idsIn, vin := keep(sin)
	kout, idsOut, vout := keep(sout)
	if len(kin) != len(kout) {
		t.Fatalf("sections other than type/function/table/global/export/code: %d in the input, %d in the output", len(kin), len(kout))
	}
	for i := range kin {
		if kin[i].id != kout[i].id || !bytes.Equal(kin[i].bytes, kout[i].bytes) {
			t.Fatalf("section %d (id %d) changed", i, kin[i].id)
		}
	}
	count := func(ids []byte, id byte) int { return bytes.Count(ids, []byte{id}) }
	if count(idsOut, secTable) != 1 || count(idsOut, secGlobal) != 1 || count(idsOut, secExport) != 1 || count(idsOut, secCode) != count(idsIn, secCode) {
		t.Fatalf("section ids in the output: %v (input: %v)", idsOut, idsIn)
	}
	defines := false
	if c, ok := vin[secCode]; ok {
		_, body, _ := readU32(c, 1)
		n, _, _ := readU32(c, body)
		defines = n > 0
	}
	for _, id := range []byte{secType, secFunction} {
		want := count(idsIn, id)
		if defines {
			want = 1
		}
		if count(idsOut, id) != want {
			t.Fatalf("section %d: %d in the output, want %d (input: %v)", id, count(idsOut, id), want, idsIn)
		}
		// The input's entries come first, unchanged.
		if a, ok := vin[id]; ok {
			entries := func(s []byte) []byte {
				_, body, _ := readU32(s, 1)
				_, e, _ := readU32(s, body)
				return s[e:]
			}
			if !bytes.HasPrefix(entries(vout[id]), entries(a)) {
				t.Fatalf("section %d: the input's entries changed", id)
			}
		}
	}
	last := 0
	for _, id := range idsOut {
		if id == secCustom {
			continue
		}
		if r := sectionRank(id); r <= last {
			t.Fatalf("section %d out of order in the output: %v", id, idsOut)
		} else {
			last = r
		}
	}
}

// TestStructure checks the output of Instrument against wabt's
// wasm-objdump (see checkStructure): the budget check at every function
// entry that needs one and after every loop, with the right costs (so
// functions − elided + loops checks), `call $charge` before every bulk
// operation, $slow and $charge as documented, and nothing else changed in
// the code; and every other section preserved.
func TestStructure(t *testing.T) {
	type tc struct {
		name     string
		wasm     func(t testing.TB) []byte
		features api.CoreFeatures
		threaded int // branches threaded (see thread.go); -1: at least one
	}
	wat := func(path string) func(t testing.TB) []byte {
		return func(t testing.TB) []byte { return testbuild.WAT(t, path) }
	}
	tests := []tc{
		{"features.wat", wat("testdata/features.wat"), api.CoreFeaturesV2, 0},
		{"runaway.wat", wat("testdata/runaway.wat"), api.CoreFeaturesV2, 0},
		{"tailcall.wat", wat("testdata/tailcall.wat"), api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall, 0},
		{"atomics.wat", wat("testdata/atomics.wat"), api.CoreFeaturesV2 | experimental.CoreFeaturesThreads, 0},
		{"imports.wat", wat("testdata/imports.wat"), api.CoreFeaturesV2, 0},
		{"tight.wat", wat("testdata/tight.wat"), api.CoreFeaturesV2, 0},
		{"dispatch.wat", wat("testdata/dispatch.wat"), api.CoreFeaturesV2, 8}, // as its comments say
		// wasm-objdump (wabt 1.0.32) decodes neither try_table nor the typed
		// function references opcodes, and stops at paddedModule's padded
		// 0xfc sub-opcode: those modules are checked by TestEquivalence and
		// the fuzz target only.
	}
	for _, g := range guests() {
		switch g.name {
		case "block-tool", "no-forwarding", "reviewer-no-stdio":
			// The Go runtime is nearly all of a Go guest's code, the same in every one:
			// allow-hosts and conformance-go cover what the compiler emits, and each further
			// Go guest cost ~10 s under -race for no new shape. (TestGuests runs them all.)
			continue
		}
		threaded := -1 // a Go guest
		if g.name == "conformance-c" {
			threaded = 0
		}
		tests = append(tests, tc{g.name, g.wasm, api.CoreFeaturesV2, threaded})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.wasm(t)
			out := mustInstrument(t, in)
			checkSections(t, in, out)
			st := checkStructure(t, in, out)
			t.Logf("%d bytes in, %d bytes out, %d checks (%d entry checks elided), %d bulk operations charged, %d branches threaded",
				len(in), len(out), st.checks, st.elided, st.charges, st.threaded)
			if tt.threaded >= 0 && st.threaded != tt.threaded || tt.threaded < 0 && st.threaded == 0 {
				t.Errorf("%d branches threaded, want %d (-1: at least one)", st.threaded, tt.threaded)
			}
			if len(in) > 1<<20 {
				return // compiling a Go guest takes seconds; TestGuests does it
			}
			ctx := context.Background()
			cm, err := newRuntime(t, tt.features).CompileModule(ctx, out)
			if err != nil {
				t.Fatalf("wazero rejects the output: %v", err)
			}
			_ = cm.Close(ctx)
		})
	}
}
