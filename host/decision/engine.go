package decision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/warden-mcp/warden/abi"
)

// Policy is one loaded policy plugin as the engine sees it: encoded input in, encoded
// output out. *policy.Module implements it. Implementations must be safe for concurrent
// use; Call must honour ctx and report every failure as an error (the engine fails closed
// on any error). A Policy may also have an ABIVersion() int method, the ABI version its
// guest declared (*policy.Module has one); the engine holds the answers of one without it
// to abi.MinVersion, so that only what version 1 defines is ever trusted from it.
type Policy interface {
	// ID is the plugin id ("name@version") or operator policy name.
	ID() string
	// Digest is the module's sha256.
	Digest() [32]byte
	// Hooks is the set of hooks the module implements.
	Hooks() abi.Hook
	// Call runs one hook on an encoded input and returns the encoded output, owned by the
	// caller.
	Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error)
}

// Options configures NewEngine. The zero value is usable: no decision log, time.Now.
type Options struct {
	// Log receives one JSON line per decision; nil discards them.
	Log *Log
	// Now is the clock for log timestamps and latencies; nil means time.Now.
	Now func() time.Time
	// Observe, when set, receives every composed decision (see Observation): the status
	// page's recent denials and the decision metrics. It runs on the deciding goroutine, so
	// it must be cheap and must not block.
	Observe func(Observation)
}

// Engine composes decisions. It is safe for concurrent use; SetPolicies swaps the policy set
// atomically, so a decision in flight finishes with the set it started with.
type Engine struct {
	log     *Log
	now     func() time.Time
	observe func(Observation)
	set     atomic.Pointer[policySet]
}

type policySet struct {
	operator []Policy
	plugins  map[string]Policy
}

// NewEngine returns an engine with no policies but the baseline.
func NewEngine(o Options) *Engine {
	e := &Engine{log: o.Log, now: o.Now, observe: o.Observe}
	if e.now == nil {
		e.now = time.Now
	}
	e.set.Store(&policySet{})
	return e
}

// SetPolicies replaces the operator policies (run in order, over every server) and the
// plugin policies (keyed by plugin id, each run over only its own plugin's servers).
func (e *Engine) SetPolicies(operator []Policy, plugins map[string]Policy) {
	cp := make(map[string]Policy, len(plugins))
	for k, v := range plugins {
		cp[k] = v
	}
	e.set.Store(&policySet{operator: append([]Policy(nil), operator...), plugins: cp})
}

// ServerVerdict is the composed decision for one candidate server.
type ServerVerdict struct {
	Name     string
	PluginID string
	Action   abi.ServerAction
	// Reason explains a disable or hide ("" for expose); it is what a client sees as the
	// server's toolsError.
	Reason string
	// DecidedBy names who set the final action: "baseline", "operator:<id>" or
	// "plugin:<id>"; "" when every answer was expose.
	DecidedBy string
	// AllowTools is the intersection of every allow list given (nil: no allow list).
	AllowTools []string
	// DenyTools is the union of every deny list given.
	DenyTools []string
	// AllowPrompts and DenyPrompts are the prompt lists, composed like the tool lists.
	AllowPrompts, DenyPrompts []string
	// AllowResources and DenyResources are the resource lists (URIs or URI templates; an
	// entry ending in "*" matches by prefix), composed like the tool lists: the allow list
	// matches only what every allow list given matches.
	AllowResources, DenyResources []string
}

