package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/warden-mcp/warden/abi"
)

// versioned is implemented by a policy that knows the ABI version its guest declared
// (*policy.Module). A policy that does not is held to abi.MinVersion: an answer only a newer
// version defines (a tool_call ask) then fails closed instead of being trusted.
type versioned interface {
	ABIVersion() int
}

func policyVersion(p Policy) int {
	if v, ok := p.(versioned); ok {
		return v.ABIVersion()
	}
	return abi.MinVersion
}

// scoped is a policy with the name verdicts and the log give it.
type scoped struct {
	p  Policy
	by string
}

// anyHook reports whether an operator policy or the plugin's own policy implements hook,
// without allocating: the per-result hooks must cost nothing when nobody implements them.
func (set *policySet) anyHook(pluginID string, hook abi.Hook) bool {
	for _, p := range set.operator {
		if p.Hooks().Has(hook) {
			return true
		}
	}
	p := set.plugins[pluginID]
	return pluginID != "" && p != nil && p.Hooks().Has(hook)
}

// withHook returns the operator policies, then the plugin's own, that implement hook.
func (set *policySet) withHook(pluginID string, hook abi.Hook) []scoped {
	var out []scoped
	for _, p := range set.operator {
		if p.Hooks().Has(hook) {
			out = append(out, scoped{p, "operator:" + p.ID()})
		}
	}
	if p := set.plugins[pluginID]; pluginID != "" && p != nil && p.Hooks().Has(hook) {
		out = append(out, scoped{p, "plugin:" + p.ID()})
	}
	return out
}

// ItemVerdict is the composed decision for one resources/read or prompts/get.
type ItemVerdict struct {
	Allowed bool
	// Reason says why the item is refused; it is what the client sees.
	Reason string
	// DecidedBy names who refused ("baseline", "operator:<id>", "plugin:<id>"), or who
	// rewrote the prompt arguments; "" when every answer was allow.
	DecidedBy string
	// Arguments are, for prompts/get, the arguments to send: the caller's or a policy's
	// rewrite. nil for resources/read.
	Arguments json.RawMessage
}

// resourceRead is ResourceRead without the observation (Options.Observe).
func (e *Engine) resourceRead(ctx context.Context, in *abi.ResourceReadInput, f ItemFilter) ItemVerdict {
	set := e.set.Load()
	start := e.now()
	var buf []byte
	if e.log != nil || set.anyHook(in.PluginID, abi.HookResourceRead) {
		buf = in.AppendTo(nil)
	}
	inputDigest := e.digest(buf)
	v := ItemVerdict{Allowed: true}
	if ok, why := f.Allowed(in.URI); !ok {
		v = ItemVerdict{Reason: why, DecidedBy: BaselineID}
	}
	if e.log != nil {
		e.logDecision(abi.HookResourceRead, in.Thread.ID, BaselineID, "builtin", inputDigest, start, itemEntries("read", &v), nil, nil)
	}
	if !v.Allowed {
		return v
	}
	for _, s := range set.withHook(in.PluginID, abi.HookResourceRead) {
		start := e.now()
		raw, err := s.p.Call(ctx, abi.HookResourceRead, buf)
		var out abi.ResourceReadOutput
		if err == nil {
			if err = out.Unmarshal(raw); err != nil {
				err = fmt.Errorf("policy plugin %q hook resource_read: malformed output: %w", s.p.ID(), err)
			}
		}
		if err == nil && out.Error != "" {
			err = fmt.Errorf("policy plugin %q hook resource_read: guest reported error: %s", s.p.ID(), out.Error)
		}
		if err == nil && out.Action != abi.ToolCallAllow && out.Action != abi.ToolCallDeny {
			err = fmt.Errorf("policy plugin %q hook resource_read: malformed output: action %s is undefined for resource_read", s.p.ID(), out.Action)
		}
		if done := e.foldItem(abi.HookResourceRead, in.Thread.ID, s, inputDigest, start, &v, out.Action, out.Reason, err); done {
			return v
		}
	}
	return v
}

