package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/policy"
)

// v2Policies loads, in one real runtime: testdata/v2policy (every ABI version 2 hook, keyed by
// names in the input) as "corp" and "p@1", examples/plugins/block-tool (denies delete_*) as
// "block@1", and testdata/v1ask.wat (an ABI version 1 module answering with a v2-only ask
// and prompt list) as "old".
func v2Policies(t *testing.T) map[string]Policy {
	t.Helper()
	ctx := context.Background()
	rt, err := policy.NewRuntime(ctx, policy.Config{CompilationCacheDir: testbuild.WazeroCache(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	v2 := testbuild.GoGuest(t, "testdata/v2policy")
	mods := map[string][]byte{
		"corp": v2, "p@1": v2,
		"block@1": testbuild.GoGuest(t, "../../examples/plugins/block-tool"),
		"old":     testbuild.WAT(t, "testdata/v1ask.wat"),
	}
	out := map[string]Policy{}
	for id, wasm := range mods {
		m, err := rt.Load(ctx, policy.LoadOptions{ID: id, Wasm: wasm, MemoEntries: -1})
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		out[id] = m
	}
	return out
}

// TestV2Hooks runs the ABI version 2 cases over one set of loaded modules (compiling them
// is the slow part, under -race).
func TestV2Hooks(t *testing.T) {
	ps := v2Policies(t)
	for _, c := range []struct {
		name string
		run  func(*testing.T, map[string]Policy)
	}{
		{"server item lists", testServerItemLists},
		{"tool_call ask", testToolCallAsk},
		{"resource_read", testResourceRead},
		{"prompt_get", testPromptGet},
		{"tool_result", testToolResult},
		{"tool_result without the hook is free", testToolResultWithoutHookIsFree},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, ps) })
	}
}

func listsServer() abi.Server {
	return abi.Server{Name: "lists", Origin: "plugin:p@1", PluginID: "p@1", Transport: "http",
		URL: "https://lists.example.com/mcp", Environment: "local", Enabled: true}
}

func v2Thread() abi.Thread {
	return abi.Thread{ID: "t1", Roots: []abi.Root{{ID: "p@1", Location: "local", Path: "/plugins/p"}}}
}

