package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// Errors of the client. An error from a call wraps one of them when it applies, so
// errors.Is works; the text also names the environment and the method.
var (
	// ErrDisconnected: the call was made while the executor was not connected, or the
	// connection dropped while it was in flight.
	ErrDisconnected = errors.New("executor disconnected")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("executor client closed")
	// ErrNotFound: the executor answered -32010 (a missing file, an unknown process).
	ErrNotFound = errors.New("not found")
	// ErrForbidden: the executor answered -32011, or the executor does not announce the
	// capability the call needs.
	ErrForbidden = errors.New("forbidden")
	// ErrFailed: the executor answered -32012 (the operation was attempted and failed).
	ErrFailed = errors.New("failed")
	// ErrSessionRetired: the executor answered -32013 to a resume.
	ErrSessionRetired = errors.New("session retired")
	// ErrProtocol: the executor sent something the protocol does not allow (a version
	// the client does not speak, a response without a result).
	ErrProtocol = errors.New("executor protocol error")
	// ErrStreamOverflow: a response body or process output was not read while the
	// executor kept sending; the stream is failed (and the request canceled or the
	// process terminated) rather than buffered without bound.
	ErrStreamOverflow = errors.New("stream buffer overflow: the consumer did not read")
	// ErrTooLarge: a request body or message over the protocol's size limit.
	ErrTooLarge = errors.New("message too large")
	// ErrTooManyStreams: Config.MaxStreams response bodies and processes are open.
	ErrTooManyStreams = errors.New("too many open executor streams")
	// ErrConfig: the Config names no environment, or two.
	ErrConfig = errors.New("invalid executor config")
)

// Defaults of Config.
const (
	DefaultInitialBackoff   = 100 * time.Millisecond
	DefaultMaxBackoff       = 10 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxPending       = 256
	DefaultMaxStreams       = 256
	// DefaultStreamBuffer is how many unread bytes one response body or process stdout may
	// hold before the stream is failed with ErrStreamOverflow.
	DefaultStreamBuffer = protocol.MaxMessageBytes
	// writeTimeout bounds one message write: a peer that stops reading is dropped.
	writeTimeout = 30 * time.Second
	// cleanupTimeout bounds the best-effort messages sent on behalf of a caller that is
	// gone (http/cancel, process/terminate).
	cleanupTimeout = 5 * time.Second
)

// Config names one environment (an executor) and how to reach it: either URL (with
// Token) or Program (with Args and Env).
type Config struct {
	// Name is the environment id; it names the executor in errors, logs and events.
	Name string

	// URL is the executor's ws:// (or wss://) URL; Token is the bearer token it requires
	// (the value of the host variable environments.toml's token_env names). The token is
	// sent only in the upgrade's Authorization header and never logged.
	URL   string
	Token string

	// Program is a command that speaks the protocol over its stdin/stdout (`warden
	// executor --listen stdio`), spawned again after each disconnect. Its environment is
	// the host's minimal base (PATH, HOME, USER, … when set) plus Env ("NAME=value"
	// entries, which win). Its stderr goes to Logger line by line.
	Program string
	Args    []string
	Env     []string
	// Dir is Program's working directory ("" for the host's).
	Dir string

	// Logger receives connection events and a stdio executor's stderr; nil discards.
	Logger hclog.Logger
	// ClientInfo is sent in initialize; the zero value sends {"name":"warden"}.
	ClientInfo protocol.Info

	// Backoff paces reconnection attempts after the connection drops.
	Backoff Backoff
	// HandshakeTimeout bounds one connect: dial (or spawn) plus initialize.
	// 0 is DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// MaxPending bounds the calls in flight at once; a call beyond it waits for a slot
	// (or its ctx). 0 is DefaultMaxPending.
	MaxPending int
	// MaxStreams bounds the response bodies and processes open at once; one beyond it
	// fails. 0 is DefaultMaxStreams.
	MaxStreams int
	// StreamBuffer bounds one stream's unread bytes. 0 is DefaultStreamBuffer.
	StreamBuffer int
}

