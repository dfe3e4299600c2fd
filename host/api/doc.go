// Package api serves warden's host API — JSON-RPC 2.0 with the Codex app-server's
// method names and shapes (package protocol) — over stdio or WebSocket, to a Backend
// (the thread manager).
//
// # Usage
//
//	srv := api.New(backend, api.Options{Logger: log}) // logs as log.Named("api")
//
//	// stdio: one JSON message per line, as MCP's stdio transport.
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
//	// WebSocket: one JSON message per text frame. TCP needs Options.Token (at least
//	// MinTokenBytes) or the loopback-only Options.NoAuth; "unix:///path" is a Unix socket
//	// created 0600, which needs no token.
//	err = srv.ListenAndServe(ctx, "127.0.0.1:0", func(url string) {
//		fmt.Fprintln(os.Stderr, "warden API listening on", url) // ws://127.0.0.1:PORT
//	})
//
//	// Or mount the handler in your own http.Server:
//	mux.Handle("/api", srv.Handler())
//
// A client then talks JSON-RPC:
//
//	→ {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"me","version":"1"}}}
//	← {"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"warden","version":"…"},"capabilities":{"oauthLogin":false}}}
//	→ {"jsonrpc":"2.0","id":2,"method":"thread/start","params":{"kind":"interactive"}}
//	← {"jsonrpc":"2.0","id":2,"result":{"thread":{"id":"thr_1","kind":"interactive"}}}
//	← {"jsonrpc":"2.0","method":"mcpServer/startupStatus/updated","params":{"threadId":"thr_1","name":"docs","status":"ready","error":null}}
//	→ {"jsonrpc":"2.0","id":3,"method":"mcpServer/tool/call","params":{"threadId":"thr_1","server":"docs","tool":"search","arguments":{"q":"wasm"}}}
//	← {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"…"}]}}
//
// # Semantics
//
//   - initialize first: every other request on a connection is answered with
//     CodeNotInitialized until initialize has succeeded; a second initialize is an
//     invalid request. Codex's "initialized" notification is accepted and ignored. The
//     "jsonrpc" member may be left out (Codex clients do); any other value than "2.0"
//     is refused.
//   - Checks run in this order, each with its code (see protocol.CodeParseError):
//     JSON (-32700, null id), request shape (-32600; unknown envelope members too),
//     method (-32601), initialized (-32006), params (-32602, naming the field; see
//     protocol.DecodeParams), then the Backend: a *protocol.Error it returns is passed
//     through, any other error becomes -32603 with the error's text. Params never
//     appear in an error message or a log line.
//   - Concurrency: initialize is handled in order; every other request runs in its own
//     goroutine, at most Options.MaxConcurrentRequests per connection, and responses
//     go out as requests finish — possibly out of order. Writes to a connection are
//     serialized.
//   - Batches (a JSON array of requests) are answered with one array of the responses
//     of its requests, in completion order, once all are done; a batch of
//     notifications only gets no answer; an empty batch is one -32600 error.
//     Notifications (requests without an id) are executed and never answered, not even
//     with an error.
//   - Closing a connection (EOF on stdio input included) cancels the context of its
//     in-flight requests; their responses are dropped.
//   - Notifications from the Backend (Backend.Subscribe) go to every initialized
//     connection, except the methods it listed in initialize's
//     capabilities.optOutNotificationMethods. For now a thread's events go to every
//     connection, not only the one that started the thread; clients filter by
//     threadId. Notifications are queued per connection (Options.NotificationQueue);
//     a client that does not keep up is disconnected rather than left with a gap.
//
// # Security
//
// stdio is as trusted as the process that spawned warden. The WebSocket listener binds
// loopback by default; Listen refuses a non-loopback address unless Options.Token is
// set, and with a token every upgrade must send "Authorization: Bearer TOKEN" (compared
// in constant time; a token in a URL query would end up in logs, so none is read).
// Without a token, upgrades must name a loopback Host (defeating DNS rebinding) and a
// browser Origin must match the Host (or Options.OriginPatterns). Messages are bounded
// by Options.MaxMessageBytes.
//
// # Logging
//
// Through hclog, named "api": one debug line per request with method, id, latency and
// error code (0 for success); warnings for disconnected slow clients; errors for
// Backend panics (which are recovered and answered with -32603).
//
// The package has no package-level mutable state; a Server is safe for concurrent use
// and every goroutine it starts ends before ServeConn (or Listener.Serve) returns.
package api
