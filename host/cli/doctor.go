package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/executor/client"
	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/oauth/store"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

const doctorUsage = "[--json] [--connect] [--timeout 10s]"

// Statuses of a doctor check.
const (
	doctorOK      = "ok"
	doctorWarning = "warning"
	doctorError   = "error"
)

// doctorCheck is one line of `warden doctor`: what was checked, how it went, and, for a
// problem whose remedy the message does not already say, what to do.
type doctorCheck struct {
	Check   string `json:"check"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// doctorReport is everything `warden doctor` found; its JSON form is `--json`'s output.
type doctorReport struct {
	Home     string        `json:"home"`
	Checks   []doctorCheck `json:"checks"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
}

func (r *doctorReport) add(status, check, msg, fix string) {
	switch status {
	case doctorError:
		r.Errors++
	case doctorWarning:
		r.Warnings++
	}
	r.Checks = append(r.Checks, doctorCheck{Check: check, Status: status, Message: oneLine(msg), Fix: fix})
}

func (r *doctorReport) ok(check, msg string)            { r.add(doctorOK, check, msg, "") }
func (r *doctorReport) warn(check, msg, fix string)     { r.add(doctorWarning, check, msg, fix) }
func (r *doctorReport) fail(check, msg, fix string)     { r.add(doctorError, check, msg, fix) }
func (r *doctorReport) failErr(check string, err error) { r.fail(check, err.Error(), "") }

// doctor holds one run's inputs.
type doctor struct {
	g       *global
	r       *doctorReport
	home    *config.Home
	set     *roots.Set
	timeout time.Duration
	log     hclog.Logger
	// homeWarned: the home check already said what is missing, so the file checks do not
	// say it again.
	homeWarned bool
	// caps holds the capabilities of every executor that answered, by environment id.
	caps map[string]protocol.Capabilities
}

// runDoctor is `warden doctor`: it checks a home end to end — its files, plugins dirs and
// policies, executors, listener tokens and OAuth logins — and prints one line per check
// (ok, warning or error) with what to fix. It exits 1 when any check is an error. It starts
// no MCP server unless --connect is given; then it also opens one thread over every
// declared server, as `warden serve` would, and reports each server's state.
func runDoctor(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "doctor", doctorUsage)
	asJSON := fl.Bool("json", false, "print the checks as JSON")
	connect := fl.Bool("connect", false, "also start (or connect to) every MCP server once, in one thread, and report how each one did")
	timeout := fl.Duration("timeout", 10*time.Second, "bound on each executor dial and on the --connect phase as a whole")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 || *timeout <= 0 {
		fl.Usage()
		return errUsage
	}
	d := &doctor{g: g, r: &doctorReport{Home: g.home, Checks: []doctorCheck{}}, timeout: *timeout,
		log: hclog.NewNullLogger(), caps: map[string]protocol.Capabilities{}}
	if g.logLevelSet {
		d.log = g.log
	}
	d.run(ctx, *connect)

	if *asJSON {
		if err := writeJSON(g.io.Stdout, d.r); err != nil {
			return err
		}
	} else {
		printDoctor(g.io.Stdout, d.r)
	}
	if d.r.Errors > 0 {
		return errSilentFailure
	}
	return nil
}

