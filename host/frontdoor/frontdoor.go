package frontdoor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/api/threads"
	"github.com/warden-mcp/warden/host/thread"
)

// Separator joins a server name and a tool name into a qualified front-door tool name:
// "docs" + "search" is "docs__search".
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
	// ToolNames is how tool and prompt names are made: ToolNamesPrefixed (the zero value)
	// or ToolNamesBare.
	ToolNames ToolNames
}

// ToolNames selects how the front door names tools and prompts.
type ToolNames int

const (
	// ToolNamesPrefixed names every tool server__tool (the default).
	ToolNamesPrefixed ToolNames = iota
	// ToolNamesBare names a tool by its upstream name where no other exposed server has a
	// tool of that name, and server__tool where two do; a single-server thread then looks
	// exactly like that server.
	ToolNamesBare
)

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
	notifyTimeout  time.Duration
	toolNames      ToolNames

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers and session closers; Add only under mu while !closed

	unsubscribe func()

	mu      sync.Mutex
	servers map[string]*threadServer // by thread id
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
		toolNames:      o.ToolNames,
		notifyTimeout:  5 * time.Second,
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
	forward := false // a notification to pass on, rather than a reason to resync
	switch e := ev.(type) {
	case *thread.StartupStatus:
		id = e.ThreadID
	case *thread.ToolsChanged:
		id = e.ThreadID
	case *thread.RefreshQueued:
		id = e.ThreadID
	case *thread.CatalogChanged:
		id = e.ThreadID
	case *thread.LogMessage:
		id, forward = e.ThreadID, true
	case *thread.ResourceUpdated:
		id, forward = e.ThreadID, true
	case *thread.ThreadClosed:
		f.mu.Lock()
		if ts := f.servers[e.ThreadID]; ts != nil {
			f.retireLocked(ts)
		}
		f.mu.Unlock()
		return
	default:
		return
	}
	f.mu.Lock()
	ts := f.servers[id]
	f.mu.Unlock()
	switch {
	case ts == nil:
	case forward:
		ts.note(ev)
	default:
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
