package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/warden-mcp/warden/host/internal/safefile"
)

// Config is one config.toml: the host's (or an executor's) own MCP servers and settings.
type Config struct {
	// File is the path the config was read from, as given to the loader.
	File string
	// Origin is the origin of every declaration in Servers.
	Origin Origin
	// Servers holds every valid `[mcp_servers.NAME]` declaration, in file order.
	Servers []ServerDecl
	// Plugins is the `[plugins]` table.
	Plugins Plugins
	// Policies are the `[[policies]]` entries: operator policies applied to every thread.
	Policies []PolicyRef
	// PolicyLimits is the `[policy_limits]` table.
	PolicyLimits PolicyLimits
	// DecisionLog is the `[decision_log]` table.
	DecisionLog DecisionLog
	// Limits is the `[limits]` table.
	Limits Limits
	// FrontDoor is the `[front_door]` table.
	FrontDoor FrontDoor
	// OAuth is the top-level mcp_oauth_* keys.
	OAuth OAuthSettings
	// Ignored lists, in file order, the keys warden does not use but Codex does (config.toml is
	// shared with Codex): top-level keys such as "model", and Codex-only server keys such as
	// "mcp_servers.docs.supports_parallel_tool_calls". `warden config check` shows them as
	// warnings.
	Ignored []string
}

// Server returns the declaration named name.
func (c *Config) Server(name string) (*ServerDecl, bool) {
	for i := range c.Servers {
		if c.Servers[i].Name == name {
			return &c.Servers[i], true
		}
	}
	return nil, false
}

// Plugins is the `[plugins]` table.
type Plugins struct {
	// Dirs are folders of capability roots, with `~` expanded and relative paths resolved
	// against the config file's directory.
	Dirs []string
	// Grants are the `[plugins.grants."ID"]` tables, by plugin id (name@version, as
	// `warden plugins list` shows it). nil when there are none.
	Grants map[string]Grant
}

// Grant is one `[plugins.grants."ID"]` table: what the operator lets one plugin's servers
// read from the host. A plugin's declaration names credentials by reference; a reference
// that would resolve in warden's own environment (env_vars, bearer_token_env_var,
// env_http_headers of a plugin that runs locally) resolves only if its variable is granted
// here, because otherwise any plugin dropped into a plugins dir could send the host's
// secrets to an endpoint of its choosing.
type Grant struct {
	// EnvVars names the host environment variables the plugin's servers may read, through
	// any of the three reference kinds.
	EnvVars []string
	// Pos is where the table starts.
	Pos Position
}

// EnvVarGranted reports whether the operator granted host variable name to plugin id.
func (p Plugins) EnvVarGranted(id, name string) bool {
	g, ok := p.Grants[id]
	return ok && contains(g.EnvVars, name)
}

// GrantTable is the TOML table header that grants plugin id something, as an operator
// writes it: `[plugins.grants."acme@1"]`.
func GrantTable(id string) string { return "[plugins.grants." + toml.Key{id}.String() + "]" }

// PolicyRef is one `[[policies]]` entry.
type PolicyRef struct {
	// Path is the policy module, resolved like Plugins.Dirs.
	Path string
	// SHA256 is the optional pin: 64 lowercase hex digits, or "" for none.
	SHA256 string
	// Pos is where the entry starts.
	Pos Position
}

// PolicyLimits is the `[policy_limits]` table; a zero field is unset (see WithDefaults).
type PolicyLimits struct {
	// MemoryMB bounds each policy instance's linear memory, in MiB.
	MemoryMB int
	// TimeoutMS bounds each hook call, in milliseconds.
	TimeoutMS int
}

// Policy limit defaults and bounds.
const (
	// DefaultPolicyMemoryMB is the memory limit when memory_mb is unset; a Go guest settles
	// near 8 MiB.
	DefaultPolicyMemoryMB = 64
	// DefaultPolicyTimeoutMS is the per-call deadline when timeout_ms is unset.
	DefaultPolicyTimeoutMS = 50
	// MaxPolicyMemoryMB is the largest accepted memory_mb: all of wasm32's 4 GiB.
	MaxPolicyMemoryMB = 4096
	// MaxPolicyTimeoutMS is the largest accepted timeout_ms: a minute per hook call.
	MaxPolicyTimeoutMS = 60_000
)

// WithDefaults returns l with unset fields replaced by DefaultPolicyMemoryMB and
// DefaultPolicyTimeoutMS.
func (l PolicyLimits) WithDefaults() PolicyLimits {
	if l.MemoryMB == 0 {
		l.MemoryMB = DefaultPolicyMemoryMB
	}
	if l.TimeoutMS == 0 {
		l.TimeoutMS = DefaultPolicyTimeoutMS
	}
	return l
}

