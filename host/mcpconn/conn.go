package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
)

// State is a connection's lifecycle state.
type State string

// States.
const (
	// StateStarting: a connection attempt (start, handshake, first tools/list) is running.
	StateStarting State = "starting"
	// StateReady: the session is up and its catalogs are loaded.
	StateReady State = "ready"
	// StateFailed: the last attempt failed or the session died. A connection that was
	// ready once restarts on its own when the Backoff allows, while a handle holds it; the
	// next use after the Backoff window restarts it too. A closed connection also reports
	// StateFailed, with ErrClosed.
	StateFailed State = "failed"
)

// Status is a snapshot of a connection's state.
type Status struct {
	// State is starting, ready or failed.
	State State
	// Err is the failure for StateFailed (an *Error: its text names the server and holds
	// no credential value); nil otherwise.
	Err error
	// RetryAt is, for StateFailed, the earliest time the next use may restart the server.
	RetryAt time.Time
	// ProtocolVersion is the negotiated MCP protocol version when ready.
	ProtocolVersion string
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventStatus: the connection's state changed (see Event.Status). After a restart
	// (starting → ready) the catalogs are the new session's and may differ; read
	// Conn.Tools, Resources, ResourceTemplates and Prompts.
	EventStatus EventKind = iota
	// EventTools: the server sent notifications/tools/list_changed and the catalog was
	// re-read (see Event.Tools).
	EventTools
	// EventResources: the server sent notifications/resources/list_changed and the
	// resource and resource template catalogs were re-read (see Event.Resources and
	// Event.ResourceTemplates).
	EventResources
	// EventPrompts: the server sent notifications/prompts/list_changed and the prompt
	// catalog was re-read (see Event.Prompts).
	EventPrompts
	// EventResourceUpdated: the server sent notifications/resources/updated for a
	// subscribed resource (see Event.URI).
	EventResourceUpdated
	// EventLog: the server sent a log message, notifications/message (see Event.Log).
	// Every subscriber gets every message at the session's level (see Conn.SetLogLevel);
	// filtering for a handle's own level is the subscriber's job.
	EventLog
)

// Event is delivered to Subscribe callbacks. Its slices and pointers are shared between
// subscribers and must not be modified.
type Event struct {
	Kind EventKind
	// Status is the connection's status after the change.
	Status Status
	// Tools is the new catalog, for EventTools.
	Tools []*mcp.Tool
	// Resources and ResourceTemplates are the new catalogs, for EventResources.
	Resources         []*mcp.Resource
	ResourceTemplates []*mcp.ResourceTemplate
	// Prompts is the new catalog, for EventPrompts.
	Prompts []*mcp.Prompt
	// URI is the updated resource, for EventResourceUpdated.
	URI string
	// Log is the server's message, for EventLog.
	//lint:ignore SA1019 logging, roots and sampling are deprecated (SEP-2577), not removed: passed through for whoever still uses them
	Log *mcp.LoggingMessageParams
}

// Conn is one user's handle on a shared connection, returned by Manager.Acquire. Every
// handle of a key sees the same session and catalog. Release it when done; after Release
// (or Manager.Close) its methods fail with ErrClosed.
//
// A Conn is safe for concurrent use by multiple goroutines.
type Conn struct {
	s        *shared
	released atomic.Bool
	mu       sync.Mutex      // guards subs; taken before shared.mu
	subs     []*subscription // this handle's subscriptions, dropped at Release
}

// Name is the server's name.
func (c *Conn) Name() string { return c.s.spec.Name }

// Key is the sharing key (Spec.Key); safe to log.
func (c *Conn) Key() string { return c.s.spec.Key }

// Status returns the connection's current state.
func (c *Conn) Status() Status {
	if c.released.Load() {
		return Status{State: StateFailed, Err: c.closedErr()}
	}
	return c.s.status()
}

// Tools returns the cached tool catalog (read once per session with a paginated
// tools/list, and again on notifications/tools/list_changed). It is nil unless the
// connection is ready. The slice is the caller's; the *mcp.Tool values are shared and must
// not be modified.
func (c *Conn) Tools() []*mcp.Tool {
	return readyField(c, func(cat *catalog) []*mcp.Tool { return slices.Clone(cat.tools) })
}