func printDoctor(w io.Writer, r *doctorReport) {
	for _, c := range r.Checks {
		line := fmt.Sprintf("%-7s %s: %s", c.Status, c.Check, c.Message)
		if c.Fix != "" {
			line += " (fix: " + c.Fix + ")"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d errors, %d warnings\n", r.Errors, r.Warnings)
}

func (d *doctor) run(ctx context.Context, connect bool) {
	if !d.checkHome() {
		return
	}
	var err error
	d.home, err = config.LoadHome(d.g.home)
	d.checkFiles(err)
	d.checkPlugins(ctx)
	d.checkOperatorPolicies(ctx)
	d.checkRequirements()
	d.checkExecutors(ctx)
	d.checkRouting()
	d.checkTokens()
	d.checkCredentials()
	d.checkOAuth(ctx)
	if connect {
		d.checkConnect(ctx)
	}
}

// checkHome reports the home directory; false means there is nothing more to check.
func (d *doctor) checkHome() bool {
	why, missing := emptyHome(d.g.home)
	fix := fmt.Sprintf("use --home DIR or %s=DIR; an MCP client that starts warden may drop the environment, so give --home in its arguments", config.HomeEnvVar)
	src := homeSource(d.g)
	switch {
	case missing:
		d.r.fail("home", fmt.Sprintf("%s (%s) %s", d.g.home, src, why), fix)
		return false
	case why != "":
		d.homeWarned = true
		d.r.warn("home", fmt.Sprintf("%s (%s) %s: threads get no MCP servers and no tools", d.g.home, src, why), fix)
	default:
		d.r.ok("home", fmt.Sprintf("%s (%s)", d.g.home, src))
	}
	return true
}

// checkFiles reports config.toml, requirements.toml and environments.toml: every problem
// LoadHome found (each with file:line), filed under the file it is in.
func (d *doctor) checkFiles(loadErr error) {
	byFile := map[string][]string{}
	var es config.Errors
	if errors.As(loadErr, &es) {
		for _, e := range es {
			byFile[filepath.Base(e.File)] = append(byFile[filepath.Base(e.File)], e.Error())
		}
	} else if loadErr != nil {
		byFile[config.ConfigFile] = append(byFile[config.ConfigFile], loadErr.Error())
	}
	h := d.home
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(d.g.home, name))
		return !errors.Is(err, fs.ErrNotExist)
	}

	name := config.ConfigFile
	switch {
	case len(byFile[name]) > 0:
		for _, e := range byFile[name] {
			d.r.fail(name, e, "")
		}
	case !exists(name) && d.homeWarned:
	case !exists(name):
		d.r.warn(name, filepath.Join(d.g.home, name)+" does not exist: no MCP servers, plugins dirs or operator policies", "write one (docs/operators.md), or point warden at the home that has it")
	default:
		d.r.ok(name, fmt.Sprintf("%d MCP servers, %d plugins dirs, %d operator policies, %d plugin grants",
			len(h.Config.Servers), len(h.Config.Plugins.Dirs), len(h.Config.Policies), len(h.Config.Plugins.Grants)))
	}
	for _, k := range h.Config.Ignored {
		d.r.warn(name, fmt.Sprintf("%s: key %q is not used by warden (ignored)", h.Config.File, k), "")
	}

	name = config.RequirementsFile
	switch {
	case len(byFile[name]) > 0:
		for _, e := range byFile[name] {
			d.r.fail(name, e, "")
		}
	case h.Requirements == nil:
		d.r.ok(name, "none: every declared MCP server is allowed")
	default:
		d.r.ok(name, fmt.Sprintf("%d MCP servers allowed by identity", len(h.Requirements.Servers)))
	}
	if h.Requirements != nil {
		for _, k := range h.Requirements.Ignored {
			d.r.warn(name, fmt.Sprintf("%s: key %q is not used by warden (ignored)", h.Requirements.File, k), "")
		}
	}

	name = config.EnvironmentsFile
	switch {
	case len(byFile[name]) > 0:
		for _, e := range byFile[name] {
			d.r.fail(name, e, "")
		}
	case h.Environments.File == "":
		d.r.ok(name, "none: every MCP server runs on this machine")
	default:
		d.r.ok(name, fmt.Sprintf("%d executors, default environment %q, local environment %s",
			len(h.Environments.List), h.Environments.Default, map[bool]string{true: "offered", false: "not offered"}[h.Environments.IncludeLocal]))
	}
	// Anything else LoadHome reported (a file it could not attribute).
	for f, list := range byFile {
		if f == config.ConfigFile || f == config.RequirementsFile || f == config.EnvironmentsFile {
			continue
		}
		for _, e := range list {
			d.r.fail("home", e, "")
		}
	}
}

