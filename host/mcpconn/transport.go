package mcpconn

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
)

// headerTransport adds a Spec's resolved headers to every request bound for the server's own
// origin (scheme and host:port of Spec.URL). A request to any other origin — a redirect, say —
// goes out without them, so a credential never follows a server somewhere else.
// It is safe for concurrent use (its fields are read-only).
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	scheme  string
	host    string
}

func newHeaderTransport(base http.RoundTripper, endpoint string, headers http.Header) *headerTransport {
	t := &headerTransport{base: base, headers: headers}
	if u, err := url.Parse(endpoint); err == nil {
		t.scheme, t.host = u.Scheme, u.Host
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 || t.host == "" ||
		!strings.EqualFold(r.URL.Scheme, t.scheme) || !strings.EqualFold(r.URL.Host, t.host) {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = slices.Clone(v)
	}
	return t.base.RoundTrip(r)
}

// maxStderrLine bounds one logged stderr line; a longer run without a newline is logged in
// pieces of this size.
const maxStderrLine = 4096

// stderrSink is a stdio server's stderr: each line is scrubbed of the Spec's secrets, logged
// at debug level, and kept in a bounded tail (whole lines where possible) for failure
// messages. It is safe for concurrent use.
type stderrSink struct {
	log     hclog.Logger
	secrets []string
	max     int

	mu      sync.Mutex
	tail    []byte // scrubbed complete lines, each ending in '\n'
	dropped bool   // whether older output was discarded
	partial []byte // the current unterminated line, unscrubbed
}

func newStderrSink(log hclog.Logger, secrets []string, max int) *stderrSink {
	return &stderrSink{log: log, secrets: secrets, max: max}
}

// Write implements io.Writer; it never fails.
func (w *stderrSink) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			for len(w.partial) >= maxStderrLine {
				w.lineLocked(w.partial[:maxStderrLine])
				w.partial = append(w.partial[:0], w.partial[maxStderrLine:]...)
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.lineLocked(w.partial)
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *stderrSink) lineLocked(b []byte) {
	line := redact(strings.TrimRight(string(b), "\r"), w.secrets)
	w.log.Debug("server stderr", "line", line)
	w.tail = append(w.tail, line...)
	w.tail = append(w.tail, '\n')
	if over := len(w.tail) - w.max; over > 0 {
		cut := over
		// Prefer to drop whole lines.
		if j := bytes.IndexByte(w.tail[over:], '\n'); j >= 0 && over+j+1 < len(w.tail) {
			cut = over + j + 1
		}
		w.tail = append(w.tail[:0], w.tail[cut:]...)
		w.dropped = true
	}
}

// String renders the tail on one line: lines joined with " | ", "…" in front when older
// output was dropped. It is scrubbed.
func (w *stderrSink) String() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	text := string(w.tail) + redact(string(w.partial), w.secrets)
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	out := strings.Join(lines, " | ")
	if w.dropped && out != "" {
		out = "…" + out
	}
	return out
}

// connect starts or reaches the server, performs the MCP handshake, reads the catalogs
// and tells the session what the handles asked of the previous one, all bounded by ctx.
// On success sess.cs is set; on failure nothing is left running (the SDK closes a
// half-open session, which reaps a stdio server).
func (s *shared) connect(ctx context.Context, sess *session) (catalog, error) {
	spec := &s.spec
	opts, decl := s.clientOptions(sess)
	client := mcp.NewClient(s.m.impl, opts)
	if spec.Client != nil {
		client.AddReceivingMiddleware(routeClientRequests(spec.Client, decl))
	}
	sess.client, sess.decl = client, decl
	s.primeRoots(ctx, sess, decl)
	var transport mcp.Transport
	var ex Executor
	if env := cmp.Or(spec.Environment, config.LocalEnvironment); env != config.LocalEnvironment && s.m.opts.Executor != nil {
		var err error
		if ex, err = s.m.opts.Executor(env); err != nil {
			return catalog{}, newError(spec, ErrUnroutable, fmt.Sprintf("runs in environment %q, which cannot be reached", env), err)
		}
	}
	switch {
	case ex != nil && spec.Transport == config.TransportStdio:
		transport = ex.CommandTransport(spec)
	case spec.Transport == config.TransportStdio:
		// The process context lets us kill a server that hangs mid-handshake (the SDK's
		// graceful close would wait for it); a started command is always reaped by the
		// connection's Close.
		cmd := exec.CommandContext(sess.abortCtx, spec.Command, spec.Args...)
		cmd.Env = append([]string{}, spec.Env...) // non-nil: never the host's environment
		cmd.Dir = spec.Cwd
		cmd.Stderr = sess.stderr
		cmd.WaitDelay = s.m.opts.TerminateGrace // bound the stderr copy after exit
		transport = &trackedTransport{sess: sess, cmd: cmd,
			inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: s.m.opts.TerminateGrace}}
	default:
		// Not wrapped in trackedTransport: the SDK's HTTP connection has hooks (it opens
		// the standalone SSE stream from one) that a wrapper would hide. An executor's
		// server goes out from its network, its HeaderRefs resolved there.
		base := s.m.rt
		if ex != nil {
			base = ex.RoundTripper(spec.HeaderRefs)
		}
		st := &mcp.StreamableClientTransport{
			Endpoint: spec.URL,
			HTTPClient: &http.Client{Transport: newHeaderTransport(
				abortableTransport{base: base, abort: sess.abortCtx, env: spec.Environment},
				spec.URL, spec.Headers)},
		}
		if s.m.opts.OAuth != nil && !spec.SendsAuthorization() {
			st.OAuthHandler = s.m.opts.OAuth(spec)
		}
		transport = st
	}
	var sessOpts *mcp.ClientSessionOptions
	if v := s.m.opts.ProtocolVersion; v != "" {
		sessOpts = &mcp.ClientSessionOptions{ProtocolVersion: v}
	}
	cs, err := client.Connect(ctx, transport, sessOpts)
	if err != nil {
		// The SDK closes the connection on most handshake failures, but not all (a failed
		// subscriptions/listen leaves it open); closing it again is harmless.
		sess.closeConn()
		return catalog{}, s.startError(ctx, sess, "handshake", err)
	}
	sess.cs = cs
	if r := cs.InitializeResult(); r != nil {
		sess.protocol, sess.init = r.ProtocolVersion, r
	}
	var cat catalog
	if cat.tools, err = listTools(ctx, cs); err != nil {
		sess.close()
		return catalog{}, s.startError(ctx, sess, "tools/list", err)
	}
	s.readResources(ctx, sess, &cat)
	s.readPrompts(ctx, sess, &cat)
	s.reapply(ctx, sess)
	if ctx.Err() != nil {
		sess.close()
		return catalog{}, s.startError(ctx, sess, "catalogs", ctx.Err())
	}
	return cat, nil
}

