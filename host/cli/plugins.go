package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/roots"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runPlugins(ctx context.Context, g *global, args []string) error {
	return runSubcommand(ctx, g, "plugins", args, []command{{name: "list", run: pluginsList}, {name: "inspect", run: pluginsInspect}})
}

// pluginDirs returns the --dir flags, or else the home's [plugins] dirs.
func pluginDirs(g *global, flagDirs []string) ([]string, error) {
	if len(flagDirs) > 0 {
		out := make([]string, len(flagDirs))
		for i, d := range flagDirs {
			abs, err := filepath.Abs(d)
			if err != nil {
				return nil, err
			}
			out[i] = abs
		}
		return out, nil
	}
	cfg, err := config.LoadConfig(filepath.Join(g.home, config.ConfigFile), config.Origin{Kind: config.OriginHostConfig})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// A config with errors still yields its valid parts; plugin dirs are what we need.
		g.log.Warn("config.toml has problems; run `warden config check`", "error", err)
	}
	if cfg == nil || len(cfg.Plugins.Dirs) == 0 {
		return nil, fmt.Errorf("no plugin dirs: pass --dir DIR or set [plugins] dirs in %s", filepath.Join(g.home, config.ConfigFile))
	}
	return cfg.Plugins.Dirs, nil
}

// pluginView is the JSON shape of one root in `plugins list --json` and `plugins inspect`.
type pluginView struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version,omitempty"`
	Description  string       `json:"description,omitempty"`
	Dir          string       `json:"dir"`
	Manifest     string       `json:"manifest,omitempty"`
	Status       string       `json:"status"`
	Error        string       `json:"error,omitempty"`
	ServerErrors []string     `json:"serverErrors,omitempty"`
	Servers      []serverView `json:"servers"`
	Policy       *policyView  `json:"policy"`
}

type policyView struct {
	Path   string   `json:"path"`
	SHA256 string   `json:"sha256"`
	Size   int64    `json:"size"`
	Hooks  []string `json:"hooks"`
	Error  string   `json:"error,omitempty"`
}

type serverView struct {
	Name           string            `json:"name"`
	Transport      string            `json:"transport"`
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Env            []string          `json:"env,omitempty"` // names only: values may be secrets
	EnvVars        []string          `json:"envVars,omitempty"`
	URL            string            `json:"url,omitempty"`
	BearerEnvVar   string            `json:"bearerTokenEnvVar,omitempty"`
	HTTPHeaders    []string          `json:"httpHeaders,omitempty"` // names only: values may be secrets
	EnvHTTPHeaders map[string]string `json:"envHttpHeaders,omitempty"`
	Environment    string            `json:"environmentId,omitempty"`
	Enabled        bool              `json:"enabled"`
	Required       bool              `json:"required,omitempty"`
	EnabledTools   []string          `json:"enabledTools,omitempty"`
	DisabledTools  []string          `json:"disabledTools,omitempty"`
	Source         string            `json:"source"`
}

