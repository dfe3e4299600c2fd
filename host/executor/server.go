package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/executor/protocol"
)

// Sentinel errors.
var (
	// ErrMessageTooLarge: a message over protocol.MaxMessageBytes (Conn.Read).
	ErrMessageTooLarge = fmt.Errorf("message exceeds %d bytes", protocol.MaxMessageBytes)
	// ErrBinaryFrame: a WebSocket binary frame; the protocol is text frames only.
	ErrBinaryFrame = errors.New("binary WebSocket frame (text frames only)")
	// ErrTokenRequired: Listen without a bearer token.
	ErrTokenRequired = errors.New("an executor listens only with a bearer token (--token-env VAR)")
	// ErrClosed: the Server or the connection is closed.
	ErrClosed = errors.New("executor: closed")
)

// Defaults of Options.
const (
	DefaultResumeWindow   = 30 * time.Second
	DefaultOutputBuffer   = 1 << 20
	DefaultWriteTimeout   = 30 * time.Second
	DefaultMaxInFlight    = 64
	DefaultMaxProcesses   = 64
	DefaultMaxHTTPStreams = 256
	// TerminateGrace is how long process/terminate waits after SIGTERM before SIGKILL.
	TerminateGrace = 2 * time.Second
	// httpChunk is the most one http/body or process/output carries.
	httpChunk = 32 << 10
)

// Options configure a Server.
type Options struct {
	// Logger receives the executor's logs; nil discards them. Nothing secret is logged.
	Logger hclog.Logger
	// Capabilities are announced in initialize and enforced: a method of a capability
	// not announced fails with -32011.
	Capabilities protocol.Capabilities
	// MCPServers are the executor's own declarations (its config.toml [mcp_servers]),
	// announced by reference (see RenderServers).
	MCPServers []config.ServerDecl
	// EnvironmentInfo is announced as is.
	EnvironmentInfo protocol.EnvironmentInfo
	// Getenv is the executor's environment: header valueEnvVars, process envVars and the
	// base environment, PATH for argv[0], and the HTTP proxy variables are read through
	// it. nil means os.LookupEnv.
	Getenv func(name string) (string, bool)

	// ResumeWindow is how long a detached session's processes live (default 30 s).
	ResumeWindow time.Duration
	// OutputBuffer is the most output buffered per process while detached (default 1 MiB).
	OutputBuffer int
	// WriteTimeout bounds each message written to a host (default 30 s): a host that
	// stops reading is disconnected.
	WriteTimeout time.Duration
	// MaxInFlight bounds the requests of one connection being handled at once (default 64);
	// reading waits for a free slot.
	MaxInFlight int
	// MaxProcesses bounds the live processes of a session (default 64).
	MaxProcesses int
	// MaxHTTPStreams bounds the live http/request streams of a connection (default 256).
	MaxHTTPStreams int
}

// Server is an executor: it serves the executor protocol on any number of connections
// (ServeConn, ServeStdio, Listen). Its methods are safe for concurrent use.
type Server struct {
	opts    Options
	log     hclog.Logger
	getenv  func(string) (string, bool)
	servers map[string]json.RawMessage
	client  *http.Client
	tr      *http.Transport

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session
	conns    map[*conn]struct{}
	procWG   sync.WaitGroup // every process's goroutines
}

// New returns a Server; it fails if Options.MCPServers cannot be rendered.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.ResumeWindow <= 0 {
		opts.ResumeWindow = DefaultResumeWindow
	}
	if opts.OutputBuffer <= 0 {
		opts.OutputBuffer = DefaultOutputBuffer
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxProcesses <= 0 {
		opts.MaxProcesses = DefaultMaxProcesses
	}
	if opts.MaxHTTPStreams <= 0 {
		opts.MaxHTTPStreams = DefaultMaxHTTPStreams
	}
	servers, err := RenderServers(opts.MCPServers)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = ProxyFunc(opts.Getenv)
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		getenv:   opts.Getenv,
		servers:  servers,
		tr:       tr,
		sessions: map[string]*session{},
		conns:    map[*conn]struct{}{},
		client: &http.Client{
			Transport: tr,
			// The host's own client applies its redirect policy to the 3xx it is given;
			// following here would re-send credential headers to wherever it points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	return s, nil
}

// Close ends every connection, kills every process of every session and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.sessions = map[string]*session{}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.fail(ErrClosed)
	}
	for _, ss := range sessions {
		ss.retire()
	}
	s.procWG.Wait()
	s.tr.CloseIdleConnections()
	return nil
}

// conn is one host connection being served.
type conn struct {
	s      *Server
	c      Conn
	ctx    context.Context
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup

	wmu  sync.Mutex // serialises writes
	dead bool       // guarded by wmu: a write failed or the connection ended

	mu   sync.Mutex
	sess *session
	reqs map[string]context.CancelCauseFunc
}