// DecisionLog is the `[decision_log]` table.
type DecisionLog struct {
	// Path is the JSON-lines file decisions are appended to, resolved like Plugins.Dirs;
	// "-" or "stderr" (kept as written) mean standard error; "" means no decision log.
	Path string
	// MaxSizeMB is max_size_mb: when a line would take the file past this many MiB, the
	// file is renamed to PATH.1 (PATH.1 to PATH.2, and so on) and a new one started; 0
	// never rotates. nil when unset, which is DefaultDecisionLogMaxSizeMB: a pointer,
	// because 0 is a setting of its own. Use MaxBytes.
	MaxSizeMB *int
	// Keep is keep: how many rotated files (PATH.1 … PATH.Keep) are kept; 0 when unset,
	// which is DefaultDecisionLogKeep. Use KeepFiles.
	Keep int
}

// Decision log rotation defaults and bounds.
const (
	// DefaultDecisionLogMaxSizeMB is the rotation size when max_size_mb is unset: a few
	// hundred thousand lines, small enough to tail and grep at once.
	DefaultDecisionLogMaxSizeMB = 64
	// DefaultDecisionLogKeep is how many rotated files are kept when keep is unset.
	DefaultDecisionLogKeep = 5
	// MaxDecisionLogMaxSizeMB is the largest accepted max_size_mb: 1 TiB.
	MaxDecisionLogMaxSizeMB = 1 << 20
	// MaxDecisionLogKeep is the largest accepted keep.
	MaxDecisionLogKeep = 1000
)

// MaxBytes is the size in bytes past which the file is rotated; 0 means never.
func (l DecisionLog) MaxBytes() int64 {
	if l.MaxSizeMB == nil {
		return DefaultDecisionLogMaxSizeMB << 20
	}
	return int64(*l.MaxSizeMB) << 20
}

// KeepFiles is how many rotated files are kept.
func (l DecisionLog) KeepFiles() int {
	if l.Keep == 0 {
		return DefaultDecisionLogKeep
	}
	return l.Keep
}

// Stderr reports whether decisions go to standard error.
func (l DecisionLog) Stderr() bool { return l.Path == "-" || l.Path == "stderr" }

// Limits is the `[limits]` table: host-wide caps that keep one plugin or client from
// exhausting the machine. A zero field is unset (see WithDefaults).
type Limits struct {
	// MaxConcurrentServerStarts bounds how many MCP servers the host starts or connects to
	// at the same time (a stdio server's process start and handshake, an HTTP server's
	// handshake); further starts wait their turn, within their own startup timeout.
	MaxConcurrentServerStarts int
	// MaxThreads bounds how many threads may be open at once; thread/start beyond it fails.
	MaxThreads int
}

// Limit defaults and bounds.
const (
	// DefaultMaxConcurrentServerStarts is max_concurrent_server_starts when unset.
	DefaultMaxConcurrentServerStarts = 16
	// DefaultMaxThreads is max_threads when unset.
	DefaultMaxThreads = 4096
	// MaxMaxConcurrentServerStarts and MaxMaxThreads are the largest accepted values.
	MaxMaxConcurrentServerStarts = 1024
	MaxMaxThreads                = 65536
)

// WithDefaults returns l with unset fields replaced by their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxConcurrentServerStarts == 0 {
		l.MaxConcurrentServerStarts = DefaultMaxConcurrentServerStarts
	}
	if l.MaxThreads == 0 {
		l.MaxThreads = DefaultMaxThreads
	}
	return l
}

// FrontDoor is the `[front_door]` table: how `warden mcp` and `warden serve --mcp-listen`
// present a thread to MCP clients. It is read when the front door starts; a later edit
// applies to the next start.
type FrontDoor struct {
	// ToolNames is how tool and prompt names are made: ToolNamesPrefixed, ToolNamesBare, or
	// "" when unset (the front door's default, prefixed).
	ToolNames string
}

// Values of `[front_door] tool_names`.
const (
	// ToolNamesPrefixed names every tool and prompt server__name.
	ToolNamesPrefixed = "prefixed"
	// ToolNamesBare names a tool or prompt by its upstream name where no other exposed
	// server has one of that name, so that a single-server thread looks exactly like that
	// server.
	ToolNamesBare = "bare"
)

// ToolNamesWant lists the values of `tool_names` (and of the CLI's --tool-names) for error
// messages.
const ToolNamesWant = `"prefixed" or "bare"`

// Keys of config.toml. They are functions, not variables, so that the package has no mutable
// state.

func serverKeys() []string {
	return []string{
		"command", "args", "env", "env_vars", "cwd",
		"url", "bearer_token_env_var", "http_headers", "env_http_headers", "oauth", "oauth_resource", "scopes",
		"environment_id", "experimental_environment", "enabled", "required",
		"startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled_tools", "disabled_tools",
		"default_tools_approval_mode", "tools",
	}
}

