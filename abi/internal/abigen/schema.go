package main

// The schema of the ABI (version 2; what version 1 has is marked below): every message of the hook inputs (the "warden flat"
// records, docs/abi.md §6) and outputs (protobuf, §7). Everything the
// generator writes derives from these tables; adding a field to a message is
// one line here and `go generate ./abi/...`.
//
// Inputs: the slots of a record follow the fields in order, one 8-byte slot
// each, except that consecutive bool fields share one flags slot (bit i for
// the i-th of them) and a TransportKind field is the second half of the
// flags slot before it. New fields are only ever appended to a record (a
// reader finds the old slots at the same offsets), and record types only
// appended to the list.
//
// Field types: string, json (bytes holding a JSON value: RawJSON in Go),
// bool, uint32, []string, a message name, []message, or an enum name.
//
// Notes are written in docs/abi.md's style (markdown, with their leading
// punctuation: ": ..." or " — ..."); the Go field comments are the same
// text without the markdown. Doc is the doc comment of a view's accessor.

var inputs = []Msg{
	{
		Name: "ServersInput", Doc: "ServersInput is the input of the servers hook.",
		Prefix: "si", View: "ServersView", Hook: "HookServers", HookName: "servers",
		ViewDoc: "ServersView is a read-only view of the servers hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Environments", Wire: "environments", Type: "[]Environment", Doc: "Environments are the environments servers run in, with their capabilities."},
			{Name: "Servers", Wire: "servers", Type: "[]Server", Note: " — a plugin's own policy sees only that plugin's servers", Doc: "Servers are the candidate servers (for a plugin's own policy, only that plugin's servers)."},
			{Name: "HasRequirements", Wire: "has_requirements", Type: "bool", Doc: "HasRequirements reports whether the operator set a requirements allow list."},
			{Name: "Requirements", Wire: "requirements", Type: "[]Requirement", Doc: "Requirements is the operator's requirements allow list."},
		},
	},
	{
		Name: "CredentialsInput", Doc: "CredentialsInput is the input of the credentials hook.",
		Prefix: "ci", View: "CredentialsView", Hook: "HookCredentials", HookName: "credentials",
		ViewDoc: "CredentialsView is a read-only view of the credentials hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Server", Wire: "server", Type: "Server", Resolved: "server", Note: " — its `credentials[i].resolves_at` is set", Doc: "Server is the server about to connect; its credentials have ResolvesAt set."},
			{Name: "Route", Wire: "route", Type: "string", Note: ": `\"local\"` or an executor id", Doc: "Route is \"local\" or the executor id the server is routed to."},
			{Name: "Environment", Wire: "environment", Type: "Environment", Resolved: "env", Note: " — the capabilities of the route's environment", Doc: "Environment holds the capabilities of the route's environment."},
		},
	},
	{
		Name: "ToolCallInput", Doc: "ToolCallInput is the input of the tool_call hook.",
		Prefix: "tc", View: "ToolCallView", Hook: "HookToolCall", HookName: "tool_call",
		ViewDoc: "ToolCallView is a read-only view of the tool_call hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Server", Wire: "server", Type: "string", Doc: "Server is the name of the server called."},
			{Name: "PluginID", Wire: "plugin_id", Type: "string", Doc: "PluginID is the plugin the server belongs to (\"\" for none)."},
			{Name: "Tool", Wire: "tool", Type: "string", Doc: "Tool is the tool name."},
			{Name: "Arguments", Wire: "arguments", Type: "json", Note: ": a JSON object (validated by the host)", Doc: "Arguments is the call's arguments, a JSON object (validated by the\nhost): a view into the input (nil when empty) that must not be modified."},
			{Name: "Caller", Wire: "caller", Type: "string", Doc: "Caller identifies who made the call."},
		},
	},
	{
		Name: "Thread", Doc: "Thread describes the conversation thread a hook runs for.", Prefix: "th",
		Fields: []Field{
			{Name: "ID", Wire: "id", Type: "string", Doc: "ID is the thread id."},
			{Name: "Kind", Wire: "kind", Type: "string", Note: ": e.g. `\"reviewer\"`; `\"\"` for a default thread", Doc: "Kind is the thread kind, e.g. \"reviewer\"; \"\" for a default thread."},
			{Name: "Roots", Wire: "roots", Type: "[]Root", Note: ": the capability roots the thread selected", Doc: "Roots are the capability roots the thread selected."},
		},
	},
	{
		Name: "Root", Doc: "Root is a capability root (plugin directory) selected by a thread.", Prefix: "rt",
		Fields: []Field{
			{Name: "ID", Wire: "id", Type: "string", Doc: "ID is the root id."},
			{Name: "Location", Wire: "location", Type: "string", Note: ": `\"local\"` or `\"environment\"`", Doc: "Location is \"local\" or \"environment\"."},
			{Name: "EnvironmentID", Wire: "environment_id", Type: "string", Note: ": the executor id when location is `\"environment\"`", Doc: "EnvironmentID is the executor id when Location is \"environment\"."},
			{Name: "Path", Wire: "path", Type: "string", Doc: "Path is the root's path."},
		},
	},
	{
		Name: "Environment", Doc: "Environment is a place servers run in: the host (\"local\") or an executor,\nwith the capabilities it announced.", Prefix: "env",
		Fields: []Field{
			{Name: "ID", Wire: "id", Type: "string", Note: ": `\"local\"` or an executor id", Doc: "ID is \"local\" or the executor id."},
			{Name: "Local", Wire: "local", Type: "bool", Note: " (the host itself)", Doc: "Local reports whether the environment is the host itself."},
			{Name: "Connected", Wire: "connected", Type: "bool", Doc: "Connected reports whether the environment is connected."},
			{Name: "HTTPHeaderEnvVars", Wire: "http_header_env_vars", Type: "bool", Note: " (resolves header values from its own environment)", Doc: "HTTPHeaderEnvVars reports whether the environment resolves header values\nfrom its own environment variables."},
			{Name: "Processes", Wire: "processes", Type: "bool", Note: " (can run stdio servers)", Doc: "Processes reports whether the environment can run stdio servers."},
		},
	},
	{
		Name: "Server", Doc: "Server is a candidate MCP server declaration.", Prefix: "sv",
		ViewExtra: []string{"IsStdio", "IsHTTP"},
		ProtoNote: "transport_kind and url_host are derived from transport and url by the\nhost: they are not in the JSON form",
		Fields: []Field{
			{Name: "Name", Wire: "name", Type: "string", Doc: "Name is the server's name."},
			{Name: "Origin", Wire: "origin", Type: "string", Note: ": `\"host-config\"`, `\"executor-config:<env>\"` or `\"plugin:<id>\"`", Doc: "Origin is \"host-config\", \"executor-config:<env>\" or \"plugin:<id>\"."},
			{Name: "PluginID", Wire: "plugin_id", Type: "string", Doc: "PluginID is the plugin the server belongs to (\"\" for none)."},
			{Name: "Transport", Wire: "transport", Type: "string", Note: ": `\"stdio\"` or `\"http\"`", Doc: "Transport is \"stdio\" or \"http\". TransportKind, IsStdio and IsHTTP test it\nwithout comparing strings."},
			{Name: "URL", Wire: "url", Type: "string", Doc: "URL is the server's URL (http servers)."},
			{Name: "Command", Wire: "command", Type: "string", Doc: "Command is the server's command (stdio servers)."},
			{Name: "Args", Wire: "args", Type: "[]string", Doc: "Args are the command's arguments."},
			{Name: "Environment", Wire: "environment", Type: "string", Note: ": `\"local\"` or the executor id where it runs", Doc: "Environment is \"local\" or the executor id where the server runs."},
			{Name: "Credentials", Wire: "credentials", Type: "[]Credential", Doc: "Credentials are the server's credential references."},
			{Name: "Enabled", Wire: "enabled", Type: "bool", Doc: "Enabled reports whether the server is enabled."},
			{Name: "Required", Wire: "required", Type: "bool", Doc: "Required reports whether the server is required."},
			{Name: "TransportKind", Wire: "transport_kind", Type: "TransportKind", Derived: "Transport", Note: "the transport kind: `0` other (neither or empty), `1` stdio, `2` http", Doc: "TransportKind is the transport as an enum."},
			{Name: "EnabledTools", Wire: "enabled_tools", Type: "[]string", Doc: "EnabledTools is the server's enabled_tools list."},
			{Name: "DisabledTools", Wire: "disabled_tools", Type: "[]string", Doc: "DisabledTools is the server's disabled_tools list."},
			{Name: "URLHost", Wire: "url_host", Type: "string", Derived: "URL", Note: ": the host of `url` (below)", Doc: "URLHost is the host of the server's URL, as URLHost (and sdk.URLHost)\nreturns it: computed by the host, so reading it costs no parsing."},
		},
	},
	{
		Name: "Credential", Doc: "Credential is a reference to a secret (never its value).", Prefix: "cr",
		DocAfter: " — a reference, never a secret value",
		ViewDoc:  "CredentialView is a view of a Credential record: a reference to a secret,\nnever its value.",
		Fields: []Field{
			{Name: "Kind", Wire: "kind", Type: "string", Note: ": `\"bearer_env\"`, `\"header_env\"`, `\"env_var\"` or `\"oauth\"`", Doc: "Kind is \"bearer_env\", \"header_env\", \"env_var\" or \"oauth\"."},
			{Name: "Name", Wire: "name", Type: "string", Note: ": the header name (`\"Authorization\"` for bearer), or the variable name for env_var", Doc: "Name is the header name (\"Authorization\" for bearer), or the variable name\nfor env_var."},
			{Name: "EnvVar", Wire: "env_var", Type: "string", Note: ": the variable holding the value (bearer, header, env_var)", Doc: "EnvVar is the variable holding the value."},
			{Name: "Owner", Wire: "owner", Type: "string", Note: ": the environment whose env/secret store holds it: `\"local\"` or an executor id", Doc: "Owner is the environment whose env or secret store holds the value."},
			{Name: "ResolvesAt", Wire: "resolves_at", Type: "string", Note: ": credentials hook only: where it would resolve: `\"local\"` or an executor id", Doc: "ResolvesAt is, in the credentials hook, where the credential would\nresolve: \"local\" or an executor id."},
		},
	},
	{
		Name: "Requirement", Doc: "Requirement is one entry of the operator's requirements allow list.", Prefix: "rq",
		DocAfter: " — one entry of the operator's requirements allow list",
		Fields: []Field{
			{Name: "Name", Wire: "name", Type: "string", Doc: "Name is the required server's name."},
			{Name: "URL", Wire: "url", Type: "string", Doc: "URL is the required URL."},
			{Name: "Command", Wire: "command", Type: "string", Doc: "Command is the required command."},
		},
	},
	{
		Name: "ResourceReadInput", DocAfter: " — ABI version 2", Doc: "ResourceReadInput is the input of the resource_read hook (ABI v2).",
		Prefix: "rr", View: "ResourceReadView", Hook: "HookResourceRead", HookName: "resource_read",
		ViewDoc: "ResourceReadView is a read-only view of the resource_read hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Server", Wire: "server", Type: "string", Doc: "Server is the name of the server the resource is read from."},
			{Name: "PluginID", Wire: "plugin_id", Type: "string", Doc: "PluginID is the plugin the server belongs to (\"\" for none)."},
			{Name: "URI", Wire: "uri", Type: "string", Note: ": the resource's URI, as the server lists it", Doc: "URI is the resource's URI, as the server lists it."},
			{Name: "Caller", Wire: "caller", Type: "string", Doc: "Caller identifies who made the request."},
		},
	},
	{
		Name: "PromptGetInput", DocAfter: " — ABI version 2", Doc: "PromptGetInput is the input of the prompt_get hook (ABI v2).",
		Prefix: "pg", View: "PromptGetView", Hook: "HookPromptGet", HookName: "prompt_get",
		ViewDoc: "PromptGetView is a read-only view of the prompt_get hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Server", Wire: "server", Type: "string", Doc: "Server is the name of the server the prompt belongs to."},
			{Name: "PluginID", Wire: "plugin_id", Type: "string", Doc: "PluginID is the plugin the server belongs to (\"\" for none)."},
			{Name: "Name", Wire: "name", Type: "string", Note: ": the prompt's name on its server", Doc: "Name is the prompt's name on its server."},
			{Name: "Arguments", Wire: "arguments", Type: "json", Note: ": a JSON object of strings (validated by the host)", Doc: "Arguments is the request's arguments, a JSON object (validated by the\nhost): a view into the input (nil when empty) that must not be modified."},
			{Name: "Caller", Wire: "caller", Type: "string", Doc: "Caller identifies who made the request."},
		},
	},
	{
		Name: "ToolResultInput", DocAfter: " — ABI version 2", Doc: "ToolResultInput is the input of the tool_result hook (ABI v2).",
		Prefix: "tr", View: "ToolResultView", Hook: "HookToolResult", HookName: "tool_result",
		ViewDoc: "ToolResultView is a read-only view of the tool_result hook's input.",
		Fields: []Field{
			{Name: "Thread", Wire: "thread", Type: "Thread", Resolved: "thread", Doc: "Thread is the thread the hook runs for."},
			{Name: "Server", Wire: "server", Type: "string", Doc: "Server is the name of the server called."},
			{Name: "PluginID", Wire: "plugin_id", Type: "string", Doc: "PluginID is the plugin the server belongs to (\"\" for none)."},
			{Name: "Tool", Wire: "tool", Type: "string", Doc: "Tool is the tool name."},
			{Name: "Arguments", Wire: "arguments", Type: "json", Note: ": the JSON object of arguments actually sent (after any rewrite)", Doc: "Arguments is the arguments actually sent (after any rewrite), a JSON\nobject: a view into the input (nil when empty) that must not be modified."},
			{Name: "Result", Wire: "result", Type: "json", Note: ": the upstream CallToolResult as a JSON object", Doc: "Result is the upstream CallToolResult as a JSON object: a view into the\ninput (nil when empty) that must not be modified."},
			{Name: "IsError", Wire: "is_error", Type: "bool", Note: " (the result's isError)", Doc: "IsError reports whether the upstream result is a tool error (its isError)."},
			{Name: "Caller", Wire: "caller", Type: "string", Doc: "Caller identifies who made the call."},
		},
	},
}

