// Package abi defines versions 1 and 2 of the binary interface between the warden
// host and its WebAssembly policy plugins: export and import names, the hook
// and action enums, the message types, the "warden flat" layout of hook
// inputs (writer, validating reader and zero-copy views) and a hand-written
// protobuf-wire codec for hook outputs. docs/abi.md is the normative
// description; this package is its Go implementation, used by the host
// (natively) and by the sdk (inside the wasm guest). It imports only the
// standard library.
//
// Version 2 ([Version]) adds the resource_read, prompt_get and tool_result
// hooks, prompt and resource lists in ServerDecision and the ASK tool_call
// action to version 1 ([MinVersion]), changing nothing of it: a version 1
// hook's input is the bytes version 1 wrote, and the host holds a version 1
// guest's outputs to version 1 (ServersOutput.HoldTo, ToolCallOutput.HoldTo).
//
// # Usage
//
// The host builds an input from the Go structs, writes it into the guest's
// buffer and decodes the output:
//
//	buf = in.AppendTo(buf[:0])          // in is an *abi.ServersInput: flat layout
//	// ... write buf into guest memory, call warden_servers ...
//	var out abi.ServersOutput
//	if err := out.Unmarshal(outBytes); err != nil {
//		// malformed output: fail closed
//	}
//
// A guest reads the input in place through views, and appends its output:
//
//	var f abi.Flat // kept between calls
//	in, err := f.Servers(input)
//	if err != nil { ... } // an *InputError: answer with an error output
//	for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
//		s := servers.At(i)
//		if in.Thread().Kind() == "reviewer" && s.IsStdio() { ... s.Name() ... }
//	}
//
// (The sdk does this for Go guests; handlers get the views.) The host side
// also has Unmarshal for inputs, which checks the whole input and fills the
// structs (tests, round trips, `warden policy eval`), and ValidateInput.
//
// # Inputs: the flat layout and views
//
// An input is a header (magic "WDNF", layout version, message kind, a table
// of record strides), records of 8-byte slots and string bytes; every
// integer is a little-endian u32 (docs/abi.md §6). A string slot is an
// offset and a length, a list slot an offset and a count, so any field is
// found by arithmetic: a view (ServersView, ServerView, ServerList, ...) is
// a pointer to the parsed Flat and one to its record, and an accessor is a
// few loads. Every accessor is small enough to inline (TestViewsInline
// checks it for the wasm build) and has no loop.
//
// Flat.Servers (Credentials, ToolCall) checks the header and the root record
// once per call, in straight-line code; an input that an older or newer host
// wrote with different strides still reads correctly (an older host's, with
// smaller records, is copied once into this version's layout: the views
// then never check record sizes). After that each accessor checks the
// reference it follows: a string or list outside the input makes it panic
// with an *InputError, never read outside the input. The sdk recovers that
// panic and answers with an error output (the host fails closed).
//
// Views do not copy: a string is an unsafe.String over the input buffer.
// THE VIEWS AND THEIR STRINGS ARE VALID ONLY WHILE THAT BUFFER IS
// UNCHANGED (in a guest: during the hook call). Copy with strings.Clone
// whatever must outlive it. Unmarshal's strings are views into its buffer
// too.
//
// Besides the transport string, a Server record has the transport as an
// enum in its flags slot (ServerView.IsStdio, IsHTTP, TransportKind) and
// the URL's host, computed by the host with URLHost (ServerView.URLHost),
// so that the common policy checks cost no string scanning in the guest.
//
// # Outputs
//
// Outputs are small and written once, so they stay in the protobuf wire
// format (docs/abi.md §7): AppendTo encodes (omitting zero values) and
// Unmarshal decodes, checking enums and structure. Malformed outputs return
// a *DecodeError wrapping one of the Err* sentinels; unknown fields of wire
// types 0, 1, 2 and 5 are skipped.
//
// # Cost model
//
// The performance target is the wasm guest, run by wazero (wazevo) with
// warden's interrupt checks, measured with wazero v1.12 and Go 1.26
// (docs/RATIONALE.md has the numbers):
//
//   - The Go wasm backend turns every call of a function with branches,
//     every taken backward branch and every loop iteration into a jump to a
//     loop header, and the host puts an interrupt check at every loop header
//     (a budget decrement and a test, added when it loads the module). The
//     code is branch-free and loop-free where it matters, which keeps those
//     checks few and costs nothing natively. (docs/RATIONALE.md tells why
//     the host checks this way rather than with wazero's
//     WithCloseOnContextDone, whose check is an exit to Go.)
//   - What still costs in the guest: a non-inlined call (the Go wasm
//     calling convention passes arguments on a stack in linear memory, and
//     every memory access is bounds-checked) ≈5–10 ns; a copy (a call to
//     memmove, then memory.copy) ≈18 ns; bounds checks ≈13% of a typical
//     hook call.
//   - encoding/binary's little-endian reads cost too much of the inlining
//     budget on wasm, so the views read with plain loads (load_wasm.go;
//     load_other.go is the portable version).
//
// So reading the input costs per field read, not per field: parsing plus
// reading the name, transport kind and URL host of 20 servers costs ≈60 ns
// natively and ≈0.2 µs in the guest, where the old sequential protobuf
// decoder cost ≈25 µs under wazero's checks. A whole servers call of the
// allow-hosts example costs ≈1.5 µs through the host
// (BenchmarkServersHook in host/policy).
// The input is bigger than the protobuf encoding (6.7 KB instead of 3.9 KB
// for ServersInput20): fixed-size records trade bytes for random access.
//
// Check inlining with:
//
//	GOOS=wasip1 GOARCH=wasm go build -gcflags=-m ./abi 2>&1 | grep inline
//
// # Errors
//
// A malformed input makes Unmarshal and Flat.Servers (Credentials,
// ToolCall) return an *InputError naming the message, the field path, the
// byte offset and one of ErrTruncated, ErrMagic, ErrVersion, ErrKind,
// ErrStride, ErrBounds, ErrCount; they never panic. The package does not use
// fmt, to keep guest modules small; errors wrap with Unwrap.
package abi