// checkPlugins scans the plugins dirs and loads every root and its policy the way the host
// does: a dir that is missing, a root that does not load, a policy that does not compile
// or whose content no longer matches the digest the scan took are errors.
func (d *doctor) checkPlugins(ctx context.Context) {
	dirs := d.home.Config.Plugins.Dirs
	d.set = roots.Scan(dirs, roots.Options{})
	if len(dirs) == 0 {
		return
	}
	for _, p := range d.set.Problems() {
		fix := ""
		if errors.Is(p, fs.ErrNotExist) {
			fix = "create it, or fix [plugins] dirs in " + d.home.Config.File
		}
		d.r.fail("plugins dir", p.Error(), fix)
	}
	for _, dir := range dirs {
		if ok, _ := statDir(dir); ok {
			d.r.ok("plugins dir", dir)
		}
	}
	if d.set.Len() == 0 {
		d.r.warn("plugins", "no capability roots in "+strings.Join(dirs, ", "), "put a plugin (a directory with .codex-plugin/plugin.json or .mcp.json) in a plugins dir")
		return
	}
	for _, root := range d.set.Roots() {
		v := viewRoot(ctx, d.g, root)
		check := "plugin " + root.ID
		if v.Error != "" {
			d.r.fail(check, v.Error, "")
		}
		for _, e := range v.ServerErrors {
			d.r.fail(check, e, "")
		}
		if v.Error != "" {
			continue
		}
		policy := "no policy"
		if v.Policy != nil {
			policy = fmt.Sprintf("policy sha256 %s…, hooks %s", v.Policy.SHA256[:12], joinNonEmpty(",", v.Policy.Hooks...))
		}
		d.r.ok(check, fmt.Sprintf("%s: %d MCP servers, %s", root.Dir, len(root.Servers), policy))
	}
}

// checkOperatorPolicies loads each [[policies]] module, checking its sha256 pin.
func (d *doctor) checkOperatorPolicies(ctx context.Context) {
	for _, pol := range d.home.Config.Policies {
		check := "operator policy " + pol.Path
		hooks, err := inspectPolicy(ctx, d.g, "operator policy "+pol.Path, pol.Path, pol.SHA256)
		if err != nil {
			fix := ""
			if pol.SHA256 != "" {
				fix = "if the module changed on purpose, update `sha256` at " + pol.Pos.String()
			}
			d.r.fail(check, fmt.Sprintf("%s: %v", pol.Pos, err), fix)
			continue
		}
		pin := "not pinned"
		if pol.SHA256 != "" {
			pin = "sha256 pin matches"
		}
		d.r.ok(check, fmt.Sprintf("%s, hooks %s", pin, joinNonEmpty(",", hooks...)))
	}
}

// allServers is every declaration a thread could list: the host config's, then each
// loaded root's, with the plugin id ("" for host-config).
func (d *doctor) allServers() (decls []*config.ServerDecl, plugin []string) {
	for i := range d.home.Config.Servers {
		decls, plugin = append(decls, &d.home.Config.Servers[i]), append(plugin, "")
	}
	if d.set != nil {
		for _, r := range d.set.Roots() {
			for i := range r.Servers {
				decls, plugin = append(decls, &r.Servers[i]), append(plugin, r.ID)
			}
		}
	}
	return decls, plugin
}

func serverCheck(name, plugin string) string {
	if plugin != "" {
		return fmt.Sprintf("server %s (plugin %s)", name, plugin)
	}
	return "server " + name
}

// checkRequirements names every declared server requirements.toml would disable.
func (d *doctor) checkRequirements() {
	if d.home.Requirements == nil {
		return
	}
	decls, plugins := d.allServers()
	for i, s := range decls {
		if ok, why := d.home.Requirements.Check(s); !ok {
			d.r.warn(serverCheck(s.Name, plugins[i]), fmt.Sprintf("%s: listed but disabled: %s", s.Pos, why),
				"allow it in "+d.home.Requirements.File+" or remove the declaration")
		}
	}
}

