package api

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/protocol"
)

// Backend is what the API serves: warden's thread manager, adapted. The Server decodes
// and validates params (protocol.DecodeParams) before calling it, so every params value
// a Backend sees is well-formed; semantic checks (does the thread exist, may the tool be
// called) are the Backend's.
//
// # Concurrency
//
// A Backend is shared by every connection and called concurrently: from many
// connections at once and, within one connection, from up to
// Options.MaxConcurrentRequests goroutines at once (requests on a connection are not
// serialized; only initialize is handled in order). Every method must be safe for
// concurrent use. The params a method receives are its own (not shared or reused).
//
// # Context
//
// ctx is cancelled when the client's connection closes (or the Server stops serving
// it). A method must return promptly after that; ServeConn waits for in-flight calls
// before it returns.
//
// # Errors
//
// To choose the code the client sees, return a *protocol.Error (e.g.
// protocol.ThreadNotFound), possibly wrapped with %w; it is passed through unchanged.
// Any other error becomes CodeInternalError with the error's text as message. Error
// texts go to the client: by contract they never contain a credential, and a Backend
// must never put a param value (tool arguments, _meta) in one.
//
// A method that returns a nil result and a nil error is answered with an internal error.
type Backend interface {
	// Initialize is called once per connection, for its initialize request. It should
	// return the host's info and capabilities; it must not block on other connections.
	Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResponse, error)
	// StartThread serves thread/start: it returns once policy has run; servers keep
	// starting and report through NotifyMcpServerStartupStatusUpdated.
	StartThread(ctx context.Context, p *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error)
	// ListThreads serves thread/list.
	ListThreads(ctx context.Context, p *protocol.ThreadListParams) (*protocol.ThreadListResponse, error)
	// ListMcpServerStatus serves mcpServerStatus/list; an unknown server name gives an
	// empty page, not an error.
	ListMcpServerStatus(ctx context.Context, p *protocol.ListMcpServerStatusParams) (*protocol.ListMcpServerStatusResponse, error)
	// CallTool serves mcpServer/tool/call through the tool_call policy hook. A tool that
	// ran and failed is a result with IsError, not an error; a denial is
	// protocol.ToolDenied, a protocol-level failure protocol.ToolCallFailed.
	CallTool(ctx context.Context, p *protocol.McpServerToolCallParams) (*mcp.CallToolResult, error)
	// Reload serves config/mcpServer/reload; p.EffectiveMode() says strict or
	// best-effort. A strict failure is protocol.ReloadFailed naming the thread.
	Reload(ctx context.Context, p *protocol.ReloadParams) (*protocol.ReloadResponse, error)
	// OauthLogin serves mcpServer/oauth/login. A host without OAuth returns
	// protocol.NotSupported("OAuth login").
	OauthLogin(ctx context.Context, p *protocol.McpServerOauthLoginParams) (*protocol.McpServerOauthLoginResponse, error)
	// Subscribe registers fn to receive every notification the Backend emits: method is
	// a protocol.Notify* name and params its protocol notification struct (anything that
	// encodes as a JSON object). The Server subscribes once per initialized connection
	// and cancels when the connection ends.
	//
	// fn may be called from any goroutine, concurrently; it never blocks (the Server
	// encodes params and queues the message before fn returns, and does not retain
	// params). Calls to one fn
	// are delivered to the client in the order they are made. After cancel returns,
	// the Backend must not call fn again (the Server tolerates a late call and drops it).
	// cancel is idempotent.
	Subscribe(fn func(method string, params any)) (cancel func())
}
