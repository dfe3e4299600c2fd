package thread

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/roots"
)

// This file builds a thread's candidate set (DESIGN.md §3) and converts it into the policy
// input. It decides nothing: every rule of §5 is the decision package's baseline.

// resolvedRoot is one selected capability root as found.
type resolvedRoot struct {
	sel SelectedRoot
	// root is the loaded root (never in StatusError).
	root *roots.Root
	// reported is the plugin id clients see for its servers: the selected id, else root.ID.
	reported string
	// env is the environment the root is located in: config.LocalEnvironment, or the
	// executor of an environment location.
	env string
	// inSet reports whether the root came from the watched set (and so changes with it);
	// otherwise it was loaded from its path and is re-read only by Reload.
	inSet bool
}

// candidate is one server of the candidate set, after name collisions were resolved.
type candidate struct {
	// decl is the winning declaration; decl.EnvironmentID is the effective route.
	decl config.ServerDecl
	// reported is the plugin id clients see; "" for host-config and executor-config.
	reported string
	// baseDir resolves a relative cwd.
	baseDir string
	// owner is the environment whose env/secret store holds the declaration's credentials;
	// route is where the server runs or is routed.
	owner, route string
	// srv is the policy's view of the declaration.
	srv abi.Server
}

func (c *candidate) executorConfig() bool { return c.decl.Origin.Kind == config.OriginExecutorConfig }

// hostGrant is the mcpconn.BuildOptions.Grant for c, whose references the thread layer
// resolves in the host's environment (a server routed elsewhere never gets that far; see
// connectable). A declaration of the host's operator (host-config) resolves as configured:
// nil. A plugin's declaration reads a host variable only if config.toml grants it to that
// plugin (DESIGN.md §5 rule 10): a selected plugin is code and configuration of someone
// else's, and its .mcp.json could otherwise name any of the host's secrets and send it to
// an endpoint of its choosing. The refusal names the variable and the line that grants it.
func (c *candidate) hostGrant(cfg *config.Config) func(key, name string) string {
	if c.decl.Origin.Kind != config.OriginPlugin || c.owner != config.LocalEnvironment {
		return nil
	}
	id := c.decl.Origin.PluginID
	return func(key, name string) string {
		if cfg.Plugins.EnvVarGranted(id, name) {
			return ""
		}
		return fmt.Sprintf("plugin %s names host environment variable %s (%s) without a grant; add it to %s env_vars in %s",
			id, name, key, config.GrantTable(id), cfg.File)
	}
}

// plan is everything one application of policy to a thread needs: the candidate set and
// the rest of the servers hook's input, built from one Snapshot.
type plan struct {
	home   *config.Home
	roots  []resolvedRoot
	cands  []candidate
	input  abi.ServersInput // Servers parallel to cands
	envs   map[string]abi.Environment
	rootFP string // identifies the selected roots' content
}

// outOfSet returns the plan's roots that are not in the watched set.
func (p *plan) outOfSet() []*roots.Root {
	var out []*roots.Root
	for _, r := range p.roots {
		if !r.inSet {
			out = append(out, r.root)
		}
	}
	return out
}

func (p *plan) has(name string) bool {
	for i := range p.cands {
		if p.cands[i].decl.Name == name {
			return true
		}
	}
	return false
}

// buildPlan resolves t's selected roots against snap and builds its candidate set. prev is
// the thread's latest plan (or nil): when reload is false, roots that were loaded from their
// path (outside the watched set) are reused from it instead of being read again.
func (m *Manager) buildPlan(snap *Snapshot, t *Thread, prev *plan, reload bool) (*plan, error) {
	p := &plan{home: snap.Home}
	seen := map[string]bool{}
	for i, sel := range t.selected {
		var reuse *resolvedRoot
		if !reload && prev != nil && i < len(prev.roots) && !prev.roots[i].inSet {
			reuse = &prev.roots[i]
		}
		rr, err := resolveRoot(sel, snap.Roots, t.cwd, reuse, m.executorFiles)
		if err != nil {
			return nil, err
		}
		if seen[rr.root.Dir] {
			continue // the same root selected twice
		}
		seen[rr.root.Dir] = true
		p.roots = append(p.roots, rr)
	}

	executors := m.executors(snap.Home)
	p.envs = map[string]abi.Environment{config.LocalEnvironment: localEnvironment()}
	envList := []abi.Environment{localEnvironment()}
	for _, e := range executors {
		ae := abi.Environment{ID: e.ID, Connected: e.Connected, HTTPHeaderEnvVars: e.HTTPHeaderEnvVars, Processes: e.Processes}
		p.envs[e.ID] = ae
		envList = append(envList, ae)
	}

	p.cands = candidates(snap.Home, executors, p.roots, m.log)
	p.input = abi.ServersInput{
		Thread:       t.abiThread(p.roots),
		Environments: envList,
		Servers:      make([]abi.Server, len(p.cands)),
	}
	for i := range p.cands {
		p.input.Servers[i] = p.cands[i].srv
	}
	if req := snap.Home.Requirements; req != nil {
		p.input.HasRequirements = true
		for _, name := range slices.Sorted(maps.Keys(req.Servers)) {
			id := req.Servers[name]
			p.input.Requirements = append(p.input.Requirements, abi.Requirement{Name: name, URL: id.URL, Command: id.Command})
		}
	}
	h := sha256.New()
	for _, r := range p.roots {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.reported, r.root.Dir, r.root.Fingerprint)
	}
	p.rootFP = hex.EncodeToString(h.Sum(nil))
	return p, nil
}

