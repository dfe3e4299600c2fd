// Package roots loads capability roots: the plugin directories operators drop into
// plugins dirs. A root is a directory holding a manifest (.codex-plugin/plugin.json, or
// failing that .claude-plugin/plugin.json), a .mcp.json, or both, and optionally a WASM
// policy module.
//
//	my-plugin/
//	  .codex-plugin/plugin.json   {"name":"executor-demo","version":"1","policy":"./policy.wasm"}
//	  .mcp.json                   {"mcpServers":{"demo":{"command":"./bin/demo","env_vars":["TOKEN"]}}}
//	  policy.wasm
//
// # Loading
//
// Load reads one root, Scan every root in some plugins dirs, and a Watcher keeps a Scan
// current as files change. None of them fails as a whole: a broken root is a Root with
// Status StatusError and the reason in Err, a rejected server is an entry of ServerErrors
// (its siblings stay usable, Status StatusPartial), and a missing plugins dir is one of
// Set.Problems. Every problem of a root is an *Error naming the plugin id, the file (with line and
// column where known) and the server, e.g.
//
//	plugin "demo@1": .mcp.json:4: server "x": cwd "../../etc" escapes the plugin root
//	plugin "demo": .codex-plugin/plugin.json:4:1: invalid character '}' looking for beginning of object key string
//	plugin "demo@1": .mcp.json:2: server "old": legacy SSE transport is not supported; use streamable HTTP
//
// # Identity
//
// A root's id is "name@version" from its manifest; the name falls back to the directory's
// name, and without a version the id is just the name. Root.Matches compares a
// selection id (which may carry a version the manifest lacks) with a root. Two roots with
// the same id in one Set are both unusable (ErrDuplicateID).
//
// # Manifest
//
// plugin.json keys used: name, version, description, policy (a path to a .wasm module;
// when absent a policy.wasm at the root is used) and mcpServers (an inline object of
// servers, or a path to a .mcp.json-format file; either replaces the root's .mcp.json).
// Every other key is ignored: the format is shared with Claude Code and Codex, which keep
// extending it.
//
// # Servers
//
// .mcp.json is {"mcpServers": {NAME: {...}}} or the bare {NAME: {...}}. Server entries use
// Codex's snake_case keys (the config.toml set) and Claude Code's spellings: type ("stdio",
// "http", "streamable-http"; "sse" is rejected), headers, oauth.clientId,
// oauth.callbackPort. An unknown key or a literal bearer_token rejects the server.
// ${PLUGIN_ROOT} and ${CLAUDE_PLUGIN_ROOT} expand to the root directory in command, args,
// cwd, env values and url; no other variable is expanded. The transport rules are
// config.CheckServer's.
//
// # Path safety
//
// A relative cwd, a command written as a path ("./bin/demo", "${PLUGIN_ROOT}/bin/demo"),
// the policy module and a manifest-named server file resolve under the root and must stay
// inside it, both lexically and after following symbolic links. An absolute cwd must be
// inside the root too (a plugin may not pick an arbitrary working directory); an absolute
// or bare command ("/usr/bin/node", "npx") names a program of the environment and is fine.
// These checks are made at load time; the directory's owner can still change files later,
// which the Watcher notices and re-checks.
//
// # Usage
//
//	w, err := roots.NewWatcher(cfg.Plugins.Dirs, roots.WatcherOptions{Logger: log.Named("roots")})
//	if err != nil {
//		return err
//	}
//	go w.Run(ctx)
//	sets, cancel := w.Subscribe()
//	defer cancel()
//	for set := range sets {
//		for _, r := range set.Roots() {
//			if r.Status == roots.StatusError {
//				log.Warn("plugin unusable", "plugin", r.ID, "error", r.Err)
//				continue
//			}
//			for _, d := range r.Servers {
//				register(d) // config.ServerDecl with Origin plugin:<id>
//			}
//		}
//	}
//
// A single root (for example a root selected by path in thread/start) is read with Load:
//
//	r := roots.Load(path, roots.Options{})
//	if r.Status == roots.StatusError {
//		return r.Err
//	}
package roots
