// Package executor is the executor side of docs/executor-protocol.md: the server that
// `warden executor` runs in another environment (a machine, a container, a sandbox) so
// that a host can make HTTP requests from that environment's network, run processes
// there and read its files, with credentials resolved from the executor's own
// environment and never sent back.
//
//	srv, err := executor.New(executor.Options{
//		Logger:       log,
//		Capabilities: protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true, FSRead: true},
//		MCPServers:   home.Config.Servers, // the executor's own config.toml, by reference
//	})
//	defer srv.Close() // kills every process of every session
//
//	// WebSocket: a bearer token is required, foreign Origins are refused.
//	ln, err := srv.Listen(ctx, "127.0.0.1:0", token)
//	fmt.Println(ln.URL()) // ws://127.0.0.1:PORT/
//	err = ln.Serve(ctx)
//
//	// or stdio: one message per line.
//	err = srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// Each connection is served with a bounded number of requests in flight (a long
// http/request does not hold up process/write), every write to the host has a deadline
// (a host that stops reading is disconnected rather than buffered for), and every read is
// capped at protocol.MaxMessageBytes (a larger message is discarded and answered -32600,
// keeping the connection). Processes belong to a session, which outlives its connection
// for Options.ResumeWindow with each process's output buffered up to Options.OutputBuffer;
// a host that reconnects with resumeSessionId gets the buffered output, then the live
// streams. HTTP requests belong to the connection and end with it.
package executor
