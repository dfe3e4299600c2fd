package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Transport is how warden speaks MCP to a server.
type Transport string

// Transports.
const (
	// TransportStdio launches Command and speaks MCP over its stdin/stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks streamable HTTP to URL.
	TransportHTTP Transport = "http"
)

// LocalEnvironment is the environment id of the host machine itself.
const LocalEnvironment = "local"

// Origin says where a declaration came from; it decides name precedence (host-config beats
// executor-config beats plugin) and which environment owns its credentials.
type Origin struct {
	// Kind is one of OriginHostConfig, OriginExecutorConfig, OriginPlugin.
	Kind OriginKind
	// Environment is the executor id for OriginExecutorConfig, and for OriginPlugin the
	// environment the plugin is located in ("local" for a plugin on the host).
	Environment string
	// PluginID is the owning plugin's "name@version" for OriginPlugin.
	PluginID string
}

// OriginKind is the kind of an Origin.
type OriginKind int

// Origin kinds, in precedence order (lower wins a name collision).
const (
	OriginHostConfig OriginKind = iota
	OriginExecutorConfig
	OriginPlugin
)

// String renders the origin as it appears on the wire and in the policy ABI:
// "host-config", "executor-config:<env>" or "plugin:<id>".
func (o Origin) String() string {
	switch o.Kind {
	case OriginHostConfig:
		return "host-config"
	case OriginExecutorConfig:
		return "executor-config:" + o.Environment
	case OriginPlugin:
		return "plugin:" + o.PluginID
	}
	return fmt.Sprintf("origin(%d)", int(o.Kind))
}

// EnvVar is one `env_vars` entry: a variable passed through to a stdio server by name.
// In TOML it is either a bare string ("NAME") or a table {name = "NAME", source = "..."}.
type EnvVar struct {
	// Name is the variable name.
	Name string
	// Source is where the value is read: "" (the environment that owns the declaration),
	// "local" (the host) or "remote" (the environment the server runs in).
	Source string
}

// OAuth is a server's optional OAuth client settings.
type OAuth struct {
	// ClientID is a pre-registered client id; empty means dynamic client registration.
	ClientID string
	// CallbackPort is the loopback port for the redirect listener; 0 picks a free port.
	CallbackPort int
	// Scopes requested at login; empty means the server's advertised default.
	Scopes []string
	// Resource is Codex's `oauth_resource`. It is read for compatibility but not sent: a
	// login sends the resource its protected resource metadata names (the go-sdk's flow
	// offers no override; docs/RATIONALE.md).
	Resource string
}

// Position is where a declaration (or an error) sits in its source file.
type Position struct {
	// File is the path of the file the declaration was read from.
	File string
	// Line is 1-based; 0 when unknown (JSON sources do not report lines per key).
	Line int
}

// String renders "file:line", or just "file" when the line is unknown.
func (p Position) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return p.File
}