// ServeConn serves one connection until the peer closes it (nil), it fails, or ctx ends
// (ctx's error). On return the connection's HTTP requests are cancelled and its session
// is detached: its processes live on for Options.ResumeWindow.
func (s *Server) ServeConn(ctx context.Context, c Conn) error {
	ctx, cancel := context.WithCancelCause(ctx)
	cn := &conn{s: s, c: c, ctx: ctx, cancel: cancel, sem: make(chan struct{}, s.opts.MaxInFlight), reqs: map[string]context.CancelCauseFunc{}}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = c.Close()
		return ErrClosed
	}
	s.conns[cn] = struct{}{}
	s.mu.Unlock()
	// A stdio Read does not watch ctx: closing the connection is what ends it.
	stopOnCancel := context.AfterFunc(ctx, func() { cn.fail(context.Cause(ctx)) })
	defer stopOnCancel()
	defer func() {
		cn.fail(context.Canceled)
		cn.wg.Wait()
		cn.mu.Lock()
		ss := cn.sess
		cn.mu.Unlock()
		if ss != nil {
			ss.detach(cn)
		}
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
	}()
	for {
		msg, err := c.Read(ctx)
		if errors.Is(err, ErrMessageTooLarge) {
			cn.replyError(idFromPrefix(TooLargePrefix(err)), rpcErr(protocol.CodeInvalidRequest, "", ErrMessageTooLarge.Error()))
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
					return cause
				}
				return ctx.Err()
			}
			return fmt.Errorf("executor: reading: %w", err)
		}
		if !cn.dispatch(msg) {
			return context.Cause(ctx)
		}
	}
}

// fail ends the connection: cancels its requests and closes it, so blocked reads and
// writes return.
func (c *conn) fail(cause error) {
	c.cancel(cause)
	_ = c.c.Close()
}

// write sends one message under the write deadline; a failed write ends the connection
// (a peer that stops reading is disconnected, not buffered for).
func (c *conn) write(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.dead {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.opts.WriteTimeout)
	defer cancel()
	if err := c.c.Write(ctx, msg); err != nil {
		c.dead = true
		c.s.log.Debug("write to host failed: disconnecting", "error", err)
		c.fail(fmt.Errorf("executor: writing to the host: %w", err))
		return err
	}
	return nil
}

func (c *conn) notify(method string, params any) error {
	msg, err := encodeNotification(method, params)
	if err != nil {
		return err
	}
	return c.write(msg)
}

func encodeNotification(method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("executor: encoding %s: %w", method, err)
	}
	return json.Marshal(protocol.Message{JSONRPC: "2.0", Method: method, Params: p})
}

func (c *conn) reply(id json.RawMessage, result any) {
	r, err := json.Marshal(result)
	if err != nil {
		c.replyError(id, rpcErr(protocol.CodeFailed, "failed", "encoding the result: "+err.Error()))
		return
	}
	msg, _ := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: id, Result: r})
	_ = c.write(msg)
}

func (c *conn) replyError(id json.RawMessage, e *protocol.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(protocol.Message{JSONRPC: "2.0", ID: id, Error: e})
	_ = c.write(msg)
}

func rpcErr(code int, kind, msg string) *protocol.Error {
	e := &protocol.Error{Code: code, Message: msg}
	if kind != "" {
		e.Data = &protocol.ErrorData{Kind: kind}
	}
	return e
}

func invalidParams(format string, args ...any) *protocol.Error {
	return rpcErr(protocol.CodeInvalidParams, "invalidParams", fmt.Sprintf(format, args...))
}
func notFound(format string, args ...any) *protocol.Error {
	return rpcErr(protocol.CodeNotFound, "notFound", fmt.Sprintf(format, args...))
}
func forbidden(format string, args ...any) *protocol.Error {
	return rpcErr(protocol.CodeForbidden, "forbidden", fmt.Sprintf(format, args...))
}
func failed(format string, args ...any) *protocol.Error {
	return rpcErr(protocol.CodeFailed, "failed", fmt.Sprintf(format, args...))
}

// handler answers one request. after, when not nil, runs once the response is written
// (an http/request's body stream, a process's output pumps), outside the in-flight slot.
type handler func(ctx context.Context, params json.RawMessage) (result any, after func(), err *protocol.Error)