// servers is Servers without the observation (Options.Observe).
func (e *Engine) servers(ctx context.Context, in *abi.ServersInput) []ServerVerdict {
	set := e.set.Load()
	verdicts := make([]ServerVerdict, len(in.Servers))
	index := make(map[string]int, len(in.Servers))
	start := e.now()
	for i := range in.Servers {
		s := &in.Servers[i]
		index[s.Name] = i
		a, why := baselineServer(in, s)
		verdicts[i] = ServerVerdict{Name: s.Name, PluginID: s.PluginID, Action: a, Reason: why}
		if a != abi.ServerExpose {
			verdicts[i].DecidedBy = BaselineID
		}
	}
	// The full input is encoded only when someone reads it (an operator policy) and hashed
	// only for the decision log: neither is free for a 100-server thread.
	var buf []byte
	if len(set.operator) > 0 || e.log != nil {
		buf = in.AppendTo(nil)
	}
	inputDigest := e.digest(buf)
	if e.log != nil {
		e.logDecision(abi.HookServers, in.Thread.ID, BaselineID, "builtin", inputDigest, start, serverEntries(verdicts), nil, nil)
	}

	for _, p := range set.operator {
		if p.Hooks().Has(abi.HookServers) {
			e.runServers(ctx, p, "operator:"+p.ID(), &in.Thread, buf, inputDigest, verdicts, index, nil)
		}
	}
	if len(set.plugins) == 0 {
		return verdicts
	}
	// Each selected plugin's policy sees only its own servers.
	byPlugin := map[string][]int{}
	for i := range in.Servers {
		if id := in.Servers[i].PluginID; id != "" {
			byPlugin[id] = append(byPlugin[id], i)
		}
	}
	ids := make([]string, 0, len(byPlugin))
	for id := range byPlugin {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var subBuf []byte
	sub := abi.ServersInput{Thread: in.Thread, Environments: in.Environments, HasRequirements: in.HasRequirements, Requirements: in.Requirements}
	for _, id := range ids {
		p := set.plugins[id]
		// selected first: Hooks may wait for a module still loading, which a thread that
		// does not select its plugin must never do.
		if p == nil || !selected(&in.Thread, id) || !p.Hooks().Has(abi.HookServers) {
			continue
		}
		sub.Servers = sub.Servers[:0]
		for _, i := range byPlugin[id] {
			sub.Servers = append(sub.Servers, in.Servers[i])
		}
		subBuf = sub.AppendTo(subBuf[:0])
		e.runServers(ctx, p, "plugin:"+id, &in.Thread, subBuf, e.digest(subBuf), verdicts, index, byPlugin[id])
	}
	return verdicts
}

// runServers calls one policy's servers hook and folds its answer into verdicts. governed
// lists the verdict indexes the policy may decide (nil: all of them).
func (e *Engine) runServers(ctx context.Context, p Policy, by string, t *abi.Thread, input []byte, inputDigest string, verdicts []ServerVerdict, index map[string]int, governed []int) {
	start := e.now()
	raw, err := p.Call(ctx, abi.HookServers, input)
	var out abi.ServersOutput
	if err == nil {
		err = out.Unmarshal(raw)
		if err != nil {
			err = fmt.Errorf("policy plugin %q hook servers: malformed output: %w", p.ID(), err)
		}
	}
	if err == nil && out.Error != "" {
		err = fmt.Errorf("policy plugin %q hook servers: guest reported error: %s", p.ID(), out.Error)
	}
	if err == nil {
		out.HoldTo(policyVersion(p))
	}
	// mine reports whether the policy governs verdict i: a set, so that folding an output
	// with many decisions stays linear.
	var governedSet []bool
	if governed != nil {
		governedSet = make([]bool, len(verdicts))
		for _, g := range governed {
			governedSet[g] = true
		}
	}
	mine := func(i int) bool { return governedSet == nil || governedSet[i] }
	if err != nil {
		// Fail closed: everything this policy governs is disabled, naming plugin, hook, cause.
		for i := range verdicts {
			if mine(i) {
				tighten(&verdicts[i], abi.ServerDisable, err.Error(), by)
			}
		}
		if e.log != nil {
			e.logDecision(abi.HookServers, t.ID, p.ID(), hexDigest(p), inputDigest, start, nil, err, nil)
		}
		return
	}
	var ignored []string
	touched := map[int]bool{}
	for j := range out.Decisions {
		d := &out.Decisions[j]
		i, ok := index[d.Name]
		if !ok || !mine(i) {
			ignored = append(ignored, d.Name)
			continue
		}
		v := &verdicts[i]
		tighten(v, d.Action, d.Reason, by)
		if len(d.AllowTools) > 0 {
			v.AllowTools = intersect(v.AllowTools, d.AllowTools)
		}
		if len(d.AllowPrompts) > 0 {
			v.AllowPrompts = intersect(v.AllowPrompts, d.AllowPrompts)
		}
		if len(d.AllowResources) > 0 {
			v.AllowResources = intersectPatterns(v.AllowResources, d.AllowResources)
		}
		if len(d.DenyTools)+len(d.DenyPrompts)+len(d.DenyResources) > 0 {
			v.DenyTools = append(v.DenyTools, d.DenyTools...)
			v.DenyPrompts = append(v.DenyPrompts, d.DenyPrompts...)
			v.DenyResources = append(v.DenyResources, d.DenyResources...)
			touched[i] = true
		}
	}
	// Deny lists are unions: gathered above, made sets once per verdict (sorting is what
	// keeps a legal output of 10⁵ names from costing 10¹⁰ comparisons).
	for i := range touched {
		v := &verdicts[i]
		v.DenyTools, v.DenyPrompts, v.DenyResources = sortedSet(v.DenyTools), sortedSet(v.DenyPrompts), sortedSet(v.DenyResources)
	}
	if e.log != nil {
		e.logServers(t.ID, p, inputDigest, start, out.Decisions, ignored)
	}
}

// tighten applies a decision if it is strictly more restrictive than the verdict so far.
func tighten(v *ServerVerdict, a abi.ServerAction, reason, by string) {
	if !a.MoreRestrictive(v.Action) {
		return
	}
	if !a.Valid() {
		// An undefined action ranks as the most restrictive, so garbage never widens.
		a, reason = abi.ServerHide, fmt.Sprintf("%s returned an undefined server action", by)
	}
	if reason == "" {
		reason = fmt.Sprintf("%s by %s", a, by)
	}
	v.Action, v.Reason, v.DecidedBy = a, reason, by
}

// intersect returns the sorted set of the names in both have and with; have nil means "no
// list yet", so the result is with as a sorted set. have must be a sorted set (every list
// this package builds is one); with may be any list. O((n+m) log m).
func intersect(have, with []string) []string {
	w := sortedSet(with)
	if have == nil {
		return w
	}
	out := []string{}
	for _, x := range have {
		if _, ok := slices.BinarySearch(w, x); ok {
			out = append(out, x)
		}
	}
	return out
}

// sortedSet returns list sorted without duplicates, in a new slice; nil stays nil and an
// empty list stays empty (an empty allow list admits nothing).
func sortedSet(list []string) []string {
	if list == nil {
		return nil
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// CredentialVerdict is the composed decision for one credential reference.
type CredentialVerdict struct {
	// Index is the credential's position in the server's credential list.
	Index     int
	Action    abi.CredentialAction
	Reason    string
	DecidedBy string
}

// credentials is Credentials without the observation (Options.Observe).
func (e *Engine) credentials(ctx context.Context, in *abi.CredentialsInput) []CredentialVerdict {
	set := e.set.Load()
	start := e.now()
	s := &in.Server
	verdicts := make([]CredentialVerdict, len(s.Credentials))
	for i := range s.Credentials {
		env := &in.Environment
		if env.ID == "" {
			env = nil
		}
		a, why := baselineCredential(s, &s.Credentials[i], in.Route, env)
		verdicts[i] = CredentialVerdict{Index: i, Action: a, Reason: why, DecidedBy: BaselineID}
	}
	buf := in.AppendTo(nil)
	inputDigest := e.digest(buf)
	if e.log != nil {
		e.logDecision(abi.HookCredentials, in.Thread.ID, BaselineID, "builtin", inputDigest, start, credentialEntries(verdicts), nil, nil)
	}
	policies := append([]Policy(nil), set.operator...)
	if p := set.plugins[s.PluginID]; s.PluginID != "" && p != nil {
		policies = append(policies, p)
	}
	for _, p := range policies {
		if !p.Hooks().Has(abi.HookCredentials) {
			continue
		}
		by := "operator:" + p.ID()
		if p.ID() == s.PluginID {
			by = "plugin:" + p.ID()
		}
		start := e.now()
		raw, err := p.Call(ctx, abi.HookCredentials, buf)
		var out abi.CredentialsOutput
		if err == nil {
			if err = out.Unmarshal(raw); err != nil {
				err = fmt.Errorf("policy plugin %q hook credentials: malformed output: %w", p.ID(), err)
			}
		}
		if err == nil && out.Error != "" {
			err = fmt.Errorf("policy plugin %q hook credentials: guest reported error: %s", p.ID(), out.Error)
		}
		if err != nil {
			for i := range verdicts {
				tightenCred(&verdicts[i], abi.CredentialDeny, err.Error(), by)
			}
			if e.log != nil {
				e.logDecision(abi.HookCredentials, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, nil, err, nil)
			}
			continue
		}
		// An index past the server's credentials is malformed output, which fails closed
		// (docs/abi.md): the whole answer is refused, not just the bad decision.
		if bad := badCredentialIndex(out.Decisions, len(verdicts)); bad >= 0 {
			err = fmt.Errorf("policy plugin %q hook credentials: malformed output: decision for credential index %d, but server %q has %d credentials", p.ID(), bad, s.Name, len(verdicts))
			for i := range verdicts {
				tightenCred(&verdicts[i], abi.CredentialDeny, err.Error(), by)
			}
			if e.log != nil {
				e.logDecision(abi.HookCredentials, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, nil, err, nil)
			}
			continue
		}
		for _, d := range out.Decisions {
			tightenCred(&verdicts[d.Index], d.Action, d.Reason, by)
		}
		if e.log != nil {
			e.logDecision(abi.HookCredentials, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, credentialDecisionEntries(out.Decisions), nil, nil)
		}
	}
	return verdicts
}

// badCredentialIndex returns the first decision index that names no credential of a server
// with n credentials, or -1.
func badCredentialIndex(ds []abi.CredentialDecision, n int) int64 {
	for _, d := range ds {
		if int64(d.Index) >= int64(n) {
			return int64(d.Index)
		}
	}
	return -1
}

func tightenCred(v *CredentialVerdict, a abi.CredentialAction, reason, by string) {
	if !a.MoreRestrictive(v.Action) {
		return
	}
	if !a.Valid() {
		a, reason = abi.CredentialDeny, fmt.Sprintf("%s returned an undefined credential action", by)
	}
	if reason == "" {
		reason = fmt.Sprintf("%s by %s", a, by)
	}
	v.Action, v.Reason, v.DecidedBy = a, reason, by
}

// ToolFilter is a server's effective tool lists: the declaration's enabled_tools /
// disabled_tools merged with the servers-hook verdict's AllowTools / DenyTools. Both lists
// are sorted sets (Filter builds them so); a filter built by hand must keep them sorted.
type ToolFilter struct {
	// Allow is an allow list; nil means every tool.
	Allow []string
	// Deny is applied after Allow.
	Deny []string
}

// Filter merges a declaration's tool lists with a verdict's.
func Filter(enabled, disabled []string, v *ServerVerdict) ToolFilter {
	f := ToolFilter{Allow: sortedSet(enabled), Deny: sortedSet(append(slices.Clone(disabled), v.DenyTools...))}
	if v.AllowTools != nil {
		f.Allow = intersect(f.Allow, v.AllowTools)
	}
	return f
}

// AllowListed reports whether tool passes the allow list (true when there is none).
func (f ToolFilter) AllowListed(tool string) bool {
	if f.Allow == nil {
		return true
	}
	_, ok := slices.BinarySearch(f.Allow, tool)
	return ok
}

// DenyListed reports whether tool is on the deny list.
func (f ToolFilter) DenyListed(tool string) bool {
	_, ok := slices.BinarySearch(f.Deny, tool)
	return ok
}

// ToolCallVerdict is the composed decision for one tools/call.
type ToolCallVerdict struct {
	// Action is allow, deny, or ask: run the call only once the front-door client's user
	// approves it, showing Reason.
	Action    abi.ToolCallAction
	Reason    string
	DecidedBy string
	// Arguments are the arguments to send: the caller's, or a policy's rewrite.
	Arguments json.RawMessage
}

// toolCall is ToolCall without the observation (Options.Observe).
func (e *Engine) toolCall(ctx context.Context, in *abi.ToolCallInput, f ToolFilter) ToolCallVerdict {
	set := e.set.Load()
	start := e.now()
	v := ToolCallVerdict{Arguments: json.RawMessage(in.Arguments)}
	cur := *in
	buf := cur.AppendTo(nil)
	inputDigest := e.digest(buf)
	if ok, why := toolAllowed(f, in.Tool); !ok {
		v.Action, v.Reason, v.DecidedBy = abi.ToolCallDeny, why, BaselineID
		if e.log != nil {
			e.logDecision(abi.HookToolCall, in.Thread.ID, BaselineID, "builtin", inputDigest, start, toolCallEntries(&v), nil, nil)
		}
		return v
	}
	if e.log != nil {
		e.logDecision(abi.HookToolCall, in.Thread.ID, BaselineID, "builtin", inputDigest, start, toolCallEntries(&v), nil, nil)
	}
	for _, sp := range set.withHook(in.PluginID, abi.HookToolCall) {
		p, by := sp.p, sp.by
		start := e.now()
		raw, err := p.Call(ctx, abi.HookToolCall, buf)
		var out abi.ToolCallOutput
		if err == nil {
			if err = out.Unmarshal(raw); err != nil {
				err = fmt.Errorf("policy plugin %q hook tool_call: malformed output: %w", p.ID(), err)
			}
		}
		if err == nil && out.Error != "" {
			err = fmt.Errorf("policy plugin %q hook tool_call: guest reported error: %s", p.ID(), out.Error)
		}
		if err == nil {
			if herr := out.HoldTo(policyVersion(p)); herr != nil {
				err = fmt.Errorf("policy plugin %q hook tool_call: malformed output: %w", p.ID(), herr)
			}
		}
		if err == nil && out.Rewrite && !isJSONObject(out.Arguments) {
			err = fmt.Errorf("policy plugin %q hook tool_call: malformed output: rewritten arguments are not a JSON object", p.ID())
		}
		if err != nil {
			v.Action, v.Reason, v.DecidedBy = abi.ToolCallDeny, err.Error(), by
			if e.log != nil {
				e.logDecision(abi.HookToolCall, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, toolCallEntries(&v), err, nil)
			}
			return v
		}
		if out.Action == abi.ToolCallAsk && v.Action != abi.ToolCallAsk {
			// The first ask is the question put to the user; later policies still run, and
			// a later deny wins over it.
			v.Action, v.Reason, v.DecidedBy = abi.ToolCallAsk, out.Reason, by
			if v.Reason == "" {
				v.Reason = "approval required by " + by
			}
		}
		if out.Action != abi.ToolCallAllow && out.Action != abi.ToolCallAsk {
			v.Action, v.Reason, v.DecidedBy = abi.ToolCallDeny, out.Reason, by
			if !out.Action.Valid() {
				v.Reason = by + " returned an undefined tool_call action"
			}
			if v.Reason == "" {
				v.Reason = "denied by " + by
			}
			if e.log != nil {
				e.logDecision(abi.HookToolCall, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, toolCallEntries(&v), nil, nil)
			}
			return v
		}
		if out.Rewrite {
			// out's bytes are views into raw, which this call owns; keep a copy anyway so
			// the verdict never aliases a policy's buffer.
			v.Arguments = append(json.RawMessage(nil), out.Arguments...)
			if v.Action == abi.ToolCallAllow {
				v.DecidedBy = by // an ask keeps naming the policy that asked
			}
		}
		if e.log != nil {
			// The line's input digest is of what this policy saw; a rewrite is named.
			entries := toolCallEntries(&v)
			if out.Rewrite && entries[0].reason == "" {
				entries[0].reason = "arguments rewritten by " + by
			}
			e.logDecision(abi.HookToolCall, in.Thread.ID, p.ID(), hexDigest(p), inputDigest, start, entries, nil, nil)
		}
		if out.Rewrite {
			cur.Arguments = abi.RawJSON(v.Arguments)
			buf = cur.AppendTo(nil)
			inputDigest = e.digest(buf)
		}
	}
	return v
}

func isJSONObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

func hexDigest(p Policy) string {
	d := p.Digest()
	return hex.EncodeToString(d[:])
}

// digest is the decision log's input digest; "" when there is no log to write it to.
func (e *Engine) digest(b []byte) string {
	if e.log == nil {
		return ""
	}
	return digest(b)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
