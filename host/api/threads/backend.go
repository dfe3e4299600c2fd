// Package threads adapts the thread layer (package host/thread) to the APIs that serve it:
// Layer is the seam through which both the host API (NewBackend, an api.Backend) and the
// MCP front door (package host/frontdoor) reach the threads, and NewBackend is the host
// API's adapter over it.
//
//	srv := api.New(threads.NewBackend(h.Threads(), threads.Options{Logger: log}), api.Options{})
//	fd := frontdoor.New(h.Threads(), frontdoor.Options{})
package threads

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/protocol"
	"github.com/warden-mcp/warden/host/thread"
)

// Layer is the thread layer as the APIs consume it; *thread.Manager implements it. The
// host API uses all of it, the front door Thread and Subscribe.
type Layer interface {
	// Start starts a thread (thread/start).
	Start(ctx context.Context, p thread.StartParams) (*thread.Thread, error)
	// List returns the running threads.
	List() []*thread.Thread
	// Thread returns the running thread with this id.
	Thread(id string) (*thread.Thread, bool)
	// DiscoverStatus lists the named server, or every server ("" name), as a fresh
	// default thread would see them.
	DiscoverStatus(ctx context.Context, name string) ([]thread.ServerStatus, error)
	// Reload re-reads the configuration and the plugins dirs and refreshes the threads.
	Reload(ctx context.Context, strict bool) (thread.ReloadResult, error)
	// Subscribe registers fn for every thread event until cancel is called.
	Subscribe(fn func(thread.Event)) (cancel func())
	// OAuthLogin starts an OAuth login (mcpServer/oauth/login); an OAuthLoginCompleted
	// event ends it.
	OAuthLogin(ctx context.Context, p thread.OAuthLoginParams) (*oauth.Login, error)
}

var _ Layer = (*thread.Manager)(nil)

// Options configures NewBackend. The zero value is usable.
type Options struct {
	// Version is the serverInfo.version initialize reports. "": the module version from the
	// binary's build info, else "dev".
	Version string
	// Caller names API clients to tool_call policies (abi.ToolCallInput.Caller) as
	// "<Caller>:<clientInfo.name>". "": "api".
	Caller string
	// Logger receives the backend's warnings (a best-effort reload over a configuration
	// with errors). nil: none.
	Logger hclog.Logger
}

// Page sizes of thread/list and mcpServerStatus/list.
const (
	// DefaultPageSize is the page size when a request gives no limit (or 0).
	DefaultPageSize = 100
	// MaxPageSize bounds a requested limit.
	MaxPageSize = 1000
)

// NewBackend returns the host API backend: every method of api.Backend served by the
// thread layer l.
//
//   - initialize reports serverInfo {name "warden", version} and capabilities
//     {oauthLogin: true}.
//   - thread/start starts a thread (Manager.Start) selecting local capability roots; a root
//     located in an environment fails with CodeNotSupported naming the root (executors are
//     not connected yet); a broken or unknown root is CodeInvalidParams naming it; a required
//     server that does not start is CodeServerNotAvailable naming it.
//   - thread/list pages the running threads, oldest first.
//   - mcpServerStatus/list with a threadId reads that thread's status (Thread.Status: its
//     sessions and catalogs are reused, nothing is re-listed); without one it discovers the
//     named server — or every server — as a fresh default thread would
//     (Manager.DiscoverStatus). An unknown name gives an empty page. Pages are sorted by
//     server name.
//   - mcpServer/tool/call goes through Thread.CallTool (the tool_call hook applies):
//     unknown thread CodeThreadNotFound (-32001); a server or tool the thread cannot use
//     CodeServerNotAvailable (-32002, Codex's "MCP tool `server/tool` is not available"
//     text); a policy denial CodeToolDenied (-32003, with the policy's reason); any other
//     failure of the call CodeToolCallFailed (-32004). A tool that ran and failed is a
//     normal result with isError. The request's _meta is not forwarded (Thread.CallTool
//     takes none).
//   - config/mcpServer/reload runs Manager.Reload: strict failures are CodeReloadFailed
//     (-32005) naming the thread whose configuration failed (or the configuration error);
//     best-effort reports the threads it could not refresh.
//   - mcpServer/oauth/login runs Manager.OAuthLogin and answers with the authorization URL
//     the user opens; mcpServer/oauthLogin/completed follows when the login ends. An
//     unknown thread is CodeThreadNotFound, a server the thread does not list (or one that
//     is not an OAuth-capable HTTP server) CodeServerNotAvailable, a bad clientRegistration
//     CodeInvalidParams, a host without a credential store CodeNotSupported, and a login
//     that cannot start (no route, a busy callback port, discovery or registration failed)
//     CodeOAuthLoginFailed (-32008).
//   - Subscribe forwards thread events: StartupStatus as mcpServer/startupStatus/updated,
//     ToolsChanged as mcpServer/tools/updated.
//
// Cursors are opaque; a cursor this host did not issue is CodeInvalidParams. Error messages
// carry names (thread ids, servers, tools, roots) and causes, never a param value.
//
// The backend holds no state of its own beyond its options; it is safe for concurrent use
// and is valid as long as l is.
func NewBackend(l Layer, o Options) api.Backend {
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &backend{
		threads: l,
		log:     log,
		version: cmp.Or(o.Version, buildVersion()),
		caller:  cmp.Or(o.Caller, "api"),
	}
}

