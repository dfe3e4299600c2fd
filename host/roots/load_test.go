package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/warden-mcp/warden/host/config"
)

const codexDemo = `{"name":"demo","version":"1"}`

// loadCase is one Load rule: a root's files (relative to the root "demo"), files outside it
// (relative to a sibling "outside"), and what must come out. In expectations {DIR} is the
// root's resolved directory and {OUT} the outside directory.
type loadCase struct {
	name      string
	files     map[string]string
	outside   map[string]string
	opts      Options
	status    Status
	id        string
	err       string   // exact Root.Err text ("" for nil)
	serverErr []string // exact ServerErrors texts
	servers   []string // names of the usable servers
	check     func(t *testing.T, r *Root, dir string)
}

func runLoadCases(t *testing.T, cases []loadCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := tempDir(t)
			dir := filepath.Join(base, "demo")
			out := filepath.Join(base, "outside")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			layout(t, dir, out, tc.files)
			layout(t, out, out, tc.outside)
			r := Load(dir, tc.opts)
			rep := strings.NewReplacer("{DIR}", dir, "{OUT}", out, "{BASE}", base)

			if r.Status != tc.status {
				t.Errorf("Status = %q, want %q (Err: %v; ServerErrors: %q)", r.Status, tc.status, r.Err, errStrings(r.ServerErrors))
			}
			if tc.id != "" && r.ID != tc.id {
				t.Errorf("ID = %q, want %q", r.ID, tc.id)
			}
			gotErr := ""
			if r.Err != nil {
				gotErr = r.Err.Error()
			}
			if want := rep.Replace(tc.err); gotErr != want {
				t.Errorf("Err =\n  %s\nwant\n  %s", gotErr, want)
			}
			var wantServerErr []string
			for _, e := range tc.serverErr {
				wantServerErr = append(wantServerErr, rep.Replace(e))
			}
			if diff := cmp.Diff(wantServerErr, errStrings(r.ServerErrors)); diff != "" {
				t.Errorf("ServerErrors (-want +got):\n%s", diff)
			}
			var names []string
			for _, d := range r.Servers {
				names = append(names, d.Name)
				if p := config.CheckServer(&d); len(p) > 0 {
					t.Errorf("server %s fails CheckServer: %q", d.Name, p)
				}
				if d.Origin != (config.Origin{Kind: config.OriginPlugin, Environment: "local", PluginID: r.ID}) && tc.opts.Environment == "" {
					t.Errorf("server %s Origin = %+v", d.Name, d.Origin)
				}
			}
			if diff := cmp.Diff(tc.servers, names); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if r.Status == StatusError && (len(r.Servers) != 0 || r.Policy != nil) {
				t.Errorf("a root in error exposes servers or a policy")
			}
			if r.Fingerprint == "" || r.LoadedAt.IsZero() {
				t.Errorf("Fingerprint/LoadedAt not set")
			}
			if tc.check != nil {
				tc.check(t, r, dir)
			}
		})
	}
}