func stdioOnlyKeys() []string { return []string{"args", "env", "env_vars", "cwd"} }

func httpOnlyKeys() []string {
	return []string{"bearer_token_env_var", "http_headers", "env_http_headers", "oauth", "oauth_resource", "scopes"}
}

// codexServerKeys are valid Codex server keys that warden has no use for, which it accepts
// and ignores so that a config.toml shared with Codex loads.
func codexServerKeys() []string {
	return []string{"supports_parallel_tool_calls", "name"}
}

// toolKeys are the keys of a `[mcp_servers.NAME.tools.TOOL]` table warden reads; Codex has
// others (such as output_token_limit), which are ignored.
func toolKeys() []string { return []string{"approval_mode"} }

// serverKeyHints maps common wrong server keys to advice.
func serverKeyHints() map[string]string {
	const transport = "the transport follows from `command` (stdio) or `url` (streamable HTTP)"
	return map[string]string{
		"headers":   "use `http_headers` (literal values) or `env_http_headers` (values read from environment variables)",
		"type":      transport,
		"transport": transport,
	}
}

func oauthKeys() []string        { return []string{"client_id", "callback_port", "scopes"} }
func envVarKeys() []string       { return []string{"name", "source"} }
func pluginsKeys() []string      { return []string{"dirs", "grants"} }
func grantKeys() []string        { return []string{"env_vars"} }
func limitsKeys() []string       { return []string{"max_concurrent_server_starts", "max_threads"} }
func policyKeys() []string       { return []string{"path", "sha256"} }
func policyLimitsKeys() []string { return []string{"memory_mb", "timeout_ms"} }
func decisionLogKeys() []string  { return []string{"path", "max_size_mb", "keep"} }
func frontDoorKeys() []string    { return []string{"tool_names"} }

// LoadConfig reads and validates a config.toml. Every declaration gets origin.
//
// The returned *Config is never nil: on error it holds everything that is valid (every valid
// server, whatever other servers are broken), and the error, of type Errors, lists every
// problem with file, line and server. A TOML syntax error fails the whole file (the Config is
// then empty) and is reported with line and column. A missing file is an error wrapping
// fs.ErrNotExist (LoadHome treats it as an empty config).
//
// Paths (plugin dirs, policy paths, the decision log, a server's cwd) have `~` expanded and
// are resolved against the config file's directory. Every loader bounds its input: at most
// 256 KiB, tables and arrays nested at most 10 deep, keys of at most 11 dotted parts; and
// reports at most 100 problems per file, then how many more there are.
func LoadConfig(path string, origin Origin) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return &Config{File: path, Origin: origin}, Errors{err}
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return parseConfig(path, dir, data, origin)
}

// ParseConfig is LoadConfig on data already read; name is the file's path, used in errors and
// to resolve relative paths (lexically, against filepath.Dir(name)).
func ParseConfig(name string, data []byte, origin Origin) (*Config, error) {
	return parseConfig(name, filepath.Dir(name), data, origin)
}

// readFile reads a regular file of at most maxFileSize bytes. safefile opens without
// blocking and checks the descriptor it reads, so a FIFO or a device planted as a config
// file is refused at once instead of hanging the reader or filling memory.
func readFile(path string) ([]byte, *Error) {
	data, err := safefile.ReadFile(path, maxFileSize)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, &Error{File: path, Msg: fmt.Sprintf("file is too large; the limit is %d bytes", maxFileSize), Err: err}
	}
	return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Err: err}
}

