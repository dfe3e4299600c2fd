package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/protocol"
)

// Defaults for Options.
const (
	DefaultMaxConcurrentRequests = 64
	DefaultMaxMessageBytes       = 16 << 20
	DefaultNotificationQueue     = 1024
)

// ErrMessageTooLarge is returned by a Conn's Read for a message longer than the limit
// that it skipped; the connection stays usable, and the Server answers
// CodeInvalidRequest with a null id.
var ErrMessageTooLarge = errors.New("message too large")

// Conn is a message-oriented transport: each Read returns exactly one JSON-RPC message
// (a request, a notification, or a batch array) and each Write sends one.
type Conn interface {
	// Read blocks for the next message. It returns io.EOF (or an error wrapping it) when
	// the peer ends the connection cleanly, and ErrMessageTooLarge for an oversized
	// message it skipped. The Server calls Read from one goroutine at a time.
	Read(ctx context.Context) ([]byte, error)
	// Write sends one message. The Server serializes calls to Write.
	Write(ctx context.Context, msg []byte) error
	// Close closes the connection and unblocks Read and Write. It may be called more
	// than once, concurrently with Read and Write.
	Close() error
}

// Options configures a Server. The zero value is usable.
type Options struct {
	// Logger is the parent logger; the Server logs through Logger.Named("api"). Nil
	// discards logs. At debug level it logs one line per request: method, id, latency
	// and error code (0 on success) — never params or results.
	Logger hclog.Logger
	// MaxConcurrentRequests bounds the requests one connection has in flight. Beyond
	// it, up to as many more messages wait in a queue (the Server keeps reading, so a
	// disconnect is still noticed at once), and then the Server stops reading from that
	// connection until a request ends. 0 means DefaultMaxConcurrentRequests.
	MaxConcurrentRequests int
	// MaxMessageBytes bounds one incoming message (a line on stdio, a text message on
	// a WebSocket). 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// NotificationQueue bounds the notifications waiting to be written to one
	// connection. A client that falls this far behind is disconnected rather than
	// slowing the Backend or silently missing status changes. 0 means
	// DefaultNotificationQueue.
	NotificationQueue int
	// Token, when set, is the bearer token every WebSocket upgrade must present
	// ("Authorization: Bearer TOKEN"), compared in constant time; at least MinTokenBytes.
	// Listen requires it on TCP unless NoAuth is set. It does not apply to stdio.
	Token string
	// NoAuth is the explicit opt-out of the token on a TCP listener, which Listen accepts
	// only on a loopback address: then any local user can drive the host API.
	NoAuth bool
	// OriginPatterns lists extra host patterns (path.Match syntax, e.g.
	// "app.example.com") whose browser Origin may open a WebSocket. By default a
	// request with an Origin header is accepted only when the Origin's host equals the
	// request's Host, which stops cross-site pages from driving a local warden.
	OriginPatterns []string
}

// Server serves the host API over any number of connections to one Backend. It holds no
// per-connection state between calls and is safe for concurrent use.
type Server struct {
	b       Backend
	log     hclog.Logger
	maxConc int
	maxMsg  int64
	queue   int
	guard   netguard.Guard
	origins []string

	// hooks are nil outside tests (set through export_test.go before serving), so a test
	// can wait for the moment something did not happen instead of sleeping.
	hooks serverHooks
}

// serverHooks observe a Server's connections; they are called on the connection's
// goroutines and must not block for long.
type serverHooks struct {
	// slotWait is called with a request's id when every concurrency slot of its
	// connection is taken, just before dispatch waits for one.
	slotWait func(id string)
	// served is called when ServeConn is about to return: every request of the
	// connection has ended and none will start.
	served func()
}

// New returns a Server for b.
func New(b Backend, o Options) *Server {
	s := &Server{
		b:       b,
		maxConc: o.MaxConcurrentRequests,
		maxMsg:  o.MaxMessageBytes,
		queue:   o.NotificationQueue,
		guard:   netguard.Guard{Token: o.Token, NoAuth: o.NoAuth},
		origins: append([]string(nil), o.OriginPatterns...),
	}
	if o.Logger == nil {
		s.log = hclog.NewNullLogger()
	} else {
		s.log = o.Logger.Named("api")
	}
	if s.maxConc <= 0 {
		s.maxConc = DefaultMaxConcurrentRequests
	}
	if s.maxMsg <= 0 {
		s.maxMsg = DefaultMaxMessageBytes
	}
	if s.queue <= 0 {
		s.queue = DefaultNotificationQueue
	}
	return s
}

