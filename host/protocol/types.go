package protocol

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ----- initialize -----

// InitializeParams are the params of MethodInitialize.
type InitializeParams struct {
	// ClientInfo names the client; Name is required.
	ClientInfo ClientInfo `json:"clientInfo"`
	// Capabilities are optional client capabilities; Codex clients send null or an object.
	Capabilities *ClientCapabilities `json:"capabilities,omitempty"`
}

// ClientInfo identifies a client, for logs.
type ClientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ClientCapabilities are what a client asks of the connection.
type ClientCapabilities struct {
	// ExperimentalAPI is accepted for Codex compatibility; warden has no experimental
	// API and ignores it.
	ExperimentalAPI bool `json:"experimentalApi,omitempty"`
	// OptOutNotificationMethods lists notification methods (e.g.
	// NotifyMcpServerToolsUpdated) this connection does not want to receive.
	OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
}

// Validate reports a missing client name.
func (p *InitializeParams) Validate() error {
	if p.ClientInfo.Name == "" {
		return missingField("clientInfo.name")
	}
	return nil
}

// InitializeResponse is the result of MethodInitialize.
type InitializeResponse struct {
	ServerInfo   ServerInfo         `json:"serverInfo"`
	Capabilities ServerCapabilities `json:"capabilities"`
}

// ServerInfo identifies the warden host.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ServerCapabilities says which optional parts of the API this host implements.
type ServerCapabilities struct {
	// OauthLogin reports whether MethodMcpServerOauthLogin is implemented; when false it
	// fails with CodeNotSupported.
	OauthLogin bool `json:"oauthLogin"`
}

// ----- thread/start, thread/list -----

// ThreadKind is a thread's kind (DESIGN.md §1).
type ThreadKind string

// Thread kinds.
const (
	ThreadKindInteractive ThreadKind = "interactive"
	ThreadKindReviewer    ThreadKind = "reviewer"
	ThreadKindSubagent    ThreadKind = "subagent"
)

// ThreadStartParams are the params of MethodThreadStart. Every field is optional.
type ThreadStartParams struct {
	// Kind is the thread's kind; nil means the host's default (interactive).
	Kind *ThreadKind `json:"kind,omitempty"`
	// SelectedCapabilityRoots are the plugins (capability roots) the thread selects;
	// their servers appear only in this thread.
	SelectedCapabilityRoots []SelectedCapabilityRoot `json:"selectedCapabilityRoots,omitempty"`
	// Cwd is the thread's working directory; nil means the host's.
	Cwd *string `json:"cwd,omitempty"`
}

// Validate checks the kind and every selected root.
func (p *ThreadStartParams) Validate() error {
	if p.Kind != nil {
		switch *p.Kind {
		case ThreadKindInteractive, ThreadKindReviewer, ThreadKindSubagent:
		default:
			return badValue("kind", `one of "interactive", "reviewer", "subagent"`)
		}
	}
	for i := range p.SelectedCapabilityRoots {
		if err := p.SelectedCapabilityRoots[i].validate(indexPath("selectedCapabilityRoots", i)); err != nil {
			return err
		}
	}
	return nil
}

// SelectedCapabilityRoot selects one capability root (a plugin directory) by id and
// location.
type SelectedCapabilityRoot struct {
	// ID is the plugin id, name@version.
	ID       string                 `json:"id"`
	Location CapabilityRootLocation `json:"location"`
}

func (r *SelectedCapabilityRoot) validate(path string) error {
	if r.ID == "" {
		return missingField(path + ".id")
	}
	return r.Location.validate(path + ".location")
}

// CapabilityRootLocationType says where a capability root lives.
type CapabilityRootLocationType string

// Capability root location types.
const (
	// LocationLocal: the root is a directory on the host.
	LocationLocal CapabilityRootLocationType = "local"
	// LocationEnvironment: the root is a directory inside an environment (an executor).
	LocationEnvironment CapabilityRootLocationType = "environment"
)