// promptGet is PromptGet without the observation (Options.Observe).
func (e *Engine) promptGet(ctx context.Context, in *abi.PromptGetInput, f ItemFilter) ItemVerdict {
	set := e.set.Load()
	start := e.now()
	cur := *in
	var buf []byte
	if e.log != nil || set.anyHook(in.PluginID, abi.HookPromptGet) {
		buf = cur.AppendTo(nil)
	}
	inputDigest := e.digest(buf)
	v := ItemVerdict{Allowed: true, Arguments: json.RawMessage(in.Arguments)}
	if ok, why := f.Allowed(in.Name); !ok {
		v = ItemVerdict{Reason: why, DecidedBy: BaselineID, Arguments: v.Arguments}
	}
	if e.log != nil {
		e.logDecision(abi.HookPromptGet, in.Thread.ID, BaselineID, "builtin", inputDigest, start, itemEntries("get", &v), nil, nil)
	}
	if !v.Allowed {
		return v
	}
	for _, s := range set.withHook(in.PluginID, abi.HookPromptGet) {
		start := e.now()
		raw, err := s.p.Call(ctx, abi.HookPromptGet, buf)
		var out abi.PromptGetOutput
		if err == nil {
			if err = out.Unmarshal(raw); err != nil {
				err = fmt.Errorf("policy plugin %q hook prompt_get: malformed output: %w", s.p.ID(), err)
			}
		}
		if err == nil && out.Error != "" {
			err = fmt.Errorf("policy plugin %q hook prompt_get: guest reported error: %s", s.p.ID(), out.Error)
		}
		if err == nil && out.Action != abi.ToolCallAllow && out.Action != abi.ToolCallDeny {
			err = fmt.Errorf("policy plugin %q hook prompt_get: malformed output: action %s is undefined for prompt_get", s.p.ID(), out.Action)
		}
		if err == nil && out.Action == abi.ToolCallAllow && out.Rewrite && !isStringObject(out.Arguments) {
			err = fmt.Errorf("policy plugin %q hook prompt_get: malformed output: rewritten arguments are not a JSON object of strings", s.p.ID())
		}
		if err == nil && out.Action == abi.ToolCallAllow && out.Rewrite {
			// out's bytes are views into raw; the verdict keeps its own copy.
			v.Arguments = append(json.RawMessage(nil), out.Arguments...)
			v.DecidedBy = s.by
			cur.Arguments = abi.RawJSON(v.Arguments)
		}
		if done := e.foldItem(abi.HookPromptGet, in.Thread.ID, s, inputDigest, start, &v, out.Action, out.Reason, err); done {
			return v
		}
		if out.Rewrite {
			buf = cur.AppendTo(nil)
			inputDigest = e.digest(buf)
		}
	}
	return v
}

// foldItem folds one policy's resource_read or prompt_get answer (or its failure) into v
// and logs it. It reports whether the decision is over (a refusal).
func (e *Engine) foldItem(hook abi.Hook, thread string, s scoped, inputDigest string, start time.Time, v *ItemVerdict, action abi.ToolCallAction, reason string, err error) bool {
	name := "read"
	if hook == abi.HookPromptGet {
		name = "get"
	}
	switch {
	case err != nil:
		// Fail closed: the item is refused, naming the plugin, the hook and the cause.
		v.Allowed, v.Reason, v.DecidedBy = false, err.Error(), s.by
	case action == abi.ToolCallDeny:
		v.Allowed, v.Reason, v.DecidedBy = false, reason, s.by
		if v.Reason == "" {
			v.Reason = "denied by " + s.by
		}
	}
	if e.log != nil {
		e.logDecision(hook, thread, s.p.ID(), hexDigest(s.p), inputDigest, start, itemEntries(name, v), err, nil)
	}
	return !v.Allowed
}