type clientKey struct{}

// Client returns the clientInfo the connection's initialize request gave, for the requests
// of that connection (the Backend may name the caller to policies with it).
func Client(ctx context.Context) (protocol.ClientInfo, bool) {
	c, ok := ctx.Value(clientKey{}).(protocol.ClientInfo)
	return c, ok && c.Name != ""
}

// ServeConn serves one connection until the peer ends it, a transport error occurs, or
// ctx is done. The end of the connection (EOF on stdio input included) cancels the
// context of every request still in flight; their responses are not written, and
// messages read but not yet dispatched are dropped. ServeConn then waits for those
// requests, unsubscribes from the Backend and closes c. It returns nil when the peer
// ended the connection, ctx's error when ctx ended it, and otherwise the error that
// ended it.
func (s *Server) ServeConn(ctx context.Context, c Conn) error {
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	cn := &conn{
		s:      s,
		c:      c,
		ctx:    ctx,
		cancel: cancel,
		sem:    make(chan struct{}, s.maxConc),
		notes:  make(chan []byte, s.queue),
	}

	// Closing the transport is what unblocks a Read stuck in the peer's silence.
	closed := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = c.Close()
		close(closed)
	}()

	// The reader hands messages to this goroutine through a queue, so that it keeps
	// reading — and notices a disconnect at once — while dispatch waits for a
	// concurrency slot. Only when the queue is full too does it stop reading.
	queue := make(chan []byte, s.maxConc)
	var readErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel(nil) // the end of input ends the connection
		for {
			msg, err := c.Read(ctx)
			if err != nil {
				if errors.Is(err, ErrMessageTooLarge) {
					cn.sendResponse(errorResponse(nil, protocol.InvalidRequest(
						"message exceeds "+strconv.FormatInt(s.maxMsg, 10)+" bytes")))
					continue
				}
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					readErr = fmt.Errorf("api: read: %w", err)
				}
				return
			}
			select {
			case queue <- msg:
			case <-ctx.Done():
				return
			}
		}
	}()

	for ctx.Err() == nil {
		select {
		case msg := <-queue:
			cn.handle(msg)
		case <-ctx.Done():
		}
	}

	cancel(nil)
	if cn.unsubscribe != nil {
		cn.unsubscribe()
	}
	cn.wg.Wait()
	<-closed
	<-readDone
	if hook := s.hooks.served; hook != nil {
		hook()
	}

	switch cause := context.Cause(ctx); {
	case parent.Err() != nil:
		return parent.Err()
	case readErr != nil:
		return readErr
	case cause != nil && !errors.Is(cause, context.Canceled):
		return cause
	}
	return nil
}

// conn is one served connection.
type conn struct {
	s      *Server
	c      Conn
	ctx    context.Context
	cancel context.CancelCauseFunc

	wmu sync.Mutex // serializes c.Write

	sem chan struct{}  // bounds in-flight requests
	wg  sync.WaitGroup // in-flight requests, batch writers, the notifier

	// Set once by the initialize request, on ServeConn's dispatch goroutine, before
	// initialized is stored.
	initialized atomic.Bool
	optOut      map[string]bool
	unsubscribe func()
	// client is the initialize request's clientInfo; set before initialized is stored, so
	// every later request sees it.
	client       protocol.ClientInfo
	notes        chan []byte
	notesStarted atomic.Bool
}

// fail ends the connection because of err.
func (cn *conn) fail(err error) {
	cn.cancel(err)
}

