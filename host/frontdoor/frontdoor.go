package frontdoor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/api/threads"
	"github.com/warden-mcp/warden/host/thread"
)

// Separator joins a server name and a tool name into a front-door tool name:
// "docs" + "search" is "docs__search". A name is split at its first Separator, so a tool
// name may contain it but a server name may not (such a server is not exposed).
const Separator = "__"

// ToolName is the front-door name of tool on server: server + Separator + tool.
func ToolName(server, tool string) string { return server + Separator + tool }

// SplitToolName splits a front-door tool name at its first Separator. ok is false when the
// name has no separator or an empty server or tool part.
func SplitToolName(name string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(name, Separator)
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// Defaults for Options.
const (
	DefaultStartupWait    = 30 * time.Second
	DefaultSessionTimeout = 30 * time.Minute
)

// Options configures a FrontDoor. The zero value is usable.
type Options struct {
	// Logger is the parent logger; the front door logs through Logger.Named("frontdoor").
	// nil discards logs.
	Logger hclog.Logger
	// Version is the serverInfo.version of the MCP servers. "": "dev".
	Version string
	// StartupWait bounds how long a tools/list waits for the thread's servers that are still
	// starting, so that a client's first list is complete; after it, the list has the
	// servers that are ready and later ones arrive with notifications/tools/list_changed.
	// 0: DefaultStartupWait; negative: never wait.
	StartupWait time.Duration
	// SessionTimeout closes a streamable HTTP session idle this long. 0:
	// DefaultSessionTimeout; negative: never.
	SessionTimeout time.Duration
}

// FrontDoor serves warden threads as MCP servers: one *mcp.Server per served thread, whose
// tools are the thread's exposed tools namespaced server__tool. See the package
// documentation.
//
// Concurrency: every method is safe for concurrent use. Close ends every session and waits
// for every goroutine the FrontDoor started.
type FrontDoor struct {
	mgr            threads.Layer
	log            hclog.Logger
	version        string
	startupWait    time.Duration
	sessionTimeout time.Duration

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers and session closers; Add only under mu while !closed

	unsubscribe func()

	mu      sync.Mutex
	servers map[string]*threadServer // by thread id
	warned  map[string]bool          // server names with Separator already warned about
	closed  bool
}

// New returns a FrontDoor for the threads of mgr (a *thread.Manager: the same seam the host
// API's backend consumes). It subscribes to mgr's events (to keep tool lists current) until
// Close.
func New(mgr threads.Layer, o Options) *FrontDoor {
	log := o.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &FrontDoor{
		mgr:            mgr,
		log:            log.Named("frontdoor"),
		version:        cmp.Or(o.Version, "dev"),
		startupWait:    orDefault(o.StartupWait, DefaultStartupWait),
		sessionTimeout: orDefault(o.SessionTimeout, DefaultSessionTimeout),
		ctx:            ctx,
		cancel:         cancel,
		servers:        map[string]*threadServer{},
		warned:         map[string]bool{},
	}
	f.unsubscribe = mgr.Subscribe(f.onEvent)
	return f
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// onEvent runs on the thread manager's event goroutine: it only wakes the served thread's
// worker, which does the work.
func (f *FrontDoor) onEvent(ev thread.Event) {
	var id string
	switch e := ev.(type) {
	case *thread.StartupStatus:
		id = e.ThreadID
	case *thread.ToolsChanged:
		id = e.ThreadID
	case *thread.RefreshQueued:
		id = e.ThreadID
	default:
		return
	}
	f.mu.Lock()
	ts := f.servers[id]
	f.mu.Unlock()
	if ts != nil {
		ts.wake()
	}
}

// Server returns the MCP server of a thread, creating it on first use. Its tools follow the
// thread (list_changed is sent to its sessions) until the thread ends or the FrontDoor is
// closed. An unknown thread is an error matching thread.ErrNotFound.
func (f *FrontDoor) Server(threadID string) (*mcp.Server, error) {
	ts, err := f.serverFor(threadID)
	if err != nil {
		return nil, err
	}
	return ts.srv, nil
}

// Serve serves a thread as an MCP server over one transport (for example an
// mcp.IOTransport) until the client ends the session or ctx is done.
func (f *FrontDoor) Serve(ctx context.Context, threadID string, t mcp.Transport) error {
	ts, err := f.serverFor(threadID)
	if err != nil {
		return err
	}
	ss, err := ts.srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("frontdoor: thread %s: %w", threadID, err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ts.ctx.Done(): // the thread ended or the FrontDoor closed, maybe before Connect
		_ = ss.Close()
		err = <-done
	case <-ctx.Done():
		_ = ss.Close()
		<-done
		return ctx.Err()
	}
	// The peer going away is the normal end of a session.
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("frontdoor: thread %s: %w", threadID, err)
	}
	return nil
}

// Close stops following the threads, closes every MCP session the FrontDoor serves (stdio
// and HTTP) and waits for every goroutine it started. Stop HTTP listeners first (cancel
// Listener.Serve's context); Close is idempotent.
func (f *FrontDoor) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.wg.Wait()
		return nil
	}
	f.closed = true
	servers := make([]*threadServer, 0, len(f.servers))
	for _, ts := range f.servers {
		servers = append(servers, ts)
	}
	f.servers = map[string]*threadServer{}
	f.mu.Unlock()
	f.unsubscribe()
	f.cancel() // ends workers, waits and in-flight tool calls
	var wg sync.WaitGroup
	for _, ts := range servers {
		wg.Go(ts.closeSessions)
	}
	wg.Wait()
	f.wg.Wait()
	return nil
}