// unwrapPath strips the path an *fs.PathError repeats, since Error already names the file.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func parseConfig(name, dir string, data []byte, origin Origin) (*Config, error) {
	cfg := &Config{File: name, Origin: origin}
	d, perr := parseTOML(name, data)
	if perr != nil {
		return cfg, Errors{perr}
	}
	p := configParser{d: d, c: &collector{file: name}, dir: dir, cfg: cfg}
	for _, k := range d.sortedKeys(nil, d.top) {
		prim := d.top[k]
		switch k {
		case "mcp_servers":
			p.servers(prim)
		case "plugins":
			if r, ok := p.section(k, prim); ok {
				r.checkKeys(pluginsKeys(), pluginsKeys(), nil)
				dirs, _ := r.strSlice("dirs", true) // bad items are reported; keep the good ones
				for i, dir := range dirs {
					if dir == "" {
						continue
					}
					if abs, ok := p.resolve(r, "dirs", fmt.Sprintf("[%d]", i), dir); ok {
						cfg.Plugins.Dirs = append(cfg.Plugins.Dirs, abs)
					}
				}
				p.grants(r)
			}
		case "policies":
			p.policies(prim)
		case "policy_limits":
			if r, ok := p.section(k, prim); ok {
				r.checkKeys(policyLimitsKeys(), policyLimitsKeys(), nil)
				cfg.PolicyLimits.MemoryMB = p.limit(r, "memory_mb", MaxPolicyMemoryMB, "MiB")
				cfg.PolicyLimits.TimeoutMS = p.limit(r, "timeout_ms", MaxPolicyTimeoutMS, "ms")
			}
		case "limits":
			if r, ok := p.section(k, prim); ok {
				r.checkKeys(limitsKeys(), limitsKeys(), nil)
				cfg.Limits.MaxConcurrentServerStarts = p.limit(r, "max_concurrent_server_starts", MaxMaxConcurrentServerStarts, "servers")
				cfg.Limits.MaxThreads = p.limit(r, "max_threads", MaxMaxThreads, "threads")
			}
		case "decision_log":
			if r, ok := p.section(k, prim); ok {
				r.checkKeys(decisionLogKeys(), decisionLogKeys(), nil)
				if path, ok := r.nonEmpty("path"); ok {
					if (DecisionLog{Path: path}).Stderr() {
						cfg.DecisionLog.Path = path
					} else if abs, ok := p.resolve(r, "path", "", path); ok {
						cfg.DecisionLog.Path = abs
					}
				}
				// max_size_mb = 0 is "never rotate", so it is read apart from limit (which
				// takes 0 for unset).
				if n, ok := r.integer("max_size_mb"); ok {
					if n < 0 || n > MaxDecisionLogMaxSizeMB {
						r.errf("max_size_mb", "`max_size_mb` must be between 0 (never rotate) and %d (MiB), got %d", MaxDecisionLogMaxSizeMB, n)
					} else {
						mb := int(n)
						cfg.DecisionLog.MaxSizeMB = &mb
					}
				}
				cfg.DecisionLog.Keep = p.limit(r, "keep", MaxDecisionLogKeep, "files")
			}
		case "front_door":
			if r, ok := p.section(k, prim); ok {
				r.checkKeys(frontDoorKeys(), frontDoorKeys(), nil)
				if v, ok := r.str("tool_names"); ok {
					switch v {
					case ToolNamesPrefixed, ToolNamesBare:
						cfg.FrontDoor.ToolNames = v
					default:
						r.errf("tool_names", "`tool_names` is %q; want %s", v, ToolNamesWant)
					}
				}
			}
		case "mcp_oauth_callback_port", "mcp_oauth_credentials_store", "mcp_oauth_client_metadata_url":
			p.oauthSetting(k)
		default:
			cfg.Ignored = append(cfg.Ignored, quoteKey(k))
		}
	}
	return cfg, p.c.result()
}

// OAuthSettings are the top-level OAuth keys of config.toml (Codex's spellings).
type OAuthSettings struct {
	// CallbackPort is mcp_oauth_callback_port: the loopback port of the login callback
	// listener for servers whose `oauth` names none. 0: an ephemeral port.
	CallbackPort int
	// CredentialsStore is mcp_oauth_credentials_store; only "file" (the default) exists.
	CredentialsStore string
	// ClientMetadataURL is mcp_oauth_client_metadata_url: the https URL of a client ID
	// metadata document describing warden, used as the client id where the authorization
	// server supports such documents. "": dynamic client registration instead.
	ClientMetadataURL string
}

// OAuthCredentialsFile is the credential store's file name in the home.
const OAuthCredentialsFile = "mcp-oauth-credentials.json"

// oauthSetting reads one top-level mcp_oauth_* key.
func (p *configParser) oauthSetting(k string) {
	r := &tableReader{d: p.d, c: p.c, base: Error{Line: p.d.lineAt([]string{k}, p.d.top[k])}, m: p.d.top}
	switch k {
	case "mcp_oauth_callback_port":
		if port, ok := r.integer(k); ok {
			if port < 1 || port > 65535 {
				r.errf(k, "`%s` must be between 1 and 65535, got %d", k, port)
			} else {
				p.cfg.OAuth.CallbackPort = int(port)
			}
		}
	case "mcp_oauth_credentials_store":
		if v, ok := r.str(k); ok {
			if v != "file" {
				r.errf(k, "`%s` is %q; warden keeps OAuth logins in a file only: set \"file\" or remove the key", k, v)
			} else {
				p.cfg.OAuth.CredentialsStore = v
			}
		}
	case "mcp_oauth_client_metadata_url":
		if v, ok := r.nonEmpty(k); ok {
			if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				r.errf(k, "`%s` must be an https URL with a path (where warden's client ID metadata document is served)", k)
			} else {
				p.cfg.OAuth.ClientMetadataURL = v
			}
		}
	}
}

type configParser struct {
	d   *tomlDoc
	c   *collector
	dir string
	cfg *Config
}

