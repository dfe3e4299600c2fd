package mcpconn

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
)

// ProtocolLatest, as Options.ProtocolVersion, asks for the newest protocol the go-sdk
// speaks; it is also what "" means. See Options.ProtocolVersion.
const ProtocolLatest = ""

// Options configures a Manager. The zero value is usable; each field documents its zero value.
// NewManager copies it; changing it afterwards has no effect.
type Options struct {
	// Logger receives connection lifecycle events (connecting, ready, failed, closed) and,
	// at debug level, each line a stdio server writes to stderr. Nothing logged contains a
	// credential or environment value (stderr lines and errors are scrubbed of the Spec's
	// resolved values). nil means no logging.
	Logger hclog.Logger

	// IdleGrace keeps a connection open this long after its last Release, so a thread that
	// re-acquires it soon (a reload, a status read without a thread) reuses the session.
	// 0 closes the session as soon as the last user releases it.
	IdleGrace time.Duration

	// RoundTripper carries every streamable HTTP request, after the Spec's headers have been
	// added. It is the hook for routing through an executor (an http.RoundTripper over the
	// executor's http/request): RequestEnvironment(req.Context()) is the Spec.Environment
	// the request belongs to, and only with a RoundTripper set does Acquire accept an HTTP
	// Spec whose Environment is not local. It must be safe for concurrent use. nil means a
	// clone of http.DefaultTransport owned by the Manager (local servers only; its idle
	// connections are closed by Manager.Close).
	RoundTripper http.RoundTripper

	// Executor returns the Executor that reaches environment env (an executor id), or an
	// error saying why it cannot be reached now (disconnected, unknown). With it, Acquire
	// accepts stdio and HTTP Specs of a non-local Environment: a stdio server starts in the
	// executor, and an HTTP server's requests go out from the executor's network (its
	// HeaderRefs resolved there). nil: only local servers (and Options.RoundTripper).
	Executor func(env string) (Executor, error)

	// OAuth returns the OAuth handler of a streamable HTTP connection whose Spec sends no
	// Authorization header of its own (no bearer_token_env_var, no literal or env
	// Authorization header): it attaches the login's token and answers a 401 (package
	// host/oauth's Manager.Handler, keyed by the Spec's Environment, Name and URL). It is
	// called once per connection attempt. nil: no OAuth; a 401 fails the connection.
	OAuth func(spec *Spec) auth.OAuthHandler

	// ProtocolVersion is the MCP protocol version the client asks for. "" (ProtocolLatest)
	// uses the go-sdk's newest version, 2026-07-28 for go-sdk v1.8: the client opens with
	// server/discover and, when the server does not speak the stateless protocol, falls
	// back to initialize at 2025-11-25, where the server negotiates down to whatever older
	// version it supports. That is the only choice that reaches servers of every version:
	// a client pinned to 2025-11-25 cannot talk to a streamable HTTP server that offers only
	// 2026-07-28 (its initialized notification is rejected), while the latest client still
	// reaches 2024-11-05 servers. The price is one extra round trip (server/discover, then
	// initialize) against a server that predates 2026-07-28. Set an older version (e.g.
	// "2025-11-25") to skip server/discover when every server is known to be older.
	ProtocolVersion string

	// ClientInfo is the implementation reported to servers. nil means {Name: "warden",
	// Version: "dev"}.
	ClientInfo *mcp.Implementation

	// Backoff paces restarts of a server that failed. Zero fields take their defaults.
	Backoff Backoff

	// StderrTailBytes bounds how much of a stdio server's recent stderr is kept for failure
	// messages. 0 means 2048.
	StderrTailBytes int

	// TerminateGrace is how long closing a stdio server waits, after closing its stdin, for
	// it to exit before sending SIGTERM (and as long again before SIGKILL). 0 means 2s.
	TerminateGrace time.Duration

	// clock replaces the time source of the backoff, the restart loop and the idle grace
	// (tests only; nil means the real clock).
	clock clock

	// MaxConcurrentStarts bounds the connection attempts (a stdio server's process start,
	// the handshake and the first tools/list) that run at once across the Manager; further
	// attempts wait for a slot within their own startup timeout. 0 means
	// config.DefaultMaxConcurrentServerStarts. SetMaxConcurrentStarts changes it later.
	MaxConcurrentStarts int

	// OnRestart, when set, is called each time a connection that was ready once starts
	// again (its session died or failed, and a use or the restart loop starts a new one):
	// the upstream restart metric. It runs on the restarting goroutine with no lock held,
	// must not block and must not modify spec.
	OnRestart func(spec *Spec)
}