// logLines parses the decision log, one JSON object per line.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// testServerItemLists: prompt and resource lists compose like tool lists (sets; allow
// lists intersect, deny lists unite), a v1 module's prompt list is dropped, and the
// decision log counts each list.
func testServerItemLists(t *testing.T, ps map[string]Policy) {
	in := &abi.ServersInput{Thread: v2Thread(), Environments: []abi.Environment{localEnv()}, Servers: []abi.Server{listsServer()}}
	var log bytes.Buffer
	e := NewEngine(Options{Log: NewLog(&log)})
	e.SetPolicies([]Policy{ps["corp"], ps["old"]}, map[string]Policy{"p@1": ps["p@1"]})
	v := e.Servers(context.Background(), in)[0]
	for _, c := range []struct {
		name      string
		got, want []string
	}{
		{"allow prompts", v.AllowPrompts, []string{"greet", "summarise"}},
		{"deny prompts (none from the v1 module)", v.DenyPrompts, []string{"secret-prompt"}},
		{"allow resources", v.AllowResources, []string{"file:///docs/*", "mem://note"}},
		{"deny resources", v.DenyResources, []string{"file:///docs/private/*"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if ok, why := PromptFilter(&v).Allowed("secret-prompt"); ok || why != `prompt "secret-prompt" is not in the server's allowed prompts` {
		t.Errorf("secret-prompt: %v %q", ok, why)
	}
	if ok, _ := ResourceFilter(&v).Allowed("file:///docs/guide.md"); !ok {
		t.Error("file:///docs/guide.md is refused")
	}
	var counted bool
	for _, l := range logLines(t, &log) {
		if l["plugin"] == "p@1" && l["hook"] == "servers" {
			lists, _ := l["lists"].(map[string]any)["lists"].(map[string]any)
			counted = lists["denyResources"] == 1.0 && lists["denyPrompts"] == 1.0 && lists["allowTools"] == nil
			if !counted {
				t.Errorf("p@1's servers line counts %v", l["lists"])
			}
		}
		if _, ok := l["lists"]; ok && l["plugin"] == "old" {
			t.Errorf("the v1 module's line %v counts lists its version does not define", l)
		}
	}
	if !counted {
		t.Errorf("no servers line for p@1 in %s", log.String())
	}
}

func testToolCallAsk(t *testing.T, ps map[string]Policy) {
	tests := []struct {
		name       string
		operator   []string
		plugin     string
		tool       string
		wantAction abi.ToolCallAction
		wantReason string // substring
		wantBy     string
		wantArgs   string
	}{
		{"an ask", []string{"corp"}, "block@1", "ask_me", abi.ToolCallAsk, "run ask_me?", "operator:corp", `{"a":1}`},
		{"a later deny wins over an ask", []string{"corp"}, "block@1", "delete_ask", abi.ToolCallDeny, "tool delete_ask is blocked by policy", "plugin:block@1", `{"a":1}`},
		{"the first ask is the question", []string{"corp"}, "p@1", "ask_twice", abi.ToolCallAsk, "run ask_twice?", "operator:corp", `{"a":1}`},
		{"an ask with a rewrite keeps naming the asker", []string{"corp"}, "block@1", "ask_rewrite", abi.ToolCallAsk, "run ask_rewrite?", "operator:corp", `{"rewritten":true}`},
		{"allow", []string{"corp"}, "block@1", "echo", abi.ToolCallAllow, "", "", `{"a":1}`},
		{"a v1 module cannot ask: it fails closed", []string{"old"}, "", "echo", abi.ToolCallDeny, `policy plugin "old" hook tool_call: malformed output`, "operator:old", `{"a":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var operator []Policy
			for _, id := range tc.operator {
				operator = append(operator, ps[id])
			}
			plugins := map[string]Policy{}
			if tc.plugin != "" {
				plugins[tc.plugin] = ps[tc.plugin]
			}
			e := NewEngine(Options{})
			e.SetPolicies(operator, plugins)
			v := e.ToolCall(context.Background(), &abi.ToolCallInput{Thread: v2Thread(), Server: "s", PluginID: tc.plugin, Tool: tc.tool, Arguments: abi.RawJSON(`{"a":1}`)}, ToolFilter{})
			if v.Action != tc.wantAction || !strings.Contains(v.Reason, tc.wantReason) || v.DecidedBy != tc.wantBy || string(v.Arguments) != tc.wantArgs {
				t.Fatalf("verdict %v %q by %q args %s; want %v %q by %q args %s", v.Action, v.Reason, v.DecidedBy, v.Arguments, tc.wantAction, tc.wantReason, tc.wantBy, tc.wantArgs)
			}
		})
	}
}

func testResourceRead(t *testing.T, ps map[string]Policy) {
	filter := ResourceFilter(&ServerVerdict{AllowResources: []string{"file:///docs/*", "mem://note", "fail://"}, DenyResources: []string{"file:///docs/private/*"}})
	tests := []struct {
		name     string
		operator string
		uri      string
		f        ItemFilter
		wantOK   bool
		reason   string // substring
		by       string
	}{
		{"allowed by all", "corp", "mem://note", filter, true, "", ""},
		{"refused by the server's deny list", "corp", "file:///docs/private/k", filter, false, `resource "file:///docs/private/k" is denied on this server`, BaselineID},
		{"refused by the server's allow list", "corp", "file:///etc/passwd", filter, false, "not in the server's allowed resources", BaselineID},
		{"refused by the operator policy", "corp", "file:///docs/locked/a", filter, false, "locked by v2: file:///docs/locked/a", "operator:corp"},
		{"refused by the plugin policy", "", "file:///docs/locked/a", filter, false, "locked by v2: file:///docs/locked/a", "plugin:p@1"},
		{"a failing policy fails closed", "corp", "fail://", filter, false, `policy plugin "corp" hook resource_read: guest reported error: asked to fail`, "operator:corp"},
		{"a v1 module has no opinion", "old", "file:///docs/a", ItemFilter{}, true, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var operator []Policy
			plugins := map[string]Policy{}
			if tc.operator != "" {
				operator = []Policy{ps[tc.operator]}
			} else {
				plugins["p@1"] = ps["p@1"]
			}
			var log bytes.Buffer
			e := NewEngine(Options{Log: NewLog(&log)})
			e.SetPolicies(operator, plugins)
			v := e.ResourceRead(context.Background(), &abi.ResourceReadInput{Thread: v2Thread(), Server: "lists", PluginID: "p@1", URI: tc.uri}, tc.f)
			if v.Allowed != tc.wantOK || !strings.Contains(v.Reason, tc.reason) || v.DecidedBy != tc.by {
				t.Fatalf("verdict %+v; want allowed %v, reason %q, by %q", v, tc.wantOK, tc.reason, tc.by)
			}
			lines := logLines(t, &log)
			if len(lines) == 0 || lines[0]["hook"] != "resource_read" || lines[0]["plugin"] != BaselineID {
				t.Fatalf("log %v: want the baseline's resource_read line first", lines)
			}
			last := lines[len(lines)-1]
			outcome, _ := last["outcome"].(map[string]any)
			if !tc.wantOK && outcome["read"] != "deny" && last["error"] == nil {
				t.Errorf("last log line %v does not record the refusal", last)
			}
			if tc.wantOK && outcome["read"] != "allow" {
				t.Errorf("last log line %v does not record the allow", last)
			}
		})
	}
}

func testPromptGet(t *testing.T, ps map[string]Policy) {
	filter := PromptFilter(&ServerVerdict{DenyPrompts: []string{"secret-prompt"}})
	tests := []struct {
		name, prompt string
		wantOK       bool
		reason, by   string
		args         string
	}{
		{"allowed unchanged", "greet", true, "", "", `{"who":"you"}`},
		{"rewritten", "rewrite", true, "", "plugin:p@1", `{"topic":"policy"}`},
		{"a rewrite that is not an object of strings fails closed", "bad-rewrite", false, `policy plugin "p@1" hook prompt_get: malformed output: rewritten arguments are not a JSON object of strings`, "plugin:p@1", ""},
		{"denied by the policy", "deny", false, "no prompt for you", "plugin:p@1", ""},
		{"denied by the server's list", "secret-prompt", false, `prompt "secret-prompt" is denied on this server`, BaselineID, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(Options{})
			e.SetPolicies([]Policy{ps["old"]}, map[string]Policy{"p@1": ps["p@1"]})
			v := e.PromptGet(context.Background(), &abi.PromptGetInput{Thread: v2Thread(), Server: "lists", PluginID: "p@1", Name: tc.prompt, Arguments: abi.RawJSON(`{"who":"you"}`)}, filter)
			if v.Allowed != tc.wantOK || !strings.Contains(v.Reason, tc.reason) || v.DecidedBy != tc.by {
				t.Fatalf("verdict %+v; want allowed %v, reason %q, by %q", v, tc.wantOK, tc.reason, tc.by)
			}
			if tc.wantOK && string(v.Arguments) != tc.args {
				t.Fatalf("arguments %s, want %s", v.Arguments, tc.args)
			}
		})
	}
}

func testToolResult(t *testing.T, ps map[string]Policy) {
	const result = `{"content":[{"type":"text","text":"the SECRET is here"}]}`
	tests := []struct {
		name, tool string
		operator   []string
		plugin     string
		action     abi.ToolResultAction
		reason, by string
		result     string
	}{
		{"pass", "plain", []string{"corp"}, "p@1", abi.ToolResultPass, "", "", result},
		// The plugin policy sees the operator's rewrite (no marker left): it passes, and
		// the verdict names the operator.
		{"rewrite seen by the next policy", "redact", []string{"corp"}, "p@1", abi.ToolResultRewrite, "removed 1 marker", "operator:corp", `{"content":[{"type":"text","text":"the [gone] is here"}]}`},
		{"error", "refuse", []string{"corp"}, "p@1", abi.ToolResultError, "v2 refuses the result of refuse", "operator:corp", ""},
		{"a guest error fails closed", "fail", nil, "p@1", abi.ToolResultError, `policy plugin "p@1" hook tool_result: guest reported error: asked to fail`, "plugin:p@1", ""},
		{"a malformed rewrite fails closed", "bad-rewrite", []string{"corp"}, "", abi.ToolResultError, `policy plugin "corp" hook tool_result: malformed output: the rewritten result is not a JSON object`, "operator:corp", ""},
		{"a timeout fails closed", "spin", []string{"corp"}, "", abi.ToolResultError, `hook tool_result`, "operator:corp", ""},
		{"v1 and v2 modules without the hook have no opinion", "refuse", []string{"old"}, "block@1", abi.ToolResultPass, "", "", result},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var operator []Policy
			for _, id := range tc.operator {
				operator = append(operator, ps[id])
			}
			plugins := map[string]Policy{}
			if tc.plugin != "" {
				plugins["p@1"] = ps[tc.plugin]
			}
			var log bytes.Buffer
			e := NewEngine(Options{Log: NewLog(&log)})
			e.SetPolicies(operator, plugins)
			v := e.ToolResult(context.Background(), &abi.ToolResultInput{Thread: v2Thread(), Server: "lists", PluginID: "p@1", Tool: tc.tool, Arguments: abi.RawJSON(`{}`), Result: abi.RawJSON(result)})
			if v.Action != tc.action || !strings.Contains(v.Reason, tc.reason) || v.DecidedBy != tc.by || string(v.Result) != tc.result {
				t.Fatalf("verdict %v %q by %q result %s; want %v %q by %q result %s", v.Action, v.Reason, v.DecidedBy, v.Result, tc.action, tc.reason, tc.by, tc.result)
			}
			if tc.action == abi.ToolResultError && strings.Contains(v.Reason, "SECRET") {
				t.Fatalf("the error %q carries the upstream result", v.Reason)
			}
			lines := logLines(t, &log)
			if tc.by == "" && tc.action == abi.ToolResultPass && tc.tool == "refuse" && len(lines) != 0 {
				t.Fatalf("no policy has the hook, but the log has %d lines", len(lines))
			}
			for _, l := range lines {
				if l["hook"] != "tool_result" || !strings.HasPrefix(l["input"].(string), "sha256:") {
					t.Errorf("log line %v: want a tool_result line with an input digest", l)
				}
			}
			if strings.Contains(log.String(), "SECRET") || strings.Contains(log.String(), "gone") {
				t.Errorf("the decision log holds result content: %s", log.String())
			}
		})
	}
}

// testToolResultWithoutHookIsFree: with no policy implementing tool_result, deciding a
// result encodes, hashes and allocates nothing.
func testToolResultWithoutHookIsFree(t *testing.T, ps map[string]Policy) {
	e := NewEngine(Options{Log: NewLog(&bytes.Buffer{})})
	e.SetPolicies([]Policy{ps["old"]}, map[string]Policy{"p@1": ps["block@1"]})
	in := &abi.ToolResultInput{Thread: v2Thread(), Server: "s", PluginID: "p@1", Tool: "t", Result: abi.RawJSON(`{"content":[]}`)}
	if n := testing.AllocsPerRun(100, func() { e.ToolResult(context.Background(), in) }); n != 0 {
		t.Fatalf("%v allocations per result", n)
	}
}

func TestLogApproval(t *testing.T) {
	var log bytes.Buffer
	e := NewEngine(Options{Log: NewLog(&log)})
	e.LogApproval("t1", "fs", "delete_file", ApprovalDeclined, "declined by the user")
	lines := logLines(t, &log)
	if len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
	l := lines[0]
	if l["hook"] != "approval" || l["plugin"] != ApprovalID || l["thread"] != "t1" || l["server"] != "fs" || l["tool"] != "delete_file" ||
		l["outcome"].(map[string]any)["call"] != "declined" || l["reasons"].(map[string]any)["call"] != "declined by the user" {
		t.Fatalf("approval line %v", l)
	}
	NewEngine(Options{}).LogApproval("t1", "fs", "x", ApprovalAccepted, "") // no log: no effect, no panic
}
