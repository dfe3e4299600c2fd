// Package policy runs warden's WebAssembly policy plugins in wazero.
//
// A Runtime (one per host) compiles and hosts policy modules; a Module is
// one loaded plugin with a pool of warm, sandboxed instances; Module.Servers,
// Module.Credentials, Module.ToolCall (and, ABI version 2, ResourceRead,
// PromptGet and ToolResult) call its hooks with the typed messages of
// package abi, and Module.Call with already-encoded bytes. The guest side of
// the contract is the ABI of docs/abi.md (sdk/ for Go guests): a module
// declares version 1 or 2, Module.ABIVersion reports it, and a version 1
// module is held to version 1 (it cannot export a version 2 hook, and its
// outputs mean what they meant in version 1).
//
//	rt, err := policy.NewRuntime(ctx, policy.Config{
//		CompilationCacheDir: filepath.Join(stateDir, "wasm-cache"), // fast restarts
//		Logger:              logger,                                // guest logs: logger.Named(pluginID)
//	})
//	if err != nil {
//		return err
//	}
//	defer rt.Close(ctx)
//
//	m, err := rt.Load(ctx, policy.LoadOptions{
//		ID:     "acme@1",
//		Path:   "/plugins/acme/policy.wasm",
//		SHA256: manifest.PolicySHA256,             // optional pin
//		Limits: policy.Limits{MemoryMB: 32},       // overrides; zero fields inherit
//	})
//	if err != nil {
//		return err // *policy.Error, Cause CauseLoad; text names plugin and import/export
//	}
//
//	if m.Hooks().Has(abi.HookServers) {
//		out, err := m.Servers(ctx, &abi.ServersInput{ /* thread, environments, servers */ })
//		var perr *policy.Error
//		if errors.As(err, &perr) {
//			// Fail closed: disable everything this plugin governs, with
//			// perr.Error() (plugin, hook and cause) as the reason.
//		}
//		for _, d := range out.Decisions { /* compose: most restrictive wins */ }
//	}
//
// # Sandbox and limits
//
// Each instance runs with no filesystem (no preopens), no environment, no
// arguments, empty stdin, stdout/stderr routed to the plugin's logger (debug
// and warn), deterministic fake clocks (2022-01-01T00:00:00Z, +1ms per
// reading), a no-op sleep and a deterministic random source. The only
// imports a module may have are warden.log and wasi_snapshot_preview1
// functions; anything else is rejected at Load. Every call runs under a
// deadline (Limits.Timeout) and stops when its ctx ends, and memory is
// capped per module (Limits.MemoryMB, see Runtime). Input and output sizes
// are capped (Limits.MaxInputBytes, Limits.MaxOutputBytes).
//
// No guest code runs outside a deadline. A module with a wasm start section
// is refused at Load (ErrStartSection): its function would run inside
// instantiation, before the instance can be interrupted; a reactor
// initializes in _initialize, which runs under Limits.InitTimeout. Host
// functions are bounded too (wasi.go): the WASI functions whose cost a guest
// could scale are replaced by bounded ones, which stop the guest as soon as
// its call is interrupted, accept at most MaxIOVecs iovecs and
// MaxPollSubscriptions poll_oneoff subscriptions (EINVAL beyond), fill
// random_get in chunks, never copy a path, and scan at most
// MaxStdioScanBytesPerCall bytes of stdout/stderr per guest call (the rest
// is dropped, reported written, and counted in one warning). Stdio cannot be
// closed or renumbered (ENOTSUP), so the descriptor table stays fixed.
// warden.log reads at most Config.MaxLogMessageBytes per message. A timeout
// error gives the time the call ran and the limit ("timed out after 50.4ms
// (limit 50ms)").
//
// Deadlines do not use wazero's WithCloseOnContextDone, whose checks cost a
// trip to Go at every loop header: Load rewrites each module (package
// internal/interrupt) so that function entries and loop headers count the
// code run against a private budget; when it runs out (at least every 2^20
// bytes of code) the guest tests a private interrupt flag and returns to
// Go, where it can be preempted. A watchdog goroutine per Runtime sets the
// flag of a
// call that outlives its deadline or whose ctx ends (see watchdog.go). A
// module the rewriter does not understand is rejected at Load.
//
// # Limits
//
// Before anything is compiled, Load checks the module against the
// complexity limits of package internal/interrupt (function, type, global,
// table, element, data segment and export counts, code and body sizes,
// control and loop nesting, br_table targets) and refuses one past any of
// them with ErrModuleLimit and a reason naming the limit. Limits.MemoryMB
// covers tables and globals as well as linear memory (see Limits.MemoryMB).
// Instrumenting and compiling a module is bounded by Config.CompileTimeout
// (ErrCompileBudget past it) and runs off Runtime's lock, at most
// Config.MaxConcurrentCompiles at once, so a compile bomb delays only the
// loads waiting for it.
//
// # Failures
//
// Every error from Load and from a call is a *Error naming the plugin, the
// hook and a Cause (timeout, trap, memory, exit, malformed_output,
// output_too_large, guest_error, missing_hook, load, input_too_large,
// canceled, closed). All of them are fail-closed conditions for the caller.
// An instance that trapped, timed out, hit its memory limit, exited or
// returned a bad output is closed and replaced in the background; the host,
// the Module (for its next call) and other modules carry on. A guest
// reporting an error through its output's error field keeps its instance.
//
// The guest's call stack, which wazero keeps outside linear memory, is
// bounded too: unbounded recursion traps once its estimated frames exceed
// 8 MiB ("call stack too deep", CauseTrap), or at the deadline if that
// comes first (function entries are checked like loops).
//
// # Performance
//
// Load compiles once per module digest (shared by every Module with the
// same bytes; with CompilationCacheDir also across restarts) and
// instantiates Config.PoolSize warm instances, so the request path never
// compiles or instantiates. Guests are deterministic, so outputs are
// memoised per Module by (hook, input) (Config.MemoEntries); errors
// are never memoised. A call costs ≈0.25 µs of host overhead plus the
// guest's own time (BenchmarkServersHook).
//
// # Concurrency
//
// Runtime and Module methods are safe for concurrent use. A wasm instance
// is not: each call gets an instance of its own from the Module's pool (up
// to Config.MaxInstances in parallel; further callers wait, bounded by
// their ctx). Every method that may run guest code takes ctx first.
package policy
