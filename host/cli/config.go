package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/roots"
)

func runConfig(ctx context.Context, g *global, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(g.io.Stderr, "usage: warden config check [--plugins]")
		return errUsage
	}
	fl := subFlags(g, "config check", "[--plugins=false]")
	withPlugins := fl.Bool("plugins", true, "also load every plugin in the configured plugin dirs")
	if _, err := parse(fl, args[1:]); err != nil {
		return err
	}
	w := g.io.Stdout
	h, err := config.LoadHome(g.home)
	problems := 0
	if err != nil {
		var es config.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintln(w, "error:", e.Error())
			}
			problems += len(es)
		} else {
			fmt.Fprintln(w, "error:", err)
			problems++
		}
	}
	for _, k := range h.Config.Ignored {
		fmt.Fprintf(w, "warning: %s: key %q is not used by warden (ignored)\n", h.Config.File, k)
	}
	fmt.Fprintf(w, "home %s: %d MCP servers, %d plugin dirs, %d operator policies\n",
		g.home, len(h.Config.Servers), len(h.Config.Plugins.Dirs), len(h.Config.Policies))
	for _, id := range slices.Sorted(maps.Keys(h.Config.Plugins.Grants)) {
		g := h.Config.Plugins.Grants[id]
		fmt.Fprintf(w, "grant %s: plugin %s may read host variables %s\n", g.Pos, id, strings.Join(g.EnvVars, ", "))
	}
	for _, pol := range h.Config.Policies {
		hooks, err := inspectPolicy(ctx, g, "operator policy "+pol.Path, pol.Path, pol.SHA256)
		if err != nil {
			fmt.Fprintf(w, "error: %s: [[policies]] %s: %v\n", pol.Pos, pol.Path, err)
			problems++
			continue
		}
		fmt.Fprintf(w, "operator policy %s: ok (hooks: %s)\n", pol.Path, strings.Join(hooks, ","))
	}
	if *withPlugins && len(h.Config.Plugins.Dirs) > 0 {
		set := roots.Scan(h.Config.Plugins.Dirs, roots.Options{})
		for _, p := range set.Problems() {
			fmt.Fprintln(w, "error:", p)
			problems++
		}
		for _, r := range set.Roots() {
			v := viewRoot(ctx, g, r)
			switch {
			case v.Error != "":
				fmt.Fprintf(w, "error: %s\n", oneLine(v.Error))
				problems++
			case len(v.ServerErrors) > 0:
				for _, e := range v.ServerErrors {
					fmt.Fprintf(w, "error: %s\n", e)
				}
				problems += len(v.ServerErrors)
			default:
				fmt.Fprintf(w, "plugin %s: ok (%d servers)\n", r.ID, len(r.Servers))
			}
		}
	}
	if problems > 0 {
		fmt.Fprintf(w, "%d problems\n", problems)
		return errSilentFailure
	}
	fmt.Fprintln(w, "ok")
	return nil
}
