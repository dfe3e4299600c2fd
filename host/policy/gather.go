package policy

import (
	"encoding/binary"
	"fmt"

	"github.com/warden-mcp/warden/abi"
)

// gatherOutput appends to dst the bytes the gathered output buf describes
// (docs/abi.md §7.1): after a 4-byte header 00 00 00 00, chunks that are
// literals (a u32 with the top bit set and the length below it, the
// bytes, zero padding to a multiple of 4) or references (a u32 length, a
// u32 address into mem). It never reads outside buf and mem, and stops
// with CauseOutputTooLarge before the bytes appended exceed max; any other
// fault is CauseMalformedOutput. The error names the fault and its byte
// offset in buf.
func gatherOutput(dst, buf, mem []byte, max int) ([]byte, Cause, error) {
	if len(buf) < 4 || buf[0] != abi.GatheredOutputMark || buf[1]|buf[2]|buf[3] != 0 {
		return nil, CauseMalformedOutput, fmt.Errorf("malformed gathered output: bad header % x", buf[:min(len(buf), 4)])
	}
	limit := uint64(len(dst)) + uint64(max)
	for p := 4; p < len(buf); {
		if len(buf)-p < 4 {
			return nil, CauseMalformedOutput, fmt.Errorf("malformed gathered output: truncated chunk at byte %d", p)
		}
		w := binary.LittleEndian.Uint32(buf[p:])
		n := uint64(w &^ abi.GatheredLiteral)
		var chunk []byte
		if w&abi.GatheredLiteral != 0 { // a literal: n bytes, padded to a multiple of 4
			end := uint64(p) + 4 + n
			if end > uint64(len(buf)) {
				return nil, CauseMalformedOutput, fmt.Errorf("malformed gathered output: literal of %d bytes at byte %d runs past the output", n, p)
			}
			chunk = buf[p+4 : end]
			p = int(end + (-n & 3))
		} else { // a reference: n bytes at ptr
			if len(buf)-p < 8 {
				return nil, CauseMalformedOutput, fmt.Errorf("malformed gathered output: truncated chunk at byte %d", p)
			}
			ptr := uint64(binary.LittleEndian.Uint32(buf[p+4:]))
			if ptr+n > uint64(len(mem)) {
				return nil, CauseMalformedOutput, fmt.Errorf("malformed gathered output: reference [%#x, %#x) at byte %d is outside the %d-byte guest memory", ptr, ptr+n, p, len(mem))
			}
			chunk = mem[ptr : ptr+n]
			p += 8
		}
		if uint64(len(dst))+uint64(len(chunk)) > limit {
			return nil, CauseOutputTooLarge, fmt.Errorf("gathered output exceeds the %d-byte cap", max)
		}
		dst = append(dst, chunk...)
	}
	return dst, 0, nil
}
