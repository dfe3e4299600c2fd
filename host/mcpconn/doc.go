// Package mcpconn is warden's MCP client side: it connects to declared MCP servers (stdio
// and streamable HTTP, with the official go-sdk) and shares those connections between
// threads.
//
// # Usage
//
// A declaration (config.ServerDecl) is first resolved into a Spec: the complete child
// environment or the complete set of HTTP headers, with every credential reference resolved
// in the environment that owns the declaration. The Manager then hands out shared,
// reference-counted connections:
//
//	mgr := mcpconn.NewManager(mcpconn.Options{Logger: log.Named("mcp")})
//	defer mgr.Close()
//
//	spec, err := mcpconn.BuildSpec(decl, mcpconn.HostResolver(), mcpconn.BuildOptions{
//		BaseDir: filepath.Dir(decl.Pos.File), // for a relative cwd
//	})
//	if err != nil {
//		return err // names the server and the missing variable, never a value
//	}
//	conn, err := mgr.Acquire(ctx, spec) // starts the server, or joins the running session
//	if err != nil {
//		return err // e.g. `MCP server "docs" did not start within 10s`
//	}
//	defer conn.Release()
//
//	tools := conn.Tools() // cached catalog: one tools/list per session
//	cancel := conn.Subscribe(func(ev mcpconn.Event) {
//		if ev.Kind == mcpconn.EventTools {
//			notifyMyClients(ev.Tools) // propagate tools/list_changed
//		}
//	})
//	defer cancel()
//	res, err := conn.CallTool(ctx, "search", map[string]any{"q": "wasm"})
//
// # A complete MCP client
//
// Besides tools, a connection reads (at connect, paginated, and again on the matching
// list_changed) the resources, resource templates and prompts of a server that advertises
// them, and passes the other requests of a gateway through, each bounded and classified
// like CallTool (a server's JSON-RPC error stays an *Error wrapping the *jsonrpc.Error; a
// missing capability is ErrNotSupported, with nothing sent):
//
//	resources, templates, prompts := conn.Resources(), conn.ResourceTemplates(), conn.Prompts()
//	info := conn.InitializeResult() // capabilities, instructions, serverInfo
//	rr, err := conn.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes.md"})
//	gp, err := conn.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", Arguments: args})
//	cr, err := conn.Complete(ctx, completeParams)
//
//	// A front-door call: its _meta goes upstream, and the server's progress comes back
//	// (with the token cleared: put the client's own back) while the call runs.
//	res, err := conn.CallToolWith(ctx, "build", args, mcpconn.CallOptions{
//		Meta:       req.Params.Meta,
//		OnProgress: func(p *mcp.ProgressNotificationParams) { forward(p) }, // must not block
//	})
//
//	// Per-handle features of the shared session: counted subscriptions
//	// (EventResourceUpdated) and the most verbose log level any handle asked for
//	// (EventLog). Both are applied again to a restarted session; Release drops them.
//	err = conn.SubscribeResource(ctx, "file:///notes.md")
//	err = conn.SetLogLevel(ctx, "info")
//
// Sessions are shared by Key, so a server's requests to its client (sampling, elicitation,
// roots) cannot be answered for one client on a shared session. A caller that wants them
// answered gives the Spec a ClientHandler (Spec.Client) and a Key of its own: the session
// then declares exactly the handler's capabilities and routes those requests to it (see
// ClientHandler for how a 2026-07-28 session ties them to the originating call), and
// Conn.NotifyRootsChanged tells the server when the client's roots change. Without one,
// the server gets the standard refusals, as from any client without those capabilities.
//
// # Sharing
//
// Two Acquire calls whose Specs have the same Key share one MCP session and one tool
// catalog: one server process, one handshake, one tools/list. The Key is a SHA-256 over the
// effective declaration and the credential route (which environment resolves which
// reference), never over a secret value; see BuildSpec. When the last handle is released the
// session closes, at once or after Options.IdleGrace.
//
// # Protocol version
//
// By default the client asks for the go-sdk's newest protocol (2026-07-28), which opens
// with server/discover and falls back to initialize for older servers; that reaches servers
// of every version, including HTTP servers that speak only 2026-07-28. See
// Options.ProtocolVersion for the trade-off and how to pin an older version. A session is
// established by server/discover (stdio, or a stateless 2026-07-28 HTTP server) or by
// server/discover followed by initialize (older servers), exactly once per session either way.
//
// # Lifecycle
//
// A connection is starting, ready or failed (Conn.Status). The Spec's StartupTimeout
// bounds process start or HTTP connect, the handshake and the reading of the catalogs. When
// a server dies or its connection breaks, the connection is marked failed with the exit
// status and a tail of its stderr, and requests in flight return at once with
// ErrServerExited. While a handle holds it, it then restarts on its own, paced by an
// exponential Backoff (250ms doubling to 30s by default, reset after a minute of health),
// and keeps retrying while starts fail: subscribers see EventStatus starting, then ready
// with the new session's catalogs. A use (Ready, CallTool, Acquire) within the Backoff
// window fails at once with ErrBackoff. Requests are bounded by the Spec's ToolTimeout; a
// timed-out request is cancelled at the server and leaves the session usable.
//
// # Security
//
//   - A stdio server gets a minimal environment (BaseEnvVars that are set on the host), the
//     declaration's literal env and its env_vars resolved in the owning environment; never
//     the whole host environment (DESIGN.md §5 rule 9). Spec.Env is the exact environment.
//   - Header values (Authorization included) are sent only to the server's own origin.
//   - No error or log line contains a credential value: the package never formats one, and
//     errors and server stderr are scrubbed of every value the Spec resolved. A Spec prints
//     (String, fmt verbs, JSON) without values.
//
// # Concurrency
//
// Manager and Conn are safe for concurrent use; Spec is an immutable value once built.
// The package has no package-level mutable state. Every goroutine the Manager starts ends
// by the time Manager.Close returns.
package mcpconn
