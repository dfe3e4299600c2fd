package roots

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

// serverCtx is what parsing a server entry needs to know about its root.
type serverCtx struct {
	dir      string // the root's resolved directory
	pluginID string
	env      string // Origin.Environment
	// remote: dir is in another environment (an executor), so paths are checked lexically
	// only; the executor confines what it reads and runs to the root itself.
	remote bool
}

// inside is insideRoot for the root's environment.
func (sc serverCtx) inside(p, what string) (string, error) {
	if !sc.remote {
		abs, _, err := insideRoot(sc.dir, p, what)
		return abs, err
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(sc.dir, abs)
	}
	abs = filepath.Clean(abs)
	if !within(sc.dir, abs) {
		return "", fmt.Errorf("%s %q %w", what, p, ErrEscapesRoot)
	}
	return abs, nil
}

// parseMCPJSON parses a .mcp.json-format file (read from file) for a root. It accepts
// {"mcpServers": {NAME: {...}}} and the bare map {NAME: {...}}; the bare shape is assumed
// when the top-level object has no "mcpServers" key. In the wrapped shape other top-level
// keys (e.g. "$schema") are ignored. A file that cannot be used at all is returned as err;
// one bad server is a per-server error and never hides its siblings.
func parseMCPJSON(data []byte, file string, sc serverCtx) (servers []config.ServerDecl, serverErrs []error, err error) {
	rel := relTo(sc.dir, file)
	top, line, col, err := decodeObject(data)
	if err != nil {
		return nil, nil, &Error{PluginID: sc.pluginID, Dir: sc.dir, File: rel, Line: line, Column: col, Err: err}
	}
	raw, wrapped := top["mcpServers"]
	if !wrapped {
		servers, serverErrs = parseServerMap(top, keyLines(data), file, sc)
		return servers, serverErrs, nil
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(raw, &inner); err != nil || inner == nil {
		return nil, nil, &Error{PluginID: sc.pluginID, Dir: sc.dir, File: rel, Line: keyLines(data)["mcpServers"],
			Err: errors.New("`mcpServers` must be an object of servers")}
	}
	servers, serverErrs = parseServerMap(inner, keyLines(data, "mcpServers"), file, sc)
	return servers, serverErrs, nil
}

// parseServerMap parses every server of a NAME -> entry map; lines gives each name's line.
// Servers come back sorted by name.
func parseServerMap(entries map[string]json.RawMessage, lines map[string]int, file string, sc serverCtx) ([]config.ServerDecl, []error) {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var servers []config.ServerDecl
	var errs []error
	for _, name := range names {
		d, problems := parseServer(name, entries[name], file, sc)
		if len(problems) == 0 {
			d.Pos.Line = lines[name]
			servers = append(servers, d)
			continue
		}
		for _, p := range problems {
			errs = append(errs, &Error{PluginID: sc.pluginID, Dir: sc.dir, File: relTo(sc.dir, file),
				Line: lines[name], Server: name, Err: p})
		}
	}
	return servers, errs
}

// rootVars are the placeholders that expand to the root's directory. No other ${VAR} is
// expanded: a declaration is data the plugin author controls, and expanding arbitrary
// variables would copy host secrets (tokens in the host's environment) into argv, env, cwd
// or a URL chosen by the plugin. Credentials are passed by name instead (env_vars,
// bearer_token_env_var, env_http_headers) and resolve in the owning environment.
const (
	rootVar       = "${PLUGIN_ROOT}"
	claudeRootVar = "${CLAUDE_PLUGIN_ROOT}"
)

// expandRoot replaces the root placeholders in s with dir and leaves all other text
// (including other ${VAR} references) as is.
func expandRoot(s, dir string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, rootVar, dir), claudeRootVar, dir)
}