// Backoff is capped exponential backoff with full jitter: before attempt n (0-based) the
// client waits a random duration in [0, min(Max, Initial·2ⁿ)].
type Backoff struct {
	// Initial is the first cap; 0 is DefaultInitialBackoff.
	Initial time.Duration
	// Max caps every wait; 0 is DefaultMaxBackoff.
	Max time.Duration
	// Jitter returns a duration in [0, d]; nil draws uniformly (math/rand/v2). Tests
	// inject a deterministic one.
	Jitter func(d time.Duration) time.Duration
}

// Delay is the wait before reconnection attempt attempt (0-based).
func (b Backoff) Delay(attempt int) time.Duration {
	initial, maxD := b.Initial, b.Max
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if maxD <= 0 {
		maxD = DefaultMaxBackoff
	}
	d := maxD
	if attempt < 40 {
		if x := initial << attempt; x > 0 && x < maxD {
			d = x
		}
	}
	if b.Jitter != nil {
		return min(max(b.Jitter(d), 0), d)
	}
	return rand.N(d + 1)
}

// State is the client's connection state.
type State int

// States.
const (
	// StateConnected: a handshake succeeded and the connection is up.
	StateConnected State = iota
	// StateDisconnected: the connection dropped; the client is reconnecting.
	StateDisconnected
	// StateClosed: Close was called.
	StateClosed
)

func (s State) String() string {
	switch s {
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateClosed:
		return "closed"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Event reports a change of the connection.
type Event struct {
	// Environment is Config.Name.
	Environment string
	// State is the state now.
	State State
	// Resumed: the handshake re-attached to the previous session (its processes kept
	// running). A connect that is not resumed started a fresh session: processes of the
	// old one are gone and their transports have failed.
	Resumed bool
	// SessionID names the executor-side session ("" when not connected).
	SessionID string
	// Capabilities and Servers are what the executor announced in this handshake (zero
	// when not connected). They are re-read on every connect.
	Capabilities protocol.Capabilities
	Servers      map[string]json.RawMessage
	// EnvironmentInfo is the executor's description of itself.
	EnvironmentInfo protocol.EnvironmentInfo
	// Err is why the connection dropped (StateDisconnected only).
	Err error
}

// Client is a connection to one executor, kept up by reconnecting after it drops. All
// methods are safe for concurrent use. Calls fail fast with ErrDisconnected while the
// executor is not connected; they never queue for a later connection.
type Client struct {
	cfg     Config
	log     hclog.Logger
	connect func(ctx context.Context) (wire, error)

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the supervisor has returned

	mu        sync.Mutex
	state     State
	cur       *conn // nil unless StateConnected
	sessionID string
	init      protocol.InitializeResult

	subMu   sync.Mutex // serializes event delivery and (un)subscription
	subs    map[int]func(Event)
	nextSub int
	last    Event

	// procs are the process streams, keyed by processId. They belong to the session, not
	// to a connection: a resumed session keeps them.
	procMu sync.Mutex
	procs  map[string]*procStream

	nextReq  atomic.Uint64 // http requestIds
	nextProc atomic.Uint64 // processIds
	streams  atomic.Int64  // open streams (bodies and processes)
}

// Dial connects to the executor cfg names and performs the handshake; it fails if that
// first connect fails (bounded by ctx and HandshakeTimeout). Afterwards the Client keeps
// the connection up by itself until Close.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if (cfg.URL == "") == (cfg.Program == "") {
		return nil, fmt.Errorf("executor %q: %w: exactly one of URL and Program must be set", cfg.Name, ErrConfig)
	}
	c := &Client{
		cfg:   cfg,
		log:   cfg.Logger,
		subs:  map[int]func(Event){},
		procs: map[string]*procStream{},
		done:  make(chan struct{}),
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	c.log = c.log.With("environment", cfg.Name)
	if c.cfg.HandshakeTimeout <= 0 {
		c.cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.cfg.MaxPending <= 0 {
		c.cfg.MaxPending = DefaultMaxPending
	}
	if c.cfg.MaxStreams <= 0 {
		c.cfg.MaxStreams = DefaultMaxStreams
	}
	if c.cfg.StreamBuffer <= 0 {
		c.cfg.StreamBuffer = DefaultStreamBuffer
	}
	if c.cfg.ClientInfo.Name == "" {
		c.cfg.ClientInfo.Name = "warden"
	}
	if cfg.URL != "" {
		c.connect = c.dialWebSocket
	} else {
		c.connect = c.spawn
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	cn, res, err := c.handshake(ctx)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.setConnected(cn, res)
	go c.supervise(cn)
	return c, nil
}

// Name returns Config.Name.
func (c *Client) Name() string { return c.cfg.Name }

// State returns the connection state now.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Capabilities returns what the executor announced in the latest handshake (the zero
// value while disconnected: nothing is assumed of an executor that is not there).
func (c *Client) Capabilities() protocol.Capabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != StateConnected {
		return protocol.Capabilities{}
	}
	return c.init.Capabilities
}

// Servers returns the executor's own server declarations announced in the latest
// handshake (a .mcp.json mcpServers map; nil while disconnected). The map is a copy.
func (c *Client) Servers() map[string]json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != StateConnected {
		return nil
	}
	return maps.Clone(c.init.MCPServers)
}

// EnvironmentInfo returns the executor's description of itself from the latest handshake.
func (c *Client) EnvironmentInfo() protocol.EnvironmentInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.init.EnvironmentInfo
}