// section opens a top-level table.
func (p *configParser) section(k string, prim toml.Primitive) (*tableReader, bool) {
	line := p.d.lineAt([]string{k}, prim)
	m, ok := p.d.table(prim)
	if !ok {
		p.c.add(Error{Line: line, Key: k}, "`%s` must be a table, got %s", k, typeName(p.d.value(prim)))
		return nil, false
	}
	return &tableReader{d: p.d, c: p.c, path: []string{k}, base: Error{Line: line, Table: k}, m: m}, true
}

// grants reads `[plugins.grants."ID"]`. A grant with any problem is dropped whole: a
// mistyped grant must not widen what a plugin reads.
func (p *configParser) grants(plugins *tableReader) {
	prim, ok := plugins.m["grants"]
	if !ok {
		return
	}
	byID, isTable := p.d.table(prim)
	if !isTable {
		plugins.errf("grants", "`grants` must be a table of plugin ids, as in %s, got %s", GrantTable("acme@1"), typeName(p.d.value(prim)))
		return
	}
	path := []string{"plugins", "grants"}
	line := plugins.keyLine("grants")
	for _, id := range p.d.sortedKeys(path, byID) {
		table := "plugins.grants." + quoteKey(id)
		base := Error{Line: p.d.lineAt(append(slices.Clone(path), id), byID[id]), Table: table}
		if base.Line == 0 {
			base.Line = line
		}
		m, isTable := p.d.table(byID[id])
		if !isTable {
			p.c.add(base, "must be a table with `env_vars`, got %s", typeName(p.d.value(byID[id])))
			continue
		}
		r := &tableReader{d: p.d, c: p.c, path: append(slices.Clone(path), id), base: base, m: m}
		if strings.TrimSpace(id) == "" {
			r.errf("", "the plugin id must not be empty")
		}
		r.checkKeys(grantKeys(), grantKeys(), nil)
		names, _ := r.strSlice("env_vars", true)
		for i, n := range names {
			if prob := envVarNameProblem(n); prob != "" && n != "" {
				r.errKeyf("env_vars", fmt.Sprintf("[%d]", i), "`env_vars[%d]` %s", i, prob)
			}
		}
		if r.nerr > 0 {
			continue
		}
		if p.cfg.Plugins.Grants == nil {
			p.cfg.Plugins.Grants = map[string]Grant{}
		}
		p.cfg.Plugins.Grants[id] = Grant{EnvVars: names, Pos: Position{File: p.c.file, Line: base.Line}}
	}
}

// limit reads one [policy_limits] or [limits] value.
func (p *configParser) limit(r *tableReader, k string, max int, unit string) int {
	n, ok := r.integer(k)
	if !ok {
		return 0
	}
	if n < 1 || n > int64(max) {
		r.errf(k, "`%s` must be between 1 and %d (%s), got %d", k, max, unit, n)
		return 0
	}
	return int(n)
}

// resolve expands `~` and resolves a relative path against the config file's directory.
func (p *configParser) resolve(r *tableReader, k, sub, path string) (string, bool) {
	out, err := resolvePath(p.dir, path)
	if err != nil {
		r.errKeyf(k, sub, "`%s%s` %q: %v", k, sub, path, err)
		return "", false
	}
	return out, true
}

// resolvePath expands a leading `~` (the user's home) and makes path absolute against dir.
func resolvePath(dir, path string) (string, error) {
	switch {
	case path == "~" || strings.HasPrefix(path, "~/") || strings.HasPrefix(path, "~"+string(filepath.Separator)):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand `~`: %w", err)
		}
		return filepath.Join(home, path[1:]), nil
	case strings.HasPrefix(path, "~"):
		return "", fmt.Errorf("`~user` paths are not supported; write the path out")
	case filepath.IsAbs(path):
		return filepath.Clean(path), nil
	}
	return filepath.Join(dir, path), nil
}