// ServerDecl is one MCP server declaration: a `[mcp_servers.NAME]` table of config.toml or an
// `mcpServers.NAME` entry of a plugin's .mcp.json. It holds credential *references* (variable
// names), never credential values.
type ServerDecl struct {
	// Name is the server's name (the table key).
	Name string
	// Origin is where the declaration came from.
	Origin Origin
	// Pos is where the declaration starts in its source file.
	Pos Position

	// Command, Args, Env, EnvVars and Cwd describe a stdio server.
	Command string
	Args    []string
	Env     map[string]string // literal values
	EnvVars []EnvVar          // passed through by name from the owning environment
	Cwd     string

	// URL, BearerTokenEnvVar, HTTPHeaders and EnvHTTPHeaders describe a streamable HTTP server.
	URL               string
	BearerTokenEnvVar string
	HTTPHeaders       map[string]string // literal header values
	EnvHTTPHeaders    map[string]string // header name -> variable name
	OAuth             *OAuth

	// EnvironmentID routes/runs the server in that environment; "" means the default
	// environment (environments.toml `default`, else local).
	EnvironmentID string
	// Enabled is false for a server that is listed but never started (it still masks
	// same-name plugin servers). Defaults to true.
	Enabled bool
	// Required makes thread startup fail when the server cannot start.
	Required bool
	// StartupTimeout and ToolTimeout are zero when unset (callers apply the defaults
	// DefaultStartupTimeout and DefaultToolTimeout).
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// EnabledTools is an allow list (nil: all tools); DisabledTools is applied after it.
	EnabledTools  []string
	DisabledTools []string
	// DefaultToolsApprovalMode is Codex's `default_tools_approval_mode`: the approval mode
	// of every tool of the server that ToolApprovalModes does not name; "" when unset.
	DefaultToolsApprovalMode ApprovalMode
	// ToolApprovalModes holds the `[mcp_servers.NAME.tools.TOOL] approval_mode` values, by
	// upstream tool name; nil when there are none. Use ApprovalMode to read the mode of a
	// tool.
	ToolApprovalModes map[string]ApprovalMode
}

// ApprovalMode says whether a tool call runs at once or asks the user first; the values
// and their meaning are Codex's. ApprovalAuto and ApprovalApprove run the tool (Codex
// distinguishes the two only for its own auto-approval heuristics, which warden does not
// have); ApprovalPrompt asks the front-door client's user, through elicitation, before the
// call runs. Policies still decide every call: a mode never lets through a call a policy
// denies.
type ApprovalMode string

// Approval modes.
const (
	ApprovalAuto    ApprovalMode = "auto"
	ApprovalPrompt  ApprovalMode = "prompt"
	ApprovalApprove ApprovalMode = "approve"
)

// Valid reports whether m is one of the approval modes.
func (m ApprovalMode) Valid() bool {
	switch m {
	case ApprovalAuto, ApprovalPrompt, ApprovalApprove:
		return true
	}
	return false
}

// approvalModesWant lists the approval modes for error messages.
const approvalModesWant = `"auto", "prompt" or "approve"`

// ApprovalMode returns the approval mode of the server's tool named tool (its upstream
// name): its `tools.TOOL.approval_mode`, else the server's `default_tools_approval_mode`,
// else ApprovalAuto.
func (d *ServerDecl) ApprovalMode(tool string) ApprovalMode {
	if m, ok := d.ToolApprovalModes[tool]; ok && m != "" {
		return m
	}
	if d.DefaultToolsApprovalMode != "" {
		return d.DefaultToolsApprovalMode
	}
	return ApprovalAuto
}

