// Package policytest runs policy fixtures: the engine behind `warden policy test` and
// `warden policy eval`.
//
// A fixture is a JSON file under a plugin's tests/ directory holding one case or an array of
// cases. A case names a hook, gives its input in the ABI's JSON form (the field names of
// docs/abi.md in camelCase) and the decisions it expects:
//
//	{
//	  "name": "reviewer threads hide stdio servers",
//	  "hook": "servers",
//	  "input": {
//	    "thread": {"id": "t1", "kind": "reviewer"},
//	    "servers": [
//	      {"name": "docs", "transport": "stdio", "command": "docs-mcp"},
//	      {"name": "web", "transport": "http", "url": "https://mcp.example.com/mcp"}
//	    ]
//	  },
//	  "expect": {"decisions": [{"name": "docs", "action": "hide"}]}
//	}
//
// Expectations are exact, like `opa test`: every server (or credential) the case does not
// list must get no opinion ("expose" / "unspecified"), and every one it lists must get the
// action it names. A listed reason, allowTools or denyTools (and, ABI version 2,
// allowPrompts, denyPrompts, allowResources, denyResources) must match exactly too. For
// tool_call, expect {"action": "deny", "reason": "…"}, {"action": "ask", "reason": "…"} or
// {"action": "allow", "arguments": {…}} for a rewrite; resource_read answers "allow" or
// "deny" with a reason, and prompt_get the same or a rewrite as for tool_call. For
// tool_result, expect {"action": "pass"}, {"action": "error", "reason": "…"} or
// {"action": "rewrite", "result": {…}} (the CallToolResult the client gets); its input has
// the call (server, tool, arguments) and the upstream result as JSON:
//
//	{
//	  "name": "a result with a planted marker is redacted",
//	  "hook": "tool_result",
//	  "input": {
//	    "server": "fs", "tool": "read_file", "arguments": {"path": "/notes"},
//	    "result": {"content": [{"type": "text", "text": "key CONFORMANCE-SECRET"}]},
//	    "isError": false
//	  },
//	  "expect": {"action": "rewrite", "result": {"content": [{"type": "text", "text": "[redacted]"}]}}
//	}
//
// {"error": "text"} expects the call to fail with an error containing text (a
// fail-closed case). A case runs against the module as the host runs it: a version 1
// module's answers are held to version 1 (docs/abi.md §13).
//
//	cases, err := policytest.LoadDir("examples/plugins/reviewer-no-stdio/tests")
//	for _, c := range cases {
//		res := policytest.Run(ctx, module, c)
//		fmt.Println(res.Name, res.Pass, res.Problems)
//	}
package policytest
