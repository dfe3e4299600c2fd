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
//	for _, v := range verdicts.Servers {
//		fmt.Println(v.Name, v.Action, v.Reason)
//	}
//
// Every hook invocation (the baseline's included) is written to the decision log as one JSON
// line: time, thread, plugin id and module digest, hook, input digest, the outcome per
// server or credential, reasons, latency. Inputs hold names and metadata only, never secret
// values, so neither do the log lines.
package decision
