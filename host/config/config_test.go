package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

var hostOrigin = Origin{Kind: OriginHostConfig}

// errLines renders err (nil: no lines) one problem per element.
func errLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error %v (%T) is not Errors", err, err)
	}
	return strings.Split(es.Error(), "\n")
}

func serverNames(c *Config) []string {
	var names []string
	for _, d := range c.Servers {
		names = append(names, d.Name)
	}
	return names
}

// TestConfigRules has one case per validation rule; each asserts the exact error text.
func TestConfigRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no transport", `
[mcp_servers.docs]
args = ["x"]
`, []string{"config.toml:2: mcp_servers.docs: neither `command` (stdio) nor `url` (streamable HTTP) is set"}},
		{"both transports", `
[mcp_servers.docs]
command = "docs"
url = "https://docs.example/mcp"
`, []string{"config.toml:4: mcp_servers.docs: both `command` and `url` are set; a server has exactly one transport"}},
		{"literal bearer token", `
[mcp_servers.remote]
url = "https://r.example/mcp"
bearer_token = "s3cret"
`, []string{"config.toml:4: mcp_servers.remote: key `bearer_token` is not supported: do not put a token in config; put it in an environment variable and name that variable with `bearer_token_env_var`"}},
		{"unknown key with suggestion", `
[mcp_servers.docs]
command = "docs"
agrs = ["x"]
`, []string{"config.toml:4: mcp_servers.docs: unknown key `agrs` (did you mean `args`?)"}},
		{"unknown key without suggestion", `
[mcp_servers.docs]
command = "docs"
flavour = "vanilla"
`, []string{"config.toml:4: mcp_servers.docs: unknown key `flavour`"}},
		{"unknown key with hint", `
[mcp_servers.docs]
url = "https://d.example/mcp"
headers = { A = "b" }
`, []string{"config.toml:4: mcp_servers.docs: unknown key `headers`: use `http_headers` (literal values) or `env_http_headers` (values read from environment variables)"}},
		{"args wrong type", `
[mcp_servers.docs]
command = "docs"
args = "x"
`, []string{"config.toml:4: mcp_servers.docs: `args` must be an array of strings, got string"}},
		{"args item wrong type", `
[mcp_servers.docs]
command = "docs"
args = ["a", 2]
`, []string{"config.toml:4: mcp_servers.docs: `args[1]` must be a string, got integer"}},
		{"command wrong type", `
[mcp_servers.docs]
command = ["docs"]
`, []string{"config.toml:3: mcp_servers.docs: `command` must be a string, got array"}},
		{"command empty", `
[mcp_servers.docs]
command = ""
`, []string{"config.toml:3: mcp_servers.docs: `command` must not be empty"}},
		{"env wrong value type", `
[mcp_servers.docs]
command = "docs"
[mcp_servers.docs.env]
MODE = 1
`, []string{"config.toml:4: mcp_servers.docs: `env.MODE` must be a string, got integer"}},
		{"env not a table", `
[mcp_servers.docs]
command = "docs"
env = ["MODE=ro"]
`, []string{"config.toml:4: mcp_servers.docs: `env` must be a table of strings, got array"}},
		{"stdio key on http server", `
[mcp_servers.remote]
url = "https://r.example/mcp"
args = []
cwd = "/srv"
`, []string{
			"config.toml:4: mcp_servers.remote: key `args` is only valid for stdio servers, but this server has `url`",
			"config.toml:5: mcp_servers.remote: key `cwd` is only valid for stdio servers, but this server has `url`",
		}},
		{"http key on stdio server", `
[mcp_servers.docs]
command = "docs"
bearer_token_env_var = "TOKEN"
oauth = { client_id = "x" }
`, []string{
			"config.toml:4: mcp_servers.docs: key `bearer_token_env_var` is only valid for streamable HTTP servers, but this server has `command`",
			"config.toml:5: mcp_servers.docs: key `oauth` is only valid for streamable HTTP servers, but this server has `command`",
		}},
		{"url scheme", `
[mcp_servers.remote]
url = "ftp://r.example/mcp"
`, []string{"config.toml:3: mcp_servers.remote: `url` \"ftp://r.example/mcp\" must start with http:// or https://"}},
		{"url without host", `
[mcp_servers.remote]
url = "http:///mcp"
`, []string{"config.toml:3: mcp_servers.remote: `url` \"http:///mcp\" has no host"}},
		{"server name with a space", `
