// Package leaktest is the harness of the credential-boundary tests: it proves that a
// secret the host holds never reaches an executor, a frame, a server or a log it does
// not belong to.
//
// Its parts, all on real loopback sockets:
//   - Canaries: random, unmistakable values ("CANARY-<name>-<32 hex>") set as the
//     host's (or a child's) environment variables where real credentials would be.
//   - Proxy: a WebSocket proxy between the host and an executor. It records every frame
//     both ways, forwards the host's Authorization (the executor still checks it), and
//     can rewrite messages to play an older executor: StripHeaderEnvVars,
//     Downgrade, RetireResume; SetOptions changes that at run time and DropAll forces a
//     reconnect.
//   - RecordingServer: a go-sdk streamable-HTTP MCP server (tools echo and whoami) that
//     records every request with all its headers, optionally refusing every bearer but
//     one, so a test can prove which token arrived.
//   - AssertNoCanary: scans frames, recorded requests, logs, the decision log, status
//     output and error texts for every canary — raw, hex, or inside base64 (an
//     http/body or process/output payload) — and fails once per canary and source,
//     naming the canary, never printing its value.
//
// The whole flow, as a scenario test runs it (the executor and host are the real warden
// binary; startExecutor and startHost stand for the test's own helpers, home for the
// host's home directory):
//
//	func TestHostTokenStaysHome(t *testing.T) {
//		c := leaktest.NewCanaries(t, "HOST_TOKEN", "EXECUTOR_TOKEN")
//
//		// The server the executor reaches; only the executor's token opens it.
//		srv := leaktest.NewRecordingServer(t, leaktest.RecordingOptions{RequireBearer: c.Value("EXECUTOR_TOKEN")})
//
//		// The executor gets its own token; its config names srv.URL() with
//		// bearer_token_env_var = "EXECUTOR_TOKEN".
//		execURL, execLog := startExecutor(t, append(os.Environ(), "EXECUTOR_TOKEN="+c.Value("EXECUTOR_TOKEN")))
//
//		// The host talks to the executor through the proxy, holding the host canary
//		// under the same variable name.
//		p := leaktest.NewProxy(t, execURL, leaktest.ProxyOptions{})
//		hostLog := new(leaktest.Buffer)
//		status := startHost(t, p.URL(), append(os.Environ(), "EXECUTOR_TOKEN="+c.Value("HOST_TOKEN")), hostLog)
//
//		// … drive a tool call through the host …
//
//		if got := srv.Authorizations(); !slices.Contains(got, "Bearer "+c.Value("EXECUTOR_TOKEN")) {
//			t.Errorf("the executor's token never reached the server")
//		}
//		// The host's value goes nowhere; neither value travels in a frame or a log.
//		leaktest.AssertNoCanary(t, c.Only("HOST_TOKEN"), leaktest.RequestsSource(srv))
//		leaktest.AssertNoCanary(t, c,
//			leaktest.FramesSource(p),
//			leaktest.BufferSource("host log", hostLog),
//			leaktest.FileSource("executor log", execLog),
//			leaktest.FileSource("decision log", filepath.Join(home, "decisions.jsonl")),
//			leaktest.TextSource("status", status),
//		)
//	}
//
// The downgrade scenario flips the proxy before a reconnect:
//
//	p.SetOptions(leaktest.ProxyOptions{ToDownstream: leaktest.Downgrade, RetireResume: true})
//	p.DropAll()
//	if err := p.Wait(ctx, func() bool { return p.Initializes() >= 3 }); err != nil { … }
//
// Every type here is safe for concurrent use; Proxy and RecordingServer are closed by
// t.Cleanup. The package is test support: it imports only the standard library,
// coder/websocket, the go-sdk and the executor protocol.
package leaktest