// CapabilityRootLocation is {type:"local", path} or {type:"environment",
// environmentId, path}. It is one flat struct on the Go side; Validate enforces which
// members each type takes.
type CapabilityRootLocation struct {
	Type CapabilityRootLocationType `json:"type"`
	// Path is the root's directory, on the host (local) or inside the environment.
	Path string `json:"path"`
	// EnvironmentID names the environment; required for "environment", absent for
	// "local".
	EnvironmentID string `json:"environmentId,omitempty"`
}

func (l *CapabilityRootLocation) validate(path string) error {
	switch l.Type {
	case LocationLocal:
		if l.EnvironmentID != "" {
			return &Error{Code: CodeInvalidParams, Message: "invalid params: field " + quote(path+".environmentId") + ` is not allowed with type "local"`}
		}
	case LocationEnvironment:
		if l.EnvironmentID == "" {
			return missingField(path + ".environmentId")
		}
	case "":
		return missingField(path + ".type")
	default:
		return badValue(path+".type", `"local" or "environment"`)
	}
	if l.Path == "" {
		return missingField(path + ".path")
	}
	return nil
}

// ThreadStartResponse is the result of MethodThreadStart.
type ThreadStartResponse struct {
	Thread Thread `json:"thread"`
}

// Thread describes a thread.
type Thread struct {
	ID   string     `json:"id"`
	Kind ThreadKind `json:"kind"`
}

// ThreadListParams are the params of MethodThreadList. Every field is optional.
type ThreadListParams struct {
	// Cursor is a previous page's NextCursor; nil starts at the beginning.
	Cursor *string `json:"cursor,omitempty"`
	// Limit bounds the page size; nil means the host's default.
	Limit *uint32 `json:"limit,omitempty"`
}

// ThreadListResponse is the result of MethodThreadList.
type ThreadListResponse struct {
	Data []Thread `json:"data"`
	// NextCursor is null on the last page.
	NextCursor *string `json:"nextCursor"`
}

// MarshalJSON writes a nil Data as [].
func (r ThreadListResponse) MarshalJSON() ([]byte, error) {
	type plain ThreadListResponse
	if r.Data == nil {
		r.Data = []Thread{}
	}
	return json.Marshal(plain(r))
}

// ----- mcpServerStatus/list -----

// McpServerStatusDetail selects how much of each server's status to return. Warden's
// status carries only tools and auth, so both values give the same shape; the member is
// accepted (and checked) for Codex compatibility and passed to the backend.
type McpServerStatusDetail string

// Status detail values.
const (
	DetailFull             McpServerStatusDetail = "full"
	DetailToolsAndAuthOnly McpServerStatusDetail = "toolsAndAuthOnly"
)

// ListMcpServerStatusParams are the params of MethodMcpServerStatusList. Every field is
// optional.
type ListMcpServerStatusParams struct {
	// ThreadID reads that thread's servers, reusing its sessions and tool catalog (no new
	// initialize or tools/list at the server). Without it the host discovers servers
	// through a discovery connection.
	ThreadID *string `json:"threadId,omitempty"`
	// ServerName restricts the page to one server; an unknown name gives an empty page.
	ServerName *string                `json:"serverName,omitempty"`
	Cursor     *string                `json:"cursor,omitempty"`
	Limit      *uint32                `json:"limit,omitempty"`
	Detail     *McpServerStatusDetail `json:"detail,omitempty"`
}

// Validate checks that ids are non-empty when given and the detail value.
func (p *ListMcpServerStatusParams) Validate() error {
	if p.ThreadID != nil && *p.ThreadID == "" {
		return badValue("threadId", "a non-empty string")
	}
	if p.ServerName != nil && *p.ServerName == "" {
		return badValue("serverName", "a non-empty string")
	}
	if p.Detail != nil && *p.Detail != DetailFull && *p.Detail != DetailToolsAndAuthOnly {
		return badValue("detail", `"full" or "toolsAndAuthOnly"`)
	}
	return nil
}

// AuthStatus is a server's authentication state (Codex McpAuthStatus).
type AuthStatus string

// Auth status values.
const (
	AuthUnsupported AuthStatus = "unsupported"
	AuthNotLoggedIn AuthStatus = "notLoggedIn"
	AuthBearerToken AuthStatus = "bearerToken"
	AuthOAuth       AuthStatus = "oAuth"
	// AuthExpired: the OAuth login can no longer be used (its refresh token was refused);
	// a new login recovers the server. (Not one of Codex's values.)
	AuthExpired AuthStatus = "expired"
)

