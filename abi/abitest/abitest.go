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

// ResourceReadInput returns a typical resource_read input.
func ResourceReadInput(uri string) *abi.ResourceReadInput {
	return &abi.ResourceReadInput{
		Thread: abi.Thread{ID: "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T", Kind: "default", Roots: []abi.Root{{ID: "fs@1", Location: "local", Path: "/plugins/fs"}}},
		Server: "filesystem-1", PluginID: "fs@1", URI: uri, Caller: "mcp-front-door",
	}
}

// PromptGetInput returns a typical prompt_get input.
func PromptGetInput(name, argsJSON string) *abi.PromptGetInput {
	return &abi.PromptGetInput{
		Thread: abi.Thread{ID: "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T", Kind: "default"},
		Server: "everything", Name: name, Arguments: []byte(argsJSON), Caller: "mcp-front-door",
	}
}

// ToolResultInput returns a typical tool_result input.
func ToolResultInput(tool, argsJSON, resultJSON string, isError bool) *abi.ToolResultInput {
	return &abi.ToolResultInput{
		Thread: abi.Thread{ID: "thr_01J9Z7Q4WQ5V1C2M3N4P5R6S7T", Kind: "default"},
		Server: "filesystem-1", PluginID: "fs@1", Tool: tool, Arguments: []byte(argsJSON),
		Result: []byte(resultJSON), IsError: isError, Caller: "mcp-front-door",
	}
}

// The functions below copy a view of a flat input into the Go struct by
// reading every accessor: tests use them to check the views (and their
// wasm build, examples/plugins/testdata/codeccheck) against Unmarshal.
// Strings are views, as in Unmarshal.

// ServersFromView reads every field of v.
func ServersFromView(v abi.ServersView) *abi.ServersInput {
	in := &abi.ServersInput{Thread: ThreadFromView(v.Thread()), HasRequirements: v.HasRequirements()}
	for i, l := 0, v.Environments(); i < l.Len(); i++ {
		in.Environments = append(in.Environments, environmentFromView(l.At(i)))
	}
	for i, l := 0, v.Servers(); i < l.Len(); i++ {
		in.Servers = append(in.Servers, ServerFromView(l.At(i)))
	}
	for i, l := 0, v.Requirements(); i < l.Len(); i++ {
		r := l.At(i)
		in.Requirements = append(in.Requirements, abi.Requirement{Name: r.Name(), URL: r.URL(), Command: r.Command()})
	}
	return in
}

// CredentialsFromView reads every field of v.
func CredentialsFromView(v abi.CredentialsView) *abi.CredentialsInput {
	return &abi.CredentialsInput{Thread: ThreadFromView(v.Thread()), Server: ServerFromView(v.Server()), Route: v.Route(), Environment: environmentFromView(v.Environment())}
}

// ToolCallFromView reads every field of v.
func ToolCallFromView(v abi.ToolCallView) *abi.ToolCallInput {
	return &abi.ToolCallInput{Thread: ThreadFromView(v.Thread()), Server: v.Server(), PluginID: v.PluginID(), Tool: v.Tool(), Arguments: v.Arguments(), Caller: v.Caller()}
}

// ResourceReadFromView reads every field of v.
func ResourceReadFromView(v abi.ResourceReadView) *abi.ResourceReadInput {
	return &abi.ResourceReadInput{Thread: ThreadFromView(v.Thread()), Server: v.Server(), PluginID: v.PluginID(), URI: v.URI(), Caller: v.Caller()}
}

// PromptGetFromView reads every field of v.
func PromptGetFromView(v abi.PromptGetView) *abi.PromptGetInput {
	return &abi.PromptGetInput{Thread: ThreadFromView(v.Thread()), Server: v.Server(), PluginID: v.PluginID(), Name: v.Name(), Arguments: v.Arguments(), Caller: v.Caller()}
}

// ToolResultFromView reads every field of v.
func ToolResultFromView(v abi.ToolResultView) *abi.ToolResultInput {
	return &abi.ToolResultInput{Thread: ThreadFromView(v.Thread()), Server: v.Server(), PluginID: v.PluginID(), Tool: v.Tool(),
		Arguments: v.Arguments(), Result: v.Result(), IsError: v.IsError(), Caller: v.Caller()}
}

// ThreadFromView reads every field of v.
func ThreadFromView(v abi.ThreadView) abi.Thread {
	t := abi.Thread{ID: v.ID(), Kind: v.Kind()}
	for i, l := 0, v.Roots(); i < l.Len(); i++ {
		r := l.At(i)
		t.Roots = append(t.Roots, abi.Root{ID: r.ID(), Location: r.Location(), EnvironmentID: r.EnvironmentID(), Path: r.Path()})
	}
	return t
}

func environmentFromView(v abi.EnvironmentView) abi.Environment {
	return abi.Environment{ID: v.ID(), Local: v.Local(), Connected: v.Connected(), HTTPHeaderEnvVars: v.HTTPHeaderEnvVars(), Processes: v.Processes()}
}

// ServerFromView reads every field of v (its URLHost and TransportKind,
// derived from URL and Transport, are not part of abi.Server).
func ServerFromView(v abi.ServerView) abi.Server {
	s := abi.Server{Name: v.Name(), Origin: v.Origin(), PluginID: v.PluginID(), Transport: v.Transport(), URL: v.URL(),
		Command: v.Command(), Args: strs(v.Args()), Environment: v.Environment(), Enabled: v.Enabled(), Required: v.Required(),
		EnabledTools: strs(v.EnabledTools()), DisabledTools: strs(v.DisabledTools())}
	for i, l := 0, v.Credentials(); i < l.Len(); i++ {
		c := l.At(i)
		s.Credentials = append(s.Credentials, abi.Credential{Kind: c.Kind(), Name: c.Name(), EnvVar: c.EnvVar(), Owner: c.Owner(), ResolvesAt: c.ResolvesAt()})
	}
	return s
}

func strs(l abi.StringList) []string {
	var ss []string
	for i := 0; i < l.Len(); i++ {
		ss = append(ss, l.At(i))
	}
	return ss
}
