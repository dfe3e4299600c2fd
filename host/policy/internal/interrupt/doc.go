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
// headers in a single hook call, so that makes every call several times
// slower (BenchmarkGuestCall: 2–4× on the conformance guests). The check
// this package inserts instead is a subtraction from a global and a branch
// that is almost never taken, and wazero runs with
// WithCloseOnContextDone(false). docs/RATIONALE.md says when this package
// should give way to a check of wazero's own.
//
// # What Instrument adds
//
// Three globals, appended after the module's own globals (imported and
// defined), one table, appended after the module's own tables, and two
// functions, appended after the module's own functions (their types, ()
// -> () and (i32) -> (i32), are appended to the type section unless it
// has them already, as is a type () -> (results) for the wrapper block of
// a function with several results), so that no existing index changes:
//
//	(global $flag (export "<name>") (mut i32) (i32.const 0))
//	(global $budget (mut i32) (i32.const 1048576))  ;; budgetRefill = 2^20
//	(global $depth (export "<name>.depth") (mut i32) (i32.const 0))
//	(table $yield 0 funcref)
//	(func $slow
//	  global.get $flag      ;; the interrupt check
//	  if
//	    unreachable
//	  end
//	  i32.const 1048576     ;; refill the budget
//	  global.set $budget
//	  ref.null func         ;; table.grow $yield by 0: a trip to Go
//	  i32.const 0
//	  table.grow $yield
//	  drop)
//	(func $charge (param $n i32) (result i32)
//	  global.get $budget    ;; $budget -= $n >> 3
//	  local.get $n
//	  i32.const 3
//	  i32.shr_u
//	  i32.sub
//	  global.set $budget
//	  global.get $budget
//	  i32.const 0
//	  i32.lt_s
//	  if
//	    call $slow
//	  end
//	  local.get $n)
//
// At the start of the body of every function the module defines (after its
// local declarations) and at the start of the body of every loop (right
// after the loop opcode and its block type), it inserts the budget check
//
//	global.get $budget
//	i32.const COST
//	i32.sub
//	global.set $budget
//	global.get $budget
//	i32.const 0
//	i32.lt_s
//	if
//	  call $slow
//	end
//
// where COST is the number of bytes of code the check pays for: at a
// function entry, the body's size (local declarations included); at a
// loop, its length from the loop opcode to its matching end; both capped
// at 2^20. A function whose instructions before its first loop are only
// block (any block type), local.get, local.set, local.tee, global.get,
// global.set, i32.const, i64.const and nop — no branch, call or trap, so
// that the loop's check runs right away on every call — gets no entry
// check; its first loop's check pays for the whole body instead (the code
// after that loop runs once per call, and no other check pays for it). Go
// functions all start that way (global.get, local.set, blocks, then the
// loop of their resumption points), so a Go call crosses half as many
// checks.
//
// And right before every memory.init, memory.copy, memory.fill,
// table.init, table.copy and table.fill, whose length operand (an i32) is
// on top of the stack, it inserts
//
//	call $charge
//
// which charges an eighth of that length and leaves it in place.
//
// # The depth bound
//
// wazero keeps the guest's call stack outside its linear memory and grows
// it with Go allocations (doubling and copying) up to a ceiling of tens of
// megabytes: without a bound, a recursing guest makes the host allocate
// ≈160 MB per call, whatever the module's memory limit. So every function also adds its
// frame weight W — an estimate of its frame on wazero's stack: 32 bytes,
// 8 per parameter and local, and an eighth of its body size, capped at
// 2^20 — to $depth for the duration of the call, and traps when $depth
// exceeds MaxStack (8 MiB). At the start of its body, before the budget
// check:
//
//	global.get $depth
//	i32.const W
//	i32.add
//	global.set $depth
//	global.get $depth
//	i32.const 8388608       ;; MaxStack
//	i32.gt_u
//	if
//	  unreachable
//	end
//	block (result …)        ;; the function's results
//
// The block wraps the whole body, so that a branch to the function's label
// (br, br_if, br_table, br_on_null, br_on_non_null, a catch clause) ends
// it, and before the final end comes
//
//	end
//	global.get $depth
//	i32.const W
//	i32.sub
//	global.set $depth
//
// The same four instructions precede every return, return_call,
// return_call_indirect and return_call_ref (a tail call's callee adds its
// own weight). An exception leaves functions without either, so a function
// with a try_table keeps its entry depth in a new i32 local $saved
// (`local.tee $saved` after the first global.get; declared after its other
// locals) and leaves with `local.get $saved; global.set $depth`; and where
// a caught exception may land — after the end of every block, if and
// try_table, and at the start of every loop — `local.get $saved; i32.const
// W; i32.add; global.set $depth` sets the depth back to this function's
// (it already is that value when no exception was caught). The host reads
// $depth after a trap to tell this one from others. The bound is an
// estimate, not a byte count of wazero's stack: measured, a recursing
// guest makes the host allocate ≈20 MB in all before it traps. (The if
// traps with unreachable rather than calling a function: a call there
// makes wazero compile the function's loops slower.)
//
// All of it is stack-neutral and valid anywhere an instruction is,
// including in unreachable code and in loops that take parameters. To
// interrupt a call, the host sets $flag, through the export, to a non-zero
// value (api.MutableGlobal.Set from another goroutine: a plain store,
// which the running native code reads when it next runs $slow); the guest
// traps with "unreachable" and the call returns that error. The instance
// should then be discarded, or its flag reset to 0 before it is used
// again (the next check refills the budget).
//
// # Jump threading
//
// Go's wasm backend compiles a function with branches or calls into a loop
// over a chain of blocks with a br_table on a local (its resumption
// point), and every jump into `i32.const K; local.set $pc; br $loop`, so
// each jump goes through the loop's header, its check and the br_table's
// indirect jump. Where the block the br_table picks for K still encloses
// the br — a forward jump — Instrument makes the br name that block,
// which lands on the same instruction (thread.go has the exact pattern).
// The local.set stays. In the example policies 86% of those jumps are
// rewritten so (≈8,400 per module), and allow-hosts' servers hook takes 8%
// less time. The rewrite changes a label only: the output without the
// inserted code is the input with those labels changed (TestStructure
// checks it against an independent reading of wasm-objdump's text).
//
// # Why a budget, and why trips to Go
//
// The Go runtime cannot preempt a goroutine while it runs wazero's native
// code: its preemption signal finds no Go code at the interrupted PC. A
// garbage collection's stop-the-world then waits for that goroutine, with
// every other goroutine already stopped, until the guest returns or calls
// into Go. With WithCloseOnContextDone(true) the guest calls into Go at
// every loop header; with only a flag check, a guest that loops without
// calling the host would stop the world forever — including the goroutine
// that was to set its flag: the whole process deadlocks
// (TestGCWhileGuestRuns). So whenever the budget runs out, $slow grows
// $yield by 0 elements, which wazero implements as an exit to Go
// (TableInstance.Grow): there the goroutine can be preempted.
//
// The budget counts bytes of code, not checks, so that what runs between
// two trips to Go is bounded whatever the shape of the code: a byte count
// over-approximates the instructions run (every instruction takes at
// least one byte), and a loop whose body is a megabyte of straight-line
// code, or a loop of 64 MiB memory.fill, pays for what it does rather
// than one unit per iteration. The flag is tested in $slow only, off the
// hot path: a check that never calls $slow is six cheap instructions and
// a branch that is not taken.
//
// # Latency
//
// Each check charges, before it runs, the code that can run until the
// next check: in a function without loops each instruction runs at most
// once per call, and in a loop at most once per iteration (a branch back
// to any loop lands on that loop's check). So between two runs of $slow
// the guest runs at most about budgetRefill (2^20) bytes of code, plus the
// span of the check that ran out (at most one function body or loop, and
// a span larger than 2^20 costs the whole budget, so it runs $slow every
// time), and moves at most about 8·2^20 bytes with bulk operations plus
// one bulk operation's length. A set flag therefore makes the guest trap,
// and a stop-the-world gets through, within about a megabyte of executed
// code — about a millisecond for the slowest code, far less for typical
// code — unless the guest is in a host call or a single long instruction
// (see Limits). The trips to Go cost one exit from native code per
// megabyte of code run: unmeasurable.
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
//     to a loop goes to the start of the loop's body, where a check is (a
//     threaded branch is a forward one: it skips a check only where no
//     code repeats);
//   - every call — call, call_indirect, call_ref, their return_call tail-call
//     forms, a call from the host, the start function — enters a function
//     body, which begins with a check, or with a prologue that cannot
//     branch, call or trap and leads to its first loop's check;
//   - straight-line code between two checks is finite (bounded by the size
//     of the function body), and each check charges at least one byte.
//
// So a guest whose flag is set traps within the bound above, and lets a
// stop-the-world through as often.
//
// The guest cannot clear its flag, touch its budget, call $slow or $charge
// or use the yield table: Instrument rejects any global.get or global.set
// whose index is at or beyond the module's global count; any call,
// return_call or ref.func whose function index is at or beyond the
// module's function count; any table index (call_indirect,
// return_call_indirect, table.get, table.set, table.size, table.fill,
// table.copy, table.init) at or beyond the module's table count — such a
// module is invalid anyway, but after instrumentation those indexes would
// be the new globals, functions and table —; and any export of such an
// index. Constant expressions (global initialisers, element and data
// offsets) can only read globals, and wazero lets them read only imported
// globals unless extended-const is enabled; they run once, at
// instantiation. (Element segments and the start section are not checked:
// an invalid module that names $slow there could only call it, which
// tests the flag and refills the budget with a trip to Go; one that names
// the yield table fails to instantiate, the table being empty.)
//
// Instrument rejects table.grow altogether: wazero lets a table grow to
// 2^32 entries of 8 bytes, outside the module's memory limit, so an
// unbounded table.grow is a host memory bomb; Go and C policy modules
// never use it. (The only table.grow of the output is $slow's, by 0.)
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
//     table.init on a large range (charged beforehand, so at most one such
//     instruction runs past the budget), or memory.grow. Each is bounded by
//     the memory or table size.
//   - A host function call (WASI, warden.log) is not interrupted; the check
//     comes when it returns to the guest.
//   - Unbounded recursion is stopped by the depth bound (see above); the
//     entry check still runs at each call and stops deep but finite
//     recursion (such as an exponential one) promptly. A legitimate call
//     chain deeper than MaxStack of estimated frames (≈10,000 Go calls)
//     traps too.
//   - Code offsets change, so DWARF custom sections (.debug_*) describe the
//     original code: wazero's stack traces, when debug info is enabled, may
//     show wrong source lines for an instrumented module. Function indexes,
//     and so the name section, are unchanged.
//   - Instrument does not validate the module beyond what it needs to
//     instrument it safely: compile the result with wazero, which does.
package interrupt