// handle processes one incoming message on ServeConn's dispatch goroutine.
func (cn *conn) handle(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 {
		return // a blank line between stdio messages
	}
	if !json.Valid(msg) {
		cn.s.log.Debug("request", "method", "", "id", "", "code", protocol.CodeParseError)
		cn.sendResponse(errorResponse(nil, protocol.ParseError()))
		return
	}
	if msg[0] == '[' {
		var elems []json.RawMessage
		if err := json.Unmarshal(msg, &elems); err != nil { // cannot happen: msg is valid
			cn.sendResponse(errorResponse(nil, protocol.ParseError()))
			return
		}
		if len(elems) == 0 {
			cn.sendResponse(errorResponse(nil, protocol.InvalidRequest("empty batch")))
			return
		}
		cn.batch(elems)
		return
	}
	req, id, perr := parseRequest(msg)
	if perr != nil {
		cn.s.log.Debug("request", "method", "", "id", logString(string(id)), "code", perr.Code)
		cn.sendResponse(errorResponse(id, perr))
		return
	}
	cn.dispatch(req, cn.sendResponse, nil)
	if req.Method == protocol.MethodInitialize {
		cn.startNotifier() // after the initialize response, never before it
	}
}

// batch processes a JSON-RPC batch: its requests run like single ones (initialize in
// order, the rest concurrently) and the responses go out together, in completion order,
// once all are done. A batch of notifications only gets no response at all.
func (cn *conn) batch(elems []json.RawMessage) {
	var (
		mu  sync.Mutex
		out []*protocol.Response
		bwg sync.WaitGroup
	)
	collect := func(r *protocol.Response) {
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
	}
	for _, e := range elems {
		req, id, perr := parseRequest(bytes.TrimSpace(e))
		if perr != nil {
			collect(errorResponse(id, perr))
			continue
		}
		cn.dispatch(req, collect, &bwg)
	}
	cn.wg.Add(1)
	go func() {
		defer cn.wg.Done()
		bwg.Wait()
		if len(out) > 0 {
			b, err := json.Marshal(out)
			if err != nil {
				cn.s.log.Error("encoding a batch response", "error", err)
			} else {
				cn.write(b)
			}
		}
		cn.startNotifier()
	}()
}

// dispatch runs req: initialize synchronously on the dispatch goroutine (so that requests
// after it, in the same batch too, see the connection initialized), anything else in its
// own goroutine once a concurrency slot is free. reply receives the response of a
// request (never of a notification). bwg, if not nil, also tracks the goroutine.
func (cn *conn) dispatch(req *protocol.Request, reply func(*protocol.Response), bwg *sync.WaitGroup) {
	if req.Method == protocol.MethodInitialize {
		resp := cn.run(req)
		if !req.IsNotification() {
			reply(resp)
		}
		return
	}
	if req.Method == protocol.MethodInitialized && req.IsNotification() {
		return
	}
	select {
	case cn.sem <- struct{}{}:
	default:
		if hook := cn.s.hooks.slotWait; hook != nil {
			hook(string(req.ID))
		}
		select {
		case cn.sem <- struct{}{}:
		case <-cn.ctx.Done():
			return
		}
	}
	if cn.ctx.Err() != nil { // the slot freed because the connection ended
		<-cn.sem
		return
	}
	cn.wg.Add(1)
	if bwg != nil {
		bwg.Add(1)
	}
	go func() {
		defer func() {
			<-cn.sem
			if bwg != nil {
				bwg.Done()
			}
			cn.wg.Done()
		}()
		resp := cn.run(req)
		if !req.IsNotification() {
			reply(resp)
		}
	}()
}

// run calls the Backend for req and logs the outcome.
func (cn *conn) run(req *protocol.Request) *protocol.Response {
	start := time.Now()
	ctx, cancel := context.WithCancel(context.WithValue(cn.ctx, clientKey{}, cn.client))
	defer cancel()
	result, perr := cn.call(ctx, req)
	var code int64
	if perr != nil {
		code = perr.Code
	}
	cn.s.log.Debug("request", "method", logString(req.Method), "id", logString(string(req.ID)),
		"latency", time.Since(start), "code", code)
	if perr != nil {
		return errorResponse(req.ID, perr)
	}
	return &protocol.Response{JSONRPC: protocol.Version, ID: req.ID, Result: result}
}