// Defaults applied when a declaration leaves a timeout unset (as Codex documents).
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// Transport reports the declaration's transport: stdio when Command is set, HTTP when URL is
// set. A valid declaration has exactly one of the two (see CheckServer).
func (d *ServerDecl) Transport() Transport {
	if d.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// Identity is the requirements.toml identity of a declaration: its URL for HTTP, its command
// for stdio.
func (d *ServerDecl) Identity() string {
	if d.URL != "" {
		return d.URL
	}
	return d.Command
}

// setStdioKeys and setHTTPKeys name the set keys that belong to one transport only; they are
// what CheckServer reports when a declaration mixes transports.
func (d *ServerDecl) setStdioKeys() []string {
	var keys []string
	if len(d.Args) > 0 {
		keys = append(keys, "args")
	}
	if len(d.Env) > 0 {
		keys = append(keys, "env")
	}
	if len(d.EnvVars) > 0 {
		keys = append(keys, "env_vars")
	}
	if d.Cwd != "" {
		keys = append(keys, "cwd")
	}
	return keys
}

func (d *ServerDecl) setHTTPKeys() []string {
	var keys []string
	if d.BearerTokenEnvVar != "" {
		keys = append(keys, "bearer_token_env_var")
	}
	if len(d.HTTPHeaders) > 0 {
		keys = append(keys, "http_headers")
	}
	if len(d.EnvHTTPHeaders) > 0 {
		keys = append(keys, "env_http_headers")
	}
	if d.OAuth != nil {
		keys = append(keys, "oauth")
	}
	return keys
}

// CheckServer applies the transport rules every declaration source shares (config.toml and
// .mcp.json alike) and returns one problem per broken rule, without file or line (the caller
// adds those): exactly one of command/url, no key of the other transport, an http(s) url,
// env_vars entries named with a known source, tool lists without empty names, known
// approval modes, non-negative timeouts.
func CheckServer(d *ServerDecl) []string {
	var problems []string
	for _, p := range checkServer(d) {
		problems = append(problems, p.msg)
	}
	return problems
}

// problem is one CheckServer finding, with the key it is about ("" for the whole server) and
// whether it is a transport-mismatch finding (a key of the other transport).
type problem struct {
	key      string
	msg      string
	mismatch bool
}

func checkServer(d *ServerDecl) []problem {
	var problems []problem
	add := func(key, format string, args ...any) {
		problems = append(problems, problem{key: key, msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case d.Command == "" && d.URL == "":
		add("", "neither `command` (stdio) nor `url` (streamable HTTP) is set")
	case d.Command != "" && d.URL != "":
		add("url", "both `command` and `url` are set; a server has exactly one transport")
	case d.URL != "":
		for _, k := range d.setStdioKeys() {
			problems = append(problems, problem{key: k, mismatch: true,
				msg: fmt.Sprintf("key `%s` is only valid for stdio servers, but this server has `url`", k)})
		}
		if p := urlProblem(d.URL); p != "" {
			add("url", "%s", p)
		}
	default:
		for _, k := range d.setHTTPKeys() {
			problems = append(problems, problem{key: k, mismatch: true,
				msg: fmt.Sprintf("key `%s` is only valid for streamable HTTP servers, but this server has `command`", k)})
		}
	}
	for i, v := range d.EnvVars {
		if v.Name == "" {
			add("env_vars", "env_vars[%d] has no name", i)
		}
		switch v.Source {
		case "", "local", "remote":
		default:
			add("env_vars", "env_vars[%d] (%s) has source %q; want \"local\" or \"remote\"", i, v.Name, v.Source)
		}
	}
	for _, list := range []struct {
		key   string
		names []string
	}{{"enabled_tools", d.EnabledTools}, {"disabled_tools", d.DisabledTools}} {
		for _, n := range list.names {
			if n == "" {
				add(list.key, "`%s` contains an empty tool name", list.key)
			}
		}
	}
	if m := d.DefaultToolsApprovalMode; m != "" && !m.Valid() {
		add("default_tools_approval_mode", "`default_tools_approval_mode` is %q; want %s", string(m), approvalModesWant)
	}
	for _, tool := range slices.Sorted(maps.Keys(d.ToolApprovalModes)) {
		switch m := d.ToolApprovalModes[tool]; {
		case tool == "":
			add("tools", "`tools` contains an empty tool name")
		case !m.Valid():
			add("tools", "`tools.%s.approval_mode` is %q; want %s", quoteKey(tool), string(m), approvalModesWant)
		}
	}
	if d.StartupTimeout < 0 {
		add("startup_timeout_sec", "`startup_timeout_sec` is negative")
	}
	if d.ToolTimeout < 0 {
		add("tool_timeout_sec", "`tool_timeout_sec` is negative")
	}
	return problems
}

// urlProblem checks a server URL: http or https, with a host.
func urlProblem(raw string) string {
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return fmt.Sprintf("`url` %q must start with http:// or https://", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Sprintf("`url` %q is not a valid URL: %v", raw, errors.Unwrap(err))
	}
	if u.Host == "" {
		return fmt.Sprintf("`url` %q has no host", raw)
	}
	return ""
}
