// Package roundtrip parses a flat input with the abi views, reads every
// field and re-encodes the result: the work of the codeccheck module, which
// wasm_test.go also runs natively to compare the two builds.
package roundtrip

import (
	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

// RoundTrip parses in as the input of hook h with f, reads it through the
// views and returns its re-encoding, "ERR:" and the parse error, or "PANIC:"
// and the panic of a view (a reference outside the input).
func RoundTrip(f *abi.Flat, h abi.Hook, in []byte) (res string) {
	defer func() {
		if r := recover(); r != nil {
			res = "PANIC:" + r.(error).Error()
		}
	}()
	var enc []byte
	switch h {
	case abi.HookServers:
		v, err := f.Servers(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.ServersFromView(v).AppendTo(nil)
	case abi.HookCredentials:
		v, err := f.Credentials(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.CredentialsFromView(v).AppendTo(nil)
	case abi.HookToolCall:
		v, err := f.ToolCall(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.ToolCallFromView(v).AppendTo(nil)
	case abi.HookResourceRead:
		v, err := f.ResourceRead(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.ResourceReadFromView(v).AppendTo(nil)
	case abi.HookPromptGet:
		v, err := f.PromptGet(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.PromptGetFromView(v).AppendTo(nil)
	case abi.HookToolResult:
		v, err := f.ToolResult(in)
		if err != nil {
			return "ERR:" + err.Error()
		}
		enc = abitest.ToolResultFromView(v).AppendTo(nil)
	}
	return string(enc)
}
