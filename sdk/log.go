//go:build !wasip1

package sdk

import (
	"io"
	"os"
)

// logOutput receives native Log lines.
var logOutput io.Writer = os.Stderr

// logLine is the reused buffer of a native Log line.
var logLine []byte

// Log sends a message to the host's plugin logger at the given level (the
// warden.log import). The message is the concatenation of its parts, which
// are copied (never joined into a new string: no allocation). Outside wasm
// (native tests of a policy) it writes the line "warden policy <level>:
// <message>" to the writer set by SetLogOutput, standard error by default.
func Log(level LogLevel, msg ...string) {
	if level < module.minLog { // as in wasm; natively no host sets it
		return
	}
	b := append(logLine[:0], "warden policy "...)
	b = append(b, level.String()...)
	b = append(b, ": "...)
	for _, s := range msg {
		b = append(b, s...)
	}
	logLine = append(b, '\n')
	_, _ = logOutput.Write(logLine)
}

// SetLogOutput sets where Log writes in native builds (tests and benchmarks
// of a policy; a wasm guest logs through the host). It is not safe to call
// concurrently with Log.
func SetLogOutput(w io.Writer) { logOutput = w }

// SetLogLevel sets the lowest level Log writes in native builds, as the host
// does for a wasm guest through warden_log_level: a message below it costs
// a comparison. The default, 0, writes every message. Benchmarks comparing a
// native build with a guest set the level the guest runs at. It is not safe
// to call concurrently with Log.
func SetLogLevel(min LogLevel) { module.minLog = min }