// serverFor returns the thread's server, creating it (and its worker) on first use.
func (f *FrontDoor) serverFor(threadID string) (*threadServer, error) {
	th, ok := f.mgr.Thread(threadID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("frontdoor: %w", thread.ErrClosed)
	}
	ts := f.servers[threadID]
	if !ok {
		if ts != nil {
			f.retireLocked(ts)
		}
		return nil, fmt.Errorf("frontdoor: thread %q: %w", threadID, thread.ErrNotFound)
	}
	if ts != nil && ts.th == th {
		return ts, nil
	}
	ts = f.newThreadServer(th)
	f.servers[threadID] = ts
	f.wg.Go(ts.run)
	ts.wake()
	return ts, nil
}

// retireLocked drops a thread server whose thread is gone: its worker stops and its
// sessions are closed in the background (f.mu held).
func (f *FrontDoor) retireLocked(ts *threadServer) {
	if f.servers[ts.th.ID()] == ts {
		delete(f.servers, ts.th.ID())
	}
	ts.stop()
	if !f.closed { // else Close closes the sessions
		f.wg.Go(ts.closeSessions)
	}
	f.log.Debug("thread ended; its MCP sessions are closed", "thread", ts.th.ID())
}

func (f *FrontDoor) retire(ts *threadServer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retireLocked(ts)
}

// warnSeparator logs once per server name that it cannot be addressed.
func (f *FrontDoor) warnSeparator(server string) {
	f.mu.Lock()
	seen := f.warned[server]
	f.warned[server] = true
	f.mu.Unlock()
	if !seen {
		f.log.Warn("MCP server name contains the front-door separator; its tools are not exposed", "server", server, "separator", Separator)
	}
}

// threadServer is one thread served as an MCP server.
type threadServer struct {
	f    *FrontDoor
	th   *thread.Thread
	srv  *mcp.Server
	http http.Handler

	ctx    context.Context // ends the worker
	cancel context.CancelFunc
	kick   chan struct{}

	mu      sync.Mutex // serializes syncs; guards tools and retired
	tools   map[string]exposedTool
	retired bool
}

// exposedTool is one tool of the served set.
type exposedTool struct {
	server, tool string
	upstream     *mcp.Tool
	def          []byte // the upstream definition, JSON, for change detection
}

func (f *FrontDoor) newThreadServer(th *thread.Thread) *threadServer {
	ctx, cancel := context.WithCancel(f.ctx)
	ts := &threadServer{f: f, th: th, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), tools: map[string]exposedTool{}}
	ts.srv = mcp.NewServer(&mcp.Implementation{Name: "warden", Title: "warden thread " + th.ID(), Version: f.version}, &mcp.ServerOptions{
		Instructions: "Tools of the MCP servers this warden thread exposes, named server__tool.",
		// Advertise tools with listChanged even before the first tool is added; no logging.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	ts.srv.AddReceivingMiddleware(ts.middleware)
	sessionTimeout := f.sessionTimeout
	ts.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: sessionTimeout,
	})
	return ts
}

func (ts *threadServer) wake() {
	select {
	case ts.kick <- struct{}{}:
	default:
	}
}

func (ts *threadServer) stop() { ts.cancel() }

// run is the worker: it syncs the tool set when the thread reports a change and applies
// queued refreshes.
func (ts *threadServer) run() {
	for {
		select {
		case <-ts.ctx.Done():
			return
		case <-ts.kick:
			ts.sync(ts.ctx, false)
		}
	}
}

// closeSessions closes every MCP session of the server (which removes HTTP sessions from the
// handler and ends a Serve).
func (ts *threadServer) closeSessions() {
	for ss := range ts.srv.Sessions() {
		_ = ss.Close()
	}
}

// middleware keeps the tool set current for the requests that read it: tools/list (waiting
// for servers still starting, bounded by StartupWait) and tools/call of a name not in the
// set yet (the client may have seen a newer list than a notification delivered to us).
func (ts *threadServer) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			ts.sync(ctx, true)
		case "tools/call":
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && !ts.has(p.Name) {
				ts.sync(ctx, true)
			}
		}
		return next(ctx, method, req)
	}
}

func (ts *threadServer) has(name string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, ok := ts.tools[name]
	return ok
}

