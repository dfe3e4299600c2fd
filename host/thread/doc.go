// Package thread is warden's thread layer: it turns the host's configuration, the
// capability roots a thread selected and the policy verdicts into the set of MCP servers
// that thread sees (DESIGN.md §3), starts them, and serves status reads, tool calls,
// reloads and notifications for them.
//
// # Usage
//
// A Manager is built from a decision.Engine (the policies), an mcpconn.Manager (shared
// connections) and the configuration; package host wires all of it. Embedders mostly call:
//
//	m, err := thread.NewManager(ctx, thread.Options{
//		Engine:   decision.NewEngine(decision.Options{}),
//		Conns:    conns,                          // mcpconn.NewManager(...)
//		Snapshot: thread.LoadSnapshot(home, nil), // config.toml & co. + plugins dirs
//		Policies: loader,                         // wasm modules; nil fails every policy closed
//	})
//	if err != nil {
//		return err
//	}
//	defer m.Close()
//	cancel := m.Subscribe(func(ev thread.Event) {
//		if s, ok := ev.(*thread.StartupStatus); ok {
//			log.Printf("%s: %s is %s %s", s.ThreadID, s.Name, s.Status, s.Error)
//		}
//	})
//	defer cancel()
//
//	t, err := m.Start(ctx, thread.StartParams{
//		Kind:          thread.KindInteractive,
//		SelectedRoots: []thread.SelectedRoot{{ID: "demo@1", Location: thread.Location{Type: thread.LocationLocal, Path: "/srv/plugins/demo"}}},
//	})
//	if err != nil {
//		return err // a broken root (*RootError) or a required server that did not start
//	}
//	servers, err := t.Status(ctx, "", false) // name, pluginId, status, toolsError, filtered tools
//	res, err := t.CallTool(ctx, "docs", "search", json.RawMessage(`{"q":"wasm"}`), "client")
//	var na *thread.UnavailableError // "MCP tool `docs/search` is not available: ..."
//	if errors.As(err, &na) { ... }
//
//	_, err = m.Reload(ctx, true) // strict: fails naming the thread whose config fails to load
//
// # Candidate set
//
// A thread's candidates are the host's config.toml servers, the executor-config servers of
// connected executors (Options.Executors; none until the executor client exists) and the
// declarations of its selected roots. A name is taken by the first source in the order
// host-config, executor-config, plugin — whether or not that entry is enabled, so a
// `enabled = false` entry masks a same-name plugin server (listed, disabled, no plugin id).
// Each candidate is converted to an abi.Server (origin, transport, url/command, route,
// credential references with their owners: "local" for host-config and local plugins, the
// executor id otherwise) and the whole set, with the thread, the environments and the
// requirements, goes to decision.Engine.Servers. The thread layer decides nothing itself:
// hide drops a server, disable lists it with the reason as toolsError, expose starts it —
// after the credentials hook (a deny disables the server with the verdict's reason; it
// never connects).
//
// A root is selected by path (found in the watched set, else loaded from that path) and/or
// by id (looked up in the watched set; Root.Matches accepts "legacy-plugin@1" for a manifest
// without a version). Its servers report the id the client selected, as Codex does; policies
// see the root's own id (abi.Server.PluginID, abi.Thread.Roots), which is what the engine
// keys the plugin's policy by.
//
// # Starting and status
//
// Exposed servers start concurrently, each bounded by its startup timeout. Start returns
// once policy has run and the required servers are ready; a required server that fails makes
// Start fail (the thread is closed, not leaked) — except executor-config servers, which fail
// alone. A server policy disabled (at either hook) never counts as a failed required server.
// Two threads whose server has the same effective declaration and credential route share
// one MCP session (mcpconn); a status read reuses the thread's session and cached catalog
// and never repeats the handshake or tools/list. Status waits (bounded by its ctx) for the
// servers it reports to finish starting; StatusNow reports them as they are.
//
// # Beyond tools
//
// A ServerStatus also carries the server's resources, resource templates and prompts after
// its lists (the policies'), and its instructions. ReadResource, GetPrompt and Complete pass
// those requests through (the resource_read and prompt_get hooks run); SubscribeResource,
// SetLogLevel and NotifyRootsChanged reach the thread's servers, whose updates and log
// messages arrive as *ResourceUpdated and *LogMessage events. CallToolWith carries the
// request's _meta and progress, asks CallOptions.Approve for a call that needs approval
// (approval_mode "prompt", or a policy's ask), and runs the tool_result hook. SetClient
// gives the thread connections of its own that declare a client's capabilities and send it
// the servers' sampling, elicitation and roots requests.
//
// # Refresh
//
// Reload and roots changes (UpdateRoots, fed by a roots.Watcher) rebuild each affected
// thread's candidate set right away (so a strict reload can fail naming the thread whose
// configuration does not load) but only queue the result; the thread applies it before its
// next Status or CallTool, as Codex does. Every use of a thread goes through one of those,
// so a queued refresh is always in force before a server is used; a thread nobody reads
// keeps its old sessions until then. Applying a refresh keeps the sessions of unchanged
// servers, starts new ones and releases dropped ones.
//
// # Concurrency
//
// Manager and Thread are safe for concurrent use; every method that blocks takes a ctx
// first. Events are delivered on one goroutine of the Manager, in order. Manager.Close ends
// every thread and waits for every goroutine it started. The package has no package-level
// mutable state.
package thread