// StartupStatus is a server's lifecycle state in a thread (DESIGN.md §3).
type StartupStatus string

// Startup status values.
const (
	StartupStarting StartupStatus = "starting"
	StartupReady    StartupStatus = "ready"
	StartupFailed   StartupStatus = "failed"
	// StartupDisabled: policy disabled the server; it is listed with no tools and its
	// ToolsError gives the reason.
	StartupDisabled StartupStatus = "disabled"
)

// ListMcpServerStatusResponse is the result of MethodMcpServerStatusList.
type ListMcpServerStatusResponse struct {
	Data []McpServerStatus `json:"data"`
	// NextCursor is null on the last page.
	NextCursor *string `json:"nextCursor"`
}

// MarshalJSON writes a nil Data as [].
func (r ListMcpServerStatusResponse) MarshalJSON() ([]byte, error) {
	type plain ListMcpServerStatusResponse
	if r.Data == nil {
		r.Data = []McpServerStatus{}
	}
	return json.Marshal(plain(r))
}

// McpServerStatus is one server's status.
type McpServerStatus struct {
	Name string `json:"name"`
	// PluginID is the owning plugin's id, or null for a host- or executor-config server.
	PluginID *string `json:"pluginId"`
	// Tools maps each exposed tool's name to its MCP definition; {} when none.
	Tools map[string]*mcp.Tool `json:"tools"`
	// ToolsError says why the server has no tools (failed, disabled by policy, ...), or
	// null.
	ToolsError    *string       `json:"toolsError"`
	AuthStatus    AuthStatus    `json:"authStatus"`
	StartupStatus StartupStatus `json:"startupStatus"`
}

// MarshalJSON writes a nil Tools as {}.
func (s McpServerStatus) MarshalJSON() ([]byte, error) {
	type plain McpServerStatus
	if s.Tools == nil {
		s.Tools = map[string]*mcp.Tool{}
	}
	return json.Marshal(plain(s))
}

// ----- mcpServer/tool/call -----