// Backoff paces restarts of a failed server (per sharing key). It is a plain value. After the n-th consecutive
// failure, the server is not started again until Initial·2^(n-1) (at most Max) has passed;
// a use within that window fails at once with ErrBackoff and the last failure. A session
// that stayed ready for at least ResetAfter before failing starts the count afresh. A
// connection that some handle still holds is restarted on its own as soon as the window
// ends (and again, with the delay growing, while starts fail); a use (Ready, CallTool,
// Acquire) after the window also restarts it.
type Backoff struct {
	// Initial is the delay after the first failure. 0 means 250ms.
	Initial time.Duration
	// Max caps the delay. 0 means 30s.
	Max time.Duration
	// ResetAfter is the healthy period that clears the failure count. 0 means 1m.
	ResetAfter time.Duration
}

func (b Backoff) withDefaults() Backoff {
	b.Initial = cmp.Or(b.Initial, 250*time.Millisecond)
	b.Max = max(cmp.Or(b.Max, 30*time.Second), b.Initial)
	b.ResetAfter = cmp.Or(b.ResetAfter, time.Minute)
	return b
}

// delay is the hold-back after the n-th consecutive failure (n >= 1).
func (b Backoff) delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Manager owns the host's MCP client connections and shares them: everyone who acquires a
// Spec with the same Key gets the same MCP session and the same tool catalog, counted by
// references. Create one per host with NewManager and Close it at shutdown.
//
// A Manager is safe for concurrent use. Connections to different keys start concurrently;
// concurrent acquisitions of one key wait on a single connection attempt.
type Manager struct {
	opts    Options
	log     hclog.Logger
	rt      http.RoundTripper
	ownedRT *http.Transport // the default transport, if we made it
	impl    *mcp.Implementation

	// wg counts every goroutine the Manager starts; Close waits for it. Add is only called
	// under m.mu or a shared's mu while that shared is open, or from a counted goroutine.
	wg sync.WaitGroup

	// starts bounds concurrent connection attempts (Options.MaxConcurrentStarts).
	starts *startLimiter

	// clock is Options.clock or the real clock.
	clock clock

	mu       sync.Mutex // guards the fields below; taken before any shared's mu
	closed   bool
	conns    map[string]*shared
	failures map[string]*failure
}

// failure is the restart pacing state of one key. It outlives the shared connection, so a
// server that fails, is released and is acquired again is still held back.
type failure struct {
	count int
	err   error
	until time.Time // no restart before this
	// env, name and url identify the server for ClearBackoff.
	env, name, url string
}

// NewManager returns a Manager configured by o.
func NewManager(o Options) *Manager {
	m := &Manager{
		opts:     o,
		log:      o.Logger,
		rt:       o.RoundTripper,
		impl:     o.ClientInfo,
		conns:    map[string]*shared{},
		failures: map[string]*failure{},
		starts:   newStartLimiter(cmp.Or(o.MaxConcurrentStarts, config.DefaultMaxConcurrentServerStarts)),
	}
	m.clock = o.clock
	if m.clock == nil {
		m.clock = realClock{}
	}
	m.opts.Backoff = o.Backoff.withDefaults()
	m.opts.StderrTailBytes = cmp.Or(o.StderrTailBytes, 2048)
	m.opts.TerminateGrace = cmp.Or(o.TerminateGrace, 2*time.Second)
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	if m.rt == nil {
		m.ownedRT = http.DefaultTransport.(*http.Transport).Clone()
		// Every thread sharing a session calls the same few hosts concurrently; the default
		// of 2 idle connections per host churned thousands of connections per minute
		// through TIME_WAIT under a front-door load of 32 concurrent calls.
		m.ownedRT.MaxIdleConnsPerHost = 64
		m.rt = m.ownedRT
	}
	if m.impl == nil {
		m.impl = &mcp.Implementation{Name: "warden", Version: "dev"}
	}
	return m
}