// checkExecutors dials every environments.toml entry once, bounded by the timeout, and
// reads what its initialize announced.
func (d *doctor) checkExecutors(ctx context.Context) {
	for _, e := range d.home.Environments.List {
		check := "executor " + e.ID
		cfg := client.Config{Name: e.ID, URL: e.URL, Program: e.Program, Args: e.Args, Logger: d.log,
			ClientInfo: protocol.Info{Name: "warden", Version: Version}, HandshakeTimeout: d.timeout}
		for k, v := range e.Env {
			cfg.Env = append(cfg.Env, k+"="+v)
		}
		where := "program " + strings.Join(append([]string{e.Program}, e.Args...), " ")
		if e.URL != "" {
			where = mcpconn.RedactURL(e.URL)
		}
		if e.TokenEnv != "" {
			cfg.Token = d.g.io.Getenv(e.TokenEnv)
			if cfg.Token == "" {
				d.r.fail(check, fmt.Sprintf("%s: not dialled: its token variable %s (token_env, %s) is unset or empty", where, e.TokenEnv, e.Pos),
					"export "+e.TokenEnv+" with the executor's bearer token before starting warden")
				continue
			}
		}
		dctx, cancel := context.WithTimeout(ctx, d.timeout)
		c, err := client.Dial(dctx, cfg)
		cancel()
		if err != nil {
			// Redacted: a dial error quotes the URL, whose query string may carry a key.
			d.r.fail(check, fmt.Sprintf("%s: unreachable: %s", where, mcpconn.RedactURLs(err.Error())),
				"start the executor, or fix the entry at "+e.Pos.String())
			continue
		}
		caps, info, servers := c.Capabilities(), c.EnvironmentInfo(), c.Servers()
		_ = c.Close()
		d.caps[e.ID] = caps
		var offered []string
		for _, c := range []struct {
			on   bool
			name string
		}{{caps.Processes, "processes"}, {caps.HTTPHeaderEnvVars, "httpHeaderEnvVars"}, {caps.FSRead, "fsRead"}} {
			if c.on {
				offered = append(offered, c.name)
			}
		}
		capText := "none"
		if len(offered) > 0 {
			capText = strings.Join(offered, ",")
		}
		d.r.ok(check, fmt.Sprintf("%s: connected (%s/%s, warden %s); capabilities %s; %d MCP servers of its own",
			where, info.OS, info.Arch, cmp.Or(info.Version, "?"), capText, len(servers)))
	}
}

// route is the environment a declaration runs in.
func (d *doctor) route(s *config.ServerDecl) string {
	if s.EnvironmentID != "" {
		return s.EnvironmentID
	}
	return d.home.Environments.Default
}

// checkRouting flags servers routed to an executor that answered without the capability
// they need: a stdio server needs processes.
func (d *doctor) checkRouting() {
	decls, plugins := d.allServers()
	for i, s := range decls {
		env := d.route(s)
		caps, ok := d.caps[env]
		if !ok || !s.Enabled {
			continue
		}
		if s.Transport() == config.TransportStdio && !caps.Processes {
			d.r.fail(serverCheck(s.Name, plugins[i]), fmt.Sprintf("%s: a stdio server routed to executor %q, which does not offer processes", s.Pos, env),
				"route it elsewhere (environment_id) or run the executor without --no-processes")
		}
	}
}

