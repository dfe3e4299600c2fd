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
// action it names. A listed reason, allowTools or denyTools must match exactly too. For
// tool_call, expect {"action": "deny", "reason": "…"} or {"action": "allow", "arguments":
// {…}} for a rewrite. {"error": "text"} expects the call to fail with an error containing
// text (a fail-closed case).
//
//	cases, err := policytest.LoadDir("examples/plugins/reviewer-no-stdio/tests")
//	for _, c := range cases {
//		res := policytest.Run(ctx, module, c)
//		fmt.Println(res.Name, res.Pass, res.Problems)
//	}
package policytest