var outputs = []Msg{
	{
		Name: "ServerDecision", Doc: "ServerDecision is the servers hook's decision for one server.",
		Fields: []Field{
			{Name: "Name", Wire: "name", Type: "string", Num: 1, Note: "the server's name"},
			{Name: "Action", Wire: "action", Type: "ServerAction", Num: 2},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 3},
			{Name: "AllowTools", Wire: "allow_tools", Type: "[]string", Num: 4, Note: "non-empty: only these tools are usable"},
			{Name: "DenyTools", Wire: "deny_tools", Type: "[]string", Num: 5, Note: "these tools are not usable"},
			{Name: "AllowPrompts", Wire: "allow_prompts", Type: "[]string", Num: 6, Since: 2, Note: "non-empty: only these prompts are usable"},
			{Name: "DenyPrompts", Wire: "deny_prompts", Type: "[]string", Num: 7, Since: 2, Note: "these prompts are not usable"},
			{Name: "AllowResources", Wire: "allow_resources", Type: "[]string", Num: 8, Since: 2, Note: "non-empty: only these resources (URIs or URI templates; a trailing * matches a prefix)"},
			{Name: "DenyResources", Wire: "deny_resources", Type: "[]string", Num: 9, Since: 2, Note: "these resources are not usable"},
		},
	},
	{
		Name: "ServersOutput", Doc: "ServersOutput is the output of the servers hook. A server not named in\nDecisions gets no opinion (expose).",
		Fields: []Field{
			{Name: "Decisions", Wire: "decisions", Type: "[]ServerDecision", Num: 1},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
	{
		Name: "CredentialDecision", Doc: "CredentialDecision is the credentials hook's decision for one credential.",
		Fields: []Field{
			{Name: "Index", Wire: "index", Type: "uint32", Num: 1, Note: "index into server.credentials"},
			{Name: "Action", Wire: "action", Type: "CredentialAction", Num: 2},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 3},
		},
	},
	{
		Name: "CredentialsOutput", Doc: "CredentialsOutput is the output of the credentials hook. A credential not\nnamed in Decisions gets no opinion.",
		Fields: []Field{
			{Name: "Decisions", Wire: "decisions", Type: "[]CredentialDecision", Num: 1},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
	{
		Name: "ToolCallOutput", Doc: "ToolCallOutput is the output of the tool_call hook.",
		Fields: []Field{
			{Name: "Action", Wire: "action", Type: "ToolCallAction", Num: 1},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 2},
			{Name: "Rewrite", Wire: "rewrite", Type: "bool", Num: 3, Note: "replace the call's arguments with `arguments`"},
			{Name: "Arguments", Wire: "arguments", Type: "json", Num: 4, Note: "a JSON object, used when rewrite is true"},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
	{
		Name: "ResourceReadOutput", Doc: "ResourceReadOutput is the output of the resource_read hook (ABI v2).",
		Fields: []Field{
			{Name: "Action", Wire: "action", Type: "ToolCallAction", Num: 1, EnumMax: "ToolCallDeny", Note: "ALLOW or DENY (ASK is undefined here)"},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 2, Note: "DENY: returned to the client"},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
	{
		Name: "PromptGetOutput", Doc: "PromptGetOutput is the output of the prompt_get hook (ABI v2).",
		Fields: []Field{
			{Name: "Action", Wire: "action", Type: "ToolCallAction", Num: 1, EnumMax: "ToolCallDeny", Note: "ALLOW or DENY (ASK is undefined here)"},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 2, Note: "DENY: returned to the client"},
			{Name: "Rewrite", Wire: "rewrite", Type: "bool", Num: 3, Note: "replace the prompt's arguments with `arguments`"},
			{Name: "Arguments", Wire: "arguments", Type: "json", Num: 4, Note: "a JSON object, used when rewrite is true"},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
	{
		Name: "ToolResultOutput", Doc: "ToolResultOutput is the output of the tool_result hook (ABI v2).",
		Fields: []Field{
			{Name: "Action", Wire: "action", Type: "ToolResultAction", Num: 1},
			{Name: "Reason", Wire: "reason", Type: "string", Num: 2, Note: "ERROR: the text of the tool error the client gets"},
			{Name: "Result", Wire: "result", Type: "json", Num: 3, Note: "REWRITE: a CallToolResult JSON object replacing the result"},
			{Name: "Error", Wire: "error", Type: "string", Num: 15, Note: "non-empty = guest failure; the host fails closed"},
		},
	},
}

// enums are the output enums: their Go types and constants are hand-written
// in abi.go (with their ordering methods); Max is the largest defined value,
// which the decoder checks, and Values their proto names for docs/abi.md.
var enums = []Enum{
	{Name: "ServerAction", Max: "ServerHide", Values: []string{"EXPOSE", "DISABLE", "HIDE"}},
	{Name: "CredentialAction", Max: "CredentialDeny", Values: []string{"UNSPECIFIED", "LOCAL", "EXECUTOR", "DENY"}},
	{Name: "ToolCallAction", Max: "ToolCallAsk", Values: []string{"ALLOW", "DENY", "ASK"}},
	{Name: "ToolResultAction", Max: "ToolResultError", Values: []string{"PASS", "REWRITE", "ERROR"}},
}

// transportKinds are the values of the TransportKind enum of flat Server
// records (hand-written in flat.go), for the C header and the docs.
var transportKinds = []string{"OTHER", "STDIO", "HTTP"}