func TestLoadManifests(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "codex manifest and wrapped .mcp.json",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"demo","version":"1","description":"A demo","author":{"name":"x"},"skills":"./skills/","interface":{"displayName":"Demo"}}`,
				".mcp.json": `{
  "mcpServers": {
    "demo": {
      "command": "./bin/demo",
      "env_vars": ["TOKEN", {"name": "OTHER", "source": "remote"}],
      "startup_timeout_sec": 1.5
    }
  }
}`,
				"bin/demo": "#!/bin/sh\n",
			},
			status: StatusOK, id: "demo@1", servers: []string{"demo"},
			check: func(t *testing.T, r *Root, dir string) {
				want := config.ServerDecl{
					Name:           "demo",
					Origin:         config.Origin{Kind: config.OriginPlugin, Environment: "local", PluginID: "demo@1"},
					Pos:            config.Position{File: filepath.Join(dir, ".mcp.json"), Line: 3},
					Command:        filepath.Join(dir, "bin/demo"),
					EnvVars:        []config.EnvVar{{Name: "TOKEN"}, {Name: "OTHER", Source: "remote"}},
					Enabled:        true,
					StartupTimeout: 1500 * time.Millisecond,
				}
				if diff := cmp.Diff(want, r.Servers[0]); diff != "" {
					t.Errorf("server (-want +got):\n%s", diff)
				}
				if r.Name != "demo" || r.Version != "1" || r.Description != "A demo" {
					t.Errorf("Name/Version/Description = %q/%q/%q", r.Name, r.Version, r.Description)
				}
				if r.ManifestPath != filepath.Join(dir, CodexManifest) || r.Dir != dir || r.Policy != nil {
					t.Errorf("ManifestPath %q, Dir %q, Policy %v", r.ManifestPath, r.Dir, r.Policy)
				}
			},
		},
		{
			name: "claude manifest is the fallback",
			files: map[string]string{
				".claude-plugin/plugin.json": `{"name":"claude-demo","version":"2.0.1","commands":["./x.md"]}`,
				".mcp.json":                  `{"s":{"command":"npx","args":["-y","pkg"]}}`,
			},
			status: StatusOK, id: "claude-demo@2.0.1", servers: []string{"s"},
			check: func(t *testing.T, r *Root, dir string) {
				if r.ManifestPath != filepath.Join(dir, ClaudeManifest) {
					t.Errorf("ManifestPath = %q", r.ManifestPath)
				}
			},
		},
		{
			name: "codex manifest wins over claude",
			files: map[string]string{
				".codex-plugin/plugin.json":  `{"name":"codex","version":"1"}`,
				".claude-plugin/plugin.json": `{"name":"claude","version":"1"}`,
			},
			status: StatusOK, id: "codex@1",
		},
		{
			name:   "no version: the id is the name",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"executor-demo"}`},
			status: StatusOK, id: "executor-demo",
			check: func(t *testing.T, r *Root, _ string) {
				if !r.Matches("executor-demo") || !r.Matches("executor-demo@1") || r.Matches("other@1") {
					t.Errorf("Matches wrong for a root without version")
				}
			},
		},
		{
			name:   "no name: the directory name",
			files:  map[string]string{".codex-plugin/plugin.json": `{"version":"3"}`},
			status: StatusOK, id: "demo@3",
			check: func(t *testing.T, r *Root, _ string) {
				if r.Matches("demo@4") || !r.Matches("demo@3") {
					t.Errorf("Matches wrong for a versioned root")
				}
			},
		},
		{
			name:   "no manifest: bare .mcp.json, id from the directory",
			files:  map[string]string{".mcp.json": `{"a":{"url":"https://a.example/mcp"},"b":{"command":"b"}}`},
			status: StatusOK, id: "demo", servers: []string{"a", "b"},
			check: func(t *testing.T, r *Root, _ string) {
				if r.ManifestPath != "" {
					t.Errorf("ManifestPath = %q", r.ManifestPath)
				}
			},
		},
		{
			name:   "not a root",
			files:  map[string]string{"README.md": "hi"},
			status: StatusError, id: "demo",
			err: `plugin "demo": not a capability root: no .codex-plugin/plugin.json, .claude-plugin/plugin.json or .mcp.json`,
		},
		{
			name: "inline mcpServers in plugin.json replace .mcp.json",
			files: map[string]string{
				".claude-plugin/plugin.json": `{
  "name": "inline",
  "mcpServers": {
    "db": {"command": "${CLAUDE_PLUGIN_ROOT}/servers/db", "args": ["--config", "${CLAUDE_PLUGIN_ROOT}/config.json"]}
  }
}`,
				".mcp.json": `{"ignored":{"command":"x"}}`,
			},
			status: StatusOK, id: "inline", servers: []string{"db"},
			check: func(t *testing.T, r *Root, dir string) {
				d := r.Servers[0]
				want := []string{"--config", dir + "/config.json"}
				if d.Command != dir+"/servers/db" || !cmp.Equal(d.Args, want) || d.Pos.File != filepath.Join(dir, ClaudeManifest) || d.Pos.Line != 4 {
					t.Errorf("server = %+v", d)
				}
			},
		},
		{
			name: "mcpServers as a path",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"p","version":"1","mcpServers":"./config/servers.json"}`,
				"config/servers.json":       `{"mcpServers":{"x":{"url":"http://127.0.0.1:1/mcp"}}}`,
			},
			status: StatusOK, id: "p@1", servers: []string{"x"},
			check: func(t *testing.T, r *Root, dir string) {
				if r.Servers[0].Pos.File != filepath.Join(dir, "config/servers.json") {
					t.Errorf("Pos.File = %q", r.Servers[0].Pos.File)
				}
			},
		},
		{
			name: "mcpServers path escapes with ..",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"p","version":"1","mcpServers":"../outside/servers.json"}`,
			},
			outside: map[string]string{"servers.json": `{}`},
			status:  StatusError, id: "p@1",
			err: `plugin "p@1": .codex-plugin/plugin.json: mcpServers "../outside/servers.json" escapes the plugin root`,
		},
		{
			name: "mcpServers path escapes through a symlink",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"p","version":"1","mcpServers":"servers.json"}`,
				"servers.json":              "link:{OUT}/servers.json",
			},
			outside: map[string]string{"servers.json": `{}`},
			status:  StatusError, id: "p@1",
			err: `plugin "p@1": .codex-plugin/plugin.json: mcpServers "servers.json" escapes the plugin root (it resolves to {OUT}/servers.json)`,
		},
		{
			name:   "mcpServers path missing",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"p","version":"1","mcpServers":"nope.json"}`},
			status: StatusError, id: "p@1",
			err: `plugin "p@1": .codex-plugin/plugin.json: mcpServers file "nope.json" does not exist`,
		},
		{
			name:   "mcpServers of the wrong type",
			files:  map[string]string{".codex-plugin/plugin.json": "{\"name\":\"p\",\n\"mcpServers\":[\"a.json\"]}"},
			status: StatusError, id: "p",
			err: "plugin \"p\": .codex-plugin/plugin.json:2: `mcpServers` must be an object of servers or a path to a .mcp.json-format file",
		},
		{
			name: "malformed plugin.json with line and column",
			files: map[string]string{".codex-plugin/plugin.json": `{
  "name": "demo",
  "version": "1",
}`},
			status: StatusError, id: "demo",
			err: `plugin "demo": .codex-plugin/plugin.json:4:1: invalid character '}' looking for beginning of object key string`,
		},
		{
			name:   "truncated plugin.json",
			files:  map[string]string{".codex-plugin/plugin.json": "{\"name\": \"de"},
			status: StatusError, id: "demo",
			err: `plugin "demo": .codex-plugin/plugin.json:1:12: unexpected end of JSON input`,
		},
		{
			name:   "plugin.json is not an object",
			files:  map[string]string{".codex-plugin/plugin.json": "\n[1]"},
			status: StatusError, id: "demo",
			err: `plugin "demo": .codex-plugin/plugin.json:2:1: the file must hold a JSON object, not array`,
		},
		{
			name:   "name of the wrong type",
			files:  map[string]string{".codex-plugin/plugin.json": "{\n\"name\": 7}"},
			status: StatusError, id: "demo",
			err: "plugin \"demo\": .codex-plugin/plugin.json:2: `name` must be a string",
		},
		{
			name:   "name with @",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"a@b","version":"1"}`},
			status: StatusError, id: "demo",
			err: "plugin \"demo\": .codex-plugin/plugin.json:1: `name` \"a@b\" may not contain '@', '/', '\\', spaces or control characters",
		},
		{
			name: "malformed .mcp.json with line and column",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json":                 "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",,}\n}}",
			},
			status: StatusError, id: "demo@1",
			err: `plugin "demo@1": .mcp.json:2:24: invalid character ',' looking for beginning of object key string`,
		},
		{
			name: "mcpServers key of the wrong type in .mcp.json",
			files: map[string]string{
				".mcp.json": `{"mcpServers": "x"}`,
			},
			status: StatusError, id: "demo",
			err: "plugin \"demo\": .mcp.json:1: `mcpServers` must be an object of servers",
		},
		{
			name: "root directory reached through a symlink is resolved",
			files: map[string]string{
				".mcp.json": `{"a":{"command":"./run"}}`,
			},
			status: StatusOK, servers: []string{"a"},
			check: func(t *testing.T, _ *Root, dir string) {
				link := filepath.Join(filepath.Dir(dir), "alias")
				if err := os.Symlink(dir, link); err != nil {
					t.Fatal(err)
				}
				r := Load(link, Options{})
				if r.Dir != dir || r.ID != "alias" || r.Servers[0].Command != dir+"/run" {
					t.Errorf("via symlink: Dir %q ID %q Command %q", r.Dir, r.ID, r.Servers[0].Command)
				}
			},
		},
	})
}

func TestLoadServers(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "claude spellings",
			files: map[string]string{
				".mcp.json": `{
  "mcpServers": {
    "api": {
      "type": "http",
      "url": "https://api.example/mcp",
      "headers": {"X-Team": "blue"},
      "oauth": {"clientId": "configured-client", "callbackPort": 5555, "scopes": ["read"]}
    },
    "stream": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "oauth": {"callbackPort": 0}},
    "local": {"type": "stdio", "command": "node", "args": ["server.js"]}
  }
}`,
			},
			status: StatusOK, servers: []string{"api", "local", "stream"},
			check: func(t *testing.T, r *Root, _ string) {
				api := r.Servers[0]
				if !cmp.Equal(api.HTTPHeaders, map[string]string{"X-Team": "blue"}) ||
					!cmp.Equal(api.OAuth, &config.OAuth{ClientID: "configured-client", CallbackPort: 5555, Scopes: []string{"read"}}) {
					t.Errorf("api = %+v (oauth %+v)", api, api.OAuth)
				}
				if r.Servers[2].OAuth == nil {
					t.Errorf("stream lost its oauth table")
				}
				if api.Pos.Line != 3 {
					t.Errorf("api line = %d", api.Pos.Line)
				}
			},
		},
		{
			name: "codex snake_case keys",
			files: map[string]string{
				".mcp.json": `{
  "remote": {
    "url": "https://mcp.example.com/mcp",
    "bearer_token_env_var": "REMOTE_TOKEN",
    "http_headers": {"X-Team": "blue"},
    "env_http_headers": {"X-Key": "REMOTE_KEY"},
    "environment_id": "exec-1",
    "oauth": {"client_id": "pre", "callback_port": 4444},
    "enabled": false,
    "required": true,
    "startup_timeout_sec": 10,
    "tool_timeout_sec": 60,
    "enabled_tools": ["search"],
    "disabled_tools": ["delete"]
  },
  "docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"MODE": "ro"}, "env_vars": ["DOCS_TOKEN"], "cwd": "./srv"}
}`,
			},
			status: StatusOK, servers: []string{"docs", "remote"},
			check: func(t *testing.T, r *Root, dir string) {
				want := config.ServerDecl{
					Name:              "remote",
					Origin:            config.Origin{Kind: config.OriginPlugin, Environment: "local", PluginID: "demo"},
					Pos:               config.Position{File: filepath.Join(dir, ".mcp.json"), Line: 2},
					URL:               "https://mcp.example.com/mcp",
					BearerTokenEnvVar: "REMOTE_TOKEN",
					HTTPHeaders:       map[string]string{"X-Team": "blue"},
					EnvHTTPHeaders:    map[string]string{"X-Key": "REMOTE_KEY"},
					OAuth:             &config.OAuth{ClientID: "pre", CallbackPort: 4444},
					EnvironmentID:     "exec-1",
					Enabled:           false,
					Required:          true,
					StartupTimeout:    10 * time.Second,
					ToolTimeout:       60 * time.Second,
					EnabledTools:      []string{"search"},
					DisabledTools:     []string{"delete"},
				}
				if diff := cmp.Diff(want, r.Servers[1]); diff != "" {
					t.Errorf("remote (-want +got):\n%s", diff)
				}
				docs := r.Servers[0]
				if docs.Cwd != filepath.Join(dir, "srv") || docs.Command != "docs-mcp" || docs.Env["MODE"] != "ro" {
					t.Errorf("docs = %+v", docs)
				}
			},
		},
		{
			name:   "environment option",
			opts:   Options{Environment: "exec-1"},
			files:  map[string]string{".mcp.json": `{"a":{"command":"x"}}`},
			status: StatusOK, servers: []string{"a"},
			check: func(t *testing.T, r *Root, _ string) {
				if r.Servers[0].Origin.Environment != "exec-1" {
					t.Errorf("Origin = %+v", r.Servers[0].Origin)
				}
			},
		},
		{
			name: "sse is rejected, siblings stay",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json": `{"mcpServers": {
  "old": {"type": "sse", "url": "https://old.example/sse"},
  "new": {"url": "https://new.example/mcp"}
}}`,
			},
			status: StatusPartial, id: "demo@1", servers: []string{"new"},
			serverErr: []string{`plugin "demo@1": .mcp.json:2: server "old": legacy SSE transport is not supported; use streamable HTTP`},
		},
		{
			name: "unknown key names file, server and key",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json": `{"mcpServers": {
  "ok": {"command": "a"},
  "typo": {"command": "b", "comand": "c", "oauth": {"clientSecret": "s"}, "env_vars": [{"name": "X", "value": "v"}]}
}}`,
			},
			status: StatusPartial, servers: []string{"ok"},
			serverErr: []string{
				"plugin \"demo@1\": .mcp.json:3: server \"typo\": unknown key `comand`",
				"plugin \"demo@1\": .mcp.json:3: server \"typo\": unknown key `env_vars[0].value`",
				"plugin \"demo@1\": .mcp.json:3: server \"typo\": unknown key `oauth.clientSecret`",
			},
			check: func(t *testing.T, r *Root, _ string) {
				if !errors.Is(r.ServerErrors[0], ErrUnknownKey) {
					t.Errorf("not ErrUnknownKey: %v", r.ServerErrors[0])
				}
				var e *Error
				if !errors.As(r.ServerErrors[0], &e) || e.Server != "typo" || e.File != ".mcp.json" || e.PluginID != "demo@1" {
					t.Errorf("Error fields = %+v", e)
				}
			},
		},
		{
			name: "literal bearer_token, double headers, double oauth spelling, bad type",
			files: map[string]string{".mcp.json": `{
"a": {"url": "https://a.example/mcp", "bearer_token": "secret"},
"b": {"url": "https://b.example/mcp", "headers": {"A": "1"}, "http_headers": {"B": "2"}},
"c": {"url": "https://c.example/mcp", "oauth": {"clientId": "x", "client_id": "y"}},
"d": {"type": "websocket", "url": "https://d.example/mcp"},
"e": {"type": "stdio", "url": "https://e.example/mcp"},
"f": {"type": "http", "command": "f"},
"ok": {"command": "ok"}
}`},
			status: StatusPartial, servers: []string{"ok"},
			serverErr: []string{
				"plugin \"demo\": .mcp.json:2: server \"a\": a literal `bearer_token` is not allowed; use `bearer_token_env_var`",
				"plugin \"demo\": .mcp.json:3: server \"b\": both `headers` and `http_headers` are set; use one",
				"plugin \"demo\": .mcp.json:4: server \"c\": both `oauth.clientId` and `oauth.client_id` are set; use one",
				"plugin \"demo\": .mcp.json:5: server \"d\": `type` \"websocket\" is not supported; want \"stdio\", \"http\" or \"streamable-http\"",
				"plugin \"demo\": .mcp.json:6: server \"e\": `type` is \"stdio\" but `url` is set",
				"plugin \"demo\": .mcp.json:7: server \"f\": `type` is \"http\" but `command` is set",
			},
		},
		{
			name: "transport rules come from config.CheckServer",
			files: map[string]string{".mcp.json": `{
"mixed": {"url": "https://a.example/mcp", "args": ["x"], "cwd": "."},
"none": {"env": {"A": "b"}},
"stdiohttp": {"command": "x", "bearer_token_env_var": "T"},
"ftp": {"url": "ftp://x"},
"ok": {"url": "https://ok.example/mcp"}
}`},
			status: StatusPartial, servers: []string{"ok"},
			serverErr: []string{
				"plugin \"demo\": .mcp.json:5: server \"ftp\": `url` \"ftp://x\" must start with http:// or https://",
				"plugin \"demo\": .mcp.json:2: server \"mixed\": key `args` is only valid for stdio servers, but this server has `url`",
				"plugin \"demo\": .mcp.json:2: server \"mixed\": key `cwd` is only valid for stdio servers, but this server has `url`",
				"plugin \"demo\": .mcp.json:3: server \"none\": neither `command` (stdio) nor `url` (streamable HTTP) is set",
				"plugin \"demo\": .mcp.json:4: server \"stdiohttp\": key `bearer_token_env_var` is only valid for streamable HTTP servers, but this server has `command`",
			},
		},
		{
			name: "value types, names, timeouts",
			files: map[string]string{".mcp.json": `{
"a": {"command": 1},
"b": {"command": "b", "args": "x", "env": {"A": 1}},
"c d": {"command": "c"},
"e": "not an object",
"f": {"command": "f", "startup_timeout_sec": -1, "tool_timeout_sec": "60"},
"g": {"command": "g", "startup_timeout_sec": 1e300, "env": {"=x": "1"}},
"h": {"url": "https://h.example/mcp", "oauth": {"callbackPort": 70000}},
"i": {"command": "i", "env_vars": [""], "enabled_tools": [""]},
"n": {"command": "n", "cwd": null, "enabled": null}
}`},
			status: StatusPartial, servers: []string{"n"},
			serverErr: []string{
				"plugin \"demo\": .mcp.json:2: server \"a\": `command` must be a string",
				"plugin \"demo\": .mcp.json:2: server \"a\": neither `command` (stdio) nor `url` (streamable HTTP) is set",
				"plugin \"demo\": .mcp.json:3: server \"b\": `args` must be an array of strings",
				"plugin \"demo\": .mcp.json:3: server \"b\": `env` must be an object of string values",
				"plugin \"demo\": .mcp.json:4: server \"c d\": server name may contain only ASCII letters, digits, '_' and '-'",
				"plugin \"demo\": .mcp.json:5: server \"e\": a server entry must be a JSON object",
				"plugin \"demo\": .mcp.json:6: server \"f\": `startup_timeout_sec` is negative",
				"plugin \"demo\": .mcp.json:6: server \"f\": `tool_timeout_sec` must be a number of seconds",
				"plugin \"demo\": .mcp.json:7: server \"g\": `startup_timeout_sec` is too large",
				"plugin \"demo\": .mcp.json:7: server \"g\": `env` has an invalid variable name \"=x\"",
				"plugin \"demo\": .mcp.json:8: server \"h\": `oauth.callbackPort` must be a port number (0-65535)",
				"plugin \"demo\": .mcp.json:9: server \"i\": env_vars[0] has no name",
				"plugin \"demo\": .mcp.json:9: server \"i\": `enabled_tools` contains an empty tool name",
			},
			check: func(t *testing.T, r *Root, _ string) {
				if !r.Servers[0].Enabled || r.Servers[0].Cwd != "" {
					t.Errorf("null must mean absent: %+v", r.Servers[0])
				}
			},
		},
		{
			name: "every server rejected makes the root unusable",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json":                 `{"a":{"type":"sse","url":"https://a.example/sse"}}`,
			},
			status: StatusError,
			err:    `plugin "demo@1": none of its 1 server declarations is usable`,
			serverErr: []string{
				`plugin "demo@1": .mcp.json:1: server "a": legacy SSE transport is not supported; use streamable HTTP`,
			},
		},
		{
			name:   "an empty server map is fine",
			files:  map[string]string{".codex-plugin/plugin.json": codexDemo, ".mcp.json": `{"mcpServers":{}}`},
			status: StatusOK,
		},
	})
}

func TestLoadExpansion(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "PLUGIN_ROOT and CLAUDE_PLUGIN_ROOT expand; nothing else does",
			files: map[string]string{".mcp.json": `{
"s": {
  "command": "${PLUGIN_ROOT}/bin/s",
  "args": ["--root=${CLAUDE_PLUGIN_ROOT}", "${HOME}", "$PLUGIN_ROOT", "${PLUGIN_ROOT"],
  "cwd": "${CLAUDE_PLUGIN_ROOT}/work",
  "env": {"DATA": "${PLUGIN_ROOT}/data", "TOKEN": "${SECRET_TOKEN}"}
},
"h": {"url": "http://127.0.0.1:1/mcp?root=${PLUGIN_ROOT}", "http_headers": {"X": "${PLUGIN_ROOT}"}}
}`},
			status: StatusOK, servers: []string{"h", "s"},
			check: func(t *testing.T, r *Root, dir string) {
				s := r.Servers[1]
				if s.Command != dir+"/bin/s" || s.Cwd != dir+"/work" {
					t.Errorf("command %q cwd %q", s.Command, s.Cwd)
				}
				if want := []string{"--root=" + dir, "${HOME}", "$PLUGIN_ROOT", "${PLUGIN_ROOT"}; !cmp.Equal(s.Args, want) {
					t.Errorf("args = %q", s.Args)
				}
				if want := map[string]string{"DATA": dir + "/data", "TOKEN": "${SECRET_TOKEN}"}; !cmp.Equal(s.Env, want) {
					t.Errorf("env = %q", s.Env)
				}
				h := r.Servers[0]
				if h.URL != "http://127.0.0.1:1/mcp?root="+dir || h.HTTPHeaders["X"] != "${PLUGIN_ROOT}" {
					t.Errorf("h = %+v", h)
				}
			},
		},
	})
}

func TestLoadPathSafety(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "relative cwd resolves under the root; ok commands",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json": `{"mcpServers": {
  "rel": {"command": "./bin/demo", "cwd": "srv"},
  "nested": {"command": "bin/sub/tool", "cwd": "a/../b"},
  "abs": {"command": "/usr/bin/node", "cwd": "{DIR}/srv"},
  "bare": {"command": "npx"},
  "linked": {"command": "./bin/alias", "cwd": "inner"}
}}`,
				"bin/demo":  "x",
				"bin/alias": "link:demo",
				"inner":     "link:srv",
				"srv":       "dir:",
			},
			status: StatusOK, id: "demo@1", servers: []string{"abs", "bare", "linked", "nested", "rel"},
			check: func(t *testing.T, r *Root, dir string) {
				got := map[string][2]string{}
				for _, d := range r.Servers {
					got[d.Name] = [2]string{d.Command, d.Cwd}
				}
				want := map[string][2]string{
					"rel":    {dir + "/bin/demo", dir + "/srv"},
					"nested": {dir + "/bin/sub/tool", dir + "/b"},
					"abs":    {"/usr/bin/node", dir + "/srv"},
					"bare":   {"npx", ""},
					"linked": {dir + "/bin/alias", dir + "/inner"}, // argv[0] keeps the link name
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "cwd escapes with ..",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				".mcp.json": `{"mcpServers": {
  "x": {"command": "x", "cwd": "../../etc"},
  "y": {"command": "y", "cwd": "sub/../../outside"},
  "z": {"command": "z", "cwd": "${PLUGIN_ROOT}/.."}
}}`,
			},
			status: StatusError,
			err:    `plugin "demo@1": none of its 3 server declarations is usable`,
			serverErr: []string{
				`plugin "demo@1": .mcp.json:2: server "x": cwd "../../etc" escapes the plugin root`,
				`plugin "demo@1": .mcp.json:3: server "y": cwd "sub/../../outside" escapes the plugin root`,
				`plugin "demo@1": .mcp.json:4: server "z": cwd "{DIR}/.." escapes the plugin root`,
			},
			check: func(t *testing.T, r *Root, _ string) {
				if !errors.Is(r.ServerErrors[0], ErrEscapesRoot) {
					t.Errorf("not ErrEscapesRoot")
				}
			},
		},
		{
			name: "absolute cwd outside the root",
			files: map[string]string{
				".mcp.json": `{"x": {"command": "x", "cwd": "/tmp"}, "ok": {"command": "ok"}}`,
			},
			status:    StatusPartial,
			servers:   []string{"ok"},
			serverErr: []string{`plugin "demo": .mcp.json:1: server "x": cwd "/tmp" escapes the plugin root`},
		},
		{
			name: "cwd escapes through a symlink (existing, dangling, and a parent link)",
			files: map[string]string{
				".mcp.json": `{
"x": {"command": "x", "cwd": "work"},
"y": {"command": "y", "cwd": "later"},
"z": {"command": "z", "cwd": "up/sub/dir"},
"ok": {"command": "ok"}
}`,
				"work":  "link:{OUT}",
				"later": "link:{OUT}/not-yet",
				"up":    "link:..",
			},
			status:  StatusPartial,
			servers: []string{"ok"},
			serverErr: []string{
				`plugin "demo": .mcp.json:2: server "x": cwd "work" escapes the plugin root (it resolves to {OUT})`,
				`plugin "demo": .mcp.json:3: server "y": cwd "later" escapes the plugin root (it resolves to {OUT}/not-yet)`,
				`plugin "demo": .mcp.json:4: server "z": cwd "up/sub/dir" escapes the plugin root (it resolves to {BASE}/sub/dir)`,
			},
		},
		{
			name: "command escapes with .. and through a symlink",
			files: map[string]string{
				".mcp.json": `{
"dots": {"command": "../outside/tool"},
"link": {"command": "./bin/tool"},
"var": {"command": "${PLUGIN_ROOT}/../outside/tool"},
"ok": {"command": "./bin/ok"}
}`,
				"bin/tool": "link:{OUT}/tool",
				"bin/ok":   "x",
			},
			outside: map[string]string{"tool": "x"},
			status:  StatusPartial,
			servers: []string{"ok"},
			serverErr: []string{
				`plugin "demo": .mcp.json:2: server "dots": command "../outside/tool" escapes the plugin root`,
				`plugin "demo": .mcp.json:3: server "link": command "./bin/tool" escapes the plugin root (it resolves to {OUT}/tool)`,
				`plugin "demo": .mcp.json:4: server "var": command "{DIR}/../outside/tool" escapes the plugin root`,
			},
		},
	})
}

func TestLoadPolicy(t *testing.T) {
	wasm := "\x00asm\x01\x00\x00\x00"
	sum := sha256.Sum256([]byte(wasm))
	digest := hex.EncodeToString(sum[:])
	runLoadCases(t, []loadCase{
		{
			name: "declared policy",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"./policies/p.wasm"}`,
				"policies/p.wasm":           wasm,
			},
			status: StatusOK,
			check: func(t *testing.T, r *Root, dir string) {
				want := &PolicyFile{Path: filepath.Join(dir, "policies/p.wasm"), SHA256: digest, Size: int64(len(wasm))}
				if diff := cmp.Diff(want, r.Policy); diff != "" {
					t.Errorf("Policy (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:   "default policy.wasm",
			files:  map[string]string{".codex-plugin/plugin.json": codexDemo, "policy.wasm": wasm},
			status: StatusOK,
			check: func(t *testing.T, r *Root, dir string) {
				if r.Policy == nil || r.Policy.Path != filepath.Join(dir, "policy.wasm") || r.Policy.SHA256 != digest {
					t.Errorf("Policy = %+v", r.Policy)
				}
			},
		},
		{
			name: "policy symlink inside the root resolves",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"current.wasm"}`,
				"current.wasm":              "link:build/v2.wasm",
				"build/v2.wasm":             wasm,
			},
			status: StatusOK,
			check: func(t *testing.T, r *Root, dir string) {
				if r.Policy == nil || r.Policy.Path != filepath.Join(dir, "build/v2.wasm") {
					t.Errorf("Policy = %+v", r.Policy)
				}
			},
		},
		{
			name:   "declared policy missing",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"./policy.wasm"}`},
			status: StatusError,
			err:    `plugin "demo@1": .codex-plugin/plugin.json: invalid policy module: policy "./policy.wasm" does not exist`,
			check: func(t *testing.T, r *Root, _ string) {
				if !errors.Is(r.Err, ErrPolicy) {
					t.Errorf("not ErrPolicy")
				}
			},
		},
		{
			name: "policy symlink out of the root",
			files: map[string]string{
				".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"policy.wasm"}`,
				"policy.wasm":               "link:{OUT}/evil.wasm",
			},
			outside: map[string]string{"evil.wasm": wasm},
			status:  StatusError,
			err:     `plugin "demo@1": .codex-plugin/plugin.json: policy "policy.wasm" escapes the plugin root (it resolves to {OUT}/evil.wasm)`,
		},
		{
			name: "default policy.wasm symlinked out of the root",
			files: map[string]string{
				".codex-plugin/plugin.json": codexDemo,
				"policy.wasm":               "link:{OUT}/evil.wasm",
			},
			outside: map[string]string{"evil.wasm": wasm},
			status:  StatusError,
			err:     `plugin "demo@1": policy "policy.wasm" escapes the plugin root (it resolves to {OUT}/evil.wasm)`,
		},
		{
			name:    "policy path with ..",
			files:   map[string]string{".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"../outside/p.wasm"}`},
			outside: map[string]string{"p.wasm": wasm},
			status:  StatusError,
			err:     `plugin "demo@1": .codex-plugin/plugin.json: policy "../outside/p.wasm" escapes the plugin root`,
		},
		{
			name:   "policy is a directory",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":"p"}`, "p/x": "x"},
			status: StatusError,
			err:    `plugin "demo@1": .codex-plugin/plugin.json: invalid policy module: policy "p" is not a regular file`,
		},
		{
			name:   "policy over the size cap",
			opts:   Options{MaxPolicySize: 4},
			files:  map[string]string{".codex-plugin/plugin.json": codexDemo, "policy.wasm": wasm},
			status: StatusError,
			err:    `plugin "demo@1": invalid policy module: policy "policy.wasm" is 8 bytes, over the 4-byte limit`,
		},
		{
			name:   "policy of the wrong type",
			files:  map[string]string{".codex-plugin/plugin.json": `{"name":"demo","version":"1","policy":true}`},
			status: StatusError,
			err:    "plugin \"demo@1\": .codex-plugin/plugin.json:1: `policy` must be a string",
		},
	})
}