// Resources returns the cached resource catalog (a paginated resources/list at connect,
// again on notifications/resources/list_changed), or nil unless the connection is ready.
// A server without the resources capability, or whose resources/list failed (logged), has
// an empty catalog. The slice is the caller's; the values are shared and must not be
// modified.
func (c *Conn) Resources() []*mcp.Resource {
	return readyField(c, func(cat *catalog) []*mcp.Resource { return slices.Clone(cat.resources) })
}

// ResourceTemplates returns the cached resource template catalog (resources/templates/list),
// like Resources.
func (c *Conn) ResourceTemplates() []*mcp.ResourceTemplate {
	return readyField(c, func(cat *catalog) []*mcp.ResourceTemplate { return slices.Clone(cat.templates) })
}

// Prompts returns the cached prompt catalog (prompts/list, again on
// notifications/prompts/list_changed), like Resources.
func (c *Conn) Prompts() []*mcp.Prompt {
	return readyField(c, func(cat *catalog) []*mcp.Prompt { return slices.Clone(cat.prompts) })
}

// InitializeResult is the ready session's handshake result: the server's capabilities,
// instructions, serverInfo and the negotiated protocol version. It is nil unless the
// connection is ready, and shared: it must not be modified.
func (c *Conn) InitializeResult() *mcp.InitializeResult {
	return readyField(c, func(*catalog) *mcp.InitializeResult { return c.s.sess.init })
}

// readyField reads from the catalog of a ready connection (nil otherwise).
func readyField[T any](c *Conn, get func(*catalog) T) T {
	var zero T
	if c.released.Load() {
		return zero
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.state != stateReady {
		return zero
	}
	return get(&c.s.cat)
}

// Ready waits until the connection is ready, bounded by ctx. A connection that failed is
// started again first, unless the Backoff still holds it back (then Ready fails at once
// with ErrBackoff wrapping the last failure). Concurrent callers share one attempt.
func (c *Conn) Ready(ctx context.Context) error {
	if c.released.Load() {
		return c.closedErr()
	}
	_, err := c.s.ready(ctx)
	return err
}

// isServerAnswer reports whether err is a JSON-RPC error the server sent, as opposed to
// one the SDK made up for a transport condition (codes -32003 client closing, -32004
// server closing, -32005 rejected by transport) or a closed connection.
func isServerAnswer(err error) bool {
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	switch wire.Code {
	case -32003, -32004, -32005:
		return false
	}
	return true
}

// Subscribe registers fn to be called for every Event of the connection (status changes,
// catalog refreshes, resource updates, log messages) until the returned cancel func is
// called or the handle is released. Log messages and resource updates are dropped (with a
// warning) while more than 256 events wait for slow subscribers. Events of one
// connection are delivered in order, one at a time, on some
// goroutine of the package or of the caller that caused them, never while a lock is held;
// fn must not block for long (hand the event to your own goroutine if it has work to do).
// fn may call any method of any Conn, including Release, but not Manager.Close (which waits
// for the goroutine fn may be running on).
func (c *Conn) Subscribe(fn func(Event)) (cancel func()) {
	sub := &subscription{fn: fn}
	c.mu.Lock() // held across the check and the registration, so Release cannot miss sub
	defer c.mu.Unlock()
	if c.released.Load() {
		return func() {}
	}
	c.subs = append(c.subs, sub)
	c.s.mu.Lock()
	c.s.subs[sub] = struct{}{}
	c.s.mu.Unlock()
	return func() {
		c.s.mu.Lock()
		delete(c.s.subs, sub)
		c.s.mu.Unlock()
	}
}

// Release gives the handle's reference back and drops its subscriptions. When the last
// reference of a connection is released, its session is closed (a stdio server is asked to
// exit: stdin closed, then SIGTERM and SIGKILL after Options.TerminateGrace each) — at once,
// blocking until it is closed, or after Options.IdleGrace. Release is idempotent.
func (c *Conn) Release() {
	if !c.released.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	c.s.mu.Lock()
	for _, sub := range subs {
		delete(c.s.subs, sub)
	}
	c.s.mu.Unlock()
	c.s.dropFeatures(c)
	c.s.m.release(c.s)
}

func (c *Conn) closedErr() error {
	return newError(&c.s.spec, ErrClosed, "connection is closed", nil)
}

type subscription struct{ fn func(Event) }

// state is the internal lifecycle; stateNew reports as StateStarting.
type state int

const (
	stateNew state = iota
	stateStarting
	stateReady
	stateFailed
)

// shared is the connection of one key: the session (while ready), the catalog, the
// reference count and the subscribers. Lock order: Manager.mu before shared.mu.
type shared struct {
	m    *Manager
	spec Spec
	log  hclog.Logger
	// ctx is canceled when the connection is closed; it bounds connection attempts.
	ctx    context.Context
	cancel context.CancelFunc

	// progress routes the progress notifications of calls in flight (CallOptions).
	progress progressRoutes
	// featMu serialises the requests that change the session's per-handle features
	// (resources/subscribe and unsubscribe, logging/setLevel), so their reference counts
	// and what the server was told agree. It is taken before mu and held across the
	// request (bounded by ToolTimeout); connection attempts never take it.
	featMu sync.Mutex

	mu         sync.Mutex
	refs       int
	closed     bool
	idleStop   chan struct{} // non-nil during an idle grace period
	state      state
	err        error         // stateFailed: the failure
	retryAt    time.Time     // stateFailed: end of the backoff
	attempt    chan struct{} // stateStarting: closed when the attempt settles
	sess       *session      // stateReady: the session
	cat        catalog       // stateReady: the catalogs
	readyAt    time.Time
	restarting bool // a restart loop (restartLoop) is running
	wasReady   bool // some session of this connection was ready: failures restart on their own
	restarts   int  // start attempts after a session was ready (Manager.Sessions)
	subs       map[*subscription]struct{}
	events     []Event
	sending    bool // an event delivery loop is running
	kicked     bool // a goroutine is about to run deliver for read-loop events
	dropped    int  // log and resource-updated events dropped since the last warning
	// feats is what the handles asked of the session; every new session gets it again.
	feats features
}

func newShared(m *Manager, spec Spec) *shared {
	ctx, cancel := context.WithCancel(context.Background())
	return &shared{
		m:      m,
		spec:   spec,
		log:    m.log.With("server", spec.Name, "key", shortKey(spec.Key)),
		ctx:    ctx,
		cancel: cancel,
		subs:   map[*subscription]struct{}{},
		feats:  newFeatures(),
	}
}

func (s *shared) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked()
}

