// Package config loads and validates warden's TOML files: config.toml (MCP server
// declarations, plugin dirs and the operator's credential grants to plugins, operator
// policies, policy limits, host-wide limits, the decision log, the front door's naming),
// requirements.toml (the operator's allow list by identity) and environments.toml
// (executors). The formats are Codex's, so one config.toml can serve both.
//
// Loading never stops at the first problem: every error names the file, the line and the
// server, and one bad server never hides its valid siblings. A loader returns what is valid
// together with an Errors value listing every problem:
//
//	home, err := config.LoadHome(dir) // config.toml, requirements.toml, environments.toml
//	if err != nil {
//		// Strict callers stop here; best-effort callers log it and go on with home.
//		var es config.Errors
//		errors.As(err, &es)
//		for _, e := range es {
//			log.Printf("%v", e) // /home/op/.warden/config.toml:12: mcp_servers.docs: key `url` ...
//		}
//	}
//	for _, d := range home.Config.Servers {
//		if ok, reason := home.Requirements.Check(&d); !ok {
//			// list d with no tools; reason starts with "blocked by requirements"
//		}
//		env := d.EnvironmentID
//		if env == "" {
//			env = home.Environments.Default
//		}
//		_ = env // where d runs and whose secrets its credential references name
//	}
//	for _, w := range home.Config.Ignored {
//		log.Printf("warning: %s: %s is not used by warden", home.Config.File, w)
//	}
//
// A single file is loaded with LoadConfig (with the Origin its declarations get: host-config
// for the host's own file, executor-config for an executor's), LoadRequirements (a missing
// file is nil: allow all) and LoadEnvironments (a missing file is local only); the Parse
// variants take bytes, for tests and fuzzing.
//
// Declarations from other sources (a plugin's .mcp.json) are checked with CheckServer, which
// applies the transport rules every source shares.
//
// Positions come from BurntSushi/toml's metadata; for arrays of tables ([[policies]],
// [[environments]]), whose elements the library does not position separately, a small
// scanner of the source finds each element's header line.
package config
