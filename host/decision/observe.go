package decision

import (
	"context"
	"time"

	"github.com/warden-mcp/warden/abi"
)

// Observation is one composed decision as Options.Observe receives it: what the status
// page lists as a recent denial and what the decision metrics count. It carries names,
// actions and reasons only — what the decision log carries, never an input's values.
type Observation struct {
	// Time is when the decision was composed (Options.Now).
	Time time.Time
	// Hook is the hook decided.
	Hook abi.Hook
	// Thread is the thread the decision was for.
	Thread string
	// Server is the server the decision is about.
	Server string
	// Item is what on Server was decided: the tool (tool_call, tool_result), the prompt
	// (prompt_get), the resource URI (resource_read) or the credential's variable name
	// (credentials); "" for the servers hook.
	Item string
	// Outcome is the composed action: expose, hide or disable (servers); local, executor or
	// deny (credentials); allow, ask or deny (tool_call, resource_read, prompt_get); pass,
	// rewrite or error (tool_result).
	Outcome string
	// Reason explains a refusal; "" when nothing refused.
	Reason string
	// DecidedBy names who set the outcome ("baseline", "operator:<id>", "plugin:<id>"),
	// "" when every answer was the default.
	DecidedBy string
}

// Denied reports whether the observation refused something: a server hidden or disabled, a
// credential denied, a call, read or get denied, a result replaced by an error.
func (o *Observation) Denied() bool {
	switch o.Outcome {
	case "hide", "disable", "deny", "error":
		return true
	}
	return false
}

// Servers decides every server of in.Servers. The verdicts are in input order.
func (e *Engine) Servers(ctx context.Context, in *abi.ServersInput) []ServerVerdict {
	vs := e.servers(ctx, in)
	if e.observe != nil {
		now := e.now()
		for i := range vs {
			v := &vs[i]
			e.observe(Observation{Time: now, Hook: abi.HookServers, Thread: in.Thread.ID, Server: v.Name,
				Outcome: v.Action.String(), Reason: v.Reason, DecidedBy: v.DecidedBy})
		}
	}
	return vs
}

// Credentials decides where each credential of in.Server resolves for in.Route. Verdicts are
// in credential order. A server whose credentials include a deny must not connect.
func (e *Engine) Credentials(ctx context.Context, in *abi.CredentialsInput) []CredentialVerdict {
	vs := e.credentials(ctx, in)
	if e.observe != nil {
		now := e.now()
		for i := range vs {
			v := &vs[i]
			item := ""
			if v.Index >= 0 && v.Index < len(in.Server.Credentials) {
				c := &in.Server.Credentials[v.Index]
				item = c.EnvVar
				if item == "" {
					item = c.Name // an OAuth login has no variable
				}
			}
			e.observe(Observation{Time: now, Hook: abi.HookCredentials, Thread: in.Thread.ID, Server: in.Server.Name,
				Item: item, Outcome: v.Action.String(), Reason: v.Reason, DecidedBy: v.DecidedBy})
		}
	}
	return vs
}

// ToolCall decides one tools/call: the server's tool lists first, then each operator policy,
// then the server's plugin policy. A rewrite by one policy is what the next one sees. The
// actions compose deny > ask > allow: a deny ends the decision, an ask (ABI version 2) does
// not, so a later policy may still deny; the verdict of an ask carries the first asking
// policy's reason, the text the front door shows the user.
func (e *Engine) ToolCall(ctx context.Context, in *abi.ToolCallInput, f ToolFilter) ToolCallVerdict {
	v := e.toolCall(ctx, in, f)
	if e.observe != nil {
		e.observe(Observation{Time: e.now(), Hook: abi.HookToolCall, Thread: in.Thread.ID, Server: in.Server,
			Item: in.Tool, Outcome: v.Action.String(), Reason: v.Reason, DecidedBy: v.DecidedBy})
	}
	return v
}

// ResourceRead decides one resources/read: the server's resource lists (f, from
// ResourceFilter) first, then each operator policy, then the server's plugin policy. The
// first refusal ends the decision. A policy without the resource_read hook (every ABI
// version 1 module) has no opinion.
func (e *Engine) ResourceRead(ctx context.Context, in *abi.ResourceReadInput, f ItemFilter) ItemVerdict {
	v := e.resourceRead(ctx, in, f)
	e.observeItem(abi.HookResourceRead, in.Thread.ID, in.Server, in.URI, &v)
	return v
}

// PromptGet decides one prompts/get: the server's prompt lists (f, from PromptFilter) first,
// then each operator policy, then the server's plugin policy. A rewrite of the arguments by
// one policy is what the next one sees; the first refusal ends the decision. A policy
// without the prompt_get hook (every ABI version 1 module) has no opinion.
func (e *Engine) PromptGet(ctx context.Context, in *abi.PromptGetInput, f ItemFilter) ItemVerdict {
	v := e.promptGet(ctx, in, f)
	e.observeItem(abi.HookPromptGet, in.Thread.ID, in.Server, in.Name, &v)
	return v
}

func (e *Engine) observeItem(hook abi.Hook, thread, server, item string, v *ItemVerdict) {
	if e.observe == nil {
		return
	}
	outcome := "allow"
	if !v.Allowed {
		outcome = "deny"
	}
	e.observe(Observation{Time: e.now(), Hook: hook, Thread: thread, Server: server, Item: item,
		Outcome: outcome, Reason: v.Reason, DecidedBy: v.DecidedBy})
}

// ToolResult decides what the client sees of one tool call's result: each operator policy,
// then the server's plugin policy, each seeing the previous one's rewrite. An error answer
// ends the decision. A policy that fails (trap, timeout, malformed output, a guest error)
// fails closed: the client gets a tool error naming the plugin and the hook, never the
// upstream result, which may hold what a redacting policy would have removed. With no
// policy implementing the hook (every ABI version 1 module), nothing is encoded or logged.
func (e *Engine) ToolResult(ctx context.Context, in *abi.ToolResultInput) ToolResultVerdict {
	v := e.toolResult(ctx, in)
	// Observed only when some policy decided: without one, every result passes untouched
	// and nothing was decided (nor logged).
	if e.observe != nil && e.set.Load().anyHook(in.PluginID, abi.HookToolResult) {
		reason := ""
		if v.Action == abi.ToolResultError {
			reason = v.Reason
		}
		e.observe(Observation{Time: e.now(), Hook: abi.HookToolResult, Thread: in.Thread.ID, Server: in.Server,
			Item: in.Tool, Outcome: v.Action.String(), Reason: reason, DecidedBy: v.DecidedBy})
	}
	return v
}