func (s *shared) statusLocked() Status {
	switch {
	case s.closed:
		return Status{State: StateFailed, Err: newError(&s.spec, ErrClosed, "connection is closed", nil)}
	case s.state == stateReady:
		return Status{State: StateReady, ProtocolVersion: s.sess.protocol}
	case s.state == stateFailed:
		return Status{State: StateFailed, Err: s.err, RetryAt: s.retryAt}
	}
	return Status{State: StateStarting}
}

// stopIdleLocked ends an idle grace period (s.mu held).
func (s *shared) stopIdleLocked() {
	if s.idleStop != nil {
		close(s.idleStop)
		s.idleStop = nil
	}
}

// ready returns the live session, starting one if needed (see Conn.Ready).
func (s *shared) ready(ctx context.Context) (*session, error) {
	waited := false
	for {
		hold, last := s.m.heldBack(s.spec.Key)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, newError(&s.spec, ErrClosed, "connection is closed", nil)
		}
		switch s.state {
		case stateReady:
			sess := s.sess
			s.mu.Unlock()
			return sess, nil
		case stateStarting:
			ch := s.attempt
			s.mu.Unlock()
			select {
			case <-ch:
				waited = true
				continue
			case <-ctx.Done():
				return nil, newError(&s.spec, nil, "was not ready", ctx.Err())
			}
		case stateFailed:
			if waited {
				err := s.err
				s.mu.Unlock()
				return nil, err
			}
		}
		// stateNew, or stateFailed found on arrival: (re)start, unless held back.
		if hold > 0 && last != nil {
			s.mu.Unlock()
			return nil, newError(&s.spec, ErrBackoff,
				fmt.Sprintf("failed recently; restart held back for %s", hold.Round(time.Millisecond)), last)
		}
		ch := make(chan struct{})
		s.state, s.attempt, s.err = stateStarting, ch, nil
		restart := s.wasReady // a session of this connection was up: this start is a restart
		if restart {
			s.restarts++
		}
		s.emitLocked(Event{Kind: EventStatus})
		s.m.wg.Add(1) // s is open, so Manager.Close has not reached wg.Wait
		go s.run(ch)
		s.mu.Unlock()
		if restart && s.m.opts.OnRestart != nil {
			s.m.opts.OnRestart(&s.spec)
		}
		s.deliver()
		// This caller started the attempt: it gets the attempt's outcome,
		// even when the attempt fails before the next turn of the loop sees
		// it starting (else it would report the backoff its own failure set).
		waited = true
	}
}

