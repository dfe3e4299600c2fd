//go:build wasip1

package sdk

import "unsafe"

//go:wasmimport warden log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

// Log sends msg to the host's plugin logger at the given level (the
// warden.log import). A module that never calls Log does not import it.
func Log(level LogLevel, msg string) {
	hostLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}