func (p *configParser) policies(prim toml.Primitive) {
	line := p.d.lineAt([]string{"policies"}, prim)
	arr, ok := p.d.tableArray(prim)
	if !ok {
		p.c.add(Error{Line: line, Key: "policies"}, "`policies` must be an array of tables ([[policies]]), got %s", typeName(p.d.value(prim)))
		return
	}
	elems := p.d.lines.arrays["policies"]
	if len(elems) != len(arr) {
		elems = nil // inline array, or something the scanner did not follow
	}
	for i, m := range arr {
		r := &tableReader{d: p.d, c: p.c, path: []string{"policies"}, m: m, elemLines: map[string]int{},
			base: Error{Line: line, Table: fmt.Sprintf("policies[%d]", i)}}
		if elems != nil {
			r.base.Line, r.elemLines = elems[i].line, elems[i].keys
		}
		r.checkKeys(policyKeys(), policyKeys(), nil)
		ref := PolicyRef{Pos: Position{File: p.c.file, Line: r.base.Line}}
		if path, ok := r.nonEmpty("path"); ok {
			ref.Path, _ = p.resolve(r, "path", "", path)
		} else if !r.has("path") {
			r.errf("", "`path` is required")
		}
		if sum, ok := r.str("sha256"); ok {
			if len(sum) != 64 || !isHex(sum) {
				r.errf("sha256", "`sha256` must be 64 hexadecimal digits, got %q", sum)
			}
			ref.SHA256 = strings.ToLower(sum)
		}
		if r.nerr == 0 {
			p.cfg.Policies = append(p.cfg.Policies, ref)
		}
	}
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func (p *configParser) servers(prim toml.Primitive) {
	line := p.d.lineAt([]string{"mcp_servers"}, prim)
	servers, ok := p.d.table(prim)
	if !ok {
		p.c.add(Error{Line: line, Key: "mcp_servers"}, "`mcp_servers` must be a table, got %s", typeName(p.d.value(prim)))
		return
	}
	path := []string{"mcp_servers"}
	for _, name := range p.d.sortedKeys(path, servers) {
		if d, ok := p.server(name, servers[name], line); ok {
			p.cfg.Servers = append(p.cfg.Servers, *d)
		}
	}
}

// server decodes and validates one `[mcp_servers.NAME]`; ok is false when it has problems
// (all of which are reported).
func (p *configParser) server(name string, prim toml.Primitive, sectionLine int) (*ServerDecl, bool) {
	table := "mcp_servers." + quoteKey(name)
	base := Error{Line: p.d.lineAt([]string{"mcp_servers", name}, prim), Table: table, Server: name}
	m, isTable := p.d.table(prim)
	if !isTable {
		if base.Line == 0 {
			base.Line = sectionLine
		}
		p.c.add(base, "must be a table, got %s", typeName(p.d.value(prim)))
		return nil, false
	}
	r := &tableReader{d: p.d, c: p.c, path: []string{"mcp_servers", name}, base: base, m: m}
	if r.base.Line == 0 {
		// Not even the first line under it is known (the index stopped early): use its keys.
		for _, k := range r.keys() {
			if l := r.keyLine(k); l > 0 && (r.base.Line == 0 || l < r.base.Line) {
				r.base.Line = l
			}
		}
		if r.base.Line == 0 {
			r.base.Line = sectionLine
		}
	}
	if !validServerName(name) {
		r.errf("", "invalid server name %q: must match %s", name, serverNamePattern)
	}
	d := &ServerDecl{Name: name, Origin: p.cfg.Origin, Pos: Position{File: p.c.file, Line: r.base.Line}, Enabled: true}

	if r.has("bearer_token") {
		r.errf("bearer_token", "key `bearer_token` is not supported: do not put a token in config; put it in an environment variable and name that variable with `bearer_token_env_var`")
	}
	accepted := append(append([]string{"bearer_token"}, serverKeys()...), codexServerKeys()...)
	r.checkKeys(accepted, serverKeys(), serverKeyHints())
	for _, k := range r.keys() {
		if contains(codexServerKeys(), k) {
			p.cfg.Ignored = append(p.cfg.Ignored, table+"."+quoteKey(k))
		}
	}

	hasCmd, hasURL := r.has("command"), r.has("url")
	switch {
	case hasURL && !hasCmd:
		for _, k := range stdioOnlyKeys() {
			if r.has(k) {
				r.errf(k, "key `%s` is only valid for stdio servers, but this server has `url`", k)
			}
		}
	case hasCmd && !hasURL:
		for _, k := range httpOnlyKeys() {
			if r.has(k) {
				r.errf(k, "key `%s` is only valid for streamable HTTP servers, but this server has `command`", k)
			}
		}
	}

	// stdio
	d.Command, _ = r.nonEmpty("command")
	d.Args, _ = r.strSlice("args", false)
	d.Env, _ = r.strMap("env", func(n, _ string) string { return envVarNameProblem(n) })
	d.EnvVars = p.envVars(r)
	if cwd, ok := r.nonEmpty("cwd"); ok {
		d.Cwd, _ = p.resolve(r, "cwd", "", cwd)
	}

	// streamable HTTP
	d.URL, _ = r.nonEmpty("url")
	if v, ok := r.str("bearer_token_env_var"); ok {
		if prob := envVarNameProblem(v); prob != "" {
			r.errf("bearer_token_env_var", "`bearer_token_env_var` %s", prob)
		}
		d.BearerTokenEnvVar = v
	}
	d.HTTPHeaders, _ = r.strMap("http_headers", func(n, v string) string {
		if prob := headerNameProblem(n); prob != "" {
			return prob
		}
		return headerValueProblem(v)
	})
	d.EnvHTTPHeaders, _ = r.strMap("env_http_headers", func(n, v string) string {
		if prob := headerNameProblem(n); prob != "" {
			return prob
		}
		if prob := envVarNameProblem(v); prob != "" {
			return "names no environment variable: " + prob
		}
		return ""
	})
	d.OAuth = p.oauth(r)

	// shared
	if r.has("environment_id") && r.has("experimental_environment") {
		r.errf("experimental_environment", "set `environment_id` or `experimental_environment` (its Codex name), not both")
	}
	if v, ok := r.nonEmpty("environment_id"); ok {
		d.EnvironmentID = v
	} else if v, ok := r.nonEmpty("experimental_environment"); ok {
		d.EnvironmentID = v
	}
	if v, ok := r.boolean("enabled"); ok {
		d.Enabled = v
	}
	d.Required, _ = r.boolean("required")
	if r.has("startup_timeout_sec") && r.has("startup_timeout_ms") {
		r.errf("startup_timeout_ms", "set `startup_timeout_sec` or the legacy `startup_timeout_ms`, not both")
	}
	if v, ok := r.seconds("startup_timeout_sec"); ok {
		d.StartupTimeout = v
	} else if v, ok := r.millis("startup_timeout_ms"); ok {
		d.StartupTimeout = v
	}
	d.ToolTimeout, _ = r.seconds("tool_timeout_sec")
	d.EnabledTools, _ = r.strSlice("enabled_tools", true)
	d.DisabledTools, _ = r.strSlice("disabled_tools", true)
	if v, ok := r.str("default_tools_approval_mode"); ok {
		if m := ApprovalMode(v); m.Valid() {
			d.DefaultToolsApprovalMode = m
		} else {
			r.errf("default_tools_approval_mode", "`default_tools_approval_mode` is %q; want %s", v, approvalModesWant)
		}
	}
	d.ToolApprovalModes = p.toolApprovals(r)

	// The rules every declaration source shares. Mixed-transport keys were reported above by
	// presence (`args = []` on an HTTP server counts), a present but invalid command/url by
	// its own check, and env_vars, tool lists and timeouts with more detail by their readers.
	for _, prob := range checkServer(d) {
		switch {
		case prob.mismatch, prob.key == "" && (hasCmd || hasURL):
		case contains([]string{"env_vars", "enabled_tools", "disabled_tools", "startup_timeout_sec", "tool_timeout_sec", "default_tools_approval_mode", "tools"}, prob.key):
		default:
			r.errf(prob.key, "%s", prob.msg)
		}
	}
	if r.nerr == 0 {
		if probs := CheckServer(d); len(probs) > 0 { // cannot happen; never return a server CheckServer rejects
			r.errf("", "%s", strings.Join(probs, "; "))
		}
	}
	return d, r.nerr == 0
}

// toolApprovals reads `tools`, Codex's per-tool settings: `[mcp_servers.NAME.tools.TOOL]`
// tables, of which warden uses `approval_mode`. Their other keys belong to Codex and are
// listed in Ignored, except a key close enough to `approval_mode` to be a typo of it: that
// one is an error, since ignoring it would run without asking a tool meant to be prompted.
func (p *configParser) toolApprovals(r *tableReader) map[string]ApprovalMode {
	prim, ok := r.m["tools"]
	if !ok {
		return nil
	}
	byTool, isTable := p.d.table(prim)
	if !isTable {
		r.errf("tools", "`tools` must be a table of per-tool tables, as in [%s.tools.TOOL], got %s", r.base.Table, typeName(p.d.value(prim)))
		return nil
	}
	path := append(slices.Clone(r.path), "tools")
	var out map[string]ApprovalMode
	for _, tool := range p.d.sortedKeys(path, byTool) {
		sub := &tableReader{d: p.d, c: p.c, path: append(slices.Clone(path), tool), base: r.base}
		sub.base.Table = r.base.Table + ".tools." + quoteKey(tool)
		if l := p.d.lineAt(sub.path, byTool[tool]); l > 0 {
			sub.base.Line = l
		} else {
			sub.base.Line = r.keyLine("tools")
		}
		m, isTable := p.d.table(byTool[tool])
		if !isTable {
			sub.errf("", "must be a table with `approval_mode`, got %s", typeName(p.d.value(byTool[tool])))
			r.nerr += sub.nerr
			continue
		}
		sub.m = m
		if tool == "" {
			sub.errf("", "the tool name must not be empty")
		}
		for _, k := range sub.keys() {
			switch {
			case contains(toolKeys(), k):
			case suggest(k, toolKeys()) != "":
				sub.errf(k, "unknown key `%s` (did you mean `%s`?)", k, suggest(k, toolKeys()))
			default:
				p.cfg.Ignored = append(p.cfg.Ignored, sub.base.Table+"."+quoteKey(k))
			}
		}
		if v, ok := sub.str("approval_mode"); ok {
			if mode := ApprovalMode(v); !mode.Valid() {
				sub.errf("approval_mode", "`approval_mode` is %q; want %s", v, approvalModesWant)
			} else if tool != "" {
				if out == nil {
					out = map[string]ApprovalMode{}
				}
				out[tool] = mode
			}
		}
		r.nerr += sub.nerr
	}
	return out
}

// serverNamePattern is the server name rule Codex applies.
const serverNamePattern = "^[A-Za-z0-9_-]+$"

func validServerName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isBareKeyByte(name[i]) {
			return false
		}
	}
	return true
}

