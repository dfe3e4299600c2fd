package sdk

import "github.com/warden-mcp/warden/abi"

// Inline bodies of the views, for policies.
//
// A policy uses the views through this package's aliases (sdk.ServersInput
// is abi.ServersView, ...) and usually does not import abi itself. The Go
// compiler (1.26) only inlines a function of another package if it has the
// function's body, and it reads bodies from the export data of the packages
// the compiled package imports: abi's bodies reach a policy only if sdk's
// export data carries them, which it does for the functions that sdk's own
// inlinable functions call (golang/go#74783). Without them every accessor
// would be a call, and in a wasm guest a call to a function with a branch
// costs an interrupt check (see "Performance" in doc.go). The functions
// below exist only to call every accessor once; TestViewsInlineThroughSDK
// checks that a policy importing only sdk inlines them.
//
// Keep one function per method of every view and list type in abi.

//lint:file-ignore U1000 the functions below are never called: they exist for their inline bodies
func inlServersViewThread(x abi.ServersView)                    { _ = x.Thread() }
func inlServersViewEnvironments(x abi.ServersView)              { _ = x.Environments() }
func inlServersViewServers(x abi.ServersView)                   { _ = x.Servers() }
func inlServersViewHasRequirements(x abi.ServersView)           { _ = x.HasRequirements() }
func inlServersViewRequirements(x abi.ServersView)              { _ = x.Requirements() }
func inlCredentialsViewThread(x abi.CredentialsView)            { _ = x.Thread() }
func inlCredentialsViewServer(x abi.CredentialsView)            { _ = x.Server() }
func inlCredentialsViewRoute(x abi.CredentialsView)             { _ = x.Route() }
func inlCredentialsViewEnvironment(x abi.CredentialsView)       { _ = x.Environment() }
func inlToolCallViewThread(x abi.ToolCallView)                  { _ = x.Thread() }
func inlToolCallViewServer(x abi.ToolCallView)                  { _ = x.Server() }
func inlToolCallViewPluginID(x abi.ToolCallView)                { _ = x.PluginID() }
func inlToolCallViewTool(x abi.ToolCallView)                    { _ = x.Tool() }
func inlToolCallViewArguments(x abi.ToolCallView)               { _ = x.Arguments() }
func inlToolCallViewCaller(x abi.ToolCallView)                  { _ = x.Caller() }
func inlThreadViewID(x abi.ThreadView)                          { _ = x.ID() }
func inlThreadViewKind(x abi.ThreadView)                        { _ = x.Kind() }
func inlThreadViewRoots(x abi.ThreadView)                       { _ = x.Roots() }
func inlRootViewID(x abi.RootView)                              { _ = x.ID() }
func inlRootViewLocation(x abi.RootView)                        { _ = x.Location() }
func inlRootViewEnvironmentID(x abi.RootView)                   { _ = x.EnvironmentID() }
func inlRootViewPath(x abi.RootView)                            { _ = x.Path() }
func inlEnvironmentViewID(x abi.EnvironmentView)                { _ = x.ID() }
func inlEnvironmentViewLocal(x abi.EnvironmentView)             { _ = x.Local() }
func inlEnvironmentViewConnected(x abi.EnvironmentView)         { _ = x.Connected() }
func inlEnvironmentViewHTTPHeaderEnvVars(x abi.EnvironmentView) { _ = x.HTTPHeaderEnvVars() }
func inlEnvironmentViewProcesses(x abi.EnvironmentView)         { _ = x.Processes() }
func inlServerViewName(x abi.ServerView)                        { _ = x.Name() }
func inlServerViewOrigin(x abi.ServerView)                      { _ = x.Origin() }
func inlServerViewPluginID(x abi.ServerView)                    { _ = x.PluginID() }
func inlServerViewTransport(x abi.ServerView)                   { _ = x.Transport() }
func inlServerViewTransportKind(x abi.ServerView)               { _ = x.TransportKind() }
func inlServerViewIsStdio(x abi.ServerView)                     { _ = x.IsStdio() }
func inlServerViewIsHTTP(x abi.ServerView)                      { _ = x.IsHTTP() }
func inlServerViewURL(x abi.ServerView)                         { _ = x.URL() }
func inlServerViewURLHost(x abi.ServerView)                     { _ = x.URLHost() }
func inlServerViewCommand(x abi.ServerView)                     { _ = x.Command() }
func inlServerViewArgs(x abi.ServerView)                        { _ = x.Args() }
func inlServerViewEnvironment(x abi.ServerView)                 { _ = x.Environment() }
func inlServerViewCredentials(x abi.ServerView)                 { _ = x.Credentials() }
func inlServerViewEnabled(x abi.ServerView)                     { _ = x.Enabled() }
func inlServerViewRequired(x abi.ServerView)                    { _ = x.Required() }
func inlServerViewEnabledTools(x abi.ServerView)                { _ = x.EnabledTools() }
func inlServerViewDisabledTools(x abi.ServerView)               { _ = x.DisabledTools() }
func inlCredentialViewKind(x abi.CredentialView)                { _ = x.Kind() }
func inlCredentialViewName(x abi.CredentialView)                { _ = x.Name() }
func inlCredentialViewEnvVar(x abi.CredentialView)              { _ = x.EnvVar() }
func inlCredentialViewOwner(x abi.CredentialView)               { _ = x.Owner() }
func inlCredentialViewResolvesAt(x abi.CredentialView)          { _ = x.ResolvesAt() }
func inlRequirementViewName(x abi.RequirementView)              { _ = x.Name() }
func inlRequirementViewURL(x abi.RequirementView)               { _ = x.URL() }
func inlRequirementViewCommand(x abi.RequirementView)           { _ = x.Command() }
func inlServerListLen(x abi.ServerList)                         { _ = x.Len() }
func inlServerListAt(x abi.ServerList)                          { _ = x.At(0) }
func inlCredentialListLen(x abi.CredentialList)                 { _ = x.Len() }
func inlCredentialListAt(x abi.CredentialList)                  { _ = x.At(0) }
func inlEnvironmentListLen(x abi.EnvironmentList)               { _ = x.Len() }
func inlEnvironmentListAt(x abi.EnvironmentList)                { _ = x.At(0) }
func inlRootListLen(x abi.RootList)                             { _ = x.Len() }
func inlRootListAt(x abi.RootList)                              { _ = x.At(0) }
func inlRequirementListLen(x abi.RequirementList)               { _ = x.Len() }
func inlRequirementListAt(x abi.RequirementList)                { _ = x.At(0) }
func inlStringListLen(x abi.StringList)                         { _ = x.Len() }
func inlStringListAt(x abi.StringList)                          { _ = x.At(0) }
func inlStringListContains(x abi.StringList)                    { _ = x.Contains("") }
