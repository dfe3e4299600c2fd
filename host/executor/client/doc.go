// Package client is the host's side of the warden executor protocol
// (docs/executor-protocol.md): a connection to one executor — another machine, container
// or sandbox running `warden executor` — kept up by reconnecting, and the transports that
// let the go-sdk's MCP client run unchanged through it.
//
//	c, err := client.Dial(ctx, client.Config{
//		Name:  "devbox",
//		URL:   "ws://127.0.0.1:7345/",
//		Token: os.Getenv(env.TokenEnv), // the host variable environments.toml's token_env names
//	})
//	// or: client.Config{Name: "box", Program: "warden", Args: []string{"executor", "--listen", "stdio"}}
//	defer c.Close()
//
//	unsubscribe := c.Subscribe(func(ev client.Event) {
//		// ev.State, ev.Resumed, ev.Capabilities (re-read on every connect), ev.Err
//	})
//	defer unsubscribe()
//
//	// An HTTP MCP server reached from the executor's network, with the executor's token:
//	rt := c.RoundTripper([]protocol.Header{{Name: "Authorization", ValueEnvVar: "NODE_TOKEN", ValuePrefix: "Bearer "}})
//	cs, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.StreamableClientTransport{
//		Endpoint: "https://mcp.example.com/mcp", HTTPClient: &http.Client{Transport: rt}}, nil)
//
//	// A stdio MCP server run in the executor, seeing the executor's NODE_TOKEN:
//	cs, err = mcp.NewClient(impl, nil).Connect(ctx, c.CommandTransport(protocol.ProcessStartParams{
//		Argv: []string{"node", "server.js"}, EnvVars: []string{"NODE_TOKEN"}}), nil)
//
//	// A capability root's file, read through the executor:
//	data, err := c.ReadFile(ctx, "/srv/plugins/demo", ".codex-plugin/plugin.json", 1<<20)
//
// # Connection
//
// Dial connects and performs the initialize handshake; it fails if that first connect
// fails. After a drop the client reconnects by itself with capped exponential backoff and
// full jitter (Config.Backoff: 100 ms doubling to 10 s by default), asking to resume the
// session and starting a fresh one when the executor has retired it (-32013). Each
// handshake's capabilities and server declarations replace the previous ones, and every
// change is an Event to the subscribers. While disconnected every call fails at once with
// an error wrapping ErrDisconnected and naming the environment; a call in flight when the
// connection drops fails the same way. A Program executor is spawned again on every
// reconnect (it cannot resume: its sessions died with it).
//
// # Bounds
//
// A message is at most protocol.MaxMessageBytes either way. At most Config.MaxPending calls
// are in flight (more wait for a slot, or their ctx), at most Config.MaxStreams response
// bodies and processes are open (more fail with ErrTooManyStreams). Notifications are
// routed by requestId or processId by a single reader that never waits for a consumer: a
// stream whose unread bytes would pass Config.StreamBuffer is failed with
// ErrStreamOverflow (drop-and-fail) and its request canceled or its process terminated, so
// one slow consumer cannot stall the connection or grow memory without bound.
//
// # Concurrency
//
// A Client and everything it returns (RoundTrippers, Transports and their Connections) are
// safe for concurrent use, as net/http and the go-sdk require. Event callbacks run one at a
// time, in order, on the client's goroutine; they must return promptly and must not call
// Close. Close stops reconnecting, ends the connection, fails every stream and waits for
// the client's goroutines.
//
// # Credentials
//
// The client holds no credential of the executor: headers given as ValueEnvVar travel as
// the variable's name, and processes' EnvVars as names; the executor resolves them. The
// bearer token of a WebSocket executor is sent only in the upgrade request and never
// logged or put in an error.
package client
