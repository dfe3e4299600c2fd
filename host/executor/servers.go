package executor

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-mcp/warden/host/config"
)

// RenderServers renders declarations (an executor's config.toml [mcp_servers]) as the
// mcpServers map of initialize: one .mcp.json entry per server, in Codex's snake_case keys
// as host/roots parses them. Credentials appear by variable name only
// (bearer_token_env_var, env_http_headers, env_vars); a declaration carries no credential
// value (the config loader refuses a literal bearer_token), so none can be rendered.
// environment_id is left out: every server of an executor runs in that executor.
func RenderServers(decls []config.ServerDecl) (map[string]json.RawMessage, error) {
	if len(decls) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(decls))
	for i := range decls {
		d := &decls[i]
		if _, dup := out[d.Name]; dup {
			return nil, fmt.Errorf("executor: server %q is declared twice", d.Name)
		}
		b, err := json.Marshal(renderServer(d))
		if err != nil {
			return nil, fmt.Errorf("executor: rendering server %q: %w", d.Name, err)
		}
		out[d.Name] = b
	}
	return out, nil
}

func renderServer(d *config.ServerDecl) map[string]any {
	e := map[string]any{}
	set := func(key string, v any, present bool) {
		if present {
			e[key] = v
		}
	}
	set("command", d.Command, d.Command != "")
	set("args", d.Args, len(d.Args) > 0)
	set("env", d.Env, len(d.Env) > 0)
	if len(d.EnvVars) > 0 {
		vars := make([]any, 0, len(d.EnvVars))
		for _, v := range d.EnvVars {
			if v.Source == "" {
				vars = append(vars, v.Name)
			} else {
				vars = append(vars, map[string]string{"name": v.Name, "source": v.Source})
			}
		}
		e["env_vars"] = vars
	}
	set("cwd", d.Cwd, d.Cwd != "")
	set("url", d.URL, d.URL != "")
	set("bearer_token_env_var", d.BearerTokenEnvVar, d.BearerTokenEnvVar != "")
	set("http_headers", d.HTTPHeaders, len(d.HTTPHeaders) > 0)
	set("env_http_headers", d.EnvHTTPHeaders, len(d.EnvHTTPHeaders) > 0)
	if o := d.OAuth; o != nil {
		oa := map[string]any{}
		if o.ClientID != "" {
			oa["client_id"] = o.ClientID
		}
		if o.CallbackPort != 0 {
			oa["callback_port"] = o.CallbackPort
		}
		if len(o.Scopes) > 0 {
			oa["scopes"] = o.Scopes
		}
		e["oauth"] = oa
	}
	set("enabled", false, !d.Enabled)
	set("required", true, d.Required)
	set("startup_timeout_sec", d.StartupTimeout.Seconds(), d.StartupTimeout > 0)
	set("tool_timeout_sec", d.ToolTimeout.Seconds(), d.ToolTimeout > 0)
	set("enabled_tools", d.EnabledTools, d.EnabledTools != nil)
	set("disabled_tools", d.DisabledTools, len(d.DisabledTools) > 0)
	// The approval modes travel too: a tool the executor's operator set to "prompt" must
	// not run unasked because it was declared there.
	set("default_tools_approval_mode", d.DefaultToolsApprovalMode, d.DefaultToolsApprovalMode != "")
	if len(d.ToolApprovalModes) > 0 {
		tools := map[string]any{}
		for tool, m := range d.ToolApprovalModes {
			tools[tool] = map[string]any{"approval_mode": m}
		}
		e["tools"] = tools
	}
	return e
}

// redactURL renders a URL for an error text: scheme, host and path, without userinfo,
// query or fragment (either may carry a credential).
func redactURL(raw string) string {
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		host, path, _ := strings.Cut(rest, "/")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		s = scheme + "://" + host
		if path != "" || strings.Contains(rest, "/") {
			s += "/" + path
		}
	} else if at := strings.LastIndex(s, "@"); at >= 0 {
		s = s[at+1:]
	}
	return s
}