// run makes one connection attempt and publishes its outcome.
func (s *shared) run(done chan struct{}) {
	defer s.m.wg.Done()
	s.log.Debug("connecting", "transport", s.spec.Transport)
	start := s.m.clock.Now()
	sess, cat, err := s.start()
	var retryAt time.Time
	if err != nil && s.ctx.Err() == nil { // a start cut short by Close is no failure
		retryAt = s.m.noteFailure(&s.spec, err, 0)
	}
	s.mu.Lock()
	s.attempt = nil
	if s.closed {
		close(done)
		s.mu.Unlock()
		if sess != nil {
			sess.close()
		}
		return
	}
	if err != nil {
		s.state, s.err, s.retryAt = stateFailed, err, retryAt
		s.log.Warn("server failed to start", "error", err)
		s.restartLocked()
	} else {
		s.state, s.sess, s.cat, s.readyAt, s.wasReady = stateReady, sess, cat, s.m.clock.Now(), true
		s.log.Info("server ready", "tools", len(cat.tools), "resources", len(cat.resources),
			"resource_templates", len(cat.templates), "prompts", len(cat.prompts), "protocol", sess.protocol,
			"elapsed", s.m.clock.Now().Sub(start).Round(time.Millisecond))
		s.m.wg.Add(2)
		go s.watch(sess)
		go s.refresher(sess)
	}
	close(done)
	s.emitLocked(Event{Kind: EventStatus})
	s.mu.Unlock()
	s.deliver()
}

// restartLocked starts the restart loop (s.mu held) if the connection was ready once, is
// still in use and none runs yet: a server that died, or whose restart failed, is started
// again on its own. A first start that fails is the acquirer's to report, not retried.
func (s *shared) restartLocked() {
	if s.closed || s.refs == 0 || s.restarting || !s.wasReady {
		return
	}
	s.restarting = true
	s.m.wg.Add(1) // s is open, so Manager.Close has not reached wg.Wait
	go s.restartLoop()
}

// restartLoop restarts a failed connection once its Backoff allows, again and again (with
// the Backoff growing) while starts fail, until it is ready, no handle holds it, or it is
// closed.
func (s *shared) restartLoop() {
	defer s.m.wg.Done()
	for {
		hold, _ := s.m.heldBack(s.spec.Key) // what ready will honour; normally s.retryAt
		s.mu.Lock()
		if s.closed || s.refs == 0 || s.state == stateReady {
			s.restarting = false
			s.mu.Unlock()
			return
		}
		var wake <-chan struct{} // an attempt someone else started
		var timer <-chan time.Time
		stop := func() bool { return false }
		if s.state == stateStarting {
			wake = s.attempt
		} else if hold > 0 {
			timer, stop = s.m.clock.NewTimer(hold)
		}
		s.mu.Unlock()
		if wake != nil || timer != nil {
			select {
			case <-wake:
				continue
			case <-timer:
			case <-s.ctx.Done():
				stop()
				s.mu.Lock()
				s.restarting = false
				s.mu.Unlock()
				return
			}
		}
		if _, err := s.ready(s.ctx); err != nil {
			s.log.Debug("restart failed; retrying after the backoff", "error", err)
		}
	}
}