// TestFingerprint: equal content gives equal fingerprints; any relevant change differs.
func TestFingerprint(t *testing.T) {
	dir := filepath.Join(tempDir(t), "demo")
	layout(t, dir, "", map[string]string{
		".codex-plugin/plugin.json": `{"name":"demo","version":"1"}`,
		".mcp.json":                 `{"a":{"url":"https://a.example/mcp","oauth":{"clientId":"x"}}}`,
		"policy.wasm":               "one",
	})
	a, b := Load(dir, Options{}), Load(dir, Options{})
	if a.Fingerprint != b.Fingerprint {
		t.Fatalf("same content, different fingerprints")
	}
	for _, change := range []map[string]string{
		{".mcp.json": `{"a":{"url":"https://a.example/mcp","oauth":{"clientId":"y"}}}`},
		{"policy.wasm": "two"},
		{".codex-plugin/plugin.json": `{"name":"demo","version":"2"}`},
	} {
		layout(t, dir, "", change)
		c := Load(dir, Options{})
		if c.Fingerprint == a.Fingerprint {
			t.Errorf("change %v kept the fingerprint", change)
		}
		a = c
	}
	// An ignored manifest key changes nothing warden uses.
	layout(t, dir, "", map[string]string{".codex-plugin/plugin.json": `{"name":"demo","version":"2","homepage":"https://x"}`})
	if c := Load(dir, Options{}); c.Fingerprint != a.Fingerprint {
		t.Errorf("an ignored key changed the fingerprint")
	}
}