// dispatch handles one incoming message; it returns false when the connection must end.
func (c *conn) dispatch(raw []byte) bool {
	var m protocol.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		c.replyError(nil, rpcErr(protocol.CodeParseError, "", "parse error: "+err.Error()))
		return true
	}
	if m.JSONRPC != "2.0" || m.Method == "" {
		if m.Method == "" && len(m.ID) > 0 && (m.Result != nil || m.Error != nil) {
			return true // a response: the executor sends no requests, so it answers none
		}
		c.replyError(m.ID, rpcErr(protocol.CodeInvalidRequest, "", `invalid request: want a JSON-RPC 2.0 request ("jsonrpc":"2.0" and a method)`))
		return true
	}
	if len(m.ID) == 0 {
		return true // a notification: none is defined host → executor
	}
	c.mu.Lock()
	ss := c.sess
	c.mu.Unlock()
	if m.Method == protocol.MethodInitialize {
		c.initialize(m.ID, m.Params)
		return true
	}
	if ss == nil {
		c.replyError(m.ID, rpcErr(protocol.CodeNotInitialized, "", "not initialized: send initialize first"))
		return true
	}
	h, e := c.route(m.Method, ss)
	if e != nil {
		c.replyError(m.ID, e)
		return true
	}
	// Writes to one process's stdin keep their order although requests run concurrently.
	var turn *stdinTurn
	if m.Method == protocol.MethodProcessWrite || m.Method == protocol.MethodProcessCloseStdin {
		var ref protocol.ProcessRef
		if json.Unmarshal(m.Params, &ref) == nil {
			if p := ss.process(ref.ProcessID); p != nil {
				turn = p.takeTurn()
			}
		}
	}
	select {
	case c.sem <- struct{}{}:
	case <-c.ctx.Done():
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if turn != nil {
			defer turn.done()
			turn.wait()
		}
		result, after, e := h(c.ctx, m.Params)
		if e != nil {
			c.replyError(m.ID, e)
		} else {
			c.reply(m.ID, result)
		}
		<-c.sem
		if after != nil {
			after()
		}
	}()
	return true
}

// route picks a method's handler, enforcing the announced capabilities.
func (c *conn) route(method string, ss *session) (handler, *protocol.Error) {
	caps := c.s.opts.Capabilities
	need := func(ok bool, name string, h handler) (handler, *protocol.Error) {
		if !ok {
			return nil, forbidden("%s: this executor does not offer the %s capability", method, name)
		}
		return h, nil
	}
	switch method {
	case protocol.MethodHTTPRequest:
		return c.httpRequest, nil
	case protocol.MethodHTTPCancel:
		return c.httpCancel, nil
	case protocol.MethodProcessStart:
		return need(caps.Processes, "processes", func(ctx context.Context, p json.RawMessage) (any, func(), *protocol.Error) {
			return ss.start(p, c)
		})
	case protocol.MethodProcessWrite:
		return need(caps.Processes, "processes", ss.write)
	case protocol.MethodProcessCloseStdin:
		return need(caps.Processes, "processes", ss.closeStdin)
	case protocol.MethodProcessTerminate:
		return need(caps.Processes, "processes", ss.terminate)
	case protocol.MethodFSRead:
		return need(caps.FSRead, "fsRead", func(_ context.Context, p json.RawMessage) (any, func(), *protocol.Error) {
			return fsRead(p)
		})
	}
	return nil, rpcErr(protocol.CodeMethodNotFound, "", fmt.Sprintf("method not found: %q", method))
}

func decodeParams(raw json.RawMessage, dst any) *protocol.Error {
	if len(raw) == 0 {
		return invalidParams("params: missing")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams("params.%s: want %s", te.Field, te.Type)
		}
		return invalidParams("params: %v", err)
	}
	return nil
}

// initialize negotiates the version and opens or resumes the connection's session. It
// runs on the read loop, so that no later request of the connection is read before it
// took effect.
func (c *conn) initialize(id, raw json.RawMessage) {
	c.mu.Lock()
	already := c.sess != nil
	c.mu.Unlock()
	if already {
		c.replyError(id, rpcErr(protocol.CodeInvalidRequest, "", "initialize: already initialized"))
		return
	}
	var p protocol.InitializeParams
	if e := decodeParams(raw, &p); e != nil {
		c.replyError(id, e)
		return
	}
	if p.ProtocolVersion < 1 {
		c.replyError(id, invalidParams("params.protocolVersion: %d; this executor speaks version %d", p.ProtocolVersion, protocol.Version))
		return
	}
	s := c.s
	var ss *session
	resumed := false
	if p.ResumeSessionID != "" {
		s.mu.Lock()
		ss = s.sessions[p.ResumeSessionID]
		s.mu.Unlock()
		if ss == nil || !ss.claim(c) {
			c.replyError(id, rpcErr(protocol.CodeSessionRetired, "sessionRetired", fmt.Sprintf("initialize: session %q is gone (retired or never existed); start a new one", p.ResumeSessionID)))
			return
		}
		resumed = true
	} else {
		var err error
		if ss, err = s.newSession(c); err != nil {
			c.replyError(id, failed("initialize: %v", err))
			return
		}
	}
	c.mu.Lock()
	c.sess = ss
	c.mu.Unlock()
	c.reply(id, protocol.InitializeResult{
		ProtocolVersion: min(p.ProtocolVersion, protocol.Version),
		SessionID:       ss.id,
		Resumed:         resumed,
		Capabilities:    s.opts.Capabilities,
		EnvironmentInfo: s.opts.EnvironmentInfo,
		MCPServers:      s.servers,
	})
	s.log.Debug("initialized", "session", ss.id, "resumed", resumed, "client", p.ClientInfo.Name)
	if resumed {
		ss.replay(c)
	}
}

func (s *Server) newSession(c *conn) (*session, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generating a session id: %w", err)
	}
	ss := &session{id: "ses_" + hex.EncodeToString(b), s: s, owner: c, procs: map[string]*process{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.sessions[ss.id] = ss
	return ss, nil
}