func viewRoot(ctx context.Context, g *global, r *roots.Root) pluginView {
	v := pluginView{ID: r.ID, Name: r.Name, Version: r.Version, Description: r.Description, Dir: r.Dir, Manifest: r.ManifestPath, Status: string(r.Status), Servers: []serverView{}}
	if r.Err != nil {
		v.Error = r.Err.Error()
	}
	for _, e := range r.ServerErrors {
		v.ServerErrors = append(v.ServerErrors, e.Error())
	}
	for i := range r.Servers {
		d := &r.Servers[i]
		sv := serverView{Name: d.Name, Transport: string(d.Transport()), Command: d.Command, Args: d.Args, Cwd: d.Cwd,
			Env: sortedNames(d.Env), URL: d.URL, BearerEnvVar: d.BearerTokenEnvVar, EnvHTTPHeaders: d.EnvHTTPHeaders,
			Environment: d.EnvironmentID, Enabled: d.Enabled, Required: d.Required,
			EnabledTools: d.EnabledTools, DisabledTools: d.DisabledTools, Source: d.Pos.String()}
		for _, ev := range d.EnvVars {
			sv.EnvVars = append(sv.EnvVars, ev.Name)
		}
		sv.HTTPHeaders = sortedNames(d.HTTPHeaders)
		v.Servers = append(v.Servers, sv)
	}
	if r.Policy != nil {
		pv := &policyView{Path: r.Policy.Path, SHA256: r.Policy.SHA256, Size: r.Policy.Size, Hooks: []string{}}
		hooks, err := inspectPolicy(ctx, g, r.ID, r.Policy.Path, r.Policy.SHA256)
		if err != nil {
			pv.Error = err.Error()
			if v.Status == string(roots.StatusOK) || v.Status == string(roots.StatusPartial) {
				v.Status = string(roots.StatusError)
				v.Error = err.Error()
			}
		}
		pv.Hooks = append(pv.Hooks, hooks...)
		v.Policy = pv
	}
	return v
}

func pluginsList(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "plugins list", "[--dir DIR]... [--json] [--strict]")
	var dirs stringList
	fl.Var(&dirs, "dir", "a plugins dir to scan (repeatable; default: [plugins] dirs of config.toml)")
	asJSON := fl.Bool("json", false, "print JSON")
	strict := fl.Bool("strict", false, "exit 1 when any plugin is not ok")
	watch := fl.Bool("watch", false, "keep running and print the list again whenever a plugin is added, changed or removed")
	if _, err := parse(fl, args); err != nil {
		return err
	}
	ds, err := pluginDirs(g, dirs)
	if err != nil {
		return err
	}
	if *watch {
		return watchPlugins(ctx, g, ds, *asJSON)
	}
	return printPlugins(ctx, g, ds, roots.Scan(ds, roots.Options{}), *asJSON, *strict)
}

// watchPlugins prints the plugin list now and after every change until ctx is done.
func watchPlugins(ctx context.Context, g *global, ds []string, asJSON bool) error {
	w, err := roots.NewWatcher(ds, roots.WatcherOptions{Logger: g.log.Named("roots")})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	sets, stop := w.Subscribe()
	defer stop()
	for {
		select {
		case set, ok := <-sets:
			if !ok {
				return <-done
			}
			if !asJSON {
				fmt.Fprintf(g.io.Stdout, "== %d plugins\n", set.Len())
			}
			if err := printPlugins(ctx, g, ds, set, asJSON, false); err != nil {
				return err
			}
		case err := <-done:
			return err
		}
	}
}

func printPlugins(ctx context.Context, g *global, ds []string, set *roots.Set, asJSON, strict bool) error {
	var views []pluginView
	bad := 0
	for _, r := range set.Roots() {
		v := viewRoot(ctx, g, r)
		if v.Status != string(roots.StatusOK) {
			bad++
		}
		views = append(views, v)
	}
	var problems []string
	for _, p := range set.Problems() {
		problems = append(problems, p.Error())
	}
	if asJSON {
		out := struct {
			Dirs     []string     `json:"dirs"`
			Plugins  []pluginView `json:"plugins"`
			Problems []string     `json:"problems,omitempty"`
		}{ds, views, problems}
		if out.Plugins == nil {
			out.Plugins = []pluginView{}
		}
		if err := writeJSON(g.io.Stdout, out); err != nil {
			return err
		}
	} else {
		printPluginTable(g.io.Stdout, views)
		for _, p := range problems {
			fmt.Fprintln(g.io.Stdout, "problem:", p)
		}
	}
	if strict && (bad > 0 || len(problems) > 0) {
		return errSilentFailure
	}
	return nil
}