// buildVersion is the module version recorded in the binary, else "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

type backend struct {
	threads Layer
	log     hclog.Logger
	version string
	caller  string
}

var _ api.Backend = (*backend)(nil)

func (b *backend) Initialize(_ context.Context, _ *protocol.InitializeParams) (*protocol.InitializeResponse, error) {
	return &protocol.InitializeResponse{
		ServerInfo:   protocol.ServerInfo{Name: "warden", Version: b.version},
		Capabilities: protocol.ServerCapabilities{OauthLogin: true},
	}, nil
}

func (b *backend) StartThread(ctx context.Context, p *protocol.ThreadStartParams) (*protocol.ThreadStartResponse, error) {
	sp := thread.StartParams{}
	if p.Kind != nil {
		sp.Kind = thread.Kind(*p.Kind)
	}
	if p.Cwd != nil {
		sp.Cwd = *p.Cwd
	}
	for _, r := range p.SelectedCapabilityRoots {
		loc := thread.Location{Type: thread.LocationLocal, Path: r.Location.Path}
		if r.Location.Type == protocol.LocationEnvironment {
			loc = thread.Location{Type: thread.LocationEnvironment, EnvironmentID: r.Location.EnvironmentID, Path: r.Location.Path}
		}
		sp.SelectedRoots = append(sp.SelectedRoots, thread.SelectedRoot{ID: r.ID, Location: loc})
	}
	th, err := b.threads.Start(ctx, sp)
	if err != nil {
		return nil, startError(err)
	}
	return &protocol.ThreadStartResponse{Thread: protocol.Thread{ID: th.ID(), Kind: protocol.ThreadKind(th.Kind())}}, nil
}

// startError maps a Manager.Start failure to its protocol error.
func startError(err error) error {
	var rse *thread.RequiredServerError
	var re *thread.RootError
	switch {
	case errors.As(err, &rse):
		return protocol.Errorf(protocol.CodeServerNotAvailable, "%w", err).
			WithData(map[string]string{"threadId": rse.ThreadID, "server": rse.Server})
	case errors.Is(err, thread.ErrNeedsExecutor):
		return protocol.Errorf(protocol.CodeNotSupported, "%w", err)
	case errors.As(err, &re), errors.Is(err, thread.ErrInvalidParams):
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %w", err)
	}
	return protocol.Internal(err)
}

func (b *backend) ListThreads(_ context.Context, p *protocol.ThreadListParams) (*protocol.ThreadListResponse, error) {
	ts := b.threads.List()
	slices.SortStableFunc(ts, func(x, y *thread.Thread) int {
		return cmp.Or(x.CreatedAt().Compare(y.CreatedAt()), cmp.Compare(x.ID(), y.ID()))
	})
	key := func(t *thread.Thread) string { return threadKey(t.CreatedAt().UnixNano(), t.ID()) }
	page, next, err := paginate(ts, key, p.Cursor, p.Limit)
	if err != nil {
		return nil, err
	}
	out := &protocol.ThreadListResponse{Data: make([]protocol.Thread, 0, len(page)), NextCursor: next}
	for _, t := range page {
		out.Data = append(out.Data, protocol.Thread{ID: t.ID(), Kind: protocol.ThreadKind(t.Kind())})
	}
	return out, nil
}

// threadKey orders threads by creation time, then id, as a string that sorts the same way.
func threadKey(nanos int64, id string) string {
	// Offset so that every int64 formats to a fixed width and sorts as a string.
	return fmt.Sprintf("%020d/%s", uint64(nanos)^(1<<63), id)
}

