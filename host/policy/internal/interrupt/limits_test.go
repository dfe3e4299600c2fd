package interrupt

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Each limit just past, and just within: Instrument refuses the first with
// an error naming the limit (wrapping ErrLimit), and accepts the second.
func TestLimits(t *testing.T) {
	nest := func(open []byte, n int) []byte {
		return cat(bytes.Repeat(open, n), bytes.Repeat([]byte{0x0b}, n+1))
	}
	brTable := func(targets int) []byte {
		return cat([]byte{0x41, 0x00, 0x0e}, leb(uint32(targets-1)), bytes.Repeat([]byte{0x00}, targets), []byte{0x0b})
	}
	body := func(code []byte) []byte {
		return cat(header, sec(1, vec(funcType(nil, nil))), sec(3, vec(leb(0))), sec(10, vec(fn(code...))))
	}
	tables := func(n, entries int) []byte {
		return cat(header, sec(4, leb(uint32(n)), bytes.Repeat(cat([]byte{0x70, 0x00}, leb(uint32(entries))), n)))
	}
	globals := func(n int) []byte {
		return cat(header, sec(6, leb(uint32(n)), bytes.Repeat([]byte{0x7f, 0x00, 0x41, 0x00, 0x0b}, n)))
	}
	elements := func(n int) []byte { // one passive segment of n ref.null exprs
		return cat(header, sec(9, vec(cat([]byte{0x05, 0x70}, leb(uint32(n)), bytes.Repeat([]byte{0xd0, 0x70, 0x0b}, n)))))
	}
	tests := []struct {
		name      string
		over, ok  []byte
		wantError string
	}{
		{"nesting", body(nest([]byte{0x02, 0x40}, MaxNesting+1)), body(nest([]byte{0x02, 0x40}, MaxNesting)), "control nesting depth 2049 exceeds the limit of 2048"},
		{"loop nesting", body(nest([]byte{0x03, 0x40}, MaxLoopNesting+1)), body(nest([]byte{0x03, 0x40}, MaxLoopNesting)), "loop nesting depth 33 exceeds the limit of 32"},
		{"br_table", body(brTable(MaxBrTableTargets + 1)), body(brTable(MaxBrTableTargets)), "br_table with 4097 targets exceeds the limit of 4096"},
		{"tables", tables(MaxTables+1, 0), tables(MaxTables, 0), "table count (imported and defined) 101 exceeds the limit of 100"},
		{"table entries", tables(2, MaxTableEntries/2+1), tables(2, MaxTableEntries/2), "total table minimum size 1048578 exceeds the limit of 1048576"},
		{"globals", globals(MaxGlobals + 1), globals(MaxGlobals), "global count (imported and defined) 10001 exceeds the limit of 10000"},
		{"element entries", elements(MaxElementEntries + 1), elements(MaxElementEntries), "element entry count 1048577 exceeds the limit of 1048576"},
		{"types", cat(header, sec(1, leb(MaxTypes+1), bytes.Repeat(funcType(nil, nil), MaxTypes+1))), cat(header, sec(1, leb(MaxTypes), bytes.Repeat(funcType(nil, nil), MaxTypes))), "type count 10001 exceeds the limit of 10000"},
		{"body size", body(cat(bytes.Repeat([]byte{0x01}, MaxBodyBytes), []byte{0x0b})), body(cat(bytes.Repeat([]byte{0x01}, MaxBodyBytes-3), []byte{0x0b})), "function 0: body size 1048578 exceeds the limit of 1048576"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Instrument(tt.over, testExport)
			if err == nil || !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tt.wantError) {
				t.Errorf("over the limit: Instrument error = %v, want one wrapping ErrLimit containing %q", err, tt.wantError)
			}
			if _, err := Instrument(tt.ok, testExport); err != nil {
				t.Errorf("at the limit: Instrument: %v", err)
			}
			if _, err := Scan(tt.ok); err != nil {
				t.Errorf("at the limit: Scan: %v", err)
			}
		})
	}
}