// parseServer parses one server entry. Keys are the Codex snake_case set shared with
// config.toml plus Claude Code's spellings (type, headers, oauth.clientId,
// oauth.callbackPort). A JSON null counts as an absent key. Any problem rejects the server;
// all problems are reported.
func parseServer(name string, raw json.RawMessage, file string, sc serverCtx) (config.ServerDecl, []error) {
	d := config.ServerDecl{
		Name:    name,
		Origin:  config.Origin{Kind: config.OriginPlugin, Environment: sc.env, PluginID: sc.pluginID},
		Pos:     config.Position{File: file},
		Enabled: true,
	}
	var problems []error
	bad := func(err error) { problems = append(problems, err) }
	if err := checkServerName(name); err != nil {
		bad(err)
		if name == "" {
			// Nothing else could say which server it is about.
			return d, problems
		}
	}
	var entry map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entry); err != nil || entry == nil {
		bad(errors.New("a server entry must be a JSON object"))
		return d, problems
	}
	keys := make([]string, 0, len(entry))
	for k := range entry {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var typ string
	var sawHeaders, sawHTTPHeaders bool
	for _, key := range keys {
		v := entry[key]
		if key == "bearer_token" {
			bad(ErrLiteralBearerToken)
			continue
		}
		if !isKnownServerKey(key) {
			bad(fmt.Errorf("%w `%s`", ErrUnknownKey, key))
			continue
		}
		if isNull(v) {
			continue
		}
		var err error
		switch key {
		case "command":
			err = decodeAs(v, &d.Command, key, "a string")
		case "args":
			err = decodeAs(v, &d.Args, key, "an array of strings")
		case "env":
			err = decodeAs(v, &d.Env, key, "an object of string values")
		case "env_vars":
			d.EnvVars, err = decodeEnvVars(v)
		case "cwd":
			err = decodeAs(v, &d.Cwd, key, "a string")
		case "url":
			err = decodeAs(v, &d.URL, key, "a string")
		case "bearer_token_env_var":
			err = decodeAs(v, &d.BearerTokenEnvVar, key, "a string")
		case "http_headers":
			sawHTTPHeaders = true
			err = decodeAs(v, &d.HTTPHeaders, key, "an object of string values")
		case "headers":
			// Claude Code's spelling of http_headers (keys are visited in sorted order, so
			// "headers" comes first and a later "http_headers" is reported below).
			sawHeaders = true
			err = decodeAs(v, &d.HTTPHeaders, key, "an object of string values")
		case "env_http_headers":
			err = decodeAs(v, &d.EnvHTTPHeaders, key, "an object of string values")
		case "oauth":
			d.OAuth, err = decodeOAuth(v)
		case "environment_id":
			err = decodeAs(v, &d.EnvironmentID, key, "a string")
		case "enabled":
			err = decodeAs(v, &d.Enabled, key, "true or false")
		case "required":
			err = decodeAs(v, &d.Required, key, "true or false")
		case "startup_timeout_sec":
			d.StartupTimeout, err = decodeSeconds(v, key)
		case "tool_timeout_sec":
			d.ToolTimeout, err = decodeSeconds(v, key)
		case "enabled_tools":
			err = decodeAs(v, &d.EnabledTools, key, "an array of strings")
		case "disabled_tools":
			err = decodeAs(v, &d.DisabledTools, key, "an array of strings")
		case "type":
			err = decodeAs(v, &typ, key, "a string")
		case "default_tools_approval_mode":
			err = decodeAs(v, &d.DefaultToolsApprovalMode, key, `"auto", "prompt" or "approve"`)
		case "tools":
			err = decodeToolModes(v, &d)
		}
		if err != nil {
			bad(err)
		}
	}
	for _, k := range sortedKeys(d.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad(fmt.Errorf("`env` has an invalid variable name %q", k))
		}
	}
	if sawHeaders && sawHTTPHeaders {
		bad(errors.New("both `headers` and `http_headers` are set; use one"))
	}
	switch typ {
	case "":
	case "stdio":
		if d.URL != "" {
			bad(errors.New("`type` is \"stdio\" but `url` is set"))
		}
	case "http", "streamable-http":
		if d.Command != "" {
			bad(fmt.Errorf("`type` is %q but `command` is set", typ))
		}
	case "sse":
		bad(ErrLegacySSE)
	default:
		bad(fmt.Errorf("`type` %q is not supported; want \"stdio\", \"http\" or \"streamable-http\"", typ))
	}

	// ${PLUGIN_ROOT} expansion, then path safety.
	rawCommand := d.Command
	d.Command = expandRoot(d.Command, sc.dir)
	for i := range d.Args {
		d.Args[i] = expandRoot(d.Args[i], sc.dir)
	}
	for k, v := range d.Env {
		d.Env[k] = expandRoot(v, sc.dir)
	}
	d.URL = expandRoot(d.URL, sc.dir)
	if d.Cwd != "" {
		// A relative cwd resolves under the root. An absolute one must also be inside the
		// root: a plugin does not get to pick an arbitrary working directory on the host.
		if abs, err := sc.inside(expandRoot(d.Cwd, sc.dir), "cwd"); err != nil {
			bad(err)
		} else {
			d.Cwd = abs
		}
	}
	if refersToRoot(rawCommand, d.Command) {
		// "./bin/demo" or "${PLUGIN_ROOT}/bin/demo" names a file of the plugin and must stay
		// inside it. A bare name ("npx") is looked up on PATH and an absolute path
		// ("/usr/bin/node") names a program of the environment; both are fine.
		if abs, err := sc.inside(d.Command, "command"); err != nil {
			bad(err)
		} else {
			d.Command = abs
		}
	}
	for _, p := range config.CheckServer(&d) {
		bad(errors.New(p))
	}
	return d, problems
}

