package abi

// The message types of ABI v1. Field comments give the protobuf field number
// (the contract; see docs/abi.md). Strings decoded by Unmarshal are views into
// the decoded buffer: see the package documentation.

// Thread describes the conversation thread a hook runs for.
type Thread struct {
	ID    string // 1
	Kind  string // 2: e.g. "reviewer"; "" for a default thread
	Roots []Root // 3: the capability roots the thread selected
}

// Root is a capability root (plugin directory) selected by a thread.
type Root struct {
	ID            string // 1
	Location      string // 2: "local" | "environment"
	EnvironmentID string // 3: the executor id when Location is "environment"
	Path          string // 4
}

// Environment is a place servers run in: the host ("local") or an executor,
// with the capabilities it announced.
type Environment struct {
	ID                string // 1: "local" or executor id
	Local             bool   // 2: the host itself
	Connected         bool   // 3
	HTTPHeaderEnvVars bool   // 4: resolves header values from its own env
	Processes         bool   // 5: can run stdio servers
}

// Credential is a reference to a secret (never its value).
type Credential struct {
	Kind       string // 1: "bearer_env" | "header_env" | "env_var" | "oauth"
	Name       string // 2: header name ("Authorization" for bearer) or the env var name for env_var
	EnvVar     string // 3: the variable holding the value (bearer/header/env_var)
	Owner      string // 4: environment whose env/secret store holds the value: "local" or executor id
	ResolvesAt string // 5: credentials hook only: where it would resolve: "local" | executor id
}

// Server is a candidate MCP server declaration.
type Server struct {
	Name          string       // 1
	Origin        string       // 2: "host-config" | "executor-config:<env>" | "plugin:<id>"
	PluginID      string       // 3
	Transport     string       // 4: "stdio" | "http"
	URL           string       // 5
	Command       string       // 6
	Args          []string     // 7
	Environment   string       // 8: "local" or executor id where it runs
	Credentials   []Credential // 9
	Enabled       bool         // 10
	Required      bool         // 11
	EnabledTools  []string     // 12
	DisabledTools []string     // 13
}

// Requirement is one entry of the operator's requirements allow list.
type Requirement struct {
	Name    string // 1
	URL     string // 2
	Command string // 3
}

// ServersInput is the input of the servers hook.
type ServersInput struct {
	Thread          Thread        // 1
	Environments    []Environment // 2
	Servers         []Server      // 3: for a plugin's own policy, only that plugin's servers
	HasRequirements bool          // 4
	Requirements    []Requirement // 5
}

// ServerDecision is the servers hook's decision for one server.
type ServerDecision struct {
	Name       string       // 1: the server's name
	Action     ServerAction // 2
	Reason     string       // 3
	AllowTools []string     // 4: if non-empty, only these tools are usable
	DenyTools  []string     // 5: these tools are not usable
}

// ServersOutput is the output of the servers hook. A server not named in
// Decisions gets no opinion (expose).
type ServersOutput struct {
	Decisions []ServerDecision // 1
	Error     string           // 15: non-empty = guest failure; the host fails closed
}

// CredentialsInput is the input of the credentials hook.
type CredentialsInput struct {
	Thread      Thread      // 1
	Server      Server      // 2
	Route       string      // 3: "local" or executor id
	Environment Environment // 4: capabilities of the route's environment
}

// CredentialDecision is the credentials hook's decision for one credential.
type CredentialDecision struct {
	Index  uint32           // 1: index into CredentialsInput.Server.Credentials
	Action CredentialAction // 2
	Reason string           // 3
}

// CredentialsOutput is the output of the credentials hook. A credential not
// named in Decisions gets no opinion.
type CredentialsOutput struct {
	Decisions []CredentialDecision // 1
	Error     string               // 15: non-empty = guest failure; the host fails closed
}

// ToolCallInput is the input of the tool_call hook.
type ToolCallInput struct {
	Thread    Thread // 1
	Server    string // 2
	PluginID  string // 3
	Tool      string // 4
	Arguments []byte // 5: a JSON object
	Caller    string // 6
}

// ToolCallOutput is the output of the tool_call hook.
type ToolCallOutput struct {
	Action    ToolCallAction // 1
	Reason    string         // 2
	Rewrite   bool           // 3: replace the call's arguments with Arguments
	Arguments []byte         // 4: a JSON object (when Rewrite)
	Error     string         // 15: non-empty = guest failure; the host fails closed
}
