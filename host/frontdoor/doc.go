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
// A thread's MCP server offers what the thread's ready servers offer, after every filter
// (enabled_tools, disabled_tools and the policies' allow/deny lists for tools, prompts and
// resources). Servers that are disabled, failed, hidden or still starting contribute
// nothing (a server that restarts, after a crash or a refresh, takes its items away
// until it is ready again, each time with list_changed).
//
//   - Tools and prompts are named server__name (Options.ToolNames = ToolNamesPrefixed, the
//     default), or by their upstream name where no other server of the thread has an item of
//     that name (ToolNamesBare: a single-server thread looks exactly like that server;
//     `warden mcp --tool-names bare`, `[front_door] tool_names = "bare"`). Every name is
//     1–64 characters of [A-Za-z0-9_-] (ValidName): a longer or invalid one becomes its
//     ShortName, cut and suffixed with a hash of the upstream pair. Names are assigned
//     deterministically from the set (see assignNames): qualified names first, then bare
//     ones, a taken name falling back to the qualified and then the short form. A call is
//     mapped back by name, never by splitting it.
//   - Resources keep their upstream URI, unless two servers of the thread list the same URI
//     (or it is in warden's own warden: scheme): then each is served as QualifiedURI,
//     warden://SERVER/ and the upstream URI percent-encoded. Resource templates keep their
//     template; two servers with the same template string: the one whose name sorts first
//     serves it. A resources/read of a URI not listed goes to the first template (in
//     template order) that matches it.
//   - StatusURI (warden://status) is the front door's own resource: every configured server
//     of the thread, its state and why it is failed or disabled, and its authStatus (for
//     an OAuth server: notLoggedIn, oAuth or expired). A server turning failed or
//     disabled is also sent to the client as a log message (logger "warden", level
//     warning).
//   - The upstream servers' instructions are merged into the server's instructions.
//   - Completion, resource subscriptions (one upstream subscription per thread and
//     resource, notifications/resources/updated forwarded), logging (logging/setLevel
//     asks every server of the thread for the most verbose level a session wants; messages
//     arrive with the logger "SERVER" or "SERVER/LOGGER") and progress (the request's
//     progressToken and _meta go upstream, progress comes back to the request's session
//     before its result) pass through.
//   - Server→client requests (sampling, elicitation, roots) are bridged to the client
//     session whose request caused them; see bridge.go for how, and why a thread whose
//     client declares them gets upstream sessions of its own.
//
// The server's serverInfo is {name: "warden", version}. tools/list, prompts/list,
// resources/list and resources/templates/list first apply a refresh queued for the thread
// and wait, up to Options.StartupWait, for servers still starting, so that a client's first
// list is complete.
//
// tools/call goes through thread.Thread.CallToolWith, so the tool_call and tool_result
// hooks run (and may rewrite the arguments or the result); the caller policies see is
// "mcp:" plus the client's name from initialize, or "mcp". A tool whose approval_mode is
// "prompt", or that a policy answered ask for, is put to the user through elicitation
// first (what, which server, the arguments). Errors:
//
//   - a policy denial is a tool error result: isError true and one text content,
//     `tool "docs__search" denied by policy: REASON`. MCP clients hand tool errors to the
//     model, which can explain or adapt; a JSON-RPC error would surface as a failed
//     request, often hidden from the model or shown as a crash;
//   - a declined or cancelled approval, or one the client cannot be asked for (it declared
//     no elicitation), is a tool error `tool "NAME" not run: ...` / denied;
//   - a tool the thread cannot use any more (its server was disabled or failed since the
//     list) is a tool error too, with Codex's text "MCP tool `docs/search` is not
//     available: REASON";
//   - a name not in the list is the SDK's JSON-RPC invalid-params error ("unknown tool");
//   - a protocol failure of the upstream call (timeout, lost connection) is a JSON-RPC
//     error; the upstream server's own JSON-RPC error is passed through.
//
// prompts/get and resources/read go through the prompt_get and resource_read hooks; a
// refusal or an unavailable item is a JSON-RPC invalid-params error with the reason.
//
// # list_changed
//
// The front door follows the thread manager's events (thread.Manager.Subscribe): a
// server's startup status changing, or its tools, prompts or resources changing (the
// upstream sent a list_changed, or a refresh changed its filters), wakes the served
// thread's worker, which recomputes the served sets and updates the *mcp.Server: only what
// really changed, which makes the SDK send the list_changed notifications to every session
// of that thread (debounced). A refresh the thread layer queued (reload, plugin change; the
// thread.RefreshQueued event) wakes the worker too, which applies it by reading the
// thread's status.
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
