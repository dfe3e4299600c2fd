package policy

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// refGather is a second, plainer reading of docs/abi.md §7.1, chunk by
// chunk in order (so that the first fault found, malformed chunk or cap,
// is the one reported). It returns the output, or the cause of the
// failure.
func refGather(buf, mem []byte, max int) ([]byte, Cause) {
	if len(buf) < 4 || !bytes.Equal(buf[:4], []byte{0, 0, 0, 0}) {
		return nil, CauseMalformedOutput
	}
	var out []byte
	rest := buf[4:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, CauseMalformedOutput
		}
		w := binary.LittleEndian.Uint32(rest)
		n := int64(w & 0x7fffffff)
		var chunk []byte
		if w>>31 == 1 {
			if int64(len(rest)) < 4+n {
				return nil, CauseMalformedOutput
			}
			chunk = rest[4 : 4+n]
			rest = rest[min(4+n+(4-n%4)%4, int64(len(rest))):]
		} else {
			if len(rest) < 8 {
				return nil, CauseMalformedOutput
			}
			ptr := int64(binary.LittleEndian.Uint32(rest[4:]))
			if ptr+n > int64(len(mem)) {
				return nil, CauseMalformedOutput
			}
			chunk = mem[ptr : ptr+n]
			rest = rest[8:]
		}
		if len(out)+len(chunk) > max {
			return nil, CauseOutputTooLarge
		}
		out = append(out, chunk...)
	}
	return out, 0
}

// lit, ref and gathered build gathered outputs: a literal chunk, a
// reference chunk, the header and the chunks.
func lit(s string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 1<<31|uint32(len(s)))
	b = append(b, s...)
	return append(b, make([]byte, -len(s)&3)...)
}

func ref(addr, n uint32) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, n), addr)
}

func gathered(chunks ...[]byte) []byte {
	return append([]byte{0, 0, 0, 0}, bytes.Join(chunks, nil)...)
}

func TestGatherOutput(t *testing.T) {
	mem := []byte("0123456789abcdef")
	tests := []struct {
		name  string
		buf   []byte
		max   int
		want  string
		cause Cause
		err   string
	}{
		{"header only", gathered(), 100, "", 0, ""},
		{"literals and references", gathered(lit("ab"), ref(10, 3), lit("xyz!"), ref(0, 0), ref(15, 1), lit("")), 100, "ab" + "abc" + "xyz!" + "f", 0, ""},
		{"reference at the end of memory", gathered(ref(12, 4)), 100, "cdef", 0, ""},
		{"exactly the cap", gathered(ref(0, 10)), 10, "0123456789", 0, ""},
		{"last literal's padding left out", gathered(lit("a"))[:9], 100, "a", 0, ""},
		{"bad header", []byte{0, 1, 0, 0}, 100, "", CauseMalformedOutput, "malformed gathered output: bad header 00 01 00 00"},
		{"short header", []byte{0, 0}, 100, "", CauseMalformedOutput, "malformed gathered output: bad header 00 00"},
		{"truncated word", append(gathered(lit("ab")), 1, 0), 100, "", CauseMalformedOutput, "malformed gathered output: truncated chunk at byte 12"},
		{"truncated reference", append(gathered(), 3, 0, 0, 0, 1), 100, "", CauseMalformedOutput, "malformed gathered output: truncated chunk at byte 4"},
		{"literal past the end", append(gathered(), 9, 0, 0, 0x80, 'a'), 100, "", CauseMalformedOutput, "malformed gathered output: literal of 9 bytes at byte 4 runs past the output"},
		{"reference past memory", gathered(ref(12, 5)), 100, "", CauseMalformedOutput, "malformed gathered output: reference [0xc, 0x11) at byte 4 is outside the 16-byte guest memory"},
		{"reference wrapping", gathered(ref(0xffffffff, 0x7fffffff)), 100, "", CauseMalformedOutput, "malformed gathered output: reference [0xffffffff, 0x17ffffffe) at byte 4 is outside the 16-byte guest memory"},
		{"over the cap", gathered(ref(0, 6), ref(0, 5)), 10, "", CauseOutputTooLarge, "gathered output exceeds the 10-byte cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, cause, err := gatherOutput([]byte("prefix:"), tt.buf, mem, tt.max)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || cause != tt.cause || out != nil {
					t.Fatalf("gatherOutput = %q, %v, %v; want cause %v, error %q", out, cause, err, tt.cause, tt.err)
				}
				return
			}
			if err != nil || string(out) != "prefix:"+tt.want {
				t.Fatalf("gatherOutput = %q, %v; want %q", out, err, "prefix:"+tt.want)
			}
			if ref, c := refGather(tt.buf, mem, tt.max); c != 0 || string(ref) != tt.want {
				t.Fatalf("the reference reading disagrees: %q, %v", ref, c)
			}
		})
	}
}

// FuzzGatherOutput: gatherOutput never panics, never returns more than the
// cap, and agrees with refGather on every output and every failure's cause.
func FuzzGatherOutput(f *testing.F) {
	f.Add(gathered(lit("ab"), ref(1, 3)), []byte("hello"), uint16(64))
	f.Add(gathered(ref(0, 5), ref(0, 5)), []byte("hello"), uint16(8))
	f.Add([]byte{0, 0, 0, 0, 5, 0, 0, 0x80, 'x'}, []byte{}, uint16(10))
	f.Fuzz(func(t *testing.T, buf, mem []byte, max uint16) {
		out, cause, err := gatherOutput(nil, buf, mem, int(max))
		want, wantCause := refGather(buf, mem, int(max))
		if (err != nil) != (wantCause != 0) || cause != wantCause {
			t.Fatalf("gatherOutput: %q, %v, %v; reference: %q, %v", out, cause, err, want, wantCause)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "malformed gathered output: ") && cause != CauseOutputTooLarge {
				t.Fatalf("error %q", err)
			}
			return
		}
		if len(out) > int(max) || !bytes.Equal(out, want) {
			t.Fatalf("gatherOutput = %q, reference %q (cap %d)", out, want, max)
		}
	})
}