// start runs connect under the startup timeout. connect honours its context, but closing a
// half-started stdio server can take TerminateGrace; start does not wait for that.
func (s *shared) start() (*session, catalog, error) {
	spec := &s.spec
	ctx, cancel := context.WithTimeout(s.ctx, spec.StartupTimeout)
	defer cancel()
	type result struct {
		sess *session
		cat  catalog
		err  error
	}
	// The wait for a start slot counts against the startup timeout: a server that cannot
	// start within it fails the same way whether the host was busy or the server slow.
	if err := s.m.starts.acquire(ctx); err != nil {
		if s.ctx.Err() != nil {
			return nil, catalog{}, newError(spec, ErrClosed, "connection closed while starting", nil)
		}
		limit, _ := s.m.starts.state()
		return nil, catalog{}, newError(spec, ErrStartupTimeout, fmt.Sprintf(
			"did not start within %s: still waiting for one of the %d concurrent start slots (max_concurrent_server_starts in config.toml's [limits])",
			spec.StartupTimeout, limit), nil)
	}
	sess := s.newSession()
	ch := make(chan result, 1)
	s.m.wg.Add(1) // inside the counted run goroutine
	go func() {
		defer s.m.wg.Done()
		// The slot is held until the attempt has really ended, abandoned or not, so that
		// timed-out starts cannot pile up processes beyond the limit.
		defer s.m.starts.release()
		cat, err := s.connect(ctx, sess)
		ch <- result{sess, cat, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, catalog{}, r.err
		}
		return r.sess, r.cat, nil
	case <-ctx.Done():
	}
	sess.abort()
	s.m.wg.Add(1)
	go func() { // reap whatever the abandoned attempt produces
		defer s.m.wg.Done()
		sess.closeConn() // unblocks a handshake step that ignores its context
		if r := <-ch; r.err == nil {
			r.sess.close()
		}
	}()
	if s.ctx.Err() != nil {
		return nil, catalog{}, newError(spec, ErrClosed, "connection closed while starting", nil)
	}
	e := newError(spec, ErrStartupTimeout, fmt.Sprintf("did not start within %s", spec.StartupTimeout), nil)
	e.Stderr = sess.stderr.String()
	return nil, catalog{}, e
}

// session is one MCP client session and, for stdio, its server process.
type session struct {
	cs     *mcp.ClientSession          // set by connect once the handshake succeeded
	conn   atomic.Pointer[trackedConn] // the raw connection, once the transport connected
	stderr *stderrSink                 // stdio only
	pid    atomic.Int64                // stdio: the server process id, once started
	// abortCtx is canceled to abort everything at once: it kills a stdio server (the
	// command's context) and cancels an HTTP server's in-flight requests.
	abortCtx context.Context
	abortAll context.CancelFunc
	protocol string
	init     *mcp.InitializeResult   // set by connect with cs
	client   *mcp.Client             // the session's client
	decl     *mcp.ClientCapabilities // what the session declared for Spec.Client (nil: none)
	roots    rootMirror              // the client's roots, kept equal to Spec.Client's
	// list_changed signals, coalesced per kind (buffer 1)
	refreshTools, refreshResources, refreshPrompts chan struct{}
	// dead is canceled when the session ends: with the failure as cause when the server
	// went away, ErrClosed when we closed it.
	dead    context.Context
	kill    context.CancelCauseFunc
	closing atomic.Bool
}

func (s *shared) newSession() *session {
	x := &session{refreshTools: make(chan struct{}, 1), refreshResources: make(chan struct{}, 1),
		refreshPrompts: make(chan struct{}, 1)}
	x.dead, x.kill = context.WithCancelCause(context.Background())
	x.abortCtx, x.abortAll = context.WithCancel(context.Background())
	if s.spec.Transport == config.TransportStdio {
		x.stderr = newStderrSink(s.log, s.spec.secrets, s.m.opts.StderrTailBytes)
	}
	return x
}

// close ends the session on our initiative and waits for it (and a stdio server) to end:
// gracefully (stdin closed, SIGTERM, SIGKILL; see Options.TerminateGrace).
func (x *session) close() {
	x.closing.Store(true)
	x.kill(ErrClosed)
	if x.cs != nil {
		_ = x.cs.Close()
	}
	x.closeConn()
	x.abortAll()
}

// abort kills a stdio server, or cancels an HTTP server's requests, whose start was
// abandoned; it does not wait.
func (x *session) abort() {
	x.closing.Store(true)
	x.kill(ErrClosed)
	x.abortAll()
}

// closeConn closes the raw connection (if the transport got that far) and waits for it.
func (x *session) closeConn() {
	if c := x.conn.Load(); c != nil {
		_ = c.Close()
	}
}

// exitStatus is a stdio server's exit status once its connection is closed ("exit status
// 1", "signal: killed"), "" if unknown or it exited cleanly.
func (x *session) exitStatus() string {
	c := x.conn.Load()
	if c == nil || x.stderr == nil {
		return ""
	}
	select {
	case <-c.closed:
	default:
		return ""
	}
	if c.closeErr == nil {
		return ""
	}
	return c.closeErr.Error()
}

