// Package frontdoor is warden's MCP front door: it serves a warden thread as one ordinary
// MCP server, so any MCP client (Claude Desktop, Codex, the MCP Inspector, an agent built
// on an MCP SDK) can use everything a thread exposes — and nothing policy does not.
//
// # Putting warden behind an MCP client
//
// `warden mcp` serves one thread over stdio. Declare it as a single server in the client's
// configuration; the `--plugin` flags select capability roots (an id from the plugins dirs
// of the warden home, or a path to a root directory):
//
//	{
//	  "mcpServers": {
//	    "warden": {
//	      "command": "warden",
//	      "args": ["mcp", "--plugin", "docs@1", "--plugin", "/srv/plugins/tickets"],
//	      "env": {"WARDEN_HOME": "/home/me/.warden"}
//	    }
//	  }
//	}
//
// That is Claude Desktop's claude_desktop_config.json shape (Cursor and most clients use
// the same). For Codex, in ~/.codex/config.toml:
//
//	[mcp_servers.warden]
//	command = "warden"
//	args = ["mcp", "--plugin", "docs@1"]
//	env = { WARDEN_HOME = "/home/me/.warden" }
//
// `warden serve --mcp-listen 127.0.0.1:8765` serves every thread (started through the host
// API) over streamable HTTP at http://127.0.0.1:8765/threads/{id}/mcp behind a bearer
// token: `--token-env VAR` names it (required for a non-loopback address), else one is
// generated into <home>/listen.token (0600). `--mcp-listen unix:///PATH` serves on a 0600
// Unix socket instead, without a token; `--no-auth` opts out on loopback only.
//
// # Embedding
//
//	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: log})
//	defer fd.Close()
//	th, err := h.Threads().Start(ctx, thread.StartParams{
//		SelectedRoots: []thread.SelectedRoot{{ID: "docs@1"}},
//	})
//	if err != nil {
//		return err
//	}
//	// One thread over stdin/stdout, until stdin closes (requests already read are still
//	// answered); ServeIO takes any reader and writer, Serve any mcp.Transport:
//	err = fd.ServeStdio(ctx, th.ID())
//
//	// Or every thread over HTTP, behind a bearer token of at least 16 bytes (or on a
//	// unix:///path socket, created 0600, without one):
//	err = fd.ListenAndServe(ctx, "127.0.0.1:0", frontdoor.ListenOptions{Token: token}, func(url string) {
//		log.Info("front door", "url", url+frontdoor.ThreadPath(th.ID()))
//	})
//
//	// Or mount fd.Handler() in your own server, behind your own authentication.
//
// # What a client sees
//
// The tools of a thread's MCP server are the tools of the thread's ready servers after
// every tool filter (enabled_tools, disabled_tools and the policies' allow/deny lists),
// named server__tool (ToolName); their description, input and output schemas, annotations
// and title are the upstream tool's. Servers that are disabled, failed, hidden or still
// starting contribute nothing. A name is split at its first "__", so a tool name may
// contain "__" but a server name may not: such a server is skipped, with one warning in the
// log. The server's serverInfo is {name: "warden", version}.
//
// tools/list shows exactly that set. It first applies a refresh queued for the thread (a
// reload or a plugin change) and waits, up to Options.StartupWait, for servers still
// starting, so that a client's first list is complete.
//
// tools/call goes through thread.Thread.CallTool, so the tool_call hook runs (and may
// rewrite the arguments); the caller policies see is "mcp:" plus the client's name from
// initialize, or "mcp". The upstream result — content, structuredContent, isError — is
// returned unchanged. Errors:
//
//   - a policy denial is a tool error result: isError true and one text content,
//     `tool "docs__search" denied by policy: REASON`. MCP clients hand tool errors to the
//     model, which can explain or adapt; a JSON-RPC error would surface as a failed
//     request, often hidden from the model or shown as a crash;
//   - a tool the thread cannot use any more (its server was disabled or failed since the
//     list) is a tool error too, with Codex's text "MCP tool `docs/search` is not
//     available: REASON";
//   - a name not in the list is the SDK's JSON-RPC invalid-params error ("unknown tool");
//   - a protocol failure of the upstream call (timeout, lost connection) is a JSON-RPC
//     error; the upstream server's own JSON-RPC error is passed through.
//
// # list_changed
//
// The front door follows the thread manager's events (thread.Manager.Subscribe): a
// server's startup status changing (starting, ready, failed, disabled) or its catalog
// changing (the upstream sent notifications/tools/list_changed, or a refresh changed its
// tool filter) wakes the served thread's worker, which recomputes the tool set and updates
// the *mcp.Server: AddTool and RemoveTools for what really changed, which makes the SDK
// send notifications/tools/list_changed to every session of that thread (debounced). A
// refresh the thread layer queued (reload, plugin change; the thread.RefreshQueued event)
// wakes the worker too, which applies it by reading the thread's status. Sessions of
// protocol 2026-07-28 get the notification through their subscriptions/listen stream,
// older ones on their session stream (stdio, or the HTTP GET stream).
//
// # HTTP
//
// Handler serves stateful streamable HTTP sessions (mcp.NewStreamableHTTPHandler), one
// handler per thread, so a session id never crosses threads; an unknown thread is 404 and a
// thread that ended has its sessions closed. Listen requires a bearer token on TCP
// (ErrTokenRequired; shorter than MinTokenBytes is ErrTokenTooShort) unless
// ListenOptions.NoAuth, which only a loopback address accepts (ErrNoAuthNotLoopback); with
// a token every request must carry "Authorization: Bearer TOKEN" (compared in constant
// time, else 401), and without one the Host must be loopback (else 403). A unix:///path
// address is a Unix socket created 0600, which needs no token. These are the rules of
// host/api's WebSocket listener: both use one guard.
// Idle sessions close after Options.SessionTimeout.
//
// # Concurrency and lifetime
//
// A FrontDoor is safe for concurrent use. It creates a thread's *mcp.Server on first use
// and keeps it while the thread runs. Close closes every session, stdio and HTTP, and waits
// for every goroutine the FrontDoor started; stop HTTP listeners first. The package has no
// package-level mutable state.
package frontdoor