// Subscribe registers f for connection events and calls it at once with the current
// state, so a subscriber never misses the state it starts from. Events are delivered one
// at a time, in order, from the client's own goroutine: f must return promptly and must
// not call Close or Subscribe (other methods are fine). The returned function unsubscribes; after it
// returns f is not called again.
func (c *Client) Subscribe(f func(Event)) (unsubscribe func()) {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = f
	f(c.last)
	return func() {
		c.subMu.Lock()
		defer c.subMu.Unlock()
		delete(c.subs, id)
	}
}

func (c *Client) emit(ev Event) {
	ev.Environment = c.cfg.Name
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.last = ev
	for _, f := range c.subs {
		f(ev)
	}
}

// Close closes the connection, stops reconnecting, fails every stream and waits for the
// client's goroutines (a stdio executor is reaped). It is idempotent.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

func (c *Client) setConnected(cn *conn, res protocol.InitializeResult) {
	c.mu.Lock()
	c.state, c.cur, c.sessionID, c.init = StateConnected, cn, res.SessionID, res
	c.mu.Unlock()
	if !res.Resumed {
		// A fresh session: the executor has no process of the old one.
		c.failProcs(fmt.Errorf("executor %q: the session was not resumed (its processes are gone): %w", c.cfg.Name, ErrDisconnected))
	}
	c.log.Debug("executor connected", "session", res.SessionID, "resumed", res.Resumed,
		"httpHeaderEnvVars", res.Capabilities.HTTPHeaderEnvVars, "processes", res.Capabilities.Processes, "fsRead", res.Capabilities.FSRead)
	c.emit(Event{State: StateConnected, Resumed: res.Resumed, SessionID: res.SessionID,
		Capabilities: res.Capabilities, Servers: maps.Clone(res.MCPServers), EnvironmentInfo: res.EnvironmentInfo})
}

// supervise waits for the connection to drop, then reconnects with backoff, until Close.
func (c *Client) supervise(cn *conn) {
	defer close(c.done)
	for {
		select {
		case <-cn.done:
		case <-c.ctx.Done():
			cn.fail(ErrClosed)
			<-cn.finished
			c.shutdown()
			return
		}
		<-cn.finished
		cause := cn.cause()
		c.mu.Lock()
		c.state, c.cur = StateDisconnected, nil
		c.mu.Unlock()
		c.log.Warn("executor disconnected", "error", cause)
		c.emit(Event{State: StateDisconnected, Err: cause})
		for attempt := 0; ; attempt++ {
			t := time.NewTimer(c.cfg.Backoff.Delay(attempt))
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				c.shutdown()
				return
			}
			next, res, err := c.handshake(c.ctx)
			if err == nil {
				cn = next
				c.setConnected(cn, res)
				break
			}
			if c.ctx.Err() != nil {
				c.shutdown()
				return
			}
			c.log.Debug("executor reconnect failed", "attempt", attempt+1, "error", err)
		}
	}
}

