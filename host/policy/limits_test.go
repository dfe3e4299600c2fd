package policy

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Hand-assembled modules for the module limits: the hostile ones are
// generated here, byte by byte.

func lebU(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func wsec(id byte, contents ...[]byte) []byte {
	c := bytes.Join(contents, nil)
	return append(append([]byte{id}, lebU(uint64(len(c)))...), c...)
}

// wvec is a vector of n entries, each entry e.
func wvec(n int, e []byte) []byte {
	return append(lebU(uint64(n)), bytes.Repeat(e, n)...)
}

const wasmHeader = "\x00asm\x01\x00\x00\x00"

// voidBody is a module with one () -> () function whose code is body
// (its final end included).
func voidBody(body []byte) []byte {
	code := append([]byte{0x00}, body...) // no locals
	return bytes.Join([][]byte{[]byte(wasmHeader),
		wsec(1, []byte{0x01, 0x60, 0x00, 0x00}),
		wsec(3, []byte{0x01, 0x00}),
		wsec(10, []byte{0x01}, lebU(uint64(len(code))), code),
	}, nil)
}

// nest opens n frames with open, then closes them and the body.
func nest(open []byte, n int, inner []byte) []byte {
	b := bytes.Repeat(open, n)
	b = append(b, inner...)
	return append(b, bytes.Repeat([]byte{0x0b}, n+1)...)
}

// tinyPolicy is a valid policy module: an exported memory of pages pages,
// tables tables of entries entries each, and warden_abi_version,
// warden_alloc and warden_servers.
func tinyPolicy(pages, tables, entries int) []byte {
	parts := [][]byte{[]byte(wasmHeader),
		wsec(1, []byte{0x03,
			0x60, 0x00, 0x01, 0x7f, // () -> i32
			0x60, 0x01, 0x7f, 0x01, 0x7f, // (i32) -> i32
			0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7e}), // (i32, i32) -> i64
		wsec(3, []byte{0x03, 0x00, 0x01, 0x02}),
	}
	if tables > 0 {
		parts = append(parts, wsec(4, wvec(tables, append([]byte{0x70, 0x00}, lebU(uint64(entries))...))))
	}
	name := func(s string) []byte { return append(lebU(uint64(len(s))), s...) }
	parts = append(parts,
		wsec(5, []byte{0x01, 0x00}, lebU(uint64(pages))),
		wsec(7, []byte{0x04},
			name("memory"), []byte{0x02, 0x00},
			name("warden_abi_version"), []byte{0x00, 0x00},
			name("warden_alloc"), []byte{0x00, 0x01},
			name("warden_servers"), []byte{0x00, 0x02}),
		wsec(10, []byte{0x03,
			0x04, 0x00, 0x41, 0x01, 0x0b, // i32.const 1
			0x05, 0x00, 0x41, 0x80, 0x08, 0x0b, // i32.const 1024
			0x04, 0x00, 0x42, 0x00, 0x0b}), // i64.const 0
	)
	return bytes.Join(parts, nil)
}

func TestLoadModuleLimits(t *testing.T) {
	brTable := func(targets int) []byte { // br_table of targets labels, all 0
		b := append([]byte{0x41, 0x00, 0x0e}, lebU(uint64(targets-1))...)
		return append(b, bytes.Repeat([]byte{0x00}, targets)...)
	}
	tests := []struct {
		name     string
		wasm     []byte
		memoryMB uint32
		want     string
	}{
		{"two tables of 2^27 entries", bytes.Join([][]byte{[]byte(wasmHeader),
			wsec(4, wvec(2, append([]byte{0x70, 0x00}, lebU(1<<27)...)))}, nil),
			1, "total table minimum size 268435456 exceeds the limit of 1048576"},
		{"tables over the memory limit", bytes.Join([][]byte{[]byte(wasmHeader),
			wsec(4, wvec(2, append([]byte{0x70, 0x00}, lebU(1<<19)...)))}, nil),
			1, "tables (1048576 entries) and globals (0) need 8192 KiB outside linear memory, over the 1 MiB memory limit"},
		{"5M globals", bytes.Join([][]byte{[]byte(wasmHeader),
			wsec(6, wvec(5_000_000, []byte{0x7f, 0x00, 0x41, 0x00, 0x0b}))}, nil),
			64, "global count (imported and defined) 5000000 exceeds the limit of 10000"},
		{"globals over the memory limit", bytes.Join([][]byte{[]byte(wasmHeader),
			wsec(6, wvec(8000, []byte{0x7f, 0x00, 0x41, 0x00, 0x0b}))}, nil),
			1, "tables (0 entries) and globals (8000) need 1250 KiB outside linear memory, over the 1 MiB memory limit"},
		{"30 KB of nested loops", voidBody(nest([]byte{0x03, 0x40}, 10000, nil)),
			64, "function 0 (code offset 0x5b): loop nesting depth 33 exceeds the limit of 32"},
		{"nested blocks", voidBody(nest([]byte{0x02, 0x40}, 5000, nil)),
			64, "control nesting depth 2049 exceeds the limit of 2048"},
		{"br_table of 10^6 targets", voidBody(append(brTable(1_000_000), 0x0b)),
			64, "br_table with 1000000 targets exceeds the limit of 4096"},
		{"60000 functions", bytes.Join([][]byte{[]byte(wasmHeader),
			wsec(1, []byte{0x01, 0x60, 0x00, 0x00}),
			wsec(3, wvec(60000, []byte{0x00})),
			wsec(10, wvec(60000, []byte{0x02, 0x00, 0x0b}))}, nil),
			64, "function count (imported and defined) 60000 exceeds the limit of 50000"},
		{"a 2 MiB body", voidBody(append(bytes.Repeat([]byte{0x01}, 2<<20), 0x0b)),
			64, "function 0: body size 2097154 exceeds the limit of 1048576"},
		{"initial memory over what the tables leave", tinyPolicy(16, 1, 1),
			1, `memory "memory" needs 16 pages (1024 KiB) initially, over the 1023 KiB its 1 MiB memory limit leaves after its tables and globals`},
	}
	rt := newRuntime(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := rt.Load(context.Background(), LoadOptions{ID: "bomb@1", Wasm: tt.wasm, Limits: Limits{MemoryMB: tt.memoryMB}})
			took := time.Since(start)
			if err == nil {
				t.Fatal("Load succeeded, want a module limit error")
			}
			asError(t, err, "bomb@1", CauseLoad)
			if !errors.Is(err, ErrModuleLimit) {
				t.Errorf("errors.Is(err, ErrModuleLimit) = false: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			// Refused before wazero compiles (or instantiates) anything.
			if took > time.Second {
				t.Errorf("Load took %v, want well under a second", took)
			}
		})
	}
}

// The same module loads when its memory and tables fit the limit: the
// refusal above is the tables' charge, not the memory alone.
func TestLoadChargesTablesToMemory(t *testing.T) {
	rt := newRuntime(t, Config{})
	for _, tt := range []struct {
		name           string
		pages, entries int
	}{
		{"full memory, no table", 16, 0},
		{"a table, memory one page short", 15, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tables := 0
			if tt.entries > 0 {
				tables = 1
			}
			m := mustLoad(t, rt, LoadOptions{ID: "fits@1", Wasm: tinyPolicy(tt.pages, tables, tt.entries), Limits: Limits{MemoryMB: 1}})
			if got, want := m.memLimit, uint64(1<<20-8*tt.entries); got != want {
				t.Errorf("linear memory limit = %d, want %d", got, want)
			}
			if err := m.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// A module within every limit that takes longer than the compile budget to
// compile fails its Load with ErrCompileBudget within 2x the budget; the
// background compilation then ends and is discarded.
func TestLoadCompileBudget(t *testing.T) {
	const budget = 200 * time.Millisecond
	rt := newRuntime(t, Config{CompileTimeout: budget, MaxConcurrentCompiles: 1})
	// Functions that are each a br_table of 4096 targets (the limit) inside a
	// block: 64 of them take wazero over a second (several under -race), far
	// past the budget; the test then waits for that compilation to end.
	body := append([]byte{0x00, 0x02, 0x40, 0x41, 0x00, 0x0e}, lebU(4095)...)
	body = append(body, bytes.Repeat([]byte{0x00}, 4096)...)
	body = append(body, 0x0b, 0x0b)
	entry := append(lebU(uint64(len(body))), body...)
	const n = 64
	wasm := bytes.Join([][]byte{[]byte(wasmHeader),
		wsec(1, []byte{0x01, 0x60, 0x00, 0x00}),
		wsec(3, wvec(n, []byte{0x00})),
		wsec(10, wvec(n, entry))}, nil)

	start := time.Now()
	_, err := rt.Load(context.Background(), LoadOptions{ID: "slow@1", Wasm: wasm})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Load succeeded, want ErrCompileBudget")
	}
	asError(t, err, "slow@1", CauseLoad)
	if !errors.Is(err, ErrCompileBudget) || !strings.Contains(err.Error(), "200ms compile budget") {
		t.Fatalf("error = %v, want ErrCompileBudget naming the 200ms budget", err)
	}
	if took > 2*budget {
		t.Errorf("Load took %v, want at most 2x the %v budget", took, budget)
	}

	// A second load while the first compilation still runs waits for the
	// only compile slot (or joins it) and is bounded the same way.
	other := append(append([]byte(nil), wasm...), wsec(0, []byte("\x01x"))...) // another digest
	start = time.Now()
	if _, err := rt.Load(context.Background(), LoadOptions{ID: "other@1", Wasm: other}); !errors.Is(err, ErrCompileBudget) {
		t.Errorf("second Load: %v, want ErrCompileBudget", err)
	}
	if took := time.Since(start); took > 2*budget {
		t.Errorf("second Load took %v, want at most 2x the %v budget", took, budget)
	}

	// The compile goroutine gives its slot back last: holding the slot
	// means the abandoned compilation has ended and been discarded.
	select {
	case rt.compileSlots <- struct{}{}:
	case <-time.After(5 * time.Minute):
		t.Fatal("the abandoned compilation never ended")
	}
	<-rt.compileSlots
	rt.mu.Lock()
	left := len(rt.compiled)
	rt.mu.Unlock()
	if left != 0 {
		t.Errorf("%d compiled entries left after every load gave up, want 0", left)
	}
}
