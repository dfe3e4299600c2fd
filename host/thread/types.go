package thread

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/roots"
)

// Kind is a thread's kind. Policies see it (abi.Thread.Kind) and the baseline keys rules on
// it: a reviewer thread discovers no executor-config servers (DESIGN.md §5 rule 5).
type Kind string

// Thread kinds.
const (
	KindInteractive Kind = "interactive"
	KindReviewer    Kind = "reviewer"
	KindSubagent    Kind = "subagent"
)

// LocationType says where a selected capability root lives.
type LocationType string

// Location types.
const (
	// LocationLocal: the root is a directory on the host.
	LocationLocal LocationType = "local"
	// LocationEnvironment: the root is a directory inside an executor, read through its
	// fs/read (Start fails with ErrNeedsExecutor when the Manager has no ExecutorFiles).
	LocationEnvironment LocationType = "environment"
)

// Location is where a selected capability root is.
type Location struct {
	// Type is LocationLocal or LocationEnvironment; "" means LocationLocal.
	Type LocationType
	// Path is the root's directory. A relative path resolves against StartParams.Cwd (or the
	// process's working directory when Cwd is empty). "" selects the root by ID among the
	// watched plugins dirs.
	Path string
	// EnvironmentID is the executor holding the root, for LocationEnvironment.
	EnvironmentID string
}

// SelectedRoot is one entry of thread/start's selectedCapabilityRoots.
type SelectedRoot struct {
	// ID is the plugin id the client selected ("name@version"). With a Path it must name
	// the root found there (roots.Root.Matches: "legacy-plugin@1" selects a manifest named
	// "legacy-plugin" without a version); without a Path it is looked up in the watched
	// plugins dirs. The servers of the root report this id as their plugin id, as Codex
	// does; "" reports the root's own id.
	ID string
	// Location is where the root is.
	Location Location
}

// StartParams are thread/start's parameters.
type StartParams struct {
	// Kind is the thread's kind; "" means KindInteractive.
	Kind Kind
	// SelectedRoots are the capability roots whose servers (and policies) this thread uses.
	SelectedRoots []SelectedRoot
	// Cwd is the thread's working directory. It is recorded, and relative root paths
	// resolve against it.
	Cwd string
}

// StartupState is a server's state in a thread: DESIGN.md §3's `starting | ready | failed |
// disabled`.
type StartupState string

// Startup states.
const (
	StateStarting StartupState = "starting"
	StateReady    StartupState = "ready"
	StateFailed   StartupState = "failed"
	// StateDisabled: listed without tools and never started (policy, requirements,
	// `enabled = false`, a denied credential). ToolsError says why.
	StateDisabled StartupState = "disabled"
)

// AuthStatus is a server's authentication state, as Codex reports it, plus AuthExpired.
type AuthStatus string

// Auth statuses (Codex's McpAuthStatus wire values).
const (
	AuthUnsupported AuthStatus = "unsupported"
	AuthNotLoggedIn AuthStatus = "notLoggedIn"
	AuthBearerToken AuthStatus = "bearerToken"
	AuthOAuth       AuthStatus = "oAuth"
	// AuthExpired: the server's OAuth login can no longer be used (its refresh token was
	// refused); ToolsError says so, and a new login recovers it.
	AuthExpired AuthStatus = "expired"
)

// ServerStatus is one server as a thread sees it (one entry of mcpServerStatus/list). It is
// a snapshot value owned by the caller, except the shared *mcp.Tool values.
type ServerStatus struct {
	// Name is the server's name.
	Name string
	// PluginID is the id of the plugin that declared the server, as the thread selected it;
	// "" for a host-config or executor-config declaration (including one that masks a
	// same-name plugin server).
	PluginID string
	// Status is the server's startup state.
	Status StartupState
	// ToolsError says why a disabled or failed server has no tools; "" otherwise.
	ToolsError string
	// Tools is the server's catalog after the effective tool filter (enabled_tools,
	// disabled_tools and the policies' allow/deny lists), sorted by name; empty unless
	// Status is StateReady. The *mcp.Tool values are shared: do not modify them.
	Tools []*mcp.Tool
	// AuthStatus is the server's authentication state.
	AuthStatus AuthStatus
	// Resources, ResourceTemplates and Prompts are the server's catalogs after its resource
	// and prompt lists (the policies'), sorted by URI, URI template and name; empty unless
	// Status is StateReady. The values are shared: do not modify them.
	Resources         []*mcp.Resource
	ResourceTemplates []*mcp.ResourceTemplate
	Prompts           []*mcp.Prompt
	// Instructions and Capabilities are what the server said in initialize (when ready).
	Instructions string
	Capabilities *mcp.ServerCapabilities
}

