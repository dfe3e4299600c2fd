// Package decision composes warden's policy decisions and logs every one of them.
//
// Composition follows DESIGN.md §4: the built-in baseline (the security contract of §5) runs
// first, then the operator policies from config.toml over every candidate server, then each
// selected plugin's own policy over only that plugin's servers. The most restrictive answer
// wins (hide > disable > expose; deny > executor > local; deny > allow), so no policy can
// widen what the baseline or an operator refused. A policy that fails — trap, timeout,
// memory limit, malformed output, a guest-reported error, a module that did not load — fails
// closed: everything it governs is disabled (servers) or denied (credentials, tool calls),
// with a reason naming the plugin, the hook and the cause.
//
//	eng := decision.NewEngine(decision.Options{Log: decision.NewLog(os.Stderr)})
//	eng.SetPolicies(operatorModules, map[string]decision.Policy{"demo@1": demoModule})
//	verdicts := eng.Servers(ctx, &abi.ServersInput{Thread: thread, Servers: candidates})
//	for _, v := range verdicts {
//		fmt.Println(v.Name, v.Action, v.Reason)
//	}
//
// Beyond servers and credentials, the engine decides each request the front door passes
// through: ToolCall (allow, deny, rewrite the arguments, or — ABI version 2 — ask the user:
// deny > ask > allow), ResourceRead and PromptGet (the servers-hook verdict's item lists,
// ItemFilter, then the policies: allow, deny, or for prompts rewrite the arguments), and
// ToolResult (pass, rewrite, or replace with a tool error). A policy without a hook has no
// opinion on it, so a version 1 module keeps deciding exactly what it did. A policy
// answering with a value its ABI version does not define (a version 1 module's ask) fails
// closed.
//
// Every hook invocation (the baseline's included) is written to the decision log as one JSON
// line: time, thread, plugin id and module digest, hook, input digest, the outcome per
// server, credential or request, reasons, latency; servers lines also count each server's
// tool, prompt and resource lists. LogApproval adds the user's answer when a call is put to
// them. Inputs other than arguments and results hold names and metadata only; arguments and
// results appear in the log only as the input digest, never as values.
package decision