// envVars reads `env_vars`: an array whose items are names or {name, source} tables.
func (p *configParser) envVars(r *tableReader) []EnvVar {
	v, ok := r.raw("env_vars")
	if !ok {
		return nil
	}
	var items []any
	switch a := v.(type) {
	case []any:
		items = a
	case []map[string]any:
		for _, m := range a {
			items = append(items, m)
		}
	default:
		r.errf("env_vars", "`env_vars` must be an array of names or {name, source} tables, got %s", typeName(v))
		return nil
	}
	out := make([]EnvVar, 0, len(items))
	for i, item := range items {
		sub := fmt.Sprintf("[%d]", i)
		var ev EnvVar
		switch it := item.(type) {
		case string:
			ev.Name = it
		case map[string]any:
			keys := make([]string, 0, len(it))
			for k := range it {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if !contains(envVarKeys(), k) {
					if s := suggest(k, envVarKeys()); s != "" {
						r.errKeyf("env_vars", sub, "`env_vars%s`: unknown key `%s` (did you mean `%s`?)", sub, k, s)
					} else {
						r.errKeyf("env_vars", sub, "`env_vars%s`: unknown key `%s`", sub, k)
					}
				}
			}
			name, isStr := it["name"].(string)
			switch {
			case it["name"] == nil:
				r.errKeyf("env_vars", sub, "`env_vars%s` has no `name`", sub)
			case !isStr:
				r.errKeyf("env_vars", sub+".name", "`env_vars%s.name` must be a string, got %s", sub, typeName(it["name"]))
			}
			ev.Name = name
			if src, present := it["source"]; present {
				s, isStr := src.(string)
				switch {
				case !isStr:
					r.errKeyf("env_vars", sub+".source", "`env_vars%s.source` must be a string, got %s", sub, typeName(src))
				case s != "local" && s != "remote":
					r.errKeyf("env_vars", sub+".source", "`env_vars%s.source` is %q; want \"local\" or \"remote\"", sub, s)
				}
				ev.Source = s
			}
		default:
			r.errKeyf("env_vars", sub, "`env_vars%s` must be a name or a {name, source} table, got %s", sub, typeName(item))
			continue
		}
		if prob := envVarNameProblem(ev.Name); prob != "" && ev.Name != "" {
			r.errKeyf("env_vars", sub, "`env_vars%s` %s", sub, prob)
		} else if ev.Name == "" {
			if _, isStr := item.(string); isStr {
				r.errKeyf("env_vars", sub, "`env_vars%s` must not be empty", sub)
			}
		}
		out = append(out, ev)
	}
	return out
}