// Environment is one executor as the thread layer sees it: its capabilities and its own
// server declarations (executor-config). It is the seam the executor client plugs into (see
// Options.Executors); the local environment is implicit. The Manager only reads it.
type Environment struct {
	// ID is the executor id (environments.toml).
	ID string
	// Connected reports whether the executor is reachable now. Servers routed to a
	// disconnected executor are listed failed.
	Connected bool
	// HTTPHeaderEnvVars and Processes are the capabilities the executor announced
	// (executor-side credential resolution for headers; running stdio servers).
	HTTPHeaderEnvVars bool
	Processes         bool
	// Servers are the executor's own declarations as it last announced them (kept while it
	// is disconnected); their Origin is set to executor-config:<ID> whatever it was.
	Servers []config.ServerDecl
}

// Snapshot is the configuration threads are built from: the host's home (config.toml,
// requirements.toml, environments.toml) and the capability roots of the watched plugins dirs.
// It is immutable once handed to the Manager (which shares it between goroutines): build a
// new one instead of changing it.
type Snapshot struct {
	// Home is the loaded home; never nil.
	Home *config.Home
	// Roots are the roots of the plugins dirs; nil means none.
	Roots *roots.Set
	// ConfigErr lists problems found while loading Home (a config.Errors), whose valid part
	// is still used; nil when the files are clean.
	ConfigErr error
}

// Policies are the policy modules for one configuration (see PolicyLoader).
type Policies struct {
	// Operator are the `[[policies]]` of config.toml, in order.
	Operator []decision.Policy
	// Plugins holds one entry per root given to PolicyLoader.Load, in the same order: the
	// root's policy, or nil when it has none.
	Plugins []decision.Policy
}

// PolicyLoader loads policy modules for the Manager, which composes them into the
// decision.Engine. Package host implements it with the wazero runtime and a module cache.
type PolicyLoader interface {
	// Load returns the operator policies of cfg and the policy of each root in rs. A module
	// that cannot be loaded must be returned as a policy whose every call fails (with an
	// error naming the plugin and the cause), so that what it governs fails closed; a nil
	// entry means the root has no policy. Calls are serialized by the Manager; modules that
	// are in neither this result nor the previous one may be closed.
	Load(ctx context.Context, cfg *config.Config, rs []*roots.Root) Policies
}

// Event is a notification from the Manager: *StartupStatus, *ToolsChanged,
// *CatalogChanged, *ResourceUpdated, *LogMessage or *RefreshQueued. Events are immutable
// values.
type Event interface{ event() }

// ThreadClosed reports that a thread ended (Thread.Close): whatever serves the thread (the
// front door's per-thread MCP server) lets go of it then, not when it is next asked for.
type ThreadClosed struct {
	ThreadID string
}

// StartupStatus reports a server's new startup state in a thread (the
// `mcpServer/startupStatus/updated` notification).
type StartupStatus struct {
	ThreadID string
	Name     string
	Status   StartupState
	// Error is the failure or the reason a server is disabled; "" otherwise.
	Error string
}

// ToolsChanged reports that a server's tool catalog changed in a thread (the server sent
// notifications/tools/list_changed and the shared catalog was re-read).
type ToolsChanged struct {
	ThreadID string
	Server   string
}

// RefreshQueued reports that a refresh (a reload, or a change to the thread's plugins) is
// queued for a thread. The thread applies it lazily, before its next status read or tool
// call; a holder of the thread that wants it applied now (the MCP front door, to update its
// tool list) reads the thread's status.
type RefreshQueued struct {
	ThreadID string
}

// CatalogChanged reports that a server's resources, resource templates or prompts changed
// in a thread (the server sent a list_changed notification and the catalog was re-read).
type CatalogChanged struct {
	ThreadID string
	Server   string
}

// ResourceUpdated reports that a server sent notifications/resources/updated for a
// resource some holder of the connection subscribed to.
type ResourceUpdated struct {
	ThreadID string
	Server   string
	URI      string
}

// LogMessage is a log message a server of the thread sent (notifications/message). Its
// level is the server's; the receiver filters by the level its client asked for.
type LogMessage struct {
	ThreadID string
	Server   string
	Params   *mcp.LoggingMessageParams
}

// OAuthLoginCompleted ends a login started by Manager.OAuthLogin (the
// `mcpServer/oauthLogin/completed` notification).
type OAuthLoginCompleted struct {
	// ThreadID is the thread the login was started for; "" without one.
	ThreadID string
	Name     string
	Success  bool
	// Error says why the login failed; "" on success.
	Error string
}

func (*OAuthLoginCompleted) event() {}
func (*StartupStatus) event()       {}
func (*ThreadClosed) event()        {}
func (*ToolsChanged) event()        {}
func (*RefreshQueued) event()       {}
func (*CatalogChanged) event()      {}
func (*ResourceUpdated) event()     {}
func (*LogMessage) event()          {}

// ReloadResult is the outcome of Manager.Reload.
type ReloadResult struct {
	// Refreshed lists the threads that got a refresh queued (applied before their next
	// status read or tool call).
	Refreshed []string
	// Failed lists the threads whose configuration failed to load (best-effort reload only;
	// a strict reload fails instead). They keep their current servers.
	Failed []*ReloadError
	// ConfigErr lists the problems of the reloaded configuration files (best-effort reload
	// only; their valid part was used).
	ConfigErr error
}
