package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequirementsRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"url and command", `
[mcp_servers.a.identity]
url = "https://a.example/mcp"
command = "a"
`, []string{"requirements.toml:4: mcp_servers.a.identity: set exactly one of `url` and `command`, not both"}},
		{"neither", `
[mcp_servers.a.identity]
`, []string{"requirements.toml:2: mcp_servers.a.identity: set exactly one of `url` (streamable HTTP) and `command` (stdio)"}},
		{"no identity", `
[mcp_servers.a]
`, []string{"requirements.toml:2: mcp_servers.a: missing `identity`: add `[mcp_servers.a.identity]` with `url = \"...\"` or `command = \"...\"`"}},
		{"unknown server key", `
[mcp_servers.a]
identiy = { url = "https://a.example/mcp" }
`, []string{
			"requirements.toml:2: mcp_servers.a: missing `identity`: add `[mcp_servers.a.identity]` with `url = \"...\"` or `command = \"...\"`",
			"requirements.toml:3: mcp_servers.a: unknown key `identiy` (did you mean `identity`?)",
		}},
		{"unknown identity key", `
[mcp_servers.a.identity]
uri = "https://a.example/mcp"
`, []string{
			"requirements.toml:2: mcp_servers.a.identity: set exactly one of `url` (streamable HTTP) and `command` (stdio)",
			"requirements.toml:3: mcp_servers.a.identity: unknown key `uri` (did you mean `url`?)",
		}},
		{"wrong type", `
[mcp_servers.a.identity]
url = 1
`, []string{"requirements.toml:3: mcp_servers.a.identity: `url` must be a string, got integer"}},
		{"identity not a table", `
[mcp_servers.a]
identity = "https://a.example/mcp"
`, []string{"requirements.toml:3: mcp_servers.a: `identity` must be a table with `url` or `command`, got string"}},
		{"bad name", `
[mcp_servers."a b".identity]
command = "x"
`, []string{"requirements.toml:2: mcp_servers.\"a b\": invalid server name \"a b\": must match ^[A-Za-z0-9_-]+$"}},
		{"syntax", "[mcp_servers.a.identity\n", []string{"requirements.toml:1:24: syntax error: expected '.' or ']' to end table name, but got '\\n' instead"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseRequirements("requirements.toml", []byte(tt.src))
			if diff := cmp.Diff(tt.want, errLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			// Fails closed: a broken entry allows nothing.
			if req == nil || len(req.Servers) != 0 {
				t.Errorf("requirements = %+v", req)
			}
		})
	}
}

func TestRequirementsCheck(t *testing.T) {
	src := `approval_policy = "never"   # a Codex requirement; ignored
[mcp_servers.node_repl.identity]
url = "http://executor-only.invalid/mcp"

[mcp_servers.local_tool.identity]
command = "/usr/bin/local-tool"

[mcp_servers.bad.identity]
url = 1
`
	req, err := ParseRequirements("requirements.toml", []byte(src))
	if diff := cmp.Diff([]string{"requirements.toml:9: mcp_servers.bad.identity: `url` must be a string, got integer"}, errLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"approval_policy"}, req.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	tests := []struct {
		decl   ServerDecl
		allow  bool
		reason string
	}{
		{ServerDecl{Name: "node_repl", URL: "http://executor-only.invalid/mcp"}, true, ""},
		{ServerDecl{Name: "node_repl", URL: "http://executor-only.invalid/mcp/"}, false,
			`blocked by requirements: identity url "http://executor-only.invalid/mcp/" does not match the required "http://executor-only.invalid/mcp"`},
		{ServerDecl{Name: "node_repl", Command: "node"}, false,
			`blocked by requirements: identity command "node" does not match the required url "http://executor-only.invalid/mcp"`},
		{ServerDecl{Name: "local_tool", Command: "/usr/bin/local-tool", Args: []string{"--anything"}}, true, ""},
		{ServerDecl{Name: "local_tool", Command: "local-tool"}, false,
			`blocked by requirements: identity command "local-tool" does not match the required "/usr/bin/local-tool"`},
		{ServerDecl{Name: "local_tool", URL: "https://x/mcp"}, false,
			`blocked by requirements: identity url "https://x/mcp" does not match the required command "/usr/bin/local-tool"`},
		{ServerDecl{Name: "policy_unlisted", URL: "http://executor-only.invalid/mcp"}, false,
			`blocked by requirements: "policy_unlisted" is not listed`},
		{ServerDecl{Name: "bad", URL: "https://x/mcp"}, false, `blocked by requirements: "bad" is not listed`},
		{ServerDecl{Name: "node_repl"}, false, `blocked by requirements: identity command "" does not match the required url "http://executor-only.invalid/mcp"`},
	}
	for _, tt := range tests {
		allow, reason := req.Check(&tt.decl)
		if allow != tt.allow || reason != tt.reason {
			t.Errorf("Check(%s %s%s) = %v %q, want %v %q", tt.decl.Name, tt.decl.URL, tt.decl.Command, allow, reason, tt.allow, tt.reason)
		}
	}
}

func TestRequirementsEmptyDeniesAll(t *testing.T) {
	req, err := ParseRequirements("requirements.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if allow, reason := req.Check(&ServerDecl{Name: "a", Command: "a"}); allow || reason != `blocked by requirements: "a" is not listed` {
		t.Errorf("empty file: %v %q", allow, reason)
	}
}

func TestRequirementsMissingAllowsAll(t *testing.T) {
	req, err := LoadRequirements(filepath.Join(t.TempDir(), "requirements.toml"))
	if req != nil || err != nil {
		t.Fatalf("missing file = %v, %v; want nil, nil", req, err)
	}
	if allow, _ := req.Check(&ServerDecl{Name: "a", Command: "a"}); !allow {
		t.Error("nil requirements deny")
	}
}

func TestRequirementsUnreadableFailsClosed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requirements.toml")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory: exists, cannot be read
		t.Fatal(err)
	}
	req, err := LoadRequirements(path)
	if err == nil || req == nil {
		t.Fatalf("= %v, %v", req, err)
	}
	if allow, _ := req.Check(&ServerDecl{Name: "a", Command: "a"}); allow {
		t.Error("unreadable requirements allow")
	}
}
