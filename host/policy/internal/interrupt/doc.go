// Package interrupt instruments a WebAssembly module so that the host can
// stop it: epoch-style interruption, like wasmtime's, done by rewriting the
// module binary at load time.
//
// # Why
//
// warden runs untrusted policy modules under wazero, and a runaway guest (an
// infinite loop, an exponential recursion) must be stopped when its call's
// deadline passes. wazero's own mechanism, RuntimeConfig
// WithCloseOnContextDone(true), makes the compiler emit, at every function
// entry and loop header, an exit from native code to a Go trampoline that
// checks the context (≈25 ns each). A Go guest crosses hundreds of loop
// headers in a single hook call, so that made every call several times
// slower (BenchmarkGuestCall: 2–4× on the conformance guests). The check
// this package inserts instead is a load of a global and a branch that is
// never taken, and wazero runs with WithCloseOnContextDone(false).
//
// # What Instrument adds
//
// Two globals, appended after the module's own globals (imported and
// defined) so that no existing index changes, and one table, appended after
// the module's own tables:
//
//	(global $flag (export "<name>") (mut i32) (i32.const 0))
//	(global $countdown (mut i32) (i32.const 1000))
//	(table $yield 0 funcref)
//
// and, at the start of the body of every function the module defines (after
// its local declarations) and at the start of the body of every loop (right
// after the loop opcode and its block type), the code
//
//	global.get $flag            ;; the interrupt check
//	if
//	  unreachable
//	end
//	global.get $countdown       ;; the countdown to the next trip to Go
//	i32.const -1
//	i32.add
//	global.set $countdown
//	global.get $countdown
//	i32.eqz
//	if
//	  i32.const 1000
//	  global.set $countdown
//	  ref.null func
//	  i32.const 0
//	  table.grow $yield
//	  drop
//	end
//
// It is stack-neutral and valid anywhere an instruction is, including in
// unreachable code and in loops that take parameters. To interrupt a call,
// the host sets $flag, through the export, to a non-zero value
// (api.MutableGlobal.Set from another goroutine: a plain store, which the
// running native code reads at its next check); the guest traps with
// "unreachable" and the call returns that error. The instance should then
// be discarded, or its flag reset to 0 before it is used again.
//
// # Why the countdown
//
// The Go runtime cannot preempt a goroutine while it runs wazero's native
// code: its preemption signal finds no Go code at the interrupted PC. A
// garbage collection's stop-the-world then waits for that goroutine, with
// every other goroutine already stopped, until the guest returns or calls
// into Go. With WithCloseOnContextDone(true) the guest calls into Go at
// every loop header; with only the flag check, a guest that loops without
// calling the host would stop the world forever — including the goroutine
// that was to set its flag: the whole process deadlocks
// (TestGCWhileGuestRuns). So every 1000 checks the guest grows $yield by 0
// elements, which wazero implements as an exit to Go
// (TableInstance.Grow): there the goroutine can be preempted, and the
// stop-the-world completes within about 1000 loop iterations or calls.
//
// The output therefore needs wazero's reference-types feature (part of
// CoreFeaturesV2, the default) for table.grow and a second table.
//
// # Guarantees
//
// Any unbounded execution crosses checks, because wasm control flow is
// structured:
//
//   - the only backward branches are branches to a loop label (br, br_if,
//     br_table, br_on_null, br_on_non_null, a try_table catch), and a branch
//     to a loop goes to the start of the loop's body, where a check is;
//   - every call — call, call_indirect, call_ref, their return_call tail-call
//     forms, a call from the host, the start function — enters a function
//     body, which begins with a check;
//   - straight-line code between two checks is finite (bounded by the size
//     of the function body).
//
// So a guest whose flag is set traps at its next check, after at most one
// function body's worth of straight-line code, unless it is inside a host
// call or a single long instruction (below); and it lets a stop-the-world
// through within 1000 checks.
//
// The guest cannot clear its flag or touch its countdown: Instrument
// rejects any global.get or global.set whose index is at or beyond the
// module's global count (such a module is invalid anyway, but after
// instrumentation that index would be one of the new globals) and any
// existing export of such a global. Constant expressions (global
// initialisers, element and data offsets) can only read globals, and
// wazero lets them read only imported globals unless extended-const is
// enabled; they run once, at instantiation. (Instrument does not check
// table indexes: a module that names a table beyond its own — an invalid
// module — becomes able to use the yield table, an empty funcref table
// that the inserted code only grows by 0; that changes nothing for the
// flag or the countdown.)
//
// # Parsing like wazero
//
// Instrument parses every instruction and fails on anything it does not
// understand rather than guess, since an immediate byte taken for an opcode
// (or the reverse) could hide a loop from it. Where wazero v1.12 (its
// validator or its compiler) reads an encoding differently from the spec,
// or from each other, Instrument accepts only the encodings that all of
// them read the same way:
//
//   - SIMD sub-opcodes: one byte, or a byte ≥ 0x80 followed by 0x01 (wazero
//     reads one byte, then the 0x01 as a nop). Relaxed SIMD, which wazero
//     does not implement and would read as two instructions, is rejected.
//   - Atomic sub-opcodes: one byte below 0x80.
//   - Block types: read as an s33 whatever their first byte.
//   - Reserved memory-index bytes (memory.size, memory.grow, memory.init,
//     memory.copy, memory.fill, atomic.fence): exactly 0x00.
//   - select t: exactly 0x01 and a one-byte type. wazero's compiler skips
//     two bytes whatever the validator accepted, so select with a (ref …)
//     type is compiled wrongly — with plain CoreFeaturesV2,
//     `select (result (ref null func))` makes CompileModule panic.
//   - Legacy exception handling (try, catch, rethrow, delegate, catch_all)
//     is rejected, as wazero rejects it.
//
// This analysis covers wazero's validator and its optimizing compiler
// (wazevo, the default on amd64 and arm64), not its interpreter.
//
// # Limits
//
//   - A single instruction that does a lot of work is not interrupted
//     midway: memory.fill, memory.copy, memory.init, table.fill, table.copy,
//     table.init on a large range, or memory.grow. Each is bounded by the
//     memory or table size.
//   - A host function call (WASI, warden.log) is not interrupted; the check
//     comes when it returns to the guest.
//   - Unbounded recursion is stopped first by wazero's call-stack limit,
//     which traps with a stack-overflow error; the entry check still runs
//     at each call and stops deep but finite recursion (such as an
//     exponential one) promptly.
//   - Code offsets change, so DWARF custom sections (.debug_*) describe the
//     original code: wazero's stack traces, when debug info is enabled, may
//     show wrong source lines for an instrumented module. Function indexes,
//     and so the name section, are unchanged.
//   - Instrument does not validate the module beyond what it needs to
//     instrument it safely: compile the result with wazero, which does.
package interrupt
