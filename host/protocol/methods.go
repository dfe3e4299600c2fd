package protocol

// Request methods a client sends to warden. The names and shapes follow the Codex
// app-server's JSON-RPC API (DESIGN.md §7).
const (
	// MethodInitialize opens a connection: InitializeParams → InitializeResponse. Every
	// other request on the connection is refused with CodeNotInitialized until it has
	// succeeded, and it may succeed only once per connection.
	MethodInitialize = "initialize"
	// MethodThreadStart starts a thread: ThreadStartParams → ThreadStartResponse. It
	// returns once policy has run; the thread's servers keep starting and report through
	// NotifyMcpServerStartupStatusUpdated.
	MethodThreadStart = "thread/start"
	// MethodThreadList lists threads: ThreadListParams → ThreadListResponse.
	MethodThreadList = "thread/list"
	// MethodMcpServerStatusList lists MCP server status: ListMcpServerStatusParams →
	// ListMcpServerStatusResponse. An unknown serverName gives an empty page.
	MethodMcpServerStatusList = "mcpServerStatus/list"
	// MethodMcpServerToolCall calls a tool of one of a thread's servers through the
	// tool_call policy hook: McpServerToolCallParams → the MCP CallToolResult.
	MethodMcpServerToolCall = "mcpServer/tool/call"
	// MethodMcpServerReload re-reads config and plugins and refreshes every thread:
	// ReloadParams → ReloadResponse.
	MethodMcpServerReload = "config/mcpServer/reload"
	// MethodMcpServerOauthLogin starts an OAuth login for a server:
	// McpServerOauthLoginParams → McpServerOauthLoginResponse, later followed by
	// NotifyMcpServerOauthLoginCompleted.
	MethodMcpServerOauthLogin = "mcpServer/oauth/login"
)

// Client notifications warden accepts.
const (
	// MethodInitialized is the notification a Codex client sends after its initialize
	// response. Warden accepts it and does nothing; it is not required.
	MethodInitialized = "initialized"
)

// Notifications warden sends to clients.
const (
	// NotifyMcpServerStartupStatusUpdated reports that a thread's server changed status:
	// McpServerStartupStatusUpdatedNotification.
	NotifyMcpServerStartupStatusUpdated = "mcpServer/startupStatus/updated"
	// NotifyMcpServerToolsUpdated reports that a thread's server changed its tool list
	// (MCP notifications/tools/list_changed, or a reload): McpServerToolsUpdatedNotification.
	// Read the new tools with mcpServerStatus/list {threadId, serverName}.
	NotifyMcpServerToolsUpdated = "mcpServer/tools/updated"
	// NotifyMcpServerOauthLoginCompleted ends an OAuth login started by
	// MethodMcpServerOauthLogin: McpServerOauthLoginCompletedNotification.
	NotifyMcpServerOauthLoginCompleted = "mcpServer/oauthLogin/completed"
)
