// Package protocol holds the wire types of warden's host API: JSON-RPC 2.0 whose method
// names and shapes mirror the Codex app-server's (DESIGN.md §7), camelCase on the wire.
// It has no behaviour beyond encoding, strict decoding and validation; package api serves
// it and a client can use it as is.
//
// # Methods
//
//	method                    params                       result
//	initialize                InitializeParams             InitializeResponse
//	thread/start              ThreadStartParams            ThreadStartResponse
//	thread/list               ThreadListParams             ThreadListResponse
//	mcpServerStatus/list      ListMcpServerStatusParams    ListMcpServerStatusResponse
//	mcpServer/tool/call       McpServerToolCallParams      *mcp.CallToolResult
//	config/mcpServer/reload   ReloadParams                 ReloadResponse
//	mcpServer/oauth/login     McpServerOauthLoginParams    McpServerOauthLoginResponse
//
// Notifications from warden: mcpServer/startupStatus/updated
// (McpServerStartupStatusUpdatedNotification), mcpServer/tools/updated
// (McpServerToolsUpdatedNotification) and mcpServer/oauthLogin/completed
// (McpServerOauthLoginCompletedNotification). testdata/ holds a golden request and
// response for every method and a golden for every notification; the tests check that
// each one round-trips through these types exactly.
//
// # Presence and null
//
// In params, an optional member may be omitted or null; both mean absent (pointer fields
// are nil). In results and notifications every member is always present, and an absent
// optional value is null: pluginId, toolsError, nextCursor, error. Empty collections
// encode as [] or {}, never null.
//
// # Strict params
//
// DecodeParams refuses unknown members (matched case-sensitively), duplicate members and
// mistyped values, with CodeInvalidParams and a message naming the field — never quoting
// a value, since params may carry secrets. Tool arguments and _meta are opaque objects.
// "_meta" is a declared field only of mcpServer/tool/call, where it is forwarded to the
// MCP server as the tools/call _meta; on every other method it is refused like any
// unknown member, so a client never believes metadata was honoured when it was dropped.
// The JSON-RPC envelope itself is checked by package api.
//
// # Errors
//
// Error is the JSON-RPC error object and a Go error; the constructors (ThreadNotFound,
// ToolDenied, ReloadFailed, NotSupported, ...) give each failure its stable code (see the
// table at CodeParseError). A backend returns them, possibly wrapped with %w:
//
//	th, ok := m.threads[p.ThreadID]
//	if !ok {
//		return nil, protocol.ThreadNotFound(p.ThreadID)
//	}
//	if d.Deny {
//		return nil, protocol.ToolDenied(p.ThreadID, p.Server, p.Tool, d.Reason)
//	}
//
// # Usage from a client
//
//	params, _ := json.Marshal(protocol.McpServerToolCallParams{
//		ThreadID:  threadID,
//		Server:    "docs",
//		Tool:      "search",
//		Arguments: json.RawMessage(`{"q":"wasm"}`),
//	})
//	req := protocol.Request{JSONRPC: protocol.Version, ID: json.RawMessage(`7`),
//		Method: protocol.MethodMcpServerToolCall, Params: params}
//	// ... send req, read a protocol.Response ...
//	if resp.Error != nil {
//		if resp.Error.Code == protocol.CodeToolDenied { ... }
//	}
//	var res mcp.CallToolResult
//	err := json.Unmarshal(resp.Result, &res)
//
// The package has no package-level mutable state; its values are plain data.
package protocol
