package decision

import (
	"fmt"
	"strings"

	"github.com/warden-mcp/warden/abi"
)

// The baseline is DESIGN.md §5 as code: the rules that hold with no policy loaded and that
// no policy can undo (composition only ever tightens). Rules 3 (reconnect) and 9 (stdio
// environment) are enforced by the transport with the verdicts computed here; rule 4 (OAuth
// stores keyed by owner) by the credential store.

// Reason texts of the baseline. Tests and clients match on them, so they are part of the
// contract; the legacy-executor text is Codex's.
const (
	ReasonExecutorStdio      = "executor-config stdio servers are not offered to threads"
	ReasonReviewerExecutor   = "reviewer threads do not discover executor-config servers"
	ReasonPluginNotSelected  = "its plugin is not selected by this thread"
	ReasonDisabledInConfig   = "disabled in config"
	ReasonBlockedByReqs      = "blocked by requirements"
	ReasonNeedsExecutorCreds = "requires executor-side environment credential resolution"
)

// BaselineID names the baseline in verdicts and the decision log.
const BaselineID = "baseline"

// origin splits an abi origin string into its kind and argument.
func origin(s string) (kind, arg string) {
	kind, arg, _ = strings.Cut(s, ":")
	return kind, arg
}

const (
	originHost     = "host-config"
	originExecutor = "executor-config"
	originPlugin   = "plugin"
	envLocal       = "local"
)

// baselineServer decides one candidate server under §5 rules 2, 5, 6, 7 and 8 (plus the
// declaration's own `enabled = false`). The most restrictive rule wins; among equals the
// first listed here gives the reason.
func baselineServer(in *abi.ServersInput, s *abi.Server) (abi.ServerAction, string) {
	kind, _ := origin(s.Origin)
	// Rule 7: an executor's own stdio servers run executor-local tools; they are not offered.
	if kind == originExecutor && s.Transport == "stdio" {
		return abi.ServerHide, ReasonExecutorStdio
	}
	// Rule 5.
	if kind == originExecutor && in.Thread.Kind == "reviewer" {
		return abi.ServerHide, ReasonReviewerExecutor
	}
	// Rule 6: the candidate builder only adds selected plugins' servers; this is the
	// backstop that makes the rule hold whatever the caller passed.
	if kind == originPlugin && !selected(&in.Thread, s.PluginID) {
		return abi.ServerHide, fmt.Sprintf("plugin %q: %s", s.PluginID, ReasonPluginNotSelected)
	}
	if !s.Enabled {
		return abi.ServerDisable, ReasonDisabledInConfig
	}
	// Rule 8.
	if in.HasRequirements {
		if ok, why := meetsRequirements(in.Requirements, s); !ok {
			return abi.ServerDisable, ReasonBlockedByReqs + ": " + why
		}
	}
	// Rule 2: a credential that must resolve inside an executor that cannot resolve it
	// leaves the server listed without tools — never resolved on the host instead.
	env := findEnvironment(in.Environments, s.Environment)
	for i := range s.Credentials {
		if a, why := baselineCredential(s, &s.Credentials[i], s.Environment, env); a == abi.CredentialDeny {
			if kind == originExecutor {
				// An executor's own server that the executor cannot serve now (it
				// announces no executor-side resolution) is not offered at all, as
				// Codex does: a thread never sees it, and a call to it is "not
				// available".
				return abi.ServerHide, why
			}
			return abi.ServerDisable, why
		}
	}
	if s.Transport == "stdio" && s.Environment != "" && s.Environment != envLocal && env != nil && !env.Processes {
		return abi.ServerDisable, fmt.Sprintf("MCP server %q is a stdio server but executor %q cannot run processes", s.Name, s.Environment)
	}
	return abi.ServerExpose, ""
}

func selected(t *abi.Thread, pluginID string) bool {
	for i := range t.Roots {
		if t.Roots[i].ID == pluginID {
			return true
		}
	}
	return false
}

func meetsRequirements(reqs []abi.Requirement, s *abi.Server) (bool, string) {
	for i := range reqs {
		r := &reqs[i]
		if r.Name != s.Name {
			continue
		}
		switch {
		case r.URL != "" && s.Transport == "http" && r.URL == s.URL:
			return true, ""
		case r.Command != "" && s.Transport == "stdio" && r.Command == s.Command:
			return true, ""
		}
		return false, fmt.Sprintf("identity of %q does not match the allow list", s.Name)
	}
	return false, fmt.Sprintf("%q is not on the allow list", s.Name)
}

func findEnvironment(envs []abi.Environment, id string) *abi.Environment {
	if id == "" {
		id = envLocal
	}
	for i := range envs {
		if envs[i].ID == id {
			return &envs[i]
		}
	}
	return nil
}

// baselineCredential is §5 rule 1 (provenance) and rule 2 (legacy executor) for one
// credential reference of s, resolved for a server connecting via route. env is the
// route's environment (nil when unknown, which counts as having no capabilities).
func baselineCredential(s *abi.Server, c *abi.Credential, route string, env *abi.Environment) (abi.CredentialAction, string) {
	if route == "" {
		route = envLocal
	}
	owner := c.Owner
	if owner == "" {
		owner = envLocal
	}
	kind, _ := origin(s.Origin)
	if owner == envLocal {
		switch {
		case route == envLocal:
			return abi.CredentialLocal, "owned by the host; the server runs on the host"
		case kind == originHost:
			// The operator routed a host-config server to an executor: the host resolves the
			// value and sends it across, because the operator asked for exactly that.
			return abi.CredentialLocal, fmt.Sprintf("host-config server routed to %q by the operator", route)
		default:
			return abi.CredentialDeny, fmt.Sprintf("credential %s of MCP server %q is owned by the host and may not cross to executor %q", credName(c), s.Name, route)
		}
	}
	if owner != route {
		return abi.CredentialDeny, fmt.Sprintf("credential %s of MCP server %q is owned by %q and cannot resolve in %q", credName(c), s.Name, owner, route)
	}
	switch c.Kind {
	case "bearer_env", "header_env":
		if env == nil || !env.HTTPHeaderEnvVars {
			return abi.CredentialDeny, fmt.Sprintf("MCP server %q %s, which executor %q does not announce", s.Name, ReasonNeedsExecutorCreds, route)
		}
	case "env_var":
		if env == nil || !env.Processes {
			return abi.CredentialDeny, fmt.Sprintf("MCP server %q needs executor %q to pass %s to a process, which it does not announce", s.Name, route, credName(c))
		}
	}
	return abi.CredentialExecutor, fmt.Sprintf("owned by executor %q; resolved there by name", route)
}

func credName(c *abi.Credential) string {
	switch {
	case c.EnvVar != "" && c.Name != "" && c.Name != c.EnvVar:
		return fmt.Sprintf("%s (%s from $%s)", c.Kind, c.Name, c.EnvVar)
	case c.EnvVar != "":
		return fmt.Sprintf("%s ($%s)", c.Kind, c.EnvVar)
	case c.Name != "":
		return fmt.Sprintf("%s (%s)", c.Kind, c.Name)
	}
	return c.Kind
}

// toolAllowed applies a server's tool lists: an allow list (nil: every tool), then a deny
// list. It reports why a tool is refused.
func toolAllowed(f ToolFilter, tool string) (bool, string) {
	if !f.AllowListed(tool) {
		return false, fmt.Sprintf("tool %q is not in the server's allowed tools", tool)
	}
	if f.DenyListed(tool) {
		return false, fmt.Sprintf("tool %q is disabled on this server", tool)
	}
	return true, ""
}