// oauth reads `oauth` and the top-level `scopes` and `oauth_resource` Codex also accepts.
func (p *configParser) oauth(r *tableReader) *OAuth {
	var o *OAuth
	if v, ok := r.raw("oauth"); ok {
		if _, isMap := v.(map[string]any); !isMap {
			r.errf("oauth", "`oauth` must be a table with `client_id`, `callback_port`, `scopes`, got %s", typeName(v))
		} else {
			o = &OAuth{}
			prims, _ := p.d.table(r.m["oauth"])
			sub := &tableReader{d: p.d, c: p.c, path: append(append([]string(nil), r.path...), "oauth"), base: r.base, m: prims}
			sub.base.Line = r.keyLine("oauth")
			sub.base.Table = r.base.Table + ".oauth"
			sub.checkKeys(oauthKeys(), oauthKeys(), nil)
			if id, ok := sub.nonEmpty("client_id"); ok {
				o.ClientID = id
			}
			if port, ok := sub.integer("callback_port"); ok {
				if port < 1 || port > 65535 {
					sub.errf("callback_port", "`callback_port` must be between 1 and 65535, got %d", port)
				} else {
					o.CallbackPort = int(port)
				}
			}
			o.Scopes, _ = sub.strSlice("scopes", true)
			r.nerr += sub.nerr
		}
	}
	if r.has("scopes") {
		if o != nil && o.Scopes != nil {
			r.errf("scopes", "set `scopes` or `oauth.scopes`, not both")
		}
		if scopes, ok := r.strSlice("scopes", true); ok {
			if o == nil {
				o = &OAuth{}
			}
			o.Scopes = scopes
		}
	}
	if res, ok := r.nonEmpty("oauth_resource"); ok {
		if o == nil {
			o = &OAuth{}
		}
		o.Resource = res
	}
	return o
}
