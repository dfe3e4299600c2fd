// Package host is the embeddable warden host: it wires the configuration (host/config),
// the watched capability roots (host/roots), the WebAssembly policy runtime (host/policy)
// and the decision engine (host/decision), the shared MCP connections (host/mcpconn) and
// the threads (host/thread), and holds nothing but that wiring: the policy module cache is
// policy.Cache, the host API's adapter over the threads is package host/api/threads (whose
// Layer is the seam the MCP front door consumes too), and the executor clients are dialled
// by package host/executor/client. The JSON-RPC API, the MCP front door and the CLI sit on
// top of a Host.
//
//	h, err := host.New(ctx, host.Options{
//		Home:   home,                    // "" means $WARDEN_HOME or ~/.warden
//		Logger: logging.New(logging.Options{}),
//	})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	if err := h.ConfigErrors(); err != nil {
//		log.Printf("config problems (their valid part is used):\n%v", err)
//	}
//	threads := h.Threads()
//	t, err := threads.Start(ctx, thread.StartParams{
//		SelectedRoots: []thread.SelectedRoot{{ID: "demo@1"}}, // a root of the plugins dirs
//	})
//	if err != nil {
//		return err
//	}
//	servers, err := t.Status(ctx, "", false)
//	res, err := t.CallTool(ctx, "docs", "search", json.RawMessage(`{"q":"wasm"}`), "my-client")
//	_, err = threads.Reload(ctx, false) // re-read config.toml and the plugins dirs
//
// New loads the home; a config with errors still loads its valid part (ConfigErrors lists
// the problems). It starts a roots.Watcher on the config's `[plugins] dirs` (plus
// Options.ExtraPluginDirs): a root added, changed or removed queues a refresh of the threads
// that selected it. Operator policies (`[[policies]]`, with their sha256 pins) and each
// root's policy are loaded into the decision engine; modules are cached by digest, so an
// unchanged policy keeps its warm module across reloads and a changed one is loaded anew.
// A module that fails to load becomes a policy that always fails: the servers it governs are
// disabled with a reason naming the plugin and the load error (an operator policy governs
// every server). `[policy_limits]` apply to every module, and a reload that changes them
// reloads the modules.
//
// Close releases everything New provisioned — also when New failed half-way — in order:
// the watcher, the threads, the MCP connections (stdio servers stopped), the policy
// modules and runtime, the decision log file.
//
// A reload that changes the plugins dirs replaces the watcher. The decision log and the
// compilation cache directory are chosen once, by New.
package host