func (b *backend) ListMcpServerStatus(ctx context.Context, p *protocol.ListMcpServerStatusParams) (*protocol.ListMcpServerStatusResponse, error) {
	name := ""
	if p.ServerName != nil {
		name = *p.ServerName
	}
	var (
		st  []thread.ServerStatus
		err error
	)
	if p.ThreadID != nil {
		th, ok := b.threads.Thread(*p.ThreadID)
		if !ok {
			return nil, protocol.ThreadNotFound(*p.ThreadID)
		}
		detail := p.Detail == nil || *p.Detail == protocol.DetailFull
		st, err = th.Status(ctx, name, detail)
		if errors.Is(err, thread.ErrClosed) {
			return nil, protocol.ThreadNotFound(*p.ThreadID)
		}
	} else {
		st, err = b.threads.DiscoverStatus(ctx, name)
	}
	if err != nil {
		return nil, protocol.Internal(err)
	}
	slices.SortFunc(st, func(x, y thread.ServerStatus) int { return cmp.Compare(x.Name, y.Name) })
	page, next, perr := paginate(st, func(s thread.ServerStatus) string { return s.Name }, p.Cursor, p.Limit)
	if perr != nil {
		return nil, perr
	}
	out := &protocol.ListMcpServerStatusResponse{Data: make([]protocol.McpServerStatus, 0, len(page)), NextCursor: next}
	for _, s := range page {
		out.Data = append(out.Data, serverStatus(s))
	}
	return out, nil
}

// serverStatus converts a thread.ServerStatus to its wire shape.
func serverStatus(s thread.ServerStatus) protocol.McpServerStatus {
	ps := protocol.McpServerStatus{
		Name:          s.Name,
		Tools:         make(map[string]*mcp.Tool, len(s.Tools)),
		AuthStatus:    protocol.AuthStatus(s.AuthStatus),
		StartupStatus: protocol.StartupStatus(s.Status),
	}
	if s.PluginID != "" {
		ps.PluginID = &s.PluginID
	}
	if s.ToolsError != "" {
		ps.ToolsError = &s.ToolsError
	}
	for _, t := range s.Tools {
		ps.Tools[t.Name] = t
	}
	return ps
}

func (b *backend) CallTool(ctx context.Context, p *protocol.McpServerToolCallParams) (*mcp.CallToolResult, error) {
	th, ok := b.threads.Thread(p.ThreadID)
	if !ok {
		return nil, protocol.ThreadNotFound(p.ThreadID)
	}
	caller := b.caller
	if c, ok := api.Client(ctx); ok {
		// Policies see which client asked: "api:<clientInfo.name>".
		caller = b.caller + ":" + c.Name
	}
	res, err := th.CallTool(ctx, p.Server, p.Tool, p.Arguments, caller)
	if err != nil {
		return nil, callError(p.ThreadID, p.Server, p.Tool, err)
	}
	return res, nil
}

// callError maps a Thread.CallTool failure to its protocol error.
func callError(threadID, server, tool string, err error) error {
	var na *thread.UnavailableError
	var denied *thread.DeniedError
	switch {
	case errors.As(err, &denied):
		return protocol.ToolDenied(threadID, server, tool, cmp.Or(denied.Reason, "denied by "+denied.DecidedBy))
	case errors.As(err, &na):
		return protocol.Errorf(protocol.CodeServerNotAvailable, "%w", err).
			WithData(map[string]string{"threadId": threadID, "server": server})
	case errors.Is(err, thread.ErrClosed):
		return protocol.ThreadNotFound(threadID)
	case errors.Is(err, thread.ErrInvalidParams):
		return protocol.InvalidParams(`field "arguments" must be a JSON object`)
	}
	return protocol.ToolCallFailed(threadID, server, tool, err)
}

func (b *backend) Reload(ctx context.Context, p *protocol.ReloadParams) (*protocol.ReloadResponse, error) {
	strict := p.EffectiveMode() == protocol.ReloadStrict
	res, err := b.threads.Reload(ctx, strict)
	if err != nil {
		var re *thread.ReloadError
		if errors.As(err, &re) {
			return nil, protocol.ReloadFailed(re.ThreadID, re.Err)
		}
		return nil, protocol.Errorf(protocol.CodeReloadFailed, "reload failed: %w", err)
	}
	if res.ConfigErr != nil {
		b.log.Warn("best-effort reload: the configuration has errors; its valid part is used", "error", res.ConfigErr)
	}
	out := &protocol.ReloadResponse{Refreshed: res.Refreshed}
	for _, f := range res.Failed {
		out.Failed = append(out.Failed, protocol.ReloadFailure{ThreadID: f.ThreadID, Error: f.Err.Error()})
	}
	return out, nil
}