// SetMaxConcurrentStarts changes Options.MaxConcurrentStarts (n <= 0: the default).
// Attempts already running keep their slots; waiting ones are admitted as the new limit
// allows.
func (m *Manager) SetMaxConcurrentStarts(n int) {
	if n <= 0 {
		n = config.DefaultMaxConcurrentServerStarts
	}
	m.starts.setLimit(n)
}

// Acquire returns a handle on the shared connection for spec.Key, taking a reference that
// the caller must give back with Conn.Release. The first Acquire of a key starts the server
// (stdio) or connects to it (HTTP); later ones, while any reference is held (or within
// Options.IdleGrace of the last Release), share that session and its tool catalog. Only
// spec.Key decides sharing; the connection is made from the first acquirer's Spec.
//
// Acquire waits until the connection is ready, bounded by ctx and the Spec's
// StartupTimeout. On any failure it returns a nil Conn and an error (an *Error naming the
// server), holding no reference; a server that failed recently is held back by the Backoff
// and fails fast with ErrBackoff. spec must come from BuildSpec (its Key must be set).
func (m *Manager) Acquire(ctx context.Context, spec Spec) (*Conn, error) {
	if spec.Key == "" {
		return nil, invalidDecl(spec.Name, "has no sharing key (build its Spec with BuildSpec)")
	}
	switch spec.Transport {
	case config.TransportStdio:
		if spec.Command == "" {
			return nil, invalidDecl(spec.Name, "is a stdio server without a command")
		}
	case config.TransportHTTP:
		if spec.URL == "" {
			return nil, invalidDecl(spec.Name, "is an HTTP server without a url")
		}
	default:
		return nil, invalidDecl(spec.Name, "has unknown transport %q", spec.Transport)
	}
	if env := cmp.Or(spec.Environment, config.LocalEnvironment); env != config.LocalEnvironment {
		switch {
		case len(spec.secrets) > 0 && spec.origin.Kind != config.OriginHostConfig:
			// Provenance, enforced where the bytes would move: only a host-config server
			// that the operator routed to an executor may carry values the host resolved
			// there. Anything else resolves in its executor by name (a RefResolver Spec).
			return nil, newError(&spec, ErrUnroutable, fmt.Sprintf(
				"would carry a credential resolved on the host to environment %q, but it is a %s declaration: only host-config servers routed there by the operator may", env, spec.origin), nil)
		case m.opts.Executor != nil:
		case spec.Transport == config.TransportStdio:
			return nil, newError(&spec, ErrUnroutable, fmt.Sprintf(
				"runs in environment %q; this Manager starts stdio servers on the host only", env), nil)
		case m.ownedRT != nil:
			return nil, newError(&spec, ErrUnroutable, fmt.Sprintf(
				"is routed through environment %q, but the Manager has no RoundTripper to reach it", env), nil)
		}
	}
	spec.StartupTimeout = cmp.Or(spec.StartupTimeout, config.DefaultStartupTimeout)
	spec.ToolTimeout = cmp.Or(spec.ToolTimeout, config.DefaultToolTimeout)

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, newError(&spec, ErrClosed, "cannot be acquired", ErrClosed)
	}
	s := m.conns[spec.Key]
	if s == nil {
		s = newShared(m, spec)
		m.conns[spec.Key] = s
	}
	s.mu.Lock()
	s.refs++
	s.stopIdleLocked()
	s.mu.Unlock()
	m.mu.Unlock()

	c := &Conn{s: s}
	if err := c.Ready(ctx); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// Close closes every connection (whether or not it is still referenced: later use of any
