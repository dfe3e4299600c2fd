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
//		sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
//			reviewer := in.Thread().Kind() == "reviewer"
//			for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
//				if s := servers.At(i); reviewer && s.IsStdio() {
//					out.Hide(s.Name(), "stdio servers are hidden in reviewer threads")
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
// (warden_abi_version, which returns 2, warden_alloc, warden_hooks and every
// hook's export: warden_servers, warden_credentials, warden_tool_call,
// warden_resource_read, warden_prompt_get, warden_tool_result) with
// //go:wasmexport, which works from a non-main package, and warden_hooks
// reports which handlers were registered. sdk.Log uses the warden.log import; a module that never logs
// does not import it. See docs/abi.md for the contract.
//
// # Inputs are views
//
// A handler receives a read-only view of the hook input (ServersInput,
// CredentialsInput, ToolCallInput, ResourceReadInput, PromptGetInput,
// ToolResultInput: the abi package's views): methods that
// read one field each, where it lies in the input buffer. Nothing is decoded
// ahead of time, so a handler pays only for the fields it reads:
//
//	in.Thread().Kind()                  // string
//	servers := in.Servers()             // ServerList: Len, At(i)
//	s := servers.At(i)                  // ServerView
//	s.Name(), s.URL(), s.Command()      // strings
//	s.IsStdio(), s.IsHTTP()             // the transport, without comparing strings
//	s.URLHost()                         // the URL's host, computed by the host
//	s.Args().Contains("--unsafe")       // StringList: Len, At(i), Contains
//	s.Credentials().At(j).EnvVar()      // CredentialList, CredentialView
//
// Loop with an index (for i := 0; i < l.Len(); i++): a range-over-func
// iterator would call the loop body as a function per element, which costs
// more in a wasm guest (see Performance).
//
// # Outputs
//
// The output methods record a decision each, written into the encoded
// output at once (a handler may pass views of the input: strings are
// copied, or, when the host reads gathered outputs, referred to where they
// are and kept alive until the host has copied them after the call). A
// reason is given in parts that are concatenated, so that building
// it allocates nothing:
//
//	out.Disable(s.Name(), "host ", host, " is not in the allow list")
//
// The output is a parameter, not a return value, because it lives in the
// SDK and is reused from call to call: a warm hook call allocates nothing
// unless the handler does.
//
// The hooks of ABI version 2 register the same way:
//
//	sdk.ToolResult(func(in sdk.ToolResultInput, out *sdk.ToolResultOutput) {
//		if bytes.Contains(in.Result(), marker) {
//			out.Rewrite(redactedJSON, "redacted")  // a CallToolResult JSON object
//		}
//	})
//	sdk.ResourceRead(func(in sdk.ResourceReadInput, out *sdk.ResourceReadOutput) {
//		if strings.HasPrefix(in.URI(), "file:///etc/") {
//			out.Deny("no system files")
//		}
//	})
//
// with sdk.PromptGet for prompts/get, out.Ask in tool_call (the front door
// asks its client's user first) and out.AllowPrompts, DenyPrompts,
// AllowResources and DenyResources in servers.
//
// # Lifetimes
//
// Input strings are zero-copy views into the input buffer. They are valid
// for the duration of the handler call, and a handler may put them in the
// output (names, tool names, reasons). Copy (strings.Clone) anything kept
// across calls, e.g. in a package-level cache.
//
// # Failing closed
//
// A handler that cannot decide calls out.Fail(msg); the host then treats the
// plugin's decision as "disable everything it governs" (servers, credentials),
// "deny" (tool_call, resource_read, prompt_get) or a tool error
// (tool_result) with msg in the reason. A panic in a handler is
// recovered and reported the same way, as is a malformed input, whether the
// SDK finds it when the call starts (the header) or a view finds it when the
// handler reads a field (a view never reads outside the input: it panics
// with an *abi.InputError, which is recovered).
//
// # Testing a policy natively
//
// The registration API works in ordinary Go builds too. Invoke runs the
// module's handler on an encoded input with exactly the code the wasm export
// runs (same parse, same views, same output encoding), and EvalServers,
// EvalCredentials, EvalToolCall, EvalResourceRead, EvalPromptGet and
// EvalToolResult wrap it for tests, taking the host-side
// structs of package abi:
//
//	out, err := sdk.EvalServers(&abi.ServersInput{
//		Thread:  abi.Thread{Kind: "reviewer"},
//		Servers: []abi.Server{{Name: "fs", Transport: "stdio"}},
//	})
//	// out.Decisions[0].Action == abi.ServerHide
//
// A Policy is a set of handlers with its own state, for tests and
// benchmarks that need several policies in one process (the module's
// handlers are one Policy); SetLogOutput redirects Log in native builds and
// SetLogLevel drops messages below a level there, as the host does for a
// guest.
//
// # Performance
//
// In the wasm guest a call of a non-inlined function, a copy and a
// bounds-checked memory access cost several times what they cost natively
// (see "Cost model" in package abi). The SDK is written for that:
//
//   - a hook call checks the input's header in straight-line code, reads
//     nothing else ahead, and resets the output by setting a length;
//   - it recovers a handler's panic with a single deferred call per hook
//     call, and the input, the parsed views and the output are fields of
//     one Policy value;
//   - a short decision (name and reason below 128 bytes, a reason of at most
//     three parts) is written by a fast path: six stores of a gathered
//     output (docs/abi.md §7.1), which refers to the name and the reason's
//     parts where they are, when the host reads those (warden does),
//     otherwise a copy of the non-empty parts; anything else goes through
//     package abi's encoder;
//   - URLHost and HostIn have loop-free versions in wasm builds
//     (helpers_fast.go) that compare 8 bytes at a time; a HostSet prepares
//     its patterns once, where HostIn checks per call that its list is the
//     one it prepared last;
//   - Log costs a comparison when the host does not record the level (the
//     host says which levels it records through warden_log_level);
//   - type aliases of abi's views would keep the compiler from inlining
//     their methods into a package that imports only sdk (inline.go works
//     around it; TestViewsInlineThroughSDK checks it).
//
// Measured (BenchmarkServersHook in host/policy, 20 servers, through the
// host, interrupts on): allow-hosts ≈1.05 µs per call, of which ≈0.18 µs is
// the host's own cost per call (docs/performance.md has the current numbers).
//
// # Helpers
//
// URLHost, HostIn, HostSet and JSONStringField cover common checks without
// allocating: a URL's host against an allow list with "*.domain" patterns
// (HostSet for a list used for every server, prepared once in a package
// variable), and a top-level string argument of a tool call.
package sdk
