//go:build wasip1

package sdk

import "unsafe"

//go:wasmimport warden log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

// logBuf is the reused buffer of a message given in several parts.
var logBuf []byte

// Log sends a message to the host's plugin logger at the given level (the
// warden.log import). The message is the concatenation of its parts, which
// are copied into a reused buffer (never joined into a new string: no
// allocation). A module that never calls Log does not import warden.log.
//
// A message below the level the host records for the plugin (which the host
// tells the guest through warden_log_level) costs a comparison: it is
// neither joined nor sent.
func Log(level LogLevel, msg ...string) {
	// Only the comparison is inlined into the caller: a message below the
	// host's level costs no call.
	if level >= module.minLog {
		send(level, msg)
	}
}

// send joins msg and passes it to the host.
func send(level LogLevel, msg []string) {
	s := joinParts(&logBuf, msg)
	hostLog(int32(level), unsafe.Pointer(unsafe.StringData(s)), uint32(len(s)))
}

// joinParts returns the concatenation of parts: parts[0] itself when it is
// the only one, else a view of buf, where they are copied. Two or three
// parts are copied without a loop (see parts).
func joinParts(buf *[]byte, msg []string) string {
	n := len(msg)
	if uint(n-2) > 1 { // not 2 or 3 parts
		return joinOther(buf, msg)
	}
	a, b, c, _ := parts(msg)
	l := len(a) + len(b) + len(c)
	if cap(*buf) < l {
		*buf = make([]byte, 2*l)
	}
	d := (*buf)[:l]
	k := copy(d, a)
	k += copy(d[k:], b)
	copy(d[k:], c)
	return unsafe.String(unsafe.SliceData(d), l)
}

// joinOther is joinParts for one part, none, or more than three.
func joinOther(buf *[]byte, msg []string) string {
	if len(msg) == 1 {
		return msg[0]
	}
	return joined(buf, msg)
}