// Conn fails with ErrClosed), waits for every server to be shut down and every goroutine of
// the Manager to end, and releases the default HTTP transport's idle connections. Acquire
// fails after Close. Close is idempotent and always returns nil.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return nil
	}
	m.closed = true
	all := slices.Collect(maps.Values(m.conns))
	clear(m.conns)
	m.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.shutdown)
	}
	wg.Wait()
	m.wg.Wait()
	if m.ownedRT != nil {
		m.ownedRT.CloseIdleConnections()
	}
	return nil
}

// release drops one reference on s and, on the last one, closes s now or after the idle
// grace. It blocks while the session is closed.
func (m *Manager) release(s *shared) {
	m.mu.Lock()
	s.mu.Lock()
	s.refs--
	if s.refs > 0 || s.closed {
		s.mu.Unlock()
		m.mu.Unlock()
		return
	}
	if grace := m.opts.IdleGrace; grace > 0 && !m.closed && s.state == stateReady {
		stop := make(chan struct{})
		s.idleStop = stop
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			c, stopTimer := m.clock.NewTimer(grace)
			defer stopTimer()
			select {
			case <-c:
				m.expire(s, stop)
			case <-stop:
			}
		}()
		s.mu.Unlock()
		m.mu.Unlock()
		return
	}
	m.removeLocked(s)
	s.mu.Unlock()
	m.mu.Unlock()
	s.shutdown()
}

// expire closes s at the end of an idle grace period, unless it was acquired meanwhile.
func (m *Manager) expire(s *shared, stop chan struct{}) {
	m.mu.Lock()
	s.mu.Lock()
	if s.idleStop != stop || s.refs > 0 || s.closed {
		s.mu.Unlock()
		m.mu.Unlock()
		return
	}
	s.idleStop = nil
	m.removeLocked(s)
	s.mu.Unlock()
	m.mu.Unlock()
	s.log.Debug("idle grace over; closing")
	s.shutdown()
}

// removeLocked unregisters s; m.mu and s.mu are held.
func (m *Manager) removeLocked(s *shared) {
	if m.conns[s.spec.Key] == s {
		delete(m.conns, s.spec.Key)
	}
	s.closed = true
}

// heldBack reports how long the key's restart is still held back, and the failure that
// caused it.
func (m *Manager) heldBack(key string) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.failures[key]
	if f == nil {
		return 0, nil
	}
	return f.until.Sub(m.clock.Now()), f.err
}

// noteFailure records a failure of key. healthy is how long the failed session had been
// ready (0 for a failed start); a long enough healthy period restarts the count.
func (m *Manager) noteFailure(spec *Spec, err error, healthy time.Duration) time.Time {
	key := spec.Key
	b := m.opts.Backoff
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	// Forget keys whose last failure is long past.
	for k, f := range m.failures {
		if now.Sub(f.until) > max(b.ResetAfter, b.Max) {
			delete(m.failures, k)
		}
	}
	f := m.failures[key]
	if f == nil || healthy >= b.ResetAfter {
		f = &failure{}
		m.failures[key] = f
	}
	f.count++
	f.err = err
	f.until = now.Add(b.delay(f.count))
	f.env, f.name, f.url = spec.Environment, spec.Name, spec.URL
	return f.until
}

// ClearBackoff forgets the recent failures of every connection to the server named name
// at url in environment env, so that the next Acquire starts it at once: what changed
// since it failed (an OAuth login) may well have fixed it.
func (m *Manager) ClearBackoff(env, name, url string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, f := range m.failures {
		if f.env == env && f.name == name && f.url == url {
			delete(m.failures, k)
		}
	}
}

// clock is a source of time: the real one, or a test's that moves only when told.
// Implementations must be safe for concurrent use.
type clock interface {
	Now() time.Time
	// NewTimer returns a channel that receives once d has passed, and a func that stops
	// the timer.
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}