// startError describes a failed start: the step, the cause, a stdio server's exit status
// and stderr tail. A cause that is only the expired startup context becomes the timeout
// error the caller reports anyway.
func (s *shared) startError(ctx context.Context, sess *session, step string, err error) error {
	spec := &s.spec
	if ctx.Err() != nil {
		e := newError(spec, ErrStartupTimeout, fmt.Sprintf("did not start within %s", spec.StartupTimeout), nil)
		e.Stderr = sess.stderr.String()
		return e
	}
	if exit := sess.exitStatus(); exit != "" {
		err = fmt.Errorf("%w (%s)", err, exit)
	}
	e := newError(spec, nil, "failed to start ("+step+")", err)
	e.Stderr = sess.stderr.String()
	return e
}

// trackedTransport wraps the SDK's stdio transport so the session holds the raw connection:
// its Close result is the server's exit status, and closing it aborts a hung handshake.
type trackedTransport struct {
	inner mcp.Transport
	sess  *session
	cmd   *exec.Cmd // stdio: the command inner starts
}

// Connect implements mcp.Transport.
func (t *trackedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if t.cmd != nil && t.cmd.Process != nil {
		t.sess.pid.Store(int64(t.cmd.Process.Pid))
	}
	tc := &trackedConn{Connection: c, closed: make(chan struct{})}
	t.sess.conn.Store(tc)
	return tc, nil
}

// trackedConn records the result of the first Close, which for a stdio server is the
// process's exit status (the SDK's close waits for the process).
type trackedConn struct {
	mcp.Connection
	once     sync.Once
	closeErr error
	closed   chan struct{} // closed after the first Close returned
}

// Close implements mcp.Connection; every caller gets the first Close's result.
func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.closeErr = c.Connection.Close()
		close(c.closed)
	})
	return c.closeErr
}

// Executor reaches the servers of one executor environment: what the host needs of an
// executor client (package host/executor/client implements it). Implementations must be
// safe for concurrent use.
type Executor interface {
	// RoundTripper carries one server's streamable HTTP requests out of the executor's
	// network; refs are added as headers the executor resolves from its own environment.
	RoundTripper(refs []HeaderRef) http.RoundTripper
	// CommandTransport starts the stdio server spec (Command, Args, Cwd, the literal Env
	// and EnvVarRefs) in the executor.
	CommandTransport(spec *Spec) mcp.Transport
}

// abortableTransport cancels every request it carries, including a response body still
// being read (an SSE stream), once abort is done. It is how an abandoned or closed HTTP
// session stops at once, whatever context the SDK gave its requests. It also tags each
// request's context with the Spec's environment (see RequestEnvironment).
type abortableTransport struct {
	base  http.RoundTripper
	abort context.Context
	env   string
}

type environmentKey struct{}

// RequestEnvironment is, inside an Options.RoundTripper, the Spec.Environment of the server
// the request is for ("local" or an executor id); "" for a request this package did not make.
func RequestEnvironment(ctx context.Context) string {
	env, _ := ctx.Value(environmentKey{}).(string)
	return env
}

// RoundTrip implements http.RoundTripper.
func (t abortableTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.abort.Err() != nil {
		return nil, fmt.Errorf("session closed: %w", context.Cause(t.abort))
	}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), environmentKey{}, t.env))
	stop := context.AfterFunc(t.abort, cancel)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

// releasingBody runs release once, when the body is closed.
type releasingBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