// refersToRoot reports whether a command names a file of the plugin: a relative path with a
// separator, or anything written with a root placeholder.
func refersToRoot(raw, expanded string) bool {
	if expanded == "" {
		return false
	}
	if raw != expanded {
		return true
	}
	return !filepath.IsAbs(expanded) && strings.ContainsAny(expanded, "/"+string(os.PathSeparator))
}

// isKnownServerKey reports whether key may appear in a server entry (bearer_token is
// handled apart, with its own error).
// decodeToolModes reads Codex's per-tool table, {"TOOL": {"approval_mode": "prompt"}}: the
// approval modes, which config.CheckServer validates; other per-tool keys are Codex's and
// ignored, as config.toml's are.
func decodeToolModes(v json.RawMessage, d *config.ServerDecl) error {
	var tools map[string]map[string]json.RawMessage
	if err := json.Unmarshal(v, &tools); err != nil {
		return errors.New("`tools` must be an object of per-tool objects")
	}
	for tool, keys := range tools {
		raw, ok := keys["approval_mode"]
		if !ok || isNull(raw) {
			continue
		}
		var m config.ApprovalMode
		if err := decodeAs(raw, &m, "tools."+tool+".approval_mode", `"auto", "prompt" or "approve"`); err != nil {
			return err
		}
		if d.ToolApprovalModes == nil {
			d.ToolApprovalModes = map[string]config.ApprovalMode{}
		}
		d.ToolApprovalModes[tool] = m
	}
	return nil
}

func isKnownServerKey(key string) bool {
	switch key {
	case "command", "args", "env", "env_vars", "cwd",
		"url", "bearer_token_env_var", "http_headers", "headers", "env_http_headers", "oauth",
		"environment_id", "enabled", "required", "startup_timeout_sec", "tool_timeout_sec",
		"enabled_tools", "disabled_tools", "type", "default_tools_approval_mode", "tools":
		return true
	}
	return false
}

// checkServerName applies Codex's rule for server names: non-empty ASCII letters, digits,
// '_' and '-' (names become tool-name prefixes, "server__tool").
func checkServerName(name string) error {
	if name == "" {
		return errors.New("server name is empty")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return errors.New("server name may contain only ASCII letters, digits, '_' and '-'")
		}
	}
	return nil
}