// McpServerToolCallParams are the params of MethodMcpServerToolCall. The result is the
// MCP *mcp.CallToolResult ({content, structuredContent, isError}).
type McpServerToolCallParams struct {
	ThreadID string `json:"threadId"`
	// Server is the server's name in the thread.
	Server string `json:"server"`
	// Tool is the tool's name at the server (not namespaced).
	Tool string `json:"tool"`
	// Arguments is the JSON object of tool arguments, or nil when absent or null.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Meta is the MCP _meta object forwarded with tools/call, or nil when absent or null.
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Validate checks the required names and that arguments and _meta are objects.
func (p *McpServerToolCallParams) Validate() error {
	switch {
	case p.ThreadID == "":
		return missingField("threadId")
	case p.Server == "":
		return missingField("server")
	case p.Tool == "":
		return missingField("tool")
	}
	if !isObjectOrAbsent(p.Arguments) {
		return badValue("arguments", "an object")
	}
	if !isObjectOrAbsent(p.Meta) {
		return badValue("_meta", "an object")
	}
	return nil
}

// normalize turns an explicit JSON null into absent.
func (p *McpServerToolCallParams) normalize() {
	if isNull(p.Arguments) {
		p.Arguments = nil
	}
	if isNull(p.Meta) {
		p.Meta = nil
	}
}

// ----- config/mcpServer/reload -----

// ReloadMode says what a reload does when a thread's new configuration fails.
type ReloadMode string

// Reload modes.
const (
	// ReloadStrict fails the whole reload with CodeReloadFailed naming the first thread
	// whose configuration failed; no thread is refreshed.
	ReloadStrict ReloadMode = "strict"
	// ReloadBestEffort refreshes every thread it can and reports the rest in
	// ReloadResponse.Failed.
	ReloadBestEffort ReloadMode = "bestEffort"
)

// ReloadParams are the params of MethodMcpServerReload; params may be absent (Codex
// sends none).
type ReloadParams struct {
	// Mode is ReloadStrict when empty.
	Mode ReloadMode `json:"mode,omitempty"`
}

// EffectiveMode is Mode, or ReloadStrict when Mode is empty.
func (p *ReloadParams) EffectiveMode() ReloadMode {
	if p == nil || p.Mode == "" {
		return ReloadStrict
	}
	return p.Mode
}

// Validate checks the mode.
func (p *ReloadParams) Validate() error {
	switch p.Mode {
	case "", ReloadStrict, ReloadBestEffort:
		return nil
	}
	return badValue("mode", `"strict" or "bestEffort"`)
}

// ReloadResponse is the result of MethodMcpServerReload.
type ReloadResponse struct {
	// Refreshed lists the ids of the threads that were refreshed (or have a refresh
	// pending, applied before their next status read).
	Refreshed []string `json:"refreshed"`
	// Failed lists the threads that could not be refreshed (best-effort mode only).
	Failed []ReloadFailure `json:"failed"`
}

// MarshalJSON writes nil slices as [].
func (r ReloadResponse) MarshalJSON() ([]byte, error) {
	type plain ReloadResponse
	if r.Refreshed == nil {
		r.Refreshed = []string{}
	}
	if r.Failed == nil {
		r.Failed = []ReloadFailure{}
	}
	return json.Marshal(plain(r))
}

// ReloadFailure is one thread a best-effort reload could not refresh.
type ReloadFailure struct {
	ThreadID string `json:"threadId"`
	Error    string `json:"error"`
}

// ----- mcpServer/oauth/login -----

// McpServerOauthLoginParams are the params of MethodMcpServerOauthLogin.
type McpServerOauthLoginParams struct {
	// Name is the server's name.
	Name string `json:"name"`
	// ThreadID selects the thread whose server (and credential owner) to log in.
	ThreadID *string `json:"threadId,omitempty"`
	// ClientRegistration selects how the OAuth client is obtained when the server's
	// configuration names no client id (which always wins): "auto" (a client ID metadata
	// document where supported and configured, else dynamic registration), "dcr" (dynamic
	// client registration) or "cimd" (the metadata document only). Absent: "auto".
	ClientRegistration *string `json:"clientRegistration,omitempty"`
	// Scopes overrides the requested scopes.
	Scopes []string `json:"scopes,omitempty"`
	// TimeoutSecs bounds the whole login, most of it the wait for the authorization
	// callback. Absent: 300.
	TimeoutSecs *int64 `json:"timeoutSecs,omitempty"`
}

// Validate checks the server name and the timeout.
func (p *McpServerOauthLoginParams) Validate() error {
	if p.Name == "" {
		return missingField("name")
	}
	if p.ThreadID != nil && *p.ThreadID == "" {
		return badValue("threadId", "a non-empty string")
	}
	if p.TimeoutSecs != nil && *p.TimeoutSecs <= 0 {
		return badValue("timeoutSecs", "a positive integer")
	}
	return nil
}

// McpServerOauthLoginResponse is the result of MethodMcpServerOauthLogin.
type McpServerOauthLoginResponse struct {
	// AuthorizationURL is the URL the user opens to log in.
	AuthorizationURL string `json:"authorizationUrl"`
}

// ----- notifications -----

// McpServerOauthLoginCompletedNotification is the params of
// NotifyMcpServerOauthLoginCompleted.
type McpServerOauthLoginCompletedNotification struct {
	Name     string  `json:"name"`
	ThreadID *string `json:"threadId"`
	Success  bool    `json:"success"`
	// Error says why the login failed, or null.
	Error *string `json:"error"`
}

// McpServerStartupStatusUpdatedNotification is the params of
// NotifyMcpServerStartupStatusUpdated.
type McpServerStartupStatusUpdatedNotification struct {
	ThreadID string        `json:"threadId"`
	Name     string        `json:"name"`
	Status   StartupStatus `json:"status"`
	// Error says why the server failed or is disabled, or null.
	Error *string `json:"error"`
}

// McpServerToolsUpdatedNotification is the params of NotifyMcpServerToolsUpdated.
type McpServerToolsUpdatedNotification struct {
	ThreadID string `json:"threadId"`
	Name     string `json:"name"`
}