[mcp_servers."my docs"]
command = "docs"
`, []string{"config.toml:2: mcp_servers.\"my docs\": invalid server name \"my docs\": must match ^[A-Za-z0-9_-]+$"}},
		{"server name with a dot", `
[mcp_servers."docs.v2"]
command = "docs"
`, []string{"config.toml:2: mcp_servers.\"docs.v2\": invalid server name \"docs.v2\": must match ^[A-Za-z0-9_-]+$"}},
		{"empty server name", `
[mcp_servers.""]
command = "docs"
`, []string{"config.toml:2: mcp_servers.\"\": invalid server name \"\": must match ^[A-Za-z0-9_-]+$"}},
		{"server not a table", `
[mcp_servers]
docs = "docs-mcp"
`, []string{"config.toml:3: mcp_servers.docs: must be a table, got string"}},
		{"mcp_servers not a table", `
mcp_servers = ["docs"]
`, []string{"config.toml:2: `mcp_servers` must be a table, got array"}},
		{"env_vars bad source", `
[mcp_servers.docs]
command = "docs"
env_vars = ["A", { name = "B", source = "host" }]
`, []string{"config.toml:4: mcp_servers.docs: `env_vars[1].source` is \"host\"; want \"local\" or \"remote\""}},
		{"env_vars unknown item key", `
[mcp_servers.docs]
command = "docs"
env_vars = [{ name = "B", sorce = "local" }]
`, []string{"config.toml:4: mcp_servers.docs: `env_vars[0]`: unknown key `sorce` (did you mean `source`?)"}},
		{"env_vars item without name", `
[mcp_servers.docs]
command = "docs"
env_vars = [{ source = "local" }]
`, []string{"config.toml:4: mcp_servers.docs: `env_vars[0]` has no `name`"}},
		{"env_vars wrong item type", `
[mcp_servers.docs]
command = "docs"
env_vars = [1]
`, []string{"config.toml:4: mcp_servers.docs: `env_vars[0]` must be a name or a {name, source} table, got integer"}},
		{"env_vars not an array", `
[mcp_servers.docs]
command = "docs"
env_vars = "TOKEN"
`, []string{"config.toml:4: mcp_servers.docs: `env_vars` must be an array of names or {name, source} tables, got string"}},
		{"empty tool name", `
[mcp_servers.docs]
command = "docs"
enabled_tools = ["search", ""]
`, []string{"config.toml:4: mcp_servers.docs: `enabled_tools[1]` must not be empty"}},
		{"enabled wrong type", `
[mcp_servers.docs]
command = "docs"
enabled = "yes"
`, []string{"config.toml:4: mcp_servers.docs: `enabled` must be true or false, got string"}},
		{"timeout wrong type", `
[mcp_servers.docs]
command = "docs"
tool_timeout_sec = "60"
`, []string{"config.toml:4: mcp_servers.docs: `tool_timeout_sec` must be a number of seconds, got string"}},
		{"timeout negative", `
[mcp_servers.docs]
command = "docs"
startup_timeout_sec = -1
`, []string{"config.toml:4: mcp_servers.docs: `startup_timeout_sec` must be greater than 0, got -1"}},
		{"timeout huge", `
[mcp_servers.docs]
command = "docs"
tool_timeout_sec = 1e12
`, []string{"config.toml:4: mcp_servers.docs: `tool_timeout_sec` must be at most 86400 (24h0m0s), got 1e+12"}},
		{"timeout nan", `
[mcp_servers.docs]
command = "docs"
tool_timeout_sec = nan
`, []string{"config.toml:4: mcp_servers.docs: `tool_timeout_sec` must be a finite number, got NaN"}},
		{"timeout sec and ms", `
[mcp_servers.docs]
command = "docs"
startup_timeout_sec = 10
startup_timeout_ms = 10000
`, []string{"config.toml:5: mcp_servers.docs: set `startup_timeout_sec` or the legacy `startup_timeout_ms`, not both"}},
		{"timeout ms float", `
[mcp_servers.docs]
command = "docs"
startup_timeout_ms = 1.5
`, []string{"config.toml:4: mcp_servers.docs: `startup_timeout_ms` must be an integer number of milliseconds, got float"}},
		{"oauth unknown key", `
[mcp_servers.remote]
url = "https://r.example/mcp"
oauth = { clientId = "x" }
`, []string{"config.toml:4: mcp_servers.remote.oauth: unknown key `clientId` (did you mean `client_id`?)"}},
		{"oauth port range", `
