package leaktest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPPath is where a RecordingServer serves MCP; every other path is its plain endpoint.
const MCPPath = "/mcp"

// recordedBodyBytes caps how much of a request body is kept (the rest still reaches the
// handler); request bodies as a whole are capped by maxRequestBodyBytes.
const (
	recordedBodyBytes   = 1 << 20
	maxRequestBodyBytes = 16 << 20
)

// RecordingOptions configure a RecordingServer; the zero value serves MCP to anyone.
type RecordingOptions struct {
	// RequireBearer, when set, answers 401 (with WWW-Authenticate: Bearer) to every
	// request whose Authorization is not "Bearer " + RequireBearer. Refused requests are
	// recorded too, with Status 401.
	RequireBearer string
	// Identity is the text the whoami tool returns and the server's MCP name; default
	// "leaktest-recording-server".
	Identity string
	// Plain serves every path other than MCPPath; the default answers 200 with
	// "leaktest: METHOD PATH\n" in text/plain.
	Plain http.Handler
}

// Request is one HTTP request a RecordingServer received.
type Request struct {
	Time     time.Time
	Method   string
	Path     string
	RawQuery string
	Header   http.Header // every header as received, Host included
	Body     []byte      // at most the first 1 MiB
	Status   int         // the status the server answered (200 if the handler wrote none)
}

// RecordingServer is a loopback streamable-HTTP MCP server (go-sdk) that records every
// request, with all its headers, before serving it. Its tools are echo (returns its text
// argument) and whoami (returns Identity). Its methods are safe for concurrent use; it is
// closed by t.Cleanup.
type RecordingServer struct {
	base     string
	identity string
	srv      *http.Server
	cancel   context.CancelFunc

	mu      sync.Mutex
	reqs    []Request
	changed changes
}

// EchoArgs are the arguments of the echo tool.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

// NewRecordingServer starts a RecordingServer on 127.0.0.1:0.
func NewRecordingServer(t testing.TB, opts RecordingOptions) *RecordingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("leaktest: recording server listen: %v", err)
	}
	s := &RecordingServer{
		base:     "http://" + ln.Addr().String(),
		identity: opts.Identity,
	}
	if s.identity == "" {
		s.identity = "leaktest-recording-server"
	}
	server := mcp.NewServer(&mcp.Implementation{Name: s.identity, Version: "v0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text argument."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "whoami", Description: "Returns the server's identity."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s.identity}}}, nil, nil
		})
	plain := opts.Plain
	if plain == nil {
		plain = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = fmt.Fprintf(w, "leaktest: %s %s\n", r.Method, r.URL.Path)
		})
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	mux.Handle("/", plain)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.srv = &http.Server{
		Handler:           s.record(opts.RequireBearer, mux),
		ReadHeaderTimeout: 10 * time.Second,
		// Streams (the MCP GET stream) end with the server, not with the client.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		cancel()
		// A client that vanished without ending its session (an executor killed mid-test)
		// leaves the session's goroutines running until it is closed.
		for ss := range server.Sessions() {
			_ = ss.Close()
		}
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := s.srv.Shutdown(sctx); err != nil {
			_ = s.srv.Close()
		}
		<-served
	})
	return s
}

// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
func (s *RecordingServer) URL() string { return s.base + MCPPath }

// BaseURL is http://127.0.0.1:PORT; any path under it but MCPPath is the plain endpoint.
func (s *RecordingServer) BaseURL() string { return s.base }

// Identity is what whoami returns.
func (s *RecordingServer) Identity() string { return s.identity }

// Requests returns a copy of every request recorded so far, in arrival order.
func (s *RecordingServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Authorizations returns the Authorization header of every recorded request ("" for a
// request without one), in arrival order.
func (s *RecordingServer) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.Header.Get("Authorization")
	}
	return out
}

// Wait blocks until cond reports true or ctx ends; cond is evaluated now and after every
// recorded request (when its response is done) and may call the server's methods.
func (s *RecordingServer) Wait(ctx context.Context, cond func() bool) error {
	return s.changed.wait(ctx, &s.mu, cond, "recording server")
}

// record wraps next: it records the request (its status once the handler has written
// one) and enforces RequireBearer.
func (s *RecordingServer) record(bearer string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := Request{
			Time:     time.Now(),
			Method:   r.Method,
			Path:     r.URL.Path,
			RawQuery: r.URL.RawQuery,
			Header:   r.Header.Clone(),
		}
		req.Header.Set("Host", r.Host)
		if r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBodyBytes))
			if err != nil {
				req.Status = http.StatusRequestEntityTooLarge
				s.add(req)
				http.Error(w, "request body too large or unreadable", req.Status)
				return
			}
			req.Body = body[:min(len(body), recordedBodyBytes)]
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		idx := s.add(req)
		if bearer != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+bearer)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="leaktest"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			s.setStatus(idx, http.StatusUnauthorized)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		s.setStatus(idx, sw.status)
	})
}

func (s *RecordingServer) add(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	s.changed.notifyLocked()
	return len(s.reqs) - 1
}

func (s *RecordingServer) setStatus(i, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[i].Status = status
	s.changed.notifyLocked()
}

// statusWriter records the status; Unwrap keeps http.ResponseController (flushing the
// SSE streams) working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