// checkTokens checks the listeners' token file and the token variables environments.toml
// names. Token values are never printed.
func (d *doctor) checkTokens() {
	path := filepath.Join(d.g.home, ListenTokenFile)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		d.r.failErr("listen token", err)
	case !fi.Mode().IsRegular():
		d.r.fail("listen token", path+" is not a regular file", "remove it; `warden serve` writes a new one")
	case fi.Mode().Perm()&0o077 != 0:
		d.r.fail("listen token", fmt.Sprintf("%s has mode %04o: other users can read the listeners' bearer token", path, fi.Mode().Perm()),
			"chmod 600 "+path+" (and consider the token leaked: remove it; `warden serve` writes a new one)")
	default:
		data, err := os.ReadFile(path)
		switch {
		case err != nil:
			d.r.failErr("listen token", err)
		case len(strings.TrimSpace(string(data))) < netguard.MinTokenBytes:
			d.r.fail("listen token", fmt.Sprintf("%s holds a token shorter than %d bytes", path, netguard.MinTokenBytes), "remove it; `warden serve` writes a new one")
		default:
			d.r.ok("listen token", path+": mode 0600")
		}
	}
	for _, e := range d.home.Environments.List {
		if e.TokenEnv == "" {
			continue
		}
		check := "token " + e.TokenEnv
		switch v := d.g.io.Getenv(e.TokenEnv); {
		case v == "":
			d.r.fail(check, fmt.Sprintf("unset or empty; executor %q needs it (%s)", e.ID, e.Pos), "export "+e.TokenEnv+" with the executor's bearer token")
		case len(v) < netguard.MinTokenBytes:
			d.r.warn(check, fmt.Sprintf("shorter than %d bytes; `warden executor` refuses such a token", netguard.MinTokenBytes), "use a longer token on both sides")
		default:
			d.r.ok(check, fmt.Sprintf("set, for executor %q", e.ID))
		}
	}
}

// checkCredentials flags host-config servers that run here and read a credential from a
// variable that is unset: they would start without it (and be refused upstream).
func (d *doctor) checkCredentials() {
	for i := range d.home.Config.Servers {
		s := &d.home.Config.Servers[i]
		if !s.Enabled || d.route(s) != config.LocalEnvironment {
			continue
		}
		vars := []string{}
		if s.BearerTokenEnvVar != "" {
			vars = append(vars, s.BearerTokenEnvVar)
		}
		for _, h := range sortedNames(s.EnvHTTPHeaders) {
			vars = append(vars, s.EnvHTTPHeaders[h])
		}
		for _, v := range vars {
			if d.g.io.Getenv(v) == "" {
				d.r.warn(serverCheck(s.Name, ""), fmt.Sprintf("%s: reads its credential from %s, which is unset or empty", s.Pos, v), "export "+v+" before starting warden")
			}
		}
	}
}

// checkOAuth opens the credential store (which refuses a file group or other can read),
// and reports logins that can no longer be used and servers that declare `oauth` but have
// no login. No token is ever printed: entries print their secret-free form.
func (d *doctor) checkOAuth(ctx context.Context) {
	path := filepath.Join(d.g.home, config.OAuthCredentialsFile)
	var entries []store.Entry
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		d.r.ok("oauth", "no credential file: no OAuth logins stored")
	} else {
		st, err := store.Open(path)
		if err != nil {
			// The store's errors say what to do (an insecure file names its chmod).
			d.r.failErr("oauth", err)
			return
		}
		if entries, err = st.List(ctx); err != nil {
			d.r.failErr("oauth", err)
			return
		}
		now := time.Now()
		usable := 0
		for _, e := range entries {
			check := fmt.Sprintf("oauth login %s", e.Server)
			who := fmt.Sprintf("owner %s, %s", e.Owner, mcpconn.RedactURL(e.URL))
			switch {
			case e.AccessToken == "":
				d.r.warn(check, who+": no token (the login did not complete)", "warden oauth login "+e.Server)
			case !e.Expiry.IsZero() && !e.Expiry.After(now) && !e.HasRefreshToken():
				d.r.warn(check, fmt.Sprintf("%s: expired at %s and has no refresh token", who, e.Expiry.UTC().Format(time.RFC3339)), "warden oauth login "+e.Server)
			default:
				usable++
			}
		}
		d.r.ok("oauth", fmt.Sprintf("%s: mode 0600, %d logins, %d usable", path, len(entries), usable))
	}
	decls, plugins := d.allServers()
	for i, s := range decls {
		if s.OAuth == nil || !s.Enabled {
			continue
		}
		k := store.Key{Owner: d.route(s), Server: s.Name, URL: s.URL}
		if !slices.ContainsFunc(entries, func(e store.Entry) bool { return e.Key == k }) {
			fix := "warden oauth login " + s.Name
			if plugins[i] != "" {
				fix += " --plugin " + plugins[i]
			}
			d.r.warn(serverCheck(s.Name, plugins[i]), fmt.Sprintf("%s: declares `oauth` but has no stored login (owner %s)", s.Pos, k.Owner), fix)
		}
	}
}