func printPluginTable(w io.Writer, views []pluginView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPATH\tSERVERS\tPOLICY HOOKS\tSTATUS")
	for _, v := range views {
		names := make([]string, 0, len(v.Servers))
		for _, s := range v.Servers {
			names = append(names, s.Name)
		}
		servers := strings.Join(names, ",")
		if servers == "" {
			servers = "-"
		}
		hooks := "none"
		if v.Policy != nil && len(v.Policy.Hooks) > 0 {
			hooks = strings.Join(v.Policy.Hooks, ",")
		}
		status := v.Status
		if errs := append(nonEmpty(v.Error), v.ServerErrors...); len(errs) > 0 {
			status += ": " + strings.Join(errs, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.Dir, servers, hooks, oneLine(status))
	}
	tw.Flush()
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// oneLine keeps a table row on one line when an error text spans several.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

func pluginsInspect(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "plugins inspect", "ID|DIR [--dir DIR]... [--json]")
	var dirs stringList
	fl.Var(&dirs, "dir", "a plugins dir to search (repeatable; default: [plugins] dirs of config.toml)")
	asJSON := fl.Bool("json", false, "print JSON")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fl.Usage()
		return errUsage
	}
	var r *roots.Root
	if st, err := statDir(pos[0]); err == nil && st {
		r = roots.Load(pos[0], roots.Options{})
	} else {
		ds, err := pluginDirs(g, dirs)
		if err != nil {
			return err
		}
		set := roots.Scan(ds, roots.Options{})
		for _, cand := range set.Roots() {
			if cand.Matches(pos[0]) {
				r = cand
				break
			}
		}
		if r == nil {
			return fmt.Errorf("no plugin %q in %s", pos[0], strings.Join(ds, ", "))
		}
	}
	v := viewRoot(ctx, g, r)
	if *asJSON {
		return writeJSON(g.io.Stdout, v)
	}
	w := g.io.Stdout
	fmt.Fprintf(w, "id:          %s\n", v.ID)
	fmt.Fprintf(w, "dir:         %s\n", v.Dir)
	if v.Manifest != "" {
		fmt.Fprintf(w, "manifest:    %s\n", v.Manifest)
	}
	if v.Description != "" {
		fmt.Fprintf(w, "description: %s\n", v.Description)
	}
	fmt.Fprintf(w, "status:      %s\n", v.Status)
	if v.Error != "" {
		fmt.Fprintf(w, "error:       %s\n", oneLine(v.Error))
	}
	for _, e := range v.ServerErrors {
		fmt.Fprintf(w, "server error: %s\n", e)
	}
	if v.Policy != nil {
		fmt.Fprintf(w, "policy:      %s\n", v.Policy.Path)
		fmt.Fprintf(w, "  sha256:    %s\n", v.Policy.SHA256)
		fmt.Fprintf(w, "  size:      %d bytes\n", v.Policy.Size)
		fmt.Fprintf(w, "  hooks:     %s\n", joinNonEmpty(",", v.Policy.Hooks...))
	} else {
		fmt.Fprintf(w, "policy:      none\n")
	}
	for _, s := range v.Servers {
		fmt.Fprintf(w, "server %s (%s, %s)\n", s.Name, s.Transport, s.Source)
		if s.Command != "" {
			fmt.Fprintf(w, "  command:   %s %s\n", s.Command, strings.Join(s.Args, " "))
		}
		if s.Cwd != "" {
			fmt.Fprintf(w, "  cwd:       %s\n", s.Cwd)
		}
		if s.URL != "" {
			fmt.Fprintf(w, "  url:       %s\n", s.URL)
		}
		if len(s.EnvVars) > 0 {
			fmt.Fprintf(w, "  env_vars:  %s\n", strings.Join(s.EnvVars, ","))
		}
		if s.BearerEnvVar != "" {
			fmt.Fprintf(w, "  bearer:    $%s\n", s.BearerEnvVar)
		}
		if s.Environment != "" {
			fmt.Fprintf(w, "  environment: %s\n", s.Environment)
		}
		if !s.Enabled {
			fmt.Fprintf(w, "  enabled:   false\n")
		}
	}
	return nil
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func statDir(p string) (bool, error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
