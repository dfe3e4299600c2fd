// Package abi defines version 1 of the binary interface between the warden
// host and its WebAssembly policy plugins: export and import names, the hook
// and action enums, the message types, and a hand-written, allocation-free
// protobuf-wire encoder and decoder for them. docs/abi.md is the normative
// description; this package is its Go implementation, used by the host
// (natively) and by the sdk (inside the wasm guest). It imports only the
// standard library.
//
// # Usage
//
// The host encodes an input into the guest's buffer and decodes the output:
//
//	buf = in.AppendTo(buf[:0])          // in is an *abi.ServersInput
//	// ... write buf into guest memory, call warden_servers ...
//	var out abi.ServersOutput
//	if err := out.Unmarshal(outBytes); err != nil {
//		// malformed output: fail closed
//	}
//
// A guest does the reverse, reusing its values across calls:
//
//	var in abi.ServersInput  // kept between calls
//	var out abi.ServersOutput
//	var buf []byte
//	if err := in.Unmarshal(input); err != nil { ... }
//	out.Decisions = out.Decisions[:0]
//	out.Decisions = append(out.Decisions, abi.ServerDecision{Name: "fs", Action: abi.ServerHide})
//	buf = out.AppendTo(buf[:0])
//
// # Zero-copy decoding
//
// Unmarshal does not copy: every string and []byte field of a decoded
// message is a view into the buffer passed to Unmarshal (built with
// unsafe.String). THE DECODED MESSAGE IS VALID ONLY WHILE THAT BUFFER IS
// UNCHANGED. Overwrite the buffer (for example by writing the next input into
// it) and the strings of the previous message change under you. Copy with
// strings.Clone or bytes.Clone whatever must outlive the buffer.
//
// Unmarshal also reuses memory: repeated fields are truncated to length 0
// and refilled, reusing their capacity and that of their elements' own
// slices, so decoding into a warm value allocates nothing.
//
// # Cost model
//
// The performance target is the wasm guest, run by wazero with interrupt
// checks on (WithCloseOnContextDone). Three facts shape the code:
//
//   - wazero (v1.12) puts its interrupt check at every wasm loop header, and
//     the check is a call out to the host: about 25 ns on the development
//     machine, ten times the cost of a loop iteration without it.
//   - The Go wasm backend compiles each function that has any branch into a
//     loop around a br_table, and every jump to a basic block that is not
//     the next one in layout is a branch back to that loop header. So every
//     taken branch, every loop iteration and every call of a function with
//     branches costs one interrupt check. (A call to a branch-free leaf
//     function and a branch that falls through cost none.)
//   - Block layout is decided by the compiler: inlined code that rejoins
//     after an if/else costs a jump on one side; a one-sided "if" whose body
//     calls a function is laid out of line, so skipping it is free.
//
// So in the guest the cost of decoding is roughly the number of taken
// branches, loop iterations and calls, not the number of instructions. The
// decoder avoids interfaces, reflection, maps and allocation; it inlines its
// field reader (field); in wasm builds (fast_wasm.go) the reader and the
// singular string and bool fields are branch-free (masks instead of
// branches), while native builds (fast_other.go) use ordinary branches,
// which are faster on a real CPU; it decodes each message into a stack copy
// that is stored once (one GC write-barrier check instead of one per field);
// and it expects fields in field-number order. Inputs are encoded in "full
// form" (every singular field present, in order, even when zero) so that
// the straight-line path never skips a field. Any other valid encoding (zero
// values omitted, fields out of order, unknown fields) is decoded by the
// general loop (merge) with the same result; the examples/plugins tests
// check the wasm build of the codec against the native one on mutated
// inputs.
//
// Measured for abitest.ServersInput20 (20 servers, about 400 fields, 3.7 KB):
// native Unmarshal ≈ 1.2 µs with 0 allocations; in a Go wasm guest in wazero
// ≈ 25 µs with interrupt checks (≈ 620 checks) and ≈ 10 µs without; a whole
// servers call of the reviewer-no-stdio example ≈ 35 µs with checks and
// ≈ 12.5 µs without (the first straightforward decoder took ≈ 87 µs to
// decode the same input with checks). A smaller input costs proportionally
// less: the cost is per field and per element, not per call.
//
// Check inlining with:
//
//	go build -gcflags=-m ./abi 2>&1 | grep inline
//
// # Errors
//
// Malformed input (truncated varint, varint longer than 10 bytes, length
// past the end, wire type that does not match a known field, field number 0
// or above 2^29-1, an undefined enum value in an output) makes Unmarshal
// return a *DecodeError wrapping one of the Err* sentinels; it never panics.
// Unknown fields of wire types 0, 1, 2 and 5 are skipped. The package does
// not use fmt, to keep guest modules small; errors wrap with Unwrap.
package abi