// checkConnect starts a host over the home and one thread selecting every usable root, as
// `warden serve` and a client would, and reports each server's state once it settled,
// bounded by the timeout. Servers routed to an executor that answered are waited for
// until it connects to this host too.
func (d *doctor) checkConnect(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	// Decisions go nowhere and no compilation cache is written: a check leaves the
	// operator's decision log and home as they were.
	h, err := host.New(ctx, host.Options{Home: d.g.home, Logger: d.log, DecisionLog: io.Discard, PolicyCacheDir: "-"})
	if err != nil {
		d.r.failErr("connect", err)
		return
	}
	defer h.Close()
	var sel []thread.SelectedRoot
	for _, r := range h.Roots().Roots() {
		if r.Status != roots.StatusError {
			sel = append(sel, thread.SelectedRoot{ID: r.ID})
		}
	}
	cwd, _ := os.Getwd()
	th, err := h.Threads().Start(ctx, thread.StartParams{Kind: thread.KindInteractive, SelectedRoots: sel, Cwd: cwd})
	if err != nil {
		d.r.fail("connect", "starting a thread over every declared server: "+err.Error(), "")
		return
	}
	defer th.Close()
	var st []thread.ServerStatus
	for {
		if st, err = th.Status(ctx, "", false); err != nil {
			d.r.failErr("connect", err)
			return
		}
		if !d.awaitingExecutor(st) {
			break
		}
		// The host dials executors in the background; one that answered the executor
		// check is expected to connect here too, so its servers are polled for until it
		// does or the timeout ends.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(st) == 0 {
		d.r.warn("connect", "the thread lists no MCP servers", "declare some (docs/operators.md)")
		return
	}
	for _, s := range st {
		check := serverCheck(s.Name, s.PluginID)
		login := "warden oauth login " + s.Name
		if s.PluginID != "" {
			login += " --plugin " + s.PluginID
		}
		needsLogin := s.AuthStatus == thread.AuthNotLoggedIn || s.AuthStatus == thread.AuthExpired
		switch {
		case s.Status == thread.StateReady:
			d.r.ok(check, fmt.Sprintf("ready, %d tools", len(s.Tools)))
		case s.Status == thread.StateDisabled:
			d.r.ok(check, "disabled: "+s.ToolsError)
		case needsLogin:
			d.r.fail(check, fmt.Sprintf("%s (auth %s): %s", s.Status, s.AuthStatus, cmp.Or(s.ToolsError, "no reason given")), login)
		default:
			d.r.fail(check, fmt.Sprintf("%s: %s", s.Status, cmp.Or(s.ToolsError, "no reason given")), "")
		}
	}
}

// awaitingExecutor reports whether a server is failed or disabled only because an executor
// that the executor check reached (with the capability the server needs) has not
// connected to this host yet: the host dials executors in the background, and until one
// connects the thread sees it as absent.
func (d *doctor) awaitingExecutor(st []thread.ServerStatus) bool {
	decls, plugins := d.allServers()
	for _, s := range st {
		if s.Status != thread.StateFailed && s.Status != thread.StateDisabled {
			continue
		}
		for i, decl := range decls {
			if decl.Name != s.Name || plugins[i] != s.PluginID {
				continue
			}
			env := d.route(decl)
			caps, reached := d.caps[env]
			if !reached || decl.Transport() == config.TransportStdio && !caps.Processes {
				continue
			}
			if strings.Contains(s.ToolsError, fmt.Sprintf("executor %q", env)) || strings.Contains(s.ToolsError, fmt.Sprintf("environment %q", env)) {
				return true
			}
		}
	}
	return false
}