// decodeAs unmarshals v into dst, reporting a type mismatch as "`key` must be WANT".
func decodeAs(v json.RawMessage, dst any, key, want string) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("`%s` must be %s", key, want)
	}
	return nil
}

// decodeEnvVars decodes env_vars: an array of names or {name, source} objects.
func decodeEnvVars(v json.RawMessage) ([]config.EnvVar, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, errors.New("`env_vars` must be an array of names or {name, source} objects")
	}
	out := make([]config.EnvVar, 0, len(items))
	for i, item := range items {
		var name string
		if err := json.Unmarshal(item, &name); err == nil && !isNull(item) {
			out = append(out, config.EnvVar{Name: name})
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("`env_vars[%d]` must be a name or a {name, source} object", i)
		}
		var ev config.EnvVar
		for _, k := range sortedKeys(obj) {
			var err error
			switch k {
			case "name":
				err = decodeAs(obj[k], &ev.Name, fmt.Sprintf("env_vars[%d].name", i), "a string")
			case "source":
				err = decodeAs(obj[k], &ev.Source, fmt.Sprintf("env_vars[%d].source", i), "a string")
			default:
				err = fmt.Errorf("%w `env_vars[%d].%s`", ErrUnknownKey, i, k)
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, ev)
	}
	return out, nil
}

// decodeOAuth decodes oauth in either spelling (client_id/clientId,
// callback_port/callbackPort).
func decodeOAuth(v json.RawMessage) (*config.OAuth, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil || obj == nil {
		return nil, errors.New("`oauth` must be an object")
	}
	o := &config.OAuth{}
	seen := map[string]string{}
	for _, k := range sortedKeys(obj) {
		val := obj[k]
		canon := k
		switch k {
		case "clientId":
			canon = "client_id"
		case "callbackPort":
			canon = "callback_port"
		}
		if prev, dup := seen[canon]; dup {
			return nil, fmt.Errorf("both `oauth.%s` and `oauth.%s` are set; use one", prev, k)
		}
		seen[canon] = k
		if isNull(val) {
			continue
		}
		var err error
		switch canon {
		case "client_id":
			err = decodeAs(val, &o.ClientID, "oauth."+k, "a string")
		case "callback_port":
			var port float64
			if err = decodeAs(val, &port, "oauth."+k, "a port number"); err == nil {
				if port != math.Trunc(port) || port < 0 || port > 65535 {
					err = fmt.Errorf("`oauth.%s` must be a port number (0-65535)", k)
				} else {
					o.CallbackPort = int(port)
				}
			}
		case "scopes":
			err = decodeAs(val, &o.Scopes, "oauth.scopes", "an array of strings")
		default:
			err = fmt.Errorf("%w `oauth.%s`", ErrUnknownKey, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// maxSeconds keeps a timeout representable as a time.Duration.
const maxSeconds = float64(math.MaxInt64/int64(time.Second)) - 1

// decodeSeconds decodes a non-negative number of seconds (fractions allowed).
func decodeSeconds(v json.RawMessage, key string) (time.Duration, error) {
	var f float64
	if err := decodeAs(v, &f, key, "a number of seconds"); err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, fmt.Errorf("`%s` is negative", key)
	}
	if f > maxSeconds {
		return 0, fmt.Errorf("`%s` is too large", key)
	}
	return time.Duration(f * float64(time.Second)), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ParseExecutorServers parses the mcpServers an executor announced at initialize (a
// .mcp.json mcpServers map, one raw entry per name) into declarations of origin
// executor-config:env, sorted by name. name says where the map came from in errors (e.g.
// "executor exec-1"). One bad entry is an error of its own and never hides the others.
func ParseExecutorServers(entries map[string]json.RawMessage, name, env string) ([]config.ServerDecl, []error) {
	servers, errs := parseServerMap(entries, map[string]int{}, name, serverCtx{env: env})
	for i := range servers {
		servers[i].Origin = config.Origin{Kind: config.OriginExecutorConfig, Environment: env}
		servers[i].Pos = config.Position{File: name}
	}
	return servers, errs
}