[mcp_servers.remote]
url = "https://r.example/mcp"
[mcp_servers.remote.oauth]
callback_port = 70000
`, []string{"config.toml:5: mcp_servers.remote.oauth: `callback_port` must be between 1 and 65535, got 70000"}},
		{"oauth callback port range", `mcp_oauth_callback_port = 0
`, []string{"config.toml:1: `mcp_oauth_callback_port` must be between 1 and 65535, got 0"}},
		{"oauth keyring store", `mcp_oauth_credentials_store = "keyring"
`, []string{"config.toml:1: `mcp_oauth_credentials_store` is \"keyring\"; warden keeps OAuth logins in a file only: set \"file\" or remove the key"}},
		{"oauth metadata url", `mcp_oauth_client_metadata_url = "http://warden.example/client.json"
`, []string{"config.toml:1: `mcp_oauth_client_metadata_url` must be an https URL with a path (where warden's client ID metadata document is served)"}},
		{"scopes twice", `
[mcp_servers.remote]
url = "https://r.example/mcp"
scopes = ["a"]
oauth = { scopes = ["b"] }
`, []string{"config.toml:4: mcp_servers.remote: set `scopes` or `oauth.scopes`, not both"}},
		{"header name", `
[mcp_servers.remote]
url = "https://r.example/mcp"
http_headers = { "X Team" = "blue" }
`, []string{"config.toml:4: mcp_servers.remote: `http_headers.\"X Team\"` is not a valid HTTP header name (\"X Team\")"}},
		{"header value injection", `
[mcp_servers.remote]
url = "https://r.example/mcp"
http_headers = { X-Team = "blue\r\nX-Evil: 1" }
`, []string{"config.toml:4: mcp_servers.remote: `http_headers.X-Team` contains a line break or NUL, which is not allowed in an HTTP header value"}},
		{"env header variable", `
[mcp_servers.remote]
url = "https://r.example/mcp"
env_http_headers = { X-Key = "" }
`, []string{"config.toml:4: mcp_servers.remote: `env_http_headers.X-Key` names no environment variable: must not be empty"}},
		{"environment twice", `
[mcp_servers.remote]
url = "https://r.example/mcp"
environment_id = "exec-1"
experimental_environment = "exec-1"
`, []string{"config.toml:5: mcp_servers.remote: set `environment_id` or `experimental_environment` (its Codex name), not both"}},
		{"plugins unknown key", `
[plugins]
dir = ["p"]
`, []string{"config.toml:3: plugins: unknown key `dir` (did you mean `dirs`?)"}},
		{"plugins dirs type", `
[plugins]
dirs = "p"
`, []string{"config.toml:3: plugins: `dirs` must be an array of strings, got string"}},
		{"plugins not a table", `
plugins = ["p"]
`, []string{"config.toml:2: `plugins` must be a table, got array"}},
		{"tilde user", `
[plugins]
dirs = ["~bob/plugins"]
`, []string{"config.toml:3: plugins: `dirs[0]` \"~bob/plugins\": `~user` paths are not supported; write the path out"}},
		{"policy without path", `
[[policies]]
sha256 = "` + strings.Repeat("ab", 32) + `"
`, []string{"config.toml:2: policies[0]: `path` is required"}},
		{"policy bad pin", `
[[policies]]
path = "a.wasm"

[[policies]]
path = "b.wasm"
sha256 = "xyz"
`, []string{"config.toml:7: policies[1]: `sha256` must be 64 hexadecimal digits, got \"xyz\""}},
		{"policy unknown key", `
[[policies]]
path = "a.wasm"
sha = "x"
`, []string{"config.toml:4: policies[0]: unknown key `sha` (did you mean `sha256`?)"}},
		{"policies not tables", `
policies = ["a.wasm"]
`, []string{"config.toml:2: `policies` must be an array of tables ([[policies]]), got array"}},
		{"memory negative", `
[policy_limits]
memory_mb = -64
`, []string{"config.toml:3: policy_limits: `memory_mb` must be between 1 and 4096 (MiB), got -64"}},
		{"memory absurd", `
[policy_limits]
memory_mb = 1048576
`, []string{"config.toml:3: policy_limits: `memory_mb` must be between 1 and 4096 (MiB), got 1048576"}},
		{"timeout absurd", `
[policy_limits]
timeout_ms = 3600000
`, []string{"config.toml:3: policy_limits: `timeout_ms` must be between 1 and 60000 (ms), got 3600000"}},
		{"limits float", `
[policy_limits]
timeout_ms = 50.0
`, []string{"config.toml:3: policy_limits: `timeout_ms` must be an integer, got float"}},
		{"limits unknown key", `
[policy_limits]
memory = 64
`, []string{"config.toml:3: policy_limits: unknown key `memory` (did you mean `memory_mb`?)"}},
		{"decision log empty", `
[decision_log]
path = ""
`, []string{"config.toml:3: decision_log: `path` must not be empty"}},
		{"decision log unknown key", `
[decision_log]
file = "d.jsonl"
`, []string{"config.toml:3: decision_log: unknown key `file`"}},
		{"decision log negative size", `
[decision_log]
path = "d.jsonl"
max_size_mb = -1
`, []string{"config.toml:4: decision_log: `max_size_mb` must be between 0 (never rotate) and 1048576 (MiB), got -1"}},
		{"decision log size float", `
[decision_log]
max_size_mb = 1.5
`, []string{"config.toml:3: decision_log: `max_size_mb` must be an integer, got float"}},
		{"decision log keep zero", `
[decision_log]
keep = 0
`, []string{"config.toml:3: decision_log: `keep` must be between 1 and 1000 (files), got 0"}},
		{"decision log keep typo", `
[decision_log]
kept = 3
`, []string{"config.toml:3: decision_log: unknown key `kept` (did you mean `keep`?)"}},
		{"syntax error", `
[mcp_servers.docs]
command = "docs
`, []string{"config.toml:3:16: syntax error: strings cannot contain newlines"}},
		{"nesting too deep", "\n[mcp_servers.docs]\ncommand = \"docs\"\nx = " + strings.Repeat("[", 11) + strings.Repeat("]", 11) + "\n",
			[]string{"config.toml:4: tables and arrays are nested more than 10 deep"}},
		{"dotted key too long", "\n[mcp_servers.docs]\ncommand = \"docs\"\n" + strings.Repeat("a.", 11) + "b = 1\n",
			[]string{"config.toml:4: a key has more than 11 dotted parts"}},
		{"dots and brackets in strings, comments and floats do not count", `
[mcp_servers.docs]
command = "a.b.c.d.e.f.g.h.i.j.k.l.m"
args = ['''
a.b.c.d.e.f.g.h.i.j.k.l.m.n''', "[[[[[[[[[[[[", """[[[[[[[[[[[[
a.b.c.d.e.f.g.h.i.j.k.l.m.n"""] # [[[[[[[[[[[[ a.b.c.d.e.f.g.h.i.j.k.l
startup_timeout_sec = 1.5
cwd = '/a.b.c.d.e.f.g.h.i.j.k.l.m.n'
`, nil},
		{"duplicate key is a syntax error", `
[mcp_servers.docs]
command = "a"
command = "b"
`, []string{"config.toml:4:1: syntax error: Key 'mcp_servers.docs.command' has already been defined."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig("config.toml", []byte(tt.src), hostOrigin)
			if cfg == nil {
				t.Fatal("nil *Config")
			}
			if diff := cmp.Diff(tt.want, errLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBadServerKeepsSiblings: every broken server is reported, every valid one is returned.
func TestBadServerKeepsSiblings(t *testing.T) {
	src := `model = "gpt-5"

[mcp_servers.first]
command = "first-mcp"

[mcp_servers.broken_type]
command = "x"
args = "--stdio"

[mcp_servers.middle]
url = "https://middle.example/mcp"

[mcp_servers.mixed]
url = "https://mixed.example/mcp"
env_vars = ["TOKEN"]
bearer_token = "literal"

[mcp_servers.empty]

[mcp_servers.last]
command = "last-mcp"
`
	cfg, err := ParseConfig("/etc/warden/config.toml", []byte(src), hostOrigin)
	want := []string{
		"/etc/warden/config.toml:8: mcp_servers.broken_type: `args` must be an array of strings, got string",
		"/etc/warden/config.toml:15: mcp_servers.mixed: key `env_vars` is only valid for stdio servers, but this server has `url`",
		"/etc/warden/config.toml:16: mcp_servers.mixed: key `bearer_token` is not supported: do not put a token in config; put it in an environment variable and name that variable with `bearer_token_env_var`",
		"/etc/warden/config.toml:18: mcp_servers.empty: neither `command` (stdio) nor `url` (streamable HTTP) is set",
	}
	if diff := cmp.Diff(want, errLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first", "middle", "last"}, serverNames(cfg)); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	var first *Error
	if !errors.As(err, &first) || first.Server != "broken_type" || first.Key != "args" || first.Line != 8 {
		t.Errorf("errors.As first = %+v", first)
	}
	for _, d := range cfg.Servers {
		if p := CheckServer(&d); p != nil {
			t.Errorf("returned server %s fails CheckServer: %v", d.Name, p)
		}
	}
}

// TestRoundTripEveryKey decodes every server key and every section.
func TestRoundTripEveryKey(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory:", err)
	}
	src := `
[mcp_servers.docs]                 # stdio
command = "docs-mcp"
args = ["--stdio", ""]
env = { MODE = "ro" }
env_vars = ["DOCS_TOKEN", { name = "OTHER", source = "remote" }, { name = "THIRD" }]
cwd = "./srv"
startup_timeout_sec = 10
tool_timeout_sec = 60.5
enabled_tools = ["search"]
disabled_tools = []
required = true
enabled = false
environment_id = "local"

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "blue" }
env_http_headers = { "X-Key" = "REMOTE_KEY" }
environment_id = "exec-1"
oauth = { client_id = "preregistered", callback_port = 8765, scopes = ["read", "write"] }
oauth_resource = "https://mcp.example.com"
startup_timeout_ms = 2500
supports_parallel_tool_calls = true

[mcp_servers.codex_style]
url = "https://c.example/mcp"
experimental_environment = "exec-2"
scopes = ["s"]

[plugins]
dirs = ["~/.warden/plugins", "plugins", "/opt/warden/plugins/"]

[[policies]]
path = "policies/corp.wasm"
sha256 = "` + strings.Repeat("AB", 32) + `"

[[policies]]
path = "/abs/other.wasm"

[policy_limits]
memory_mb = 128
timeout_ms = 20

[decision_log]
path = "logs/decisions.jsonl"

[front_door]
tool_names = "bare"

[mcp_servers.codex_style.tools.search]
approval_mode = "prompt"
output_token_limit = 1000
`
	origin := Origin{Kind: OriginExecutorConfig, Environment: "exec-1"}
	cfg, err := ParseConfig("/srv/warden/config.toml", []byte(src), origin)
	if err != nil {
		t.Fatal(err)
	}
	const file = "/srv/warden/config.toml"
	want := &Config{
		File:   file,
		Origin: origin,
		Servers: []ServerDecl{{
			Name:    "docs",
			Origin:  origin,
			Pos:     Position{File: file, Line: 2},
			Command: "docs-mcp", Args: []string{"--stdio", ""},
			Env:            map[string]string{"MODE": "ro"},
			EnvVars:        []EnvVar{{Name: "DOCS_TOKEN"}, {Name: "OTHER", Source: "remote"}, {Name: "THIRD"}},
			Cwd:            "/srv/warden/srv",
			StartupTimeout: 10 * time.Second, ToolTimeout: 60500 * time.Millisecond,
			EnabledTools: []string{"search"}, DisabledTools: []string{},
			Required: true, Enabled: false, EnvironmentID: "local",
		}, {
			Name:   "remote",
			Origin: origin,
			Pos:    Position{File: file, Line: 16},
			URL:    "https://mcp.example.com/mcp", BearerTokenEnvVar: "REMOTE_TOKEN",
			HTTPHeaders:    map[string]string{"X-Team": "blue"},
			EnvHTTPHeaders: map[string]string{"X-Key": "REMOTE_KEY"},
			EnvironmentID:  "exec-1",
			OAuth:          &OAuth{ClientID: "preregistered", CallbackPort: 8765, Scopes: []string{"read", "write"}, Resource: "https://mcp.example.com"},
			StartupTimeout: 2500 * time.Millisecond,
			Enabled:        true,
		}, {
			Name:   "codex_style",
			Origin: origin,
			Pos:    Position{File: file, Line: 27},
			URL:    "https://c.example/mcp", EnvironmentID: "exec-2",
			OAuth:             &OAuth{Scopes: []string{"s"}},
			Enabled:           true,
			ToolApprovalModes: map[string]ApprovalMode{"search": ApprovalPrompt},
		}},
		Plugins: Plugins{Dirs: []string{filepath.Join(home, ".warden/plugins"), "/srv/warden/plugins", "/opt/warden/plugins"}},
		Policies: []PolicyRef{
			{Path: "/srv/warden/policies/corp.wasm", SHA256: strings.Repeat("ab", 32), Pos: Position{File: file, Line: 35}},
			{Path: "/abs/other.wasm", Pos: Position{File: file, Line: 39}},
		},
		PolicyLimits: PolicyLimits{MemoryMB: 128, TimeoutMS: 20},
		DecisionLog:  DecisionLog{Path: "/srv/warden/logs/decisions.jsonl"},
		FrontDoor:    FrontDoor{ToolNames: ToolNamesBare},
		Ignored: []string{"mcp_servers.remote.supports_parallel_tool_calls",
			"mcp_servers.codex_style.tools.search.output_token_limit"},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestEnvVarsShapes(t *testing.T) {
	src := `
[mcp_servers.a]
command = "a"
env_vars = ["PLAIN", { name = "TABLED" }, { name = "LOCAL", source = "local" }, { name = "REMOTE", source = "remote" }]

[mcp_servers.b]
command = "b"
[[mcp_servers.b.env_vars]]
name = "FROM_ARRAY_OF_TABLES"
source = "remote"
`
	cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Server("a")
	b, _ := cfg.Server("b")
	if diff := cmp.Diff([]EnvVar{{Name: "PLAIN"}, {Name: "TABLED"}, {Name: "LOCAL", Source: "local"}, {Name: "REMOTE", Source: "remote"}}, a.EnvVars); diff != "" {
		t.Errorf("a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]EnvVar{{Name: "FROM_ARRAY_OF_TABLES", Source: "remote"}}, b.EnvVars); diff != "" {
		t.Errorf("b (-want +got):\n%s", diff)
	}
}

func TestTimeouts(t *testing.T) {
	tests := []struct {
		keys          string
		startup, tool time.Duration
	}{
		{"startup_timeout_sec = 10", 10 * time.Second, 0},
		{"startup_timeout_sec = 0.25", 250 * time.Millisecond, 0},
		{"startup_timeout_ms = 1500", 1500 * time.Millisecond, 0},
		{"tool_timeout_sec = 60", 0, time.Minute},
		{"tool_timeout_sec = 1.5", 0, 1500 * time.Millisecond},
		{"startup_timeout_sec = 86400\ntool_timeout_sec = 86400.0", 24 * time.Hour, 24 * time.Hour},
		{"", 0, 0},
	}
	for _, tt := range tests {
		src := "[mcp_servers.s]\ncommand = \"s\"\n" + tt.keys + "\n"
		cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
		if err != nil {
			t.Errorf("%q: %v", tt.keys, err)
			continue
		}
		d := cfg.Servers[0]
		if d.StartupTimeout != tt.startup || d.ToolTimeout != tt.tool {
			t.Errorf("%q: startup %v tool %v, want %v %v", tt.keys, d.StartupTimeout, d.ToolTimeout, tt.startup, tt.tool)
		}
	}
	for _, bad := range []string{"startup_timeout_sec = 0", "tool_timeout_sec = -0.5", "startup_timeout_ms = 0", "tool_timeout_sec = inf", "startup_timeout_sec = 86401", "tool_timeout_sec = 1e-12", "tool_timeout_sec = true"} {
		src := "[mcp_servers.s]\ncommand = \"s\"\n" + bad + "\n"
		if cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin); err == nil || len(cfg.Servers) != 0 {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// TestPositions pins Pos for every shape of server table and for [[policies]].
func TestPositions(t *testing.T) {
	src := `# comment
[mcp_servers.a]
command = "a"

[mcp_servers.implicit.env]   # no [mcp_servers.implicit] header
X = "y"

[mcp_servers]
inline = { url = "https://i.example/mcp" }

[mcp_servers.c]
url = """https://c.example/mcp"""

[[policies]]
path = """
[[policies]]
"""
[[policies]]   # the string above is not a header
path = 'p[[x]]'
sha256 = "zz"
`
	cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
	want := []string{
		"config.toml:5: mcp_servers.implicit: neither `command` (stdio) nor `url` (streamable HTTP) is set",
		"config.toml:20: policies[1]: `sha256` must be 64 hexadecimal digits, got \"zz\"",
	}
	if diff := cmp.Diff(want, errLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	got := map[string]int{}
	for _, d := range cfg.Servers {
		got[d.Name] = d.Pos.Line
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "inline": 9, "c": 11}, got); diff != "" {
		t.Errorf("server lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "inline", "c"}, serverNames(cfg)); diff != "" {
		t.Errorf("server order (-want +got):\n%s", diff)
	}
	if len(cfg.Policies) != 1 || cfg.Policies[0].Pos.Line != 14 {
		t.Errorf("policies = %+v", cfg.Policies)
	}

	// An inline array of policies: every entry is placed at the `policies` key.
	cfg, err = ParseConfig("config.toml", []byte("\npolicies = [\n {path = \"a\"},\n {path = 1},\n]\n"), hostOrigin)
	if diff := cmp.Diff([]string{"config.toml:2: policies[1]: `path` must be a string, got integer"}, errLines(t, err)); diff != "" {
		t.Errorf("inline policies (-want +got):\n%s", diff)
	}
	if len(cfg.Policies) != 1 || cfg.Policies[0].Pos.Line != 2 {
		t.Errorf("inline policies = %+v", cfg.Policies)
	}
}

func TestIgnoredCodexKeys(t *testing.T) {
	src := `model = "gpt-5"
approval_policy = "never"
[features]
rmcp_client = true
[mcp_servers.docs]
command = "docs"
supports_parallel_tool_calls = true
tools = { search = { approval_mode = "approve", output_token_limit = 100 } }
default_tools_approval_mode = "prompt"
[profiles.fast]
model = "gpt-5-mini"
`
	cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"model", "approval_policy", "features", "mcp_servers.docs.supports_parallel_tool_calls",
		"mcp_servers.docs.tools.search.output_token_limit", "profiles"}
	if diff := cmp.Diff(want, cfg.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

func TestOAuthSettings(t *testing.T) {
	src := "mcp_oauth_callback_port = 8765\nmcp_oauth_credentials_store = \"file\"\nmcp_oauth_client_metadata_url = \"https://warden.example/client.json\"\n"
	cfg, err := ParseConfig("config.toml", []byte(src), hostOrigin)
	if err != nil {
		t.Fatal(err)
	}
	want := OAuthSettings{CallbackPort: 8765, CredentialsStore: "file", ClientMetadataURL: "https://warden.example/client.json"}
	if cfg.OAuth != want || len(cfg.Ignored) != 0 {
		t.Errorf("oauth = %+v, ignored %v", cfg.OAuth, cfg.Ignored)
	}
}

func TestPolicyLimitsDefaults(t *testing.T) {
	if got := (PolicyLimits{}).WithDefaults(); got != (PolicyLimits{MemoryMB: 64, TimeoutMS: 50}) {
		t.Errorf("defaults = %+v", got)
	}
	if got := (PolicyLimits{MemoryMB: 8}).WithDefaults(); got != (PolicyLimits{MemoryMB: 8, TimeoutMS: 50}) {
		t.Errorf("partial = %+v", got)
	}
}

func TestDecisionLogStderr(t *testing.T) {
	for _, p := range []string{"-", "stderr"} {
		cfg, err := ParseConfig("/etc/warden/config.toml", []byte("[decision_log]\npath = \""+p+"\"\n"), hostOrigin)
		if err != nil || cfg.DecisionLog.Path != p || !cfg.DecisionLog.Stderr() {
			t.Errorf("%q: %+v %v", p, cfg.DecisionLog, err)
		}
	}
}

func TestDecisionLogRotation(t *testing.T) {
	zero, ten := 0, 10
	for _, tc := range []struct {
		name, src string
		want      DecisionLog
		maxBytes  int64
		keep      int
	}{
		{"defaults", `path = "d.jsonl"`, DecisionLog{Path: "/etc/warden/d.jsonl"}, 64 << 20, 5},
		{"set", "path = \"d.jsonl\"\nmax_size_mb = 10\nkeep = 2", DecisionLog{Path: "/etc/warden/d.jsonl", MaxSizeMB: &ten, Keep: 2}, 10 << 20, 2},
		{"never rotate", "path = \"d.jsonl\"\nmax_size_mb = 0", DecisionLog{Path: "/etc/warden/d.jsonl", MaxSizeMB: &zero}, 0, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("/etc/warden/config.toml", []byte("[decision_log]\n"+tc.src+"\n"), hostOrigin)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.DecisionLog); diff != "" {
				t.Errorf("decision log (-want +got):\n%s", diff)
			}
			if got := cfg.DecisionLog.MaxBytes(); got != tc.maxBytes {
				t.Errorf("MaxBytes = %d, want %d", got, tc.maxBytes)
			}
			if got := cfg.DecisionLog.KeepFiles(); got != tc.keep {
				t.Errorf("KeepFiles = %d, want %d", got, tc.keep)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("[plugins]\ndirs = [\"plugins\"]\n[mcp_servers.s]\ncommand = \"s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path, hostOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Plugins.Dirs[0] != filepath.Join(dir, "plugins") || cfg.Servers[0].Pos != (Position{File: path, Line: 3}) {
		t.Errorf("cfg = %+v", cfg)
	}

	// A relative config path still resolves relative dirs absolutely.
	t.Chdir(dir)
	cfg, err = LoadConfig("config.toml", hostOrigin)
	if err != nil || cfg.Plugins.Dirs[0] != filepath.Join(dir, "plugins") || cfg.File != "config.toml" {
		t.Errorf("relative: %+v %v", cfg, err)
	}

	cfg, err = LoadConfig(filepath.Join(dir, "missing.toml"), hostOrigin)
	if !errors.Is(err, fs.ErrNotExist) || cfg == nil {
		t.Errorf("missing: %v %v", cfg, err)
	}
	if want := filepath.Join(dir, "missing.toml") + ": cannot read: no such file or directory"; err.Error() != want {
		t.Errorf("missing: %q, want %q", err, want)
	}

	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("# padding\n", maxFileSize/10+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(big, hostOrigin); err == nil || !strings.Contains(err.Error(), "the limit is 262144") {
		t.Errorf("big: %v", err)
	}
}

func TestSyntaxErrorUnwraps(t *testing.T) {
	_, err := ParseConfig("config.toml", []byte("a = \n"), hostOrigin)
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%v does not wrap toml.ParseError", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Line != 1 || e.Column == 0 {
		t.Errorf("error = %+v", e)
	}
	if _, err := ParseConfig("config.toml", []byte("a = \"\xff\"\n"), hostOrigin); err == nil || err.Error() != "config.toml:1: syntax error: invalid UTF-8" {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestCheckServerShared(t *testing.T) {
	if p := CheckServer(&ServerDecl{Name: "x", Command: "c", Enabled: true}); p != nil {
		t.Errorf("valid stdio: %v", p)
	}
	got := CheckServer(&ServerDecl{Name: "x", URL: "https://h/mcp", Cwd: "/x", EnvVars: []EnvVar{{Source: "elsewhere"}}})
	want := []string{
		"key `env_vars` is only valid for stdio servers, but this server has `url`",
		"key `cwd` is only valid for stdio servers, but this server has `url`",
		"env_vars[0] has no name",
		"env_vars[0] () has source \"elsewhere\"; want \"local\" or \"remote\"",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSuggest(t *testing.T) {
	for k, want := range map[string]string{
		"comand": "command", "urls": "url", "env_var": "env_vars", "startup_timeout": "startup_timeout_sec",
		"environment": "environment_id", "x": "", "completely_different": "", "ur": "url",
	} {
		if got := suggest(k, serverKeys()); got != want {
			t.Errorf("suggest(%q) = %q, want %q", k, got, want)
		}
	}
}

// TestLargeConfig: positions of thousands of servers come from one scan of the source, not
// one library lookup (a pass over the file) each.
func TestLargeConfig(t *testing.T) {
	var b strings.Builder
	n := 0
	for b.Len() < maxFileSize-100 {
		fmt.Fprintf(&b, "[mcp_servers.s%d]\ncommand = \"x\"\n", n)
		n++
	}
	start := time.Now()
	cfg, err := ParseConfig("config.toml", []byte(b.String()), hostOrigin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d servers in %v", n, time.Since(start))
	if len(cfg.Servers) != n || cfg.Servers[n-1].Pos.Line != 2*n-1 {
		t.Errorf("%d servers, last at %v", len(cfg.Servers), cfg.Servers[len(cfg.Servers)-1].Pos)
	}
}

func TestTooManyProblems(t *testing.T) {
	var b strings.Builder
	for i := range maxProblems + 5 {
		fmt.Fprintf(&b, "[mcp_servers.s%d]\n", i)
	}
	cfg, err := ParseConfig("config.toml", []byte(b.String()), hostOrigin)
	lines := errLines(t, err)
	if len(lines) != maxProblems+1 || lines[maxProblems] != "config.toml: ... and 5 more problems" || len(cfg.Servers) != 0 {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
