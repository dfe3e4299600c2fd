package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestApprovalModes pins how Codex's approval keys decode into a ServerDecl and what
// ApprovalMode answers for a named and an unnamed tool.
func TestApprovalModes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		src         string // the body of [mcp_servers.docs], after `command`
		wantDefault ApprovalMode
		wantTools   map[string]ApprovalMode
		// wantSearch and wantOther are ApprovalMode of "search" and of "other" (a tool no
		// table names).
		wantSearch, wantOther ApprovalMode
		wantIgnored           []string
	}{{
		name:       "unset",
		wantSearch: ApprovalAuto, wantOther: ApprovalAuto,
	}, {
		name:        "server default",
		src:         `default_tools_approval_mode = "prompt"`,
		wantDefault: ApprovalPrompt,
		wantSearch:  ApprovalPrompt, wantOther: ApprovalPrompt,
	}, {
		name:        "per-tool override of the default",
		src:         "default_tools_approval_mode = \"prompt\"\n[mcp_servers.docs.tools.search]\napproval_mode = \"approve\"",
		wantDefault: ApprovalPrompt,
		wantTools:   map[string]ApprovalMode{"search": ApprovalApprove},
		wantSearch:  ApprovalApprove, wantOther: ApprovalPrompt,
	}, {
		name:       "per-tool only, inline tables",
		src:        `tools = { search = { approval_mode = "prompt" }, other = { approval_mode = "auto" } }`,
		wantTools:  map[string]ApprovalMode{"search": ApprovalPrompt, "other": ApprovalAuto},
		wantSearch: ApprovalPrompt, wantOther: ApprovalAuto,
	}, {
		name:       "Codex-only tool keys are ignored and listed",
		src:        "[mcp_servers.docs.tools.search]\noutput_token_limit = 500\n[mcp_servers.docs.tools.\"a.b\"]\napproval_mode = \"prompt\"\nfuture = true",
		wantTools:  map[string]ApprovalMode{"a.b": ApprovalPrompt},
		wantSearch: ApprovalAuto, wantOther: ApprovalAuto,
		wantIgnored: []string{"mcp_servers.docs.tools.search.output_token_limit", `mcp_servers.docs.tools."a.b".future`},
	}, {
		name:       "a tool table without approval_mode",
		src:        "[mcp_servers.docs.tools.search]",
		wantSearch: ApprovalAuto, wantOther: ApprovalAuto,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := "[mcp_servers.docs]\ncommand = \"docs\"\n" + tc.src + "\n"
			cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
			if err != nil {
				t.Fatal(err)
			}
			d, ok := cfg.Server("docs")
			if !ok {
				t.Fatal("server docs not loaded")
			}
			if d.DefaultToolsApprovalMode != tc.wantDefault {
				t.Errorf("DefaultToolsApprovalMode = %q, want %q", d.DefaultToolsApprovalMode, tc.wantDefault)
			}
			if diff := cmp.Diff(tc.wantTools, d.ToolApprovalModes); diff != "" {
				t.Errorf("ToolApprovalModes (-want +got):\n%s", diff)
			}
			if got := d.ApprovalMode("search"); got != tc.wantSearch {
				t.Errorf("ApprovalMode(search) = %q, want %q", got, tc.wantSearch)
			}
			if got := d.ApprovalMode("other"); got != tc.wantOther {
				t.Errorf("ApprovalMode(other) = %q, want %q", got, tc.wantOther)
			}
			if diff := cmp.Diff(tc.wantIgnored, cfg.Ignored); diff != "" {
				t.Errorf("Ignored (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApprovalModeErrors pins the error of every malformed approval key: it names the file,
// the line, the server's table (or the tool's), the key and the allowed values, and the
// server is not loaded (an approval setting that cannot be read must not turn into "auto").
func TestApprovalModeErrors(t *testing.T) {
	const want = `; want "auto", "prompt" or "approve"`
	for _, tc := range []struct {
		name    string
		src     string // the body of [mcp_servers.docs], from line 3
		want    string
		wantKey string
	}{{
		name:    "unknown default",
		src:     `default_tools_approval_mode = "ask"`,
		want:    "config.toml:3: mcp_servers.docs: `default_tools_approval_mode` is \"ask\"" + want,
		wantKey: "default_tools_approval_mode",
	}, {
		name:    "empty default",
		src:     `default_tools_approval_mode = ""`,
		want:    "config.toml:3: mcp_servers.docs: `default_tools_approval_mode` is \"\"" + want,
		wantKey: "default_tools_approval_mode",
	}, {
		name:    "case matters",
		src:     `default_tools_approval_mode = "Prompt"`,
		want:    "config.toml:3: mcp_servers.docs: `default_tools_approval_mode` is \"Prompt\"" + want,
		wantKey: "default_tools_approval_mode",
	}, {
		name:    "default of the wrong type",
		src:     `default_tools_approval_mode = true`,
		want:    "config.toml:3: mcp_servers.docs: `default_tools_approval_mode` must be a string, got boolean",
		wantKey: "default_tools_approval_mode",
	}, {
		name:    "unknown per-tool mode",
		src:     "[mcp_servers.docs.tools.search]\napproval_mode = \"never\"",
		want:    "config.toml:4: mcp_servers.docs.tools.search: `approval_mode` is \"never\"" + want,
		wantKey: "approval_mode",
	}, {
		name:    "per-tool mode of the wrong type",
		src:     "[mcp_servers.docs.tools.search]\napproval_mode = 1",
		want:    "config.toml:4: mcp_servers.docs.tools.search: `approval_mode` must be a string, got integer",
		wantKey: "approval_mode",
	}, {
		name:    "a typo of approval_mode",
		src:     "[mcp_servers.docs.tools.search]\naproval_mode = \"prompt\"",
		want:    "config.toml:4: mcp_servers.docs.tools.search: unknown key `aproval_mode` (did you mean `approval_mode`?)",
		wantKey: "aproval_mode",
	}, {
		name:    "tools not a table",
		src:     `tools = ["search"]`,
		want:    "config.toml:3: mcp_servers.docs: `tools` must be a table of per-tool tables, as in [mcp_servers.docs.tools.TOOL], got array",
		wantKey: "tools",
	}, {
		name: "a tool entry not a table",
		src:  `tools = { search = "prompt" }`,
		want: "config.toml:3: mcp_servers.docs.tools.search: must be a table with `approval_mode`, got string",
	}, {
		name: "an empty tool name",
		src:  "[mcp_servers.docs.tools.\"\"]\napproval_mode = \"prompt\"",
		want: "config.toml:3: mcp_servers.docs.tools.\"\": the tool name must not be empty",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := "[mcp_servers.docs]\ncommand = \"docs\"\n" + tc.src + "\n[mcp_servers.sibling]\ncommand = \"s\"\n"
			cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
			if diff := cmp.Diff([]string{tc.want}, errLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			var e *Error
			if errors.As(err, &e) && (e.Server != "docs" || e.Key != tc.wantKey) {
				t.Errorf("error server %q key %q, want docs and %q", e.Server, e.Key, tc.wantKey)
			}
			if diff := cmp.Diff([]string{"sibling"}, serverNames(cfg)); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckServerApprovalModes: the rule is shared, so a declaration decoded elsewhere (a
// plugin's .mcp.json) with an unknown mode is refused too.
func TestCheckServerApprovalModes(t *testing.T) {
	ok := &ServerDecl{Name: "x", Command: "c", DefaultToolsApprovalMode: ApprovalPrompt,
		ToolApprovalModes: map[string]ApprovalMode{"a": ApprovalAuto, "b": ApprovalApprove}}
	if p := CheckServer(ok); p != nil {
		t.Errorf("valid: %v", p)
	}
	bad := &ServerDecl{Name: "x", Command: "c", DefaultToolsApprovalMode: "always",
		ToolApprovalModes: map[string]ApprovalMode{"z": "", "": ApprovalAuto, "a b": "deny"}}
	want := []string{
		"`default_tools_approval_mode` is \"always\"; want \"auto\", \"prompt\" or \"approve\"",
		"`tools` contains an empty tool name",
		"`tools.\"a b\".approval_mode` is \"deny\"; want \"auto\", \"prompt\" or \"approve\"",
		"`tools.z.approval_mode` is \"\"; want \"auto\", \"prompt\" or \"approve\"",
	}
	if diff := cmp.Diff(want, CheckServer(bad)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFrontDoor(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      FrontDoor
		wantErr   []string
	}{
		{name: "unset", src: ""},
		{name: "empty table", src: "[front_door]\n"},
		{name: "prefixed", src: "[front_door]\ntool_names = \"prefixed\"\n", want: FrontDoor{ToolNames: ToolNamesPrefixed}},
		{name: "bare", src: "[front_door]\ntool_names = \"bare\"\n", want: FrontDoor{ToolNames: ToolNamesBare}},
		{name: "dotted key", src: "front_door.tool_names = \"bare\"\n", want: FrontDoor{ToolNames: ToolNamesBare}},
		{name: "unknown value", src: "[front_door]\ntool_names = \"short\"\n",
			wantErr: []string{"config.toml:2: front_door: `tool_names` is \"short\"; want \"prefixed\" or \"bare\""}},
		{name: "wrong type", src: "[front_door]\ntool_names = false\n",
			wantErr: []string{"config.toml:2: front_door: `tool_names` must be a string, got boolean"}},
		{name: "unknown key", src: "[front_door]\ntool_name = \"bare\"\n",
			wantErr: []string{"config.toml:2: front_door: unknown key `tool_name` (did you mean `tool_names`?)"}},
		{name: "not a table", src: "front_door = \"bare\"\n",
			wantErr: []string{"config.toml:1: `front_door` must be a table, got string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("config.toml", []byte(tc.src), hostOrigin)
			if diff := cmp.Diff(tc.wantErr, errLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if cfg.FrontDoor != tc.want {
				t.Errorf("FrontDoor = %+v, want %+v", cfg.FrontDoor, tc.want)
			}
			if len(cfg.Ignored) != 0 {
				t.Errorf("Ignored = %v", cfg.Ignored)
			}
		})
	}
}
