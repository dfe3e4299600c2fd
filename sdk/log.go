//go:build !wasip1

package sdk

import "os"

// Log sends msg to the host's plugin logger at the given level (the
// warden.log import). Outside wasm (native tests of a policy) it writes the
// message to standard error.
func Log(level LogLevel, msg string) {
	_, _ = os.Stderr.WriteString("warden policy " + level.String() + ": " + msg + "\n")
}
