package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// warnEmptyHome prints a warning on stderr when the home gives threads nothing: it does not
// exist, has no config.toml, or declares no MCP server, capability root or executor. An MCP
// client that starts warden without passing WARDEN_HOME through (the TypeScript SDK's stdio
// transport drops the environment by default) otherwise sees an empty tool list and no
// reason for it. sel is `warden mcp`'s --plugin selection: roots selected by path still give
// the thread their servers, which the warning then says.
//
// It must run before host.New, which creates directories in the home.
func warnEmptyHome(g *global, sel []thread.SelectedRoot) {
	why, _ := emptyHome(g.home)
	if why == "" {
		return
	}
	byPath := false
	for _, s := range sel {
		byPath = byPath || s.Location.Path != ""
	}
	effect := "so threads get no MCP servers and no tools"
	if byPath {
		effect = "so threads get no MCP servers beyond those of the --plugin paths"
	}
	fmt.Fprintf(g.io.Stderr, "warden: warning: the warden home %s (%s) %s, %s. "+
		"Point warden at your home with --home DIR or %s=DIR; an MCP client that starts warden may not pass %s through "+
		"(the TypeScript SDK's stdio transport drops the environment by default), so give it --home in the command's arguments. "+
		"`warden doctor` checks a home.\n",
		g.home, homeSource(g), why, effect, config.HomeEnvVar, config.HomeEnvVar)
}

// emptyHome says why the home at dir declares nothing a thread could use ("" when it
// declares at least one MCP server, capability root or executor), and whether that is
// because the home is missing altogether.
func emptyHome(dir string) (why string, missing bool) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist", true
	case err != nil:
		return fmt.Sprintf("cannot be read (%v)", err), true
	case !fi.IsDir():
		return "is not a directory", true
	}
	h, cfgErr := config.LoadHome(dir)
	if len(h.Config.Servers) > 0 || len(h.Environments.List) > 0 {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, config.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
		return "has no " + config.ConfigFile, false
	}
	// Scanning is the costly part, so only a home with nothing else declared pays it.
	if len(h.Config.Plugins.Dirs) > 0 && roots.Scan(h.Config.Plugins.Dirs, roots.Options{}).Len() > 0 {
		return "", false
	}
	why = "declares nothing: no [mcp_servers], no capability roots in [plugins] dirs and no executors in " + config.EnvironmentsFile
	if cfgErr != nil {
		why = "declares nothing usable (its configuration has problems)"
	}
	return why, false
}

// homeSource says where the home directory came from, so that the warning tells an
// operator whether the flag, the variable or the default was in effect.
func homeSource(g *global) string {
	env := g.io.Getenv(config.HomeEnvVar)
	switch {
	case env != "" && env == g.home:
		return "from $" + config.HomeEnvVar
	case env == "" && g.home == homeFromEnv(g.io.Getenv):
		return "the default: neither --home nor $" + config.HomeEnvVar + " is set"
	}
	return "from --home"
}
