package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

// runMCP is `warden mcp`: one thread, selecting the --plugin roots, served as an MCP server
// over stdin/stdout until stdin closes (or SIGINT/SIGTERM). Stdout carries MCP only; every
// log line goes to stderr.
func runMCP(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "mcp", "[--plugin ID|PATH]... [--kind interactive|reviewer|subagent] [--tool-names prefixed|bare]")
	var plugins stringList
	fl.Var(&plugins, "plugin", "select a capability root: an `ID` (name@version) from the plugins dirs, or the PATH of a root directory (repeatable)")
	kind := fl.String("kind", string(thread.KindInteractive), "thread kind: interactive, reviewer or subagent")
	toolNames := fl.String("tool-names", "", toolNamesUsage)
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fl.Usage()
		return errUsage
	}
	switch thread.Kind(*kind) {
	case thread.KindInteractive, thread.KindReviewer, thread.KindSubagent:
	default:
		fmt.Fprintf(g.io.Stderr, "warden mcp: --kind %q: want interactive, reviewer or subagent\n", *kind)
		return errUsage
	}
	if err := checkToolNames(*toolNames); err != nil {
		fmt.Fprintf(g.io.Stderr, "warden mcp: %v\n", err)
		return errUsage
	}
	cwd, _ := os.Getwd()
	var sel []thread.SelectedRoot
	for _, p := range plugins {
		r, err := selectRoot(p, cwd)
		if err != nil {
			return err
		}
		sel = append(sel, r)
	}

	warnEmptyHome(g, sel)
	h, err := host.New(ctx, host.Options{Home: g.home, Logger: g.log})
	if err != nil {
		return err
	}
	defer h.Close()
	th, err := h.Threads().Start(ctx, thread.StartParams{Kind: thread.Kind(*kind), SelectedRoots: sel, Cwd: cwd})
	if err != nil {
		return err
	}
	names, err := resolveToolNames(*toolNames, homeConfig(h))
	if err != nil {
		return err
	}
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: g.log, Version: Version, ToolNames: names})
	defer fd.Close()
	g.log.Info("serving the thread as an MCP server on stdio", "thread", th.ID(), "kind", th.Kind(), "plugins", len(sel))
	err = fd.ServeIO(ctx, th.ID(), g.io.Stdin, g.io.Stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// selectRoot turns a --plugin value into a selection: a value that names a directory (or
// looks like a path) is a root directory, anything else an id from the plugins dirs.
func selectRoot(v, cwd string) (thread.SelectedRoot, error) {
	looksLikePath := strings.ContainsRune(v, filepath.Separator) || strings.ContainsRune(v, '/') || strings.HasPrefix(v, ".")
	if fi, err := os.Stat(v); err == nil && fi.IsDir() {
		looksLikePath = true
	}
	if !looksLikePath {
		return thread.SelectedRoot{ID: v}, nil
	}
	p := v
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return thread.SelectedRoot{}, fmt.Errorf("--plugin %s: not a directory", v)
	}
	return thread.SelectedRoot{Location: thread.Location{Type: thread.LocationLocal, Path: p}}, nil
}
