package abi

// The message types of ABI v1. Field comments give the protobuf field number
// (the contract; see docs/abi.md). Strings decoded by Unmarshal are views into
// the decoded buffer: see the package documentation.

// Thread describes the conversation thread a hook runs for.
type Thread struct {
	ID    string `json:"id,omitempty"`    // 1
	Kind  string `json:"kind,omitempty"`  // 2: e.g. "reviewer"; "" for a default thread
	Roots []Root `json:"roots,omitempty"` // 3: the capability roots the thread selected
}

// Root is a capability root (plugin directory) selected by a thread.
type Root struct {
	ID            string `json:"id,omitempty"`            // 1
	Location      string `json:"location,omitempty"`      // 2: "local" | "environment"
	EnvironmentID string `json:"environmentId,omitempty"` // 3: the executor id when Location is "environment"
	Path          string `json:"path,omitempty"`          // 4
}

// Environment is a place servers run in: the host ("local") or an executor,
// with the capabilities it announced.
type Environment struct {
	ID                string `json:"id,omitempty"`                // 1: "local" or executor id
	Local             bool   `json:"local,omitempty"`             // 2: the host itself
	Connected         bool   `json:"connected,omitempty"`         // 3
	HTTPHeaderEnvVars bool   `json:"httpHeaderEnvVars,omitempty"` // 4: resolves header values from its own env
	Processes         bool   `json:"processes,omitempty"`         // 5: can run stdio servers
}

// Credential is a reference to a secret (never its value).
type Credential struct {
	Kind       string `json:"kind,omitempty"`       // 1: "bearer_env" | "header_env" | "env_var" | "oauth"
	Name       string `json:"name,omitempty"`       // 2: header name ("Authorization" for bearer) or the env var name for env_var
	EnvVar     string `json:"envVar,omitempty"`     // 3: the variable holding the value (bearer/header/env_var)
	Owner      string `json:"owner,omitempty"`      // 4: environment whose env/secret store holds the value: "local" or executor id
	ResolvesAt string `json:"resolvesAt,omitempty"` // 5: credentials hook only: where it would resolve: "local" | executor id
}

// Server is a candidate MCP server declaration.
type Server struct {
	Name          string       `json:"name,omitempty"`          // 1
	Origin        string       `json:"origin,omitempty"`        // 2: "host-config" | "executor-config:<env>" | "plugin:<id>"
	PluginID      string       `json:"pluginId,omitempty"`      // 3
	Transport     string       `json:"transport,omitempty"`     // 4: "stdio" | "http"
	URL           string       `json:"url,omitempty"`           // 5
	Command       string       `json:"command,omitempty"`       // 6
	Args          []string     `json:"args,omitempty"`          // 7
	Environment   string       `json:"environment,omitempty"`   // 8: "local" or executor id where it runs
	Credentials   []Credential `json:"credentials,omitempty"`   // 9
	Enabled       bool         `json:"enabled,omitempty"`       // 10
	Required      bool         `json:"required,omitempty"`      // 11
	EnabledTools  []string     `json:"enabledTools,omitempty"`  // 12
	DisabledTools []string     `json:"disabledTools,omitempty"` // 13
}

// Requirement is one entry of the operator's requirements allow list.
type Requirement struct {
	Name    string `json:"name,omitempty"`    // 1
	URL     string `json:"url,omitempty"`     // 2
	Command string `json:"command,omitempty"` // 3
}

// ServersInput is the input of the servers hook.
type ServersInput struct {
	Thread          Thread        `json:"thread,omitempty"`          // 1
	Environments    []Environment `json:"environments,omitempty"`    // 2
	Servers         []Server      `json:"servers,omitempty"`         // 3: for a plugin's own policy, only that plugin's servers
	HasRequirements bool          `json:"hasRequirements,omitempty"` // 4
	Requirements    []Requirement `json:"requirements,omitempty"`    // 5
}

// ServerDecision is the servers hook's decision for one server.
type ServerDecision struct {
	Name       string       `json:"name,omitempty"`       // 1: the server's name
	Action     ServerAction `json:"action,omitempty"`     // 2
	Reason     string       `json:"reason,omitempty"`     // 3
	AllowTools []string     `json:"allowTools,omitempty"` // 4: if non-empty, only these tools are usable
	DenyTools  []string     `json:"denyTools,omitempty"`  // 5: these tools are not usable
}

// ServersOutput is the output of the servers hook. A server not named in
// Decisions gets no opinion (expose).
type ServersOutput struct {
	Decisions []ServerDecision `json:"decisions,omitempty"` // 1
	Error     string           `json:"error,omitempty"`     // 15: non-empty = guest failure; the host fails closed
}

// CredentialsInput is the input of the credentials hook.
type CredentialsInput struct {
	Thread      Thread      `json:"thread,omitempty"`      // 1
	Server      Server      `json:"server,omitempty"`      // 2
	Route       string      `json:"route,omitempty"`       // 3: "local" or executor id
	Environment Environment `json:"environment,omitempty"` // 4: capabilities of the route's environment
}

// CredentialDecision is the credentials hook's decision for one credential.
type CredentialDecision struct {
	Index  uint32           `json:"index,omitempty"`  // 1: index into CredentialsInput.Server.Credentials
	Action CredentialAction `json:"action,omitempty"` // 2
	Reason string           `json:"reason,omitempty"` // 3
}

// CredentialsOutput is the output of the credentials hook. A credential not
// named in Decisions gets no opinion.
type CredentialsOutput struct {
	Decisions []CredentialDecision `json:"decisions,omitempty"` // 1
	Error     string               `json:"error,omitempty"`     // 15: non-empty = guest failure; the host fails closed
}

// ToolCallInput is the input of the tool_call hook.
type ToolCallInput struct {
	Thread    Thread  `json:"thread,omitempty"`    // 1
	Server    string  `json:"server,omitempty"`    // 2
	PluginID  string  `json:"pluginId,omitempty"`  // 3
	Tool      string  `json:"tool,omitempty"`      // 4
	Arguments RawJSON `json:"arguments,omitempty"` // 5: a JSON object
	Caller    string  `json:"caller,omitempty"`    // 6
}

// ToolCallOutput is the output of the tool_call hook.
type ToolCallOutput struct {
	Action    ToolCallAction `json:"action,omitempty"`    // 1
	Reason    string         `json:"reason,omitempty"`    // 2
	Rewrite   bool           `json:"rewrite,omitempty"`   // 3: replace the call's arguments with Arguments
	Arguments RawJSON        `json:"arguments,omitempty"` // 4: a JSON object (when Rewrite)
	Error     string         `json:"error,omitempty"`     // 15: non-empty = guest failure; the host fails closed
}
