package abitest

import (
	"strconv"

	"github.com/warden-mcp/warden/abi"
)

// ServersInput20 returns a servers-hook input for a reviewer thread with two
// selected roots, three environments and 20 candidate servers: a mix of stdio
// and http transports, host-config, executor-config and plugin origins, with
// arguments, credential references (bearer, header, env_var, oauth) and tool
// lists, plus a requirements allow list. Every call returns a fresh value.
func ServersInput20() *abi.ServersInput {
	in := &abi.ServersInput{
		Thread: abi.Thread{
			ID:   "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T",
			Kind: "reviewer",
			Roots: []abi.Root{
				{ID: "root-github", Location: "local", Path: "/home/dev/.warden/plugins/github"},
				{ID: "root-browser", Location: "environment", EnvironmentID: "exec-1", Path: "/opt/plugins/browser"},
			},
		},
		Environments: []abi.Environment{
			{ID: "local", Local: true, Connected: true, HTTPHeaderEnvVars: true, Processes: true},
			{ID: "exec-1", Connected: true, HTTPHeaderEnvVars: true, Processes: true},
			{ID: "exec-legacy", Connected: true},
		},
		HasRequirements: true,
		Requirements: []abi.Requirement{
			{Name: "github", URL: "https://api.githubcopilot.com/mcp/"},
			{Name: "filesystem", Command: "npx"},
			{Name: "node_repl", URL: "http://127.0.0.1:7777/mcp"},
		},
	}
	for i := 0; i < 20; i++ {
		in.Servers = append(in.Servers, server(i))
	}
	return in
}

func server(i int) abi.Server {
	n := strconv.Itoa(i)
	s := abi.Server{Enabled: i%7 != 6, Required: i%5 == 0}
	switch i % 4 {
	case 0: // host-config http with a bearer token
		s.Name = "docs-" + n
		s.Origin = "host-config"
		s.Transport = "http"
		s.URL = "https://mcp" + n + ".example.com/v1/mcp"
		s.Environment = "local"
		s.Credentials = []abi.Credential{
			{Kind: "bearer_env", Name: "Authorization", EnvVar: "DOCS_TOKEN_" + n, Owner: "local"},
		}
		s.EnabledTools = []string{"search", "fetch_page"}
	case 1: // host-config stdio with args and an env var
		s.Name = "filesystem-" + n
		s.Origin = "host-config"
		s.Transport = "stdio"
		s.Command = "npx"
		s.Args = []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/dev/src/project-" + n}
		s.Environment = "local"
		s.Credentials = []abi.Credential{
			{Kind: "env_var", Name: "FS_LICENSE", EnvVar: "FS_LICENSE", Owner: "local"},
		}
		s.DisabledTools = []string{"delete_file", "move_file"}
	case 2: // executor-config http with a header credential
		s.Name = "node_repl-" + n
		s.Origin = "executor-config:exec-1"
		s.Transport = "http"
		s.URL = "http://127.0.0.1:77" + n + "/mcp"
		s.Environment = "exec-1"
		s.Credentials = []abi.Credential{
			{Kind: "bearer_env", Name: "Authorization", EnvVar: "NODE_REPL_TOKEN", Owner: "exec-1"},
			{Kind: "header_env", Name: "X-Workspace", EnvVar: "WORKSPACE_ID", Owner: "exec-1"},
		}
	case 3: // plugin server (stdio in an executor-located plugin, or oauth http)
		s.Name = "browser-" + n
		s.Origin = "plugin:browser"
		s.PluginID = "browser"
		if i%8 == 3 {
			s.Transport = "stdio"
			s.Command = "/opt/plugins/browser/bin/browser-mcp"
			s.Args = []string{"--headless", "--profile", "reviewer-" + n}
			s.Environment = "exec-1"
			s.Credentials = []abi.Credential{
				{Kind: "env_var", Name: "BROWSER_KEY", EnvVar: "BROWSER_KEY", Owner: "exec-1"},
			}
		} else {
			s.Transport = "http"
			s.URL = "https://browser.example.org:8443/mcp?session=" + n
			s.Environment = "local"
			s.Credentials = []abi.Credential{{Kind: "oauth", Owner: "local"}}
			s.DisabledTools = []string{"download"}
		}
	}
	return s
}

// CredentialsInput returns a credentials-hook input: an executor-config
// server routed to executor "exec-1" with two credential references.
func CredentialsInput() *abi.CredentialsInput {
	s := server(2)
	for i := range s.Credentials {
		s.Credentials[i].ResolvesAt = "exec-1"
	}
	return &abi.CredentialsInput{
		Thread:      abi.Thread{ID: "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T", Kind: "default"},
		Server:      s,
		Route:       "exec-1",
		Environment: abi.Environment{ID: "exec-1", Connected: true, HTTPHeaderEnvVars: true, Processes: true},
	}
}

// ToolCallInput returns a tool_call-hook input calling tool on server
// "filesystem-1" with the given JSON arguments.
func ToolCallInput(tool string, argsJSON string) *abi.ToolCallInput {
	return &abi.ToolCallInput{
		Thread:    abi.Thread{ID: "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T", Kind: "default"},
		Server:    "filesystem-1",
		Tool:      tool,
		Arguments: []byte(argsJSON),
		Caller:    "mcp-front-door",
	}
}