// watch waits for the session to end; if the server ended it, the connection fails.
func (s *shared) watch(sess *session) {
	defer s.m.wg.Done()
	werr := sess.cs.Wait()
	if sess.closing.Load() {
		return
	}
	_ = sess.cs.Close() // reaps a stdio server
	sess.closeConn()
	sess.abortAll()
	var cause error
	if exit := sess.exitStatus(); exit != "" {
		cause = errors.New(exit)
	} else if werr != nil {
		cause = werr
	} else if sess.stderr != nil {
		cause = errors.New("exited")
	} else {
		cause = errors.New("connection closed by the server")
	}
	e := newError(&s.spec, ErrServerExited, "", fmt.Errorf("%w: %w", ErrServerExited, cause))
	e.Stderr = sess.stderr.String()
	sess.kill(e)

	s.mu.Lock()
	if s.sess != sess || s.closed {
		s.mu.Unlock()
		return
	}
	healthy := s.m.clock.Now().Sub(s.readyAt)
	s.mu.Unlock()
	retryAt := s.m.noteFailure(&s.spec, e, healthy)
	s.mu.Lock()
	if s.sess == sess && !s.closed {
		s.state, s.err, s.retryAt, s.sess, s.cat = stateFailed, e, retryAt, nil, catalog{}
		s.emitLocked(Event{Kind: EventStatus})
		s.restartLocked()
	}
	s.mu.Unlock()
	s.log.Warn("server connection lost", "error", e)
	s.deliver()
}

// maxQueuedEvents bounds the events waiting for delivery. Beyond it, log messages and
// resource updates (which a server can send at any rate) are dropped, with a warning;
// status and catalog events are rare and always kept.
const maxQueuedEvents = 256

// emitLocked queues ev for the subscribers (s.mu held), stamped with the status and, for a
// catalog event, the current catalog; deliver sends it.
func (s *shared) emitLocked(ev Event) {
	if len(s.subs) == 0 {
		return
	}
	switch ev.Kind {
	case EventLog, EventResourceUpdated:
		if len(s.events) >= maxQueuedEvents {
			if s.dropped == 0 {
				s.log.Warn("subscribers are not keeping up; dropping log messages and resource updates",
					"queued", len(s.events))
			}
			s.dropped++
			return
		}
	case EventTools:
		ev.Tools = slices.Clone(s.cat.tools)
	case EventResources:
		ev.Resources, ev.ResourceTemplates = slices.Clone(s.cat.resources), slices.Clone(s.cat.templates)
	case EventPrompts:
		ev.Prompts = slices.Clone(s.cat.prompts)
	}
	ev.Status = s.statusLocked()
	s.events = append(s.events, ev)
}

// notify queues an event that the session's read goroutine received and has it delivered
// from another goroutine: a subscriber may call the server, which needs that read
// goroutine running.
func (s *shared) notify(sess *session, ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess || s.closed {
		return
	}
	s.emitLocked(ev)
	if s.sending || s.kicked || len(s.events) == 0 {
		return
	}
	s.kicked = true
	s.m.wg.Add(1) // s is open, so Manager.Close has not reached wg.Wait
	go func() {
		defer s.m.wg.Done()
		s.mu.Lock()
		s.kicked = false
		s.mu.Unlock()
		s.deliver()
	}()
}

// deliver sends queued events, in order, unless another goroutine is already doing so.
func (s *shared) deliver() {
	s.mu.Lock()
	if s.sending {
		s.mu.Unlock()
		return
	}
	s.sending = true
	for len(s.events) > 0 {
		ev := s.events[0]
		s.events = s.events[1:]
		if len(s.events) == 0 && s.dropped > 0 {
			s.log.Warn("dropped log messages and resource updates", "count", s.dropped)
			s.dropped = 0
		}
		subs := slices.Collect(maps.Keys(s.subs))
		s.mu.Unlock()
		for _, sub := range subs {
			sub.fn(ev)
		}
		s.mu.Lock()
	}
	s.sending = false
	s.mu.Unlock()
}

// shutdown closes the connection for good: aborts an attempt, closes the session, and
// waits for it. s is already unregistered from the Manager.
func (s *shared) shutdown() {
	s.cancel()
	s.mu.Lock()
	s.closed = true
	s.stopIdleLocked()
	sess := s.sess
	s.sess, s.cat = nil, catalog{}
	s.events = nil
	s.mu.Unlock()
	if sess != nil {
		sess.close()
		s.log.Debug("connection closed")
	}
}
