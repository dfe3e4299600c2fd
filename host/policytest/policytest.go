package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/warden-mcp/warden/abi"
)

// Caller runs one hook on an encoded input; *policy.Module implements it.
type Caller interface {
	Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error)
}

// Case is one fixture case.
type Case struct {
	// Name identifies the case in reports; defaults to the file name and index.
	Name string `json:"name"`
	// Hook is "servers", "credentials", "tool_call", "resource_read",
	// "prompt_get" or "tool_result".
	Hook string `json:"hook"`
	// Input is the hook input in the ABI's JSON form.
	Input json.RawMessage `json:"input"`
	// Expect is what the policy must answer.
	Expect Expect `json:"expect"`
	// File is the fixture file the case came from (set by LoadDir/LoadFile).
	File string `json:"-"`
}

// Expect is a case's expected answer.
type Expect struct {
	// Decisions are the expected servers or credentials decisions (see the package doc).
	Decisions []Decision `json:"decisions,omitempty"`
	// Action, Reason and Arguments are the expected tool_call, resource_read
	// or prompt_get answer (Arguments: rewritten arguments), or, with
	// Result, the expected tool_result answer (Result: the rewritten
	// result).
	Action    string          `json:"action,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	// Error, when set, expects the call to fail with an error containing it.
	Error string `json:"error,omitempty"`
}

// Decision is one expected decision: Name for a server, Index for a credential.
type Decision struct {
	Name       string   `json:"name,omitempty"`
	Index      *int     `json:"index,omitempty"`
	Action     string   `json:"action"`
	Reason     string   `json:"reason,omitempty"`
	AllowTools []string `json:"allowTools,omitempty"`
	DenyTools  []string `json:"denyTools,omitempty"`
	// The prompt and resource lists (ABI version 2).
	AllowPrompts   []string `json:"allowPrompts,omitempty"`
	DenyPrompts    []string `json:"denyPrompts,omitempty"`
	AllowResources []string `json:"allowResources,omitempty"`
	DenyResources  []string `json:"denyResources,omitempty"`
}

// Result is the outcome of running one case.
type Result struct {
	Name     string
	File     string
	Pass     bool
	Problems []string
	// Output is the policy's decoded answer (nil when the call failed).
	Output any
	// Err is the call's error, if any.
	Err     error
	Latency time.Duration
}

// LoadDir reads every *.json fixture file in dir, in name order.
func LoadDir(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("policy tests: no *.json fixtures in %s", dir)
	}
	sort.Strings(files)
	var all []Case
	for _, f := range files {
		cs, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}

// LoadFile reads one fixture file: a case object or an array of them. Unknown keys are
// errors, so a misspelt expectation never passes silently.
func LoadFile(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy tests: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	var cases []Case
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = dec.Decode(&cases)
	} else {
		var c Case
		err = dec.Decode(&c)
		cases = []Case{c}
	}
	if err != nil {
		return nil, fmt.Errorf("policy tests: %s: %w", path, err)
	}
	for i := range cases {
		c := &cases[i]
		c.File = path
		if c.Name == "" {
			c.Name = fmt.Sprintf("%s#%d", filepath.Base(path), i+1)
		}
		if _, err := abi.ParseHook(c.Hook); err != nil {
			return nil, fmt.Errorf("policy tests: %s: case %q: hook %q: want one of %s", path, c.Name, c.Hook, hookNames())
		}
		if len(c.Input) == 0 {
			return nil, fmt.Errorf("policy tests: %s: case %q has no input", path, c.Name)
		}
	}
	return cases, nil
}

// Encode turns a hook input in JSON form into the ABI's wire encoding. Unknown fields are
// errors.
func Encode(hook abi.Hook, input []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	switch hook {
	case abi.HookServers:
		var in abi.ServersInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("servers input: %w", err)
		}
		return in.AppendTo(nil), nil
	case abi.HookCredentials:
		var in abi.CredentialsInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("credentials input: %w", err)
		}
		return in.AppendTo(nil), nil
	case abi.HookToolCall:
		var in abi.ToolCallInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("tool_call input: %w", err)
		}
		return in.AppendTo(nil), nil
	case abi.HookResourceRead:
		var in abi.ResourceReadInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("resource_read input: %w", err)
		}
		return in.AppendTo(nil), nil
	case abi.HookPromptGet:
		var in abi.PromptGetInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("prompt_get input: %w", err)
		}
		return in.AppendTo(nil), nil
	case abi.HookToolResult:
		var in abi.ToolResultInput
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("tool_result input: %w", err)
		}
		return in.AppendTo(nil), nil
	}
	return nil, fmt.Errorf("unknown hook %v", hook)
}

// hookNames lists the hooks' names for errors.
func hookNames() string {
	var names []string
	for _, h := range abi.Hooks() {
		names = append(names, h.String())
	}
	return strings.Join(names, ", ")
}

// versioned is a Caller that knows the ABI version its module declared
// (*policy.Module does): Eval holds the outputs to it, as the host does.
type versioned interface {
	ABIVersion() int
}

// Eval runs hook on the JSON input and returns the decoded output (an *abi.ServersOutput,
// *abi.CredentialsOutput, *abi.ToolCallOutput, *abi.ResourceReadOutput,
// *abi.PromptGetOutput or *abi.ToolResultOutput). A guest-reported error is returned as an
// error too. When p reports its ABI version (ABIVersion() int), the output is held to it as
// the host holds it: a version 1 guest's prompt and resource lists are dropped, and its ASK
// is malformed.
func Eval(ctx context.Context, p Caller, hook abi.Hook, input []byte) (any, error) {
	wire, err := Encode(hook, input)
	if err != nil {
		return nil, err
	}
	raw, err := p.Call(ctx, hook, wire)
	if err != nil {
		return nil, err
	}
	version := abi.Version
	if v, ok := p.(versioned); ok {
		version = v.ABIVersion()
	}
	var out interface{ Unmarshal([]byte) error }
	var errField *string
	switch hook {
	case abi.HookServers:
		o := &abi.ServersOutput{}
		out, errField = o, &o.Error
	case abi.HookCredentials:
		o := &abi.CredentialsOutput{}
		out, errField = o, &o.Error
	case abi.HookToolCall:
		o := &abi.ToolCallOutput{}
		out, errField = o, &o.Error
	case abi.HookResourceRead:
		o := &abi.ResourceReadOutput{}
		out, errField = o, &o.Error
	case abi.HookPromptGet:
		o := &abi.PromptGetOutput{}
		out, errField = o, &o.Error
	case abi.HookToolResult:
		o := &abi.ToolResultOutput{}
		out, errField = o, &o.Error
	default:
		return nil, fmt.Errorf("unknown hook %v", hook)
	}
	if err := out.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("malformed %s output: %w", hook, err)
	}
	if *errField != "" {
		return out, fmt.Errorf("guest reported error: %s", *errField)
	}
	switch o := out.(type) {
	case *abi.ServersOutput:
		o.HoldTo(version)
	case *abi.ToolCallOutput:
		if err := o.HoldTo(version); err != nil {
			return nil, fmt.Errorf("malformed %s output: %w", hook, err)
		}
	}
	return out, nil
}

// Run runs one case against p and compares the answer with the expectation.
func Run(ctx context.Context, p Caller, c Case) Result {
	res := Result{Name: c.Name, File: c.File}
	hook, err := abi.ParseHook(c.Hook)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return res
	}
	start := time.Now()
	out, err := Eval(ctx, p, hook, c.Input)
	res.Latency = time.Since(start)
	res.Output, res.Err = out, err
	switch {
	case c.Expect.Error != "":
		if err == nil {
			res.Problems = append(res.Problems, fmt.Sprintf("expected an error containing %q, got success", c.Expect.Error))
		} else if !strings.Contains(err.Error(), c.Expect.Error) {
			res.Problems = append(res.Problems, fmt.Sprintf("error %q does not contain %q", err, c.Expect.Error))
		}
	case err != nil:
		res.Problems = append(res.Problems, "call failed: "+err.Error())
	default:
		switch o := out.(type) {
		case *abi.ServersOutput:
			res.Problems = compareServers(c, o)
		case *abi.CredentialsOutput:
			res.Problems = compareCredentials(c, o)
		case *abi.ToolCallOutput:
			res.Problems = compareCall(c, o.Action.String(), o.Reason, o.Rewrite, o.Arguments)
		case *abi.ResourceReadOutput:
			res.Problems = compareCall(c, o.Action.String(), o.Reason, false, nil)
		case *abi.PromptGetOutput:
			res.Problems = compareCall(c, o.Action.String(), o.Reason, o.Rewrite, o.Arguments)
		case *abi.ToolResultOutput:
			res.Problems = compareToolResult(c, o)
		}
	}
	res.Pass = len(res.Problems) == 0
	return res
}

func compareServers(c Case, out *abi.ServersOutput) []string {
	var in abi.ServersInput
	_ = json.Unmarshal(c.Input, &in) // already decoded once by Encode
	// Several decisions for one server combine as decisions of different policies do: the
	// most restrictive action (and its reason) wins, allow lists intersect, deny lists add up.
	got := map[string]abi.ServerDecision{}
	for _, d := range out.Decisions {
		prev, seen := got[d.Name]
		if !seen {
			got[d.Name] = abi.ServerDecision{Name: d.Name, Action: d.Action, Reason: d.Reason,
				AllowTools: clone(d.AllowTools), DenyTools: clone(d.DenyTools),
				AllowPrompts: clone(d.AllowPrompts), DenyPrompts: clone(d.DenyPrompts),
				AllowResources: clone(d.AllowResources), DenyResources: clone(d.DenyResources)}
			continue
		}
		if d.Action.MoreRestrictive(prev.Action) {
			prev.Action, prev.Reason = d.Action, d.Reason
		}
		prev.AllowTools, prev.DenyTools = intersect(prev.AllowTools, d.AllowTools), union(prev.DenyTools, d.DenyTools)
		prev.AllowPrompts, prev.DenyPrompts = intersect(prev.AllowPrompts, d.AllowPrompts), union(prev.DenyPrompts, d.DenyPrompts)
		prev.AllowResources, prev.DenyResources = intersect(prev.AllowResources, d.AllowResources), union(prev.DenyResources, d.DenyResources)
		got[d.Name] = prev
	}
	want := map[string]Decision{}
	var problems []string
	for _, d := range c.Expect.Decisions {
		if d.Name == "" {
			problems = append(problems, "an expected servers decision has no name")
			continue
		}
		if _, err := abi.ParseServerAction(d.Action); err != nil {
			problems = append(problems, fmt.Sprintf("server %q: expected action %q: want expose, disable or hide", d.Name, d.Action))
		}
		want[d.Name] = d
	}
	names := map[string]bool{}
	for _, s := range in.Servers {
		names[s.Name] = true
	}
	for n := range got {
		names[n] = true
	}
	for n := range want {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		g, w := got[n], want[n]
		wantAction := w.Action
		if wantAction == "" {
			wantAction = abi.ServerExpose.String()
		}
		if g.Action.String() != wantAction {
			problems = append(problems, fmt.Sprintf("server %q: got %s%s, want %s", n, g.Action, reasonSuffix(g.Reason), wantAction))
			continue
		}
		if w.Reason != "" && g.Reason != w.Reason {
			problems = append(problems, fmt.Sprintf("server %q: reason %q, want %q", n, g.Reason, w.Reason))
		}
		if w.AllowTools != nil && !sameSet(g.AllowTools, w.AllowTools) {
			problems = append(problems, fmt.Sprintf("server %q: allowTools %v, want %v", n, g.AllowTools, w.AllowTools))
		}
		if w.DenyTools != nil && !sameSet(g.DenyTools, w.DenyTools) {
			problems = append(problems, fmt.Sprintf("server %q: denyTools %v, want %v", n, g.DenyTools, w.DenyTools))
		}
		for _, l := range []struct {
			name      string
			got, want []string
		}{
			{"allowPrompts", g.AllowPrompts, w.AllowPrompts}, {"denyPrompts", g.DenyPrompts, w.DenyPrompts},
			{"allowResources", g.AllowResources, w.AllowResources}, {"denyResources", g.DenyResources, w.DenyResources},
		} {
			if l.want != nil && !sameSet(l.got, l.want) {
				problems = append(problems, fmt.Sprintf("server %q: %s %v, want %v", n, l.name, l.got, l.want))
			}
		}
	}
	return problems
}

func clone(s []string) []string { return append([]string(nil), s...) }

// intersect composes two allow lists: an empty list allows everything, so
// it leaves the other one.
func intersect(a, b []string) []string {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return clone(b)
	}
	both := []string{}
	for _, t := range a {
		if contains(b, t) {
			both = append(both, t)
		}
	}
	return both
}

// union composes two deny lists.
func union(a, b []string) []string {
	for _, t := range b {
		if !contains(a, t) {
			a = append(a, t)
		}
	}
	return a
}

func compareCredentials(c Case, out *abi.CredentialsOutput) []string {
	var in abi.CredentialsInput
	_ = json.Unmarshal(c.Input, &in)
	got := map[int]abi.CredentialDecision{}
	for _, d := range out.Decisions {
		prev, seen := got[int(d.Index)]
		if !seen || d.Action.MoreRestrictive(prev.Action) {
			got[int(d.Index)] = d
		}
	}
	var problems []string
	want := map[int]Decision{}
	for _, d := range c.Expect.Decisions {
		if d.Index == nil {
			problems = append(problems, "an expected credentials decision has no index")
			continue
		}
		want[*d.Index] = d
	}
	idx := map[int]bool{}
	for i := range in.Server.Credentials {
		idx[i] = true
	}
	for i := range got {
		idx[i] = true
	}
	for i := range want {
		idx[i] = true
	}
	keys := make([]int, 0, len(idx))
	for i := range idx {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	for _, i := range keys {
		g, w := got[i], want[i]
		wantAction := w.Action
		if wantAction == "" {
			wantAction = abi.CredentialUnspecified.String()
		}
		if g.Action.String() != wantAction {
			problems = append(problems, fmt.Sprintf("credential %d: got %s%s, want %s", i, g.Action, reasonSuffix(g.Reason), wantAction))
			continue
		}
		if w.Reason != "" && g.Reason != w.Reason {
			problems = append(problems, fmt.Sprintf("credential %d: reason %q, want %q", i, g.Reason, w.Reason))
		}
	}
	return problems
}

// compareCall compares the answer of a call hook (tool_call, resource_read,
// prompt_get) with the case's expectation.
func compareCall(c Case, action, reason string, rewrite bool, args []byte) []string {
	var problems []string
	want := c.Expect.Action
	if want == "" {
		want = abi.ToolCallAllow.String()
	}
	if action != want {
		problems = append(problems, fmt.Sprintf("%s: got %s%s, want %s", c.Hook, action, reasonSuffix(reason), want))
	}
	if c.Expect.Reason != "" && reason != c.Expect.Reason {
		problems = append(problems, fmt.Sprintf("%s: reason %q, want %q", c.Hook, reason, c.Expect.Reason))
	}
	if len(c.Expect.Result) > 0 {
		problems = append(problems, fmt.Sprintf("%s: expect.result is for tool_result cases", c.Hook))
	}
	if len(c.Expect.Arguments) > 0 {
		if !rewrite {
			problems = append(problems, fmt.Sprintf("%s: expected rewritten arguments, got none", c.Hook))
		} else if !jsonEqual(args, c.Expect.Arguments) {
			problems = append(problems, fmt.Sprintf("%s: arguments %s, want %s", c.Hook, args, c.Expect.Arguments))
		}
	} else if rewrite {
		problems = append(problems, fmt.Sprintf("%s: unexpected rewrite to %s", c.Hook, args))
	}
	return problems
}

// compareToolResult compares a tool_result answer with the expectation:
// the action ("pass" when none is given), the reason when given, and for
// "rewrite" the result when given (a rewrite's result is always compared
// when the case gives one, and a rewrite the case does not expect is a
// problem).
func compareToolResult(c Case, out *abi.ToolResultOutput) []string {
	var problems []string
	want := c.Expect.Action
	if want == "" {
		want = abi.ToolResultPass.String()
	}
	if out.Action.String() != want {
		problems = append(problems, fmt.Sprintf("tool_result: got %s%s, want %s", out.Action, reasonSuffix(out.Reason), want))
	}
	if c.Expect.Reason != "" && out.Reason != c.Expect.Reason {
		problems = append(problems, fmt.Sprintf("tool_result: reason %q, want %q", out.Reason, c.Expect.Reason))
	}
	if len(c.Expect.Arguments) > 0 {
		problems = append(problems, "tool_result: expect.arguments is for call hooks; use expect.result")
	}
	if len(c.Expect.Result) > 0 && out.Action == abi.ToolResultRewrite && !jsonEqual(out.Result, c.Expect.Result) {
		problems = append(problems, fmt.Sprintf("tool_result: result %s, want %s", out.Result, c.Expect.Result))
	}
	return problems
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", r)
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
