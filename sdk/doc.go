// Package sdk is the Go guest library for warden policy plugins. A policy is
// a main package that registers handlers from init and is built as a WASI
// reactor module:
//
//	package main
//
//	import "github.com/warden-mcp/warden/sdk"
//
//	func main() {}
//
//	func init() {
//		sdk.Servers(func(in *sdk.ServersInput, out *sdk.ServersOutput) {
//			for i := range in.Servers {
//				s := &in.Servers[i]
//				if in.Thread.Kind == "reviewer" && s.Transport == "stdio" {
//					out.Hide(s.Name, "stdio servers are hidden in reviewer threads")
//				}
//			}
//		})
//	}
//
// Build it with:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
//
// Importing sdk is all it takes: the package defines the ABI exports
// (warden_abi_version, warden_alloc, warden_hooks, warden_servers,
// warden_credentials, warden_tool_call) with //go:wasmexport, which works
// from a non-main package, and warden_hooks reports which handlers were
// registered. sdk.Log uses the warden.log import; a module that never logs
// does not import it. See docs/abi.md for the contract.
//
// # Why an out-parameter
//
// DESIGN.md sketches handlers as func(in) Output. The SDK passes the output
// as a parameter instead: the output value, its decision slice (and each
// decision's tool lists) and the encoded output buffer live in the SDK and
// are reused from call to call, so a handler that only compares strings and
// records decisions allocates nothing on the hot path. A returned value
// would be a fresh slice every call.
//
// # Lifetimes
//
// Input strings are zero-copy views into the input buffer (see package abi).
// They are valid for the duration of the handler call, and a handler may put
// them in the output (names, tool names, reasons): the output is encoded
// before the host writes the next input. Copy (strings.Clone) anything kept
// across calls, e.g. in a package-level cache.
//
// # Failing closed
//
// A handler that cannot decide calls out.Fail(msg); the host then treats the
// plugin's decision as "disable everything it governs" (servers, credentials)
// or "deny" (tool_call) with msg in the reason. A panic in a handler is
// recovered and reported the same way, as is malformed input.
//
// # Testing a policy natively
//
// The registration API works in ordinary Go builds too. Invoke runs a
// handler on an encoded input exactly as the wasm export does (same decode,
// same output reuse, same encoding), and EvalServers, EvalCredentials and
// EvalToolCall wrap it for tests:
//
//	out, err := sdk.EvalServers(&sdk.ServersInput{
//		Thread:  sdk.Thread{Kind: "reviewer"},
//		Servers: []sdk.Server{{Name: "fs", Transport: "stdio"}},
//	})
//	// out.Decisions[0].Action == abi.ServerHide
//
// # Performance
//
// A hook call allocates nothing after warm-up unless the handler does (string
// concatenation for a reason allocates; constant reasons and input strings do
// not). In the wasm guest, under wazero's interrupt checks, cost is counted
// in taken branches, loop iterations and calls (about 25 ns each), not in
// instructions: a handler that loops once over the servers and compares a
// few strings is cheap; one that scans every byte of every URL costs a check
// per byte. See "Cost model" in package abi.
//
// # Helpers
//
// URLHost, HostIn and JSONStringField cover common checks without
// allocating: a server's URL host against an allow list with "*.domain"
// patterns, and a top-level string argument of a tool call.
package sdk