// isStringObject reports whether b is a JSON object whose values are all strings: what
// prompts/get takes as arguments.
func isStringObject(b []byte) bool {
	if !isJSONObject(b) {
		return false
	}
	var m map[string]string
	return json.Unmarshal(b, &m) == nil
}

// ToolResultVerdict is the composed decision on one tool's result.
type ToolResultVerdict struct {
	// Action is pass (Result is upstream's), rewrite (Result is a policy's replacement) or
	// error (the client gets a tool error whose text is Reason; Result is nil).
	Action abi.ToolResultAction
	// Result is the CallToolResult JSON to return: upstream's or the last rewrite.
	Result json.RawMessage
	// Reason is the error text for error, the rewriting policy's reason for rewrite.
	Reason string
	// DecidedBy names the policy that rewrote or refused the result; "" for pass.
	DecidedBy string
}

// toolResult is ToolResult without the observation (Options.Observe).
func (e *Engine) toolResult(ctx context.Context, in *abi.ToolResultInput) ToolResultVerdict {
	v := ToolResultVerdict{Action: abi.ToolResultPass, Result: json.RawMessage(in.Result)}
	set := e.set.Load()
	if !set.anyHook(in.PluginID, abi.HookToolResult) {
		return v
	}
	cur := *in
	var buf []byte
	var inputDigest string
	for _, s := range set.withHook(in.PluginID, abi.HookToolResult) {
		if buf == nil {
			buf = cur.AppendTo(nil)
			inputDigest = e.digest(buf)
		}
		start := e.now()
		raw, err := s.p.Call(ctx, abi.HookToolResult, buf)
		var out abi.ToolResultOutput
		if err == nil {
			if err = out.Unmarshal(raw); err != nil {
				err = fmt.Errorf("policy plugin %q hook tool_result: malformed output: %w", s.p.ID(), err)
			}
		}
		if err == nil && out.Error != "" {
			err = fmt.Errorf("policy plugin %q hook tool_result: guest reported error: %s", s.p.ID(), out.Error)
		}
		if err == nil && !out.Action.Valid() {
			err = fmt.Errorf("policy plugin %q hook tool_result: malformed output: undefined tool_result action %s", s.p.ID(), out.Action)
		}
		if err == nil && out.Action == abi.ToolResultRewrite && !isJSONObject(out.Result) {
			err = fmt.Errorf("policy plugin %q hook tool_result: malformed output: the rewritten result is not a JSON object", s.p.ID())
		}
		switch {
		case err != nil:
			v = ToolResultVerdict{Action: abi.ToolResultError, Reason: err.Error(), DecidedBy: s.by}
		case out.Action == abi.ToolResultError:
			v = ToolResultVerdict{Action: abi.ToolResultError, Reason: out.Reason, DecidedBy: s.by}
			if v.Reason == "" {
				v.Reason = "tool result refused by " + s.by
			}
		case out.Action == abi.ToolResultRewrite:
			// out's bytes are views into raw; the verdict keeps its own copy.
			v = ToolResultVerdict{Action: abi.ToolResultRewrite, Result: append(json.RawMessage(nil), out.Result...), Reason: out.Reason, DecidedBy: s.by}
			cur.Result, cur.IsError = abi.RawJSON(v.Result), resultIsError(v.Result)
		}
		if e.log != nil {
			e.logDecision(abi.HookToolResult, in.Thread.ID, s.p.ID(), hexDigest(s.p), inputDigest, start, []entry{{"result", v.Action.String(), v.Reason}}, err, nil)
		}
		if v.Action == abi.ToolResultError {
			return v
		}
		if out.Action == abi.ToolResultRewrite {
			buf = nil // the next policy sees the rewrite
		}
	}
	return v
}

// resultIsError reads a CallToolResult JSON object's isError.
func resultIsError(result []byte) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(result, &r) == nil && r.IsError
}

func itemEntries(name string, v *ItemVerdict) []entry {
	action := "allow"
	if !v.Allowed {
		action = "deny"
	}
	return []entry{{name, action, v.Reason}}
}