func (b *backend) OauthLogin(ctx context.Context, p *protocol.McpServerOauthLoginParams) (*protocol.McpServerOauthLoginResponse, error) {
	tp := thread.OAuthLoginParams{Name: p.Name, Scopes: p.Scopes}
	if p.ThreadID != nil {
		tp.ThreadID = *p.ThreadID
	}
	if p.ClientRegistration != nil {
		tp.Registration = *p.ClientRegistration
	}
	if p.TimeoutSecs != nil {
		tp.Timeout = time.Duration(*p.TimeoutSecs) * time.Second
	}
	l, err := b.threads.OAuthLogin(ctx, tp)
	switch {
	case err == nil:
		return &protocol.McpServerOauthLoginResponse{AuthorizationURL: l.AuthorizationURL}, nil
	case errors.Is(err, thread.ErrNotFound):
		return nil, protocol.ThreadNotFound(tp.ThreadID)
	case errors.Is(err, thread.ErrOAuthUnavailable):
		return nil, protocol.NotSupported("OAuth login (the credential store cannot be opened; see the host log)")
	case errors.Is(err, oauth.ErrInvalidRequest):
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "%w", err)
	case errors.Is(err, thread.ErrNoSuchServer), errors.Is(err, thread.ErrNotOAuth):
		return nil, protocol.Errorf(protocol.CodeServerNotAvailable, "%w", err)
	}
	return nil, protocol.Errorf(protocol.CodeOAuthLoginFailed, "%w", err)
}

func (b *backend) Subscribe(fn func(method string, params any)) (cancel func()) {
	// mu makes cancel a barrier: once it returns, no call to fn is running or will start
	// (the thread layer may still deliver an event it had already picked up).
	var (
		mu   sync.Mutex
		done bool
	)
	unsubscribe := b.threads.Subscribe(func(ev thread.Event) {
		method, params := notification(ev)
		if method == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			fn(method, params)
		}
	})
	return func() {
		unsubscribe()
		mu.Lock()
		done = true
		mu.Unlock()
	}
}

// notification converts a thread event to its API notification.
func notification(ev thread.Event) (string, any) {
	switch e := ev.(type) {
	case *thread.StartupStatus:
		n := &protocol.McpServerStartupStatusUpdatedNotification{ThreadID: e.ThreadID, Name: e.Name, Status: protocol.StartupStatus(e.Status)}
		if e.Error != "" {
			msg := e.Error
			n.Error = &msg
		}
		return protocol.NotifyMcpServerStartupStatusUpdated, n
	case *thread.ToolsChanged:
		return protocol.NotifyMcpServerToolsUpdated, &protocol.McpServerToolsUpdatedNotification{ThreadID: e.ThreadID, Name: e.Server}
	case *thread.OAuthLoginCompleted:
		n := &protocol.McpServerOauthLoginCompletedNotification{Name: e.Name, Success: e.Success}
		if e.ThreadID != "" {
			id := e.ThreadID
			n.ThreadID = &id
		}
		if e.Error != "" {
			msg := e.Error
			n.Error = &msg
		}
		return protocol.NotifyMcpServerOauthLoginCompleted, n
	}
	return "", nil
}

// paginate returns the page of items (sorted by key) after cursor, at most limit long, and
// the cursor of the next page (nil on the last one).
func paginate[T any](items []T, key func(T) string, cursor *string, limit *uint32) ([]T, *string, error) {
	n := DefaultPageSize
	if limit != nil && *limit > 0 {
		n = min(int(*limit), MaxPageSize)
	}
	start := 0
	if cursor != nil {
		after, err := decodeCursor(*cursor)
		if err != nil {
			return nil, nil, err
		}
		start, _ = slices.BinarySearchFunc(items, after, func(it T, k string) int {
			if key(it) <= k {
				return -1
			}
			return 1
		})
	}
	end := min(start+n, len(items))
	page := items[start:end]
	if end == len(items) {
		return page, nil, nil
	}
	next := encodeCursor(key(items[end-1]))
	return page, &next, nil
}

const cursorPrefix = "c1:"

func encodeCursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + key))
}

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return "", protocol.InvalidParams(`field "cursor" is not a cursor this host issued`)
	}
	return strings.TrimPrefix(string(b), cursorPrefix), nil
}