// call routes req. The order of checks is: method exists, connection initialized (for
// anything but initialize), params decode, Backend.
func (cn *conn) call(ctx context.Context, req *protocol.Request) (res json.RawMessage, perr *protocol.Error) {
	defer func() {
		if r := recover(); r != nil {
			cn.s.log.Error("backend panicked", "method", logString(req.Method), "panic", r,
				"stack", string(debug.Stack()))
			res, perr = nil, protocol.Internal(errors.New("internal error"))
		}
	}()
	b := cn.s.b
	if !knownMethod(req.Method) {
		return nil, protocol.MethodNotFound(req.Method)
	}
	if req.Method == protocol.MethodInitialize {
		return cn.initialize(ctx, req.Params)
	}
	if !cn.initialized.Load() {
		return nil, protocol.NotInitialized()
	}
	switch req.Method {
	case protocol.MethodThreadStart:
		return invoke(ctx, req, b.StartThread)
	case protocol.MethodThreadList:
		return invoke(ctx, req, b.ListThreads)
	case protocol.MethodMcpServerStatusList:
		return invoke(ctx, req, b.ListMcpServerStatus)
	case protocol.MethodMcpServerToolCall:
		return invoke(ctx, req, b.CallTool)
	case protocol.MethodMcpServerReload:
		return invoke(ctx, req, b.Reload)
	case protocol.MethodMcpServerOauthLogin:
		return invoke(ctx, req, b.OauthLogin)
	}
	return nil, protocol.MethodNotFound(req.Method)
}

func knownMethod(m string) bool {
	switch m {
	case protocol.MethodInitialize, protocol.MethodThreadStart, protocol.MethodThreadList,
		protocol.MethodMcpServerStatusList, protocol.MethodMcpServerToolCall,
		protocol.MethodMcpServerReload, protocol.MethodMcpServerOauthLogin:
		return true
	}
	return false
}

// initialize runs on the dispatch goroutine, so nothing else touches the connection's
// initialization state concurrently.
func (cn *conn) initialize(ctx context.Context, raw json.RawMessage) (json.RawMessage, *protocol.Error) {
	if cn.initialized.Load() {
		return nil, protocol.InvalidRequest("already initialized")
	}
	p := new(protocol.InitializeParams)
	if err := protocol.DecodeParams(raw, p); err != nil {
		return nil, asProtocolError(err)
	}
	r, err := cn.s.b.Initialize(ctx, p)
	res, perr := encodeResult(r, err, protocol.MethodInitialize)
	if perr != nil {
		return nil, perr
	}
	if p.Capabilities != nil && len(p.Capabilities.OptOutNotificationMethods) > 0 {
		cn.optOut = map[string]bool{}
		for _, m := range p.Capabilities.OptOutNotificationMethods {
			cn.optOut[m] = true
		}
	}
	cn.unsubscribe = cn.s.b.Subscribe(cn.notify)
	cn.client = p.ClientInfo
	cn.initialized.Store(true)
	cn.s.log.Debug("connection initialized", "client", logString(p.ClientInfo.Name),
		"client_version", logString(p.ClientInfo.Version))
	return res, nil
}

// invoke decodes req's params into a new P, calls fn and encodes its result.
func invoke[P, R any](ctx context.Context, req *protocol.Request, fn func(context.Context, *P) (*R, error)) (json.RawMessage, *protocol.Error) {
	p := new(P)
	if err := protocol.DecodeParams(req.Params, p); err != nil {
		return nil, asProtocolError(err)
	}
	r, err := fn(ctx, p)
	return encodeResult(r, err, req.Method)
}

func encodeResult[R any](r *R, err error, method string) (json.RawMessage, *protocol.Error) {
	if err != nil {
		return nil, asProtocolError(err)
	}
	if r == nil {
		return nil, protocol.Internal(fmt.Errorf("%s: the backend returned no result", method))
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, protocol.Internal(fmt.Errorf("%s: encoding the result: %w", method, err))
	}
	return b, nil
}

// asProtocolError passes a *protocol.Error (possibly wrapped) through and turns any
// other error into CodeInternalError carrying its text.
func asProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.Internal(err)
}