func localEnvironment() abi.Environment {
	return abi.Environment{ID: config.LocalEnvironment, Local: true, Connected: true, HTTPHeaderEnvVars: true, Processes: true}
}

// resolveRoot finds one selected root: by path (in the watched set, else loaded from disk)
// and/or by id (in the watched set). reuse, when set, is the previous resolution of the
// same selection, used instead of re-reading a root that is not in the set.
func resolveRoot(sel SelectedRoot, set *roots.Set, cwd string, reuse *resolvedRoot, files func(env, root string) roots.ReadFunc) (resolvedRoot, error) {
	fail := func(err error) (resolvedRoot, error) { return resolvedRoot{}, &RootError{Selection: sel, Err: err} }
	switch sel.Location.Type {
	case "", LocationLocal:
	case LocationEnvironment:
		env := sel.Location.EnvironmentID
		switch {
		case files == nil:
			return fail(fmt.Errorf("environment locations %w (environment %q)", ErrNeedsExecutor, env))
		case env == "" || env == config.LocalEnvironment:
			return fail(fmt.Errorf("%w: an environment location names an executor, not %q", ErrInvalidParams, env))
		case sel.Location.Path == "" || !path.IsAbs(sel.Location.Path):
			return fail(fmt.Errorf("%w: an environment location needs the root's absolute path in executor %q", ErrInvalidParams, env))
		}
		rr := resolvedRoot{sel: sel, env: env}
		if reuse != nil && reuse.root != nil && reuse.env == env {
			rr.root = reuse.root
		} else {
			// Read through the executor (fs/read, confined to the root there): the host
			// never reads an executor-located plugin from its own disk.
			rr.root = roots.LoadRemote(sel.Location.Path, files(env, sel.Location.Path), roots.Options{Environment: env})
		}
		if rr.root.Status == roots.StatusError {
			return fail(rr.root.Err)
		}
		if sel.ID != "" && !rr.root.Matches(sel.ID) {
			return fail(fmt.Errorf("%w: the root at this path in executor %q is %q", ErrRootNotFound, env, rr.root.ID))
		}
		rr.reported = cmp.Or(sel.ID, rr.root.ID)
		return rr, nil
	default:
		return fail(fmt.Errorf("%w: unknown location type %q", ErrInvalidParams, sel.Location.Type))
	}
	rr := resolvedRoot{sel: sel, env: config.LocalEnvironment}
	switch {
	case sel.Location.Path != "":
		path := sel.Location.Path
		if !filepath.IsAbs(path) && cwd != "" {
			path = filepath.Join(cwd, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return fail(err)
		}
		if set != nil {
			rr.root = set.ByDir(abs)
		}
		if rr.root != nil {
			rr.inSet = true
		} else if reuse != nil && reuse.root != nil {
			rr.root = reuse.root
		} else {
			rr.root = roots.Load(abs, roots.Options{})
		}
		if rr.root.Status != roots.StatusError && sel.ID != "" && !rr.root.Matches(sel.ID) {
			return fail(fmt.Errorf("%w: the root at this path is %q", ErrRootNotFound, rr.root.ID))
		}
	case sel.ID != "":
		rr.root = findByID(set, sel.ID)
		if rr.root == nil {
			return fail(fmt.Errorf("%w in the plugins dirs", ErrRootNotFound))
		}
		rr.inSet = true
	default:
		return fail(fmt.Errorf("%w: a selected capability root needs an id or a path", ErrInvalidParams))
	}
	if rr.root.Status == roots.StatusError {
		return fail(rr.root.Err)
	}
	rr.reported = cmp.Or(sel.ID, rr.root.ID)
	return rr, nil
}

// findByID returns the root of set with this id (exact match first, then Root.Matches).
func findByID(set *roots.Set, id string) *roots.Root {
	if set == nil {
		return nil
	}
	if r := set.Get(id); r != nil {
		return r
	}
	for _, r := range set.Roots() {
		if r.Matches(id) {
			return r
		}
	}
	return nil
}

type warner interface {
	Warn(msg string, args ...interface{})
}

// candidates builds the candidate set: host-config ∪ executor-config (connected executors)
// ∪ the selected roots' declarations. A name is taken by the first source that declares it,
// in precedence order host-config, executor-config, plugin — whether or not that entry is
// enabled, so a disabled entry still masks a same-name plugin declaration.
func candidates(home *config.Home, executors []Environment, rs []resolvedRoot, log warner) []candidate {
	var out []candidate
	taken := map[string]config.Origin{} // name -> origin that took it
	add := func(c candidate) {
		if by, ok := taken[c.decl.Name]; ok {
			if by.Kind == c.decl.Origin.Kind {
				log.Warn("MCP server declared twice; the first declaration wins",
					"server", c.decl.Name, "kept", by.String(), "ignored", c.decl.Origin.String())
			}
			// Otherwise it is masked by a source of higher precedence, as designed.
			return
		}
		taken[c.decl.Name] = c.decl.Origin
		c.srv = abiServer(&c)
		out = append(out, c)
	}

	defaultEnv := cmp.Or(home.Environments.Default, config.LocalEnvironment)
	cfgDir := filepath.Dir(home.Config.File)
	for _, d := range home.Config.Servers {
		d.Origin = config.Origin{Kind: config.OriginHostConfig}
		d.EnvironmentID = cmp.Or(d.EnvironmentID, defaultEnv)
		base := cfgDir
		if d.Pos.File != "" {
			base = filepath.Dir(d.Pos.File)
		}
		add(candidate{decl: d, baseDir: base, owner: config.LocalEnvironment, route: d.EnvironmentID})
	}
	for _, e := range executors {
		// A disconnected executor's last-announced servers stay candidates (they fail with
		// "not connected" until it is back), so a dropped executor turns them failed
		// instead of making them vanish.
		for _, d := range e.Servers {
			d.Origin = config.Origin{Kind: config.OriginExecutorConfig, Environment: e.ID}
			d.EnvironmentID = e.ID
			add(candidate{decl: d, owner: e.ID, route: e.ID})
		}
	}
	for _, r := range rs {
		env := r.env
		for _, d := range r.root.Servers {
			// environment_id "local" in a plugin's .mcp.json means the plugin's own environment.
			if d.EnvironmentID == "" || d.EnvironmentID == config.LocalEnvironment {
				d.EnvironmentID = env
			}
			add(candidate{decl: d, reported: r.reported, baseDir: r.root.Dir, owner: env, route: d.EnvironmentID})
		}
	}
	return out
}

// abiServer is the policy's view of a candidate: names and metadata, never values.
func abiServer(c *candidate) abi.Server {
	d := &c.decl
	s := abi.Server{
		Name:          d.Name,
		Origin:        d.Origin.String(),
		PluginID:      d.Origin.PluginID,
		Transport:     string(d.Transport()),
		URL:           d.URL,
		Command:       d.Command,
		Args:          slices.Clone(d.Args),
		Environment:   c.route,
		Enabled:       d.Enabled,
		Required:      d.Required,
		EnabledTools:  slices.Clone(d.EnabledTools),
		DisabledTools: slices.Clone(d.DisabledTools),
	}
	if d.BearerTokenEnvVar != "" {
		s.Credentials = append(s.Credentials, abi.Credential{Kind: "bearer_env", Name: "Authorization", EnvVar: d.BearerTokenEnvVar, Owner: c.owner})
	}
	for _, h := range slices.Sorted(maps.Keys(d.EnvHTTPHeaders)) {
		s.Credentials = append(s.Credentials, abi.Credential{Kind: "header_env", Name: h, EnvVar: d.EnvHTTPHeaders[h], Owner: c.owner})
	}
	for _, ev := range d.EnvVars {
		owner := c.owner
		switch ev.Source {
		case "local":
			owner = config.LocalEnvironment
		case "remote":
			owner = c.route
		}
		s.Credentials = append(s.Credentials, abi.Credential{Kind: "env_var", Name: ev.Name, EnvVar: ev.Name, Owner: owner})
	}
	if d.OAuth != nil {
		s.Credentials = append(s.Credentials, abi.Credential{Kind: "oauth", Owner: c.owner})
	}
	return s
}