// sync reads the thread's status (applying a queued refresh) and makes the server's tools
// exactly the exposed tools of its ready servers. Only real changes touch the server, so
// only they send notifications/tools/list_changed.
func (ts *threadServer) sync(ctx context.Context, wait bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ts.ctx, cancel)
	defer stop()

	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.retired {
		return
	}
	st, err := ts.status(ctx, wait)
	if err != nil {
		if errors.Is(err, thread.ErrClosed) {
			ts.retired = true
			ts.f.retire(ts)
			return
		}
		if ctx.Err() == nil {
			ts.f.log.Warn("cannot read the thread's status; tool list unchanged", "thread", ts.th.ID(), "error", err)
		}
		return
	}
	want := map[string]exposedTool{}
	for _, s := range st {
		if s.Status != thread.StateReady {
			continue
		}
		if strings.Contains(s.Name, Separator) {
			ts.f.warnSeparator(s.Name)
			continue
		}
		for _, t := range s.Tools {
			def, err := json.Marshal(t)
			if err != nil {
				ts.f.log.Warn("upstream tool definition does not encode; not exposed", "server", s.Name, "tool", t.Name, "error", err)
				continue
			}
			want[ToolName(s.Name, t.Name)] = exposedTool{server: s.Name, tool: t.Name, upstream: t, def: def}
		}
	}
	var remove []string
	for name := range ts.tools {
		if _, ok := want[name]; !ok {
			remove = append(remove, name)
		}
	}
	if len(remove) > 0 {
		ts.srv.RemoveTools(remove...)
	}
	changed := len(remove) > 0
	next := make(map[string]exposedTool, len(want))
	for name, w := range want {
		if old, ok := ts.tools[name]; ok && (old.upstream == w.upstream || bytes.Equal(old.def, w.def)) {
			next[name] = w // same definition: the served tool stays, no notification
			continue
		}
		changed = true
		if err := ts.add(name, w); err != nil {
			ts.f.log.Warn("upstream tool cannot be served; not exposed", "server", w.server, "tool", w.tool, "error", err)
			if _, ok := ts.tools[name]; ok {
				ts.srv.RemoveTools(name)
			}
			continue
		}
		next[name] = w
	}
	ts.tools = next
	if changed {
		ts.f.log.Debug("thread tool set updated", "thread", ts.th.ID(), "tools", len(next))
	}
}

// status reads the thread's servers: with wait, up to StartupWait for servers still starting
// (then as they are).
func (ts *threadServer) status(ctx context.Context, wait bool) ([]thread.ServerStatus, error) {
	if wait && ts.f.startupWait > 0 {
		wctx, cancel := context.WithTimeout(ctx, ts.f.startupWait)
		st, err := ts.th.Status(wctx, "", false)
		cancel()
		if err == nil || errors.Is(err, thread.ErrClosed) || ctx.Err() != nil {
			return st, err
		}
	}
	return ts.th.StatusNow(ctx, "")
}

// add adds (or replaces) one namespaced tool: the upstream definition under the new name,
// calling through the thread.
func (ts *threadServer) add(name string, w exposedTool) (err error) {
	t := *w.upstream // shallow copy: schemas and annotations are shared, never modified
	t.Name = name
	if t.InputSchema == nil {
		t.InputSchema = map[string]any{"type": "object"}
	}
	defer func() {
		// AddTool panics on a definition the SDK refuses (an input schema that is not an
		// object): an upstream server must not be able to take the host down.
		if r := recover(); r != nil {
			err = fmt.Errorf("refused by the MCP SDK: %v", r)
		}
	}()
	ts.srv.AddTool(&t, ts.handler(name, w.server, w.tool))
	return nil
}

// handler calls tool on server through the thread, so the tool_call hook applies. A policy
// denial and an unavailable tool are tool errors (isError, the reason as text): the model
// reads them and can adapt. Other failures are JSON-RPC errors.
func (ts *threadServer) handler(name, server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(ts.f.ctx, cancel)
		defer stop()
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		res, err := ts.th.CallTool(ctx, server, tool, args, callerName(req.Session))
		if err == nil {
			return res, nil
		}
		var denied *thread.ToolCallDeniedError
		var na *thread.ToolUnavailableError
		var jerr *jsonrpc.Error
		switch {
		case errors.As(err, &denied):
			reason := cmp.Or(denied.Reason, "denied by "+denied.DecidedBy)
			return toolError(fmt.Sprintf("tool %q denied by policy: %s", name, reason)), nil
		case errors.As(err, &na):
			return toolError(na.Error()), nil
		case errors.Is(err, thread.ErrInvalidParams):
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: arguments must be a JSON object"}
		case errors.As(err, &jerr):
			// The upstream server's own JSON-RPC error, passed through.
			return nil, jerr
		}
		return nil, fmt.Errorf("tool %q failed: %w", name, err)
	}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// callerName names the MCP client for tool_call policies: "mcp:" and the client's name
// from initialize, or "mcp".
func callerName(s *mcp.ServerSession) string {
	if s == nil {
		return "mcp"
	}
	if ip := s.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		return "mcp:" + ip.ClientInfo.Name
	}
	return "mcp"
}