// notify is the Backend subscription of an initialized connection.
func (cn *conn) notify(method string, params any) {
	if cn.ctx.Err() != nil || cn.optOut[method] {
		return
	}
	raw, err := json.Marshal(params)
	if err != nil {
		cn.s.log.Error("encoding a notification", "method", logString(method), "error", err)
		return
	}
	msg, err := json.Marshal(protocol.Notification{JSONRPC: protocol.Version, Method: method, Params: raw})
	if err != nil {
		cn.s.log.Error("encoding a notification", "method", logString(method), "error", err)
		return
	}
	select {
	case cn.notes <- msg:
	default:
		cn.s.log.Warn("notification queue full; closing the connection", "method", logString(method),
			"queue", cap(cn.notes))
		cn.fail(fmt.Errorf("api: notification queue full (%d messages): the client is not reading", cap(cn.notes)))
	}
}

// startNotifier starts writing queued notifications, once the connection is
// initialized and its initialize response has been written.
func (cn *conn) startNotifier() {
	if !cn.initialized.Load() || !cn.notesStarted.CompareAndSwap(false, true) {
		return
	}
	cn.wg.Add(1)
	go func() {
		defer cn.wg.Done()
		for {
			select {
			case <-cn.ctx.Done():
				return
			case msg := <-cn.notes:
				cn.write(msg)
			}
		}
	}()
}

func (cn *conn) sendResponse(r *protocol.Response) {
	b, err := json.Marshal(r)
	if err != nil {
		cn.s.log.Error("encoding a response", "error", err)
		return
	}
	cn.write(b)
}

// write sends one message; a failed write ends the connection.
func (cn *conn) write(msg []byte) {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	if cn.ctx.Err() != nil {
		return
	}
	if err := cn.c.Write(cn.ctx, msg); err != nil && cn.ctx.Err() == nil {
		cn.fail(fmt.Errorf("api: write: %w", err))
	}
}

func errorResponse(id json.RawMessage, e *protocol.Error) *protocol.Response {
	return &protocol.Response{JSONRPC: protocol.Version, ID: id, Error: e}
}

// parseRequest checks one JSON-RPC request object (msg is valid JSON). It returns the id
// to answer with when the request is invalid: the request's id if that was readable,
// else nil (null).
func parseRequest(msg []byte) (*protocol.Request, json.RawMessage, *protocol.Error) {
	if len(msg) == 0 || msg[0] != '{' {
		return nil, nil, protocol.InvalidRequest("a request must be an object")
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(msg, &members); err != nil {
		return nil, nil, protocol.InvalidRequest("a request must be an object")
	}
	req := &protocol.Request{JSONRPC: protocol.Version}
	if id, ok := members["id"]; ok {
		if !validID(id) {
			return nil, nil, protocol.InvalidRequest(`"id" must be a string, a number or null`)
		}
		req.ID = id
	}
	for k := range members {
		switch k {
		case "jsonrpc", "id", "method", "params":
		default:
			return nil, req.ID, protocol.InvalidRequest("unknown member " + strconv.Quote(shorten(k)))
		}
	}
	if v, ok := members["jsonrpc"]; ok {
		var s string
		if json.Unmarshal(v, &s) != nil || s != protocol.Version {
			return nil, req.ID, protocol.InvalidRequest(`"jsonrpc" must be "2.0"`)
		}
	}
	m, ok := members["method"]
	if !ok {
		return nil, req.ID, protocol.InvalidRequest(`missing "method"`)
	}
	if json.Unmarshal(m, &req.Method) != nil || req.Method == "" {
		return nil, req.ID, protocol.InvalidRequest(`"method" must be a non-empty string`)
	}
	if p, ok := members["params"]; ok {
		switch p[0] {
		case '{', '[', 'n':
			req.Params = p
		default:
			return nil, req.ID, protocol.InvalidRequest(`"params" must be an object or an array`)
		}
	}
	return req, req.ID, nil
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	case c == 'n':
		return string(id) == "null"
	}
	return false
}

// logString shortens a client-chosen string for a log line.
func logString(s string) string { return shorten(s) }

func shorten(s string) string {
	const max = 128
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