func (c *Client) shutdown() {
	c.mu.Lock()
	c.state, c.cur = StateClosed, nil
	c.mu.Unlock()
	c.failProcs(fmt.Errorf("executor %q: %w", c.cfg.Name, ErrClosed))
	c.emit(Event{State: StateClosed})
}

// handshake connects and initializes, resuming the previous session when there is one
// and falling back to a fresh session when the executor has retired it.
func (c *Client) handshake(ctx context.Context) (*conn, protocol.InitializeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	var res protocol.InitializeResult
	w, err := c.connect(ctx)
	if err != nil {
		return nil, res, fmt.Errorf("executor %q: connect: %w", c.cfg.Name, err)
	}
	cn := newConn(c, w)
	c.mu.Lock()
	resume := c.sessionID
	c.mu.Unlock()
	params := protocol.InitializeParams{ProtocolVersion: protocol.Version, ClientInfo: c.cfg.ClientInfo, ResumeSessionID: resume}
	err = cn.call(ctx, protocol.MethodInitialize, params, &res)
	if resume != "" && errors.Is(err, ErrSessionRetired) {
		c.log.Debug("executor session retired; starting a fresh one", "session", resume)
		params.ResumeSessionID = ""
		res = protocol.InitializeResult{}
		err = cn.call(ctx, protocol.MethodInitialize, params, &res)
	}
	if err == nil {
		switch {
		case res.ProtocolVersion != protocol.Version:
			err = fmt.Errorf("executor %q: initialize: %w: protocolVersion %d (this client speaks %d)", c.cfg.Name, ErrProtocol, res.ProtocolVersion, protocol.Version)
		case res.SessionID == "":
			err = fmt.Errorf("executor %q: initialize: %w: no sessionId", c.cfg.Name, ErrProtocol)
		case res.Resumed && res.SessionID != resume:
			err = fmt.Errorf("executor %q: initialize: %w: resumed a session that was not asked for", c.cfg.Name, ErrProtocol)
		}
	}
	if err != nil {
		cn.fail(err)
		<-cn.finished
		return nil, res, err
	}
	return cn, res, nil
}

// current returns the live connection, or an error naming the environment and method.
func (c *Client) current(method string) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state == StateClosed:
		return nil, fmt.Errorf("executor %q: %s: %w", c.cfg.Name, method, ErrClosed)
	case c.cur == nil:
		return nil, fmt.Errorf("executor %q: %s: %w", c.cfg.Name, method, ErrDisconnected)
	}
	return c.cur, nil
}

// call makes one call on the live connection.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	cn, err := c.current(method)
	if err != nil {
		return err
	}
	return cn.call(ctx, method, params, result)
}

// cleanup sends a best-effort message on behalf of a caller that has gone (its ctx may be
// done), bounded by cleanupTimeout, without blocking the caller.
func (c *Client) cleanup(cn *conn, method string, params any) {
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, cleanupTimeout)
		defer cancel()
		if err := cn.call(ctx, method, params, nil); err != nil {
			c.log.Debug("executor cleanup call failed", "method", method, "error", err)
		}
	}()
}

func (c *Client) reserveStream(what string) error {
	if c.streams.Add(1) > int64(c.cfg.MaxStreams) {
		c.streams.Add(-1)
		return fmt.Errorf("executor %q: %s: %w (%d)", c.cfg.Name, what, ErrTooManyStreams, c.cfg.MaxStreams)
	}
	return nil
}

func (c *Client) releaseStream() { c.streams.Add(-1) }
