// Command warden-faultserver is an MCP server (stdio) that misbehaves on request, for the
// fault tests of host/e2e: each tool is one fault, so a test picks the fault by the tool it
// calls and the same process answers well-behaved calls before and after.
//
// Usage:
//
//	warden-faultserver [--name NAME] [--events PATH]
//
// --name is the implementation name; tests give each server a unique one to find its
// process in /proc. --events appends "call TOOL" to PATH (a file or a named pipe) as each
// tool call starts, in one write, so a test knows a call is in flight at the server.
//
// Tools:
//
//	echo {text}    text back
//	slow {ms}      sleeps (cancellable), then "done"
//	until {path}   answers "done" once path exists (cancellable): a slow call the test
//	               ends when it chooses, so nothing depends on timing
//	crash {}       the process exits with status 3 while the call is in flight
//	hang {}        never answers, not even to a cancellation
//	garbage {}     the answer is a line of HTML on stdout instead of JSON-RPC
//	not_rpc {}     the answer is a JSON object that is not a JSON-RPC message
//	bad_result {}  the answer is a JSON-RPC response whose result is not a tool result
//
// Everything but the protocol goes to stderr.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Markers in a tool's result that make the connection replace its response on the wire:
// the handlers cannot reach the JSON-RPC framing themselves.
const (
	markGarbage   = "\u0000faultserver:garbage\u0000"
	markNotRPC    = "\u0000faultserver:not-rpc\u0000"
	markBadResult = "\u0000faultserver:bad-result\u0000"
)

// garbageLine is what "garbage" writes instead of its response: what a misconfigured
// wrapper script or a proxy error page puts on a server's stdout.
const garbageLine = "<html><body><h1>502 Bad Gateway</h1></body></html>"

// crashStatus is the exit status of "crash".
const crashStatus = 3

func main() {
	name := flag.String("name", "warden-faultserver", "implementation `NAME`")
	events := flag.String("events", "", "append \"call TOOL\" to `PATH` as each tool call starts")
	flag.Parse()
	var ev *eventLog
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "warden-faultserver: --events: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		ev = &eventLog{f: f}
	}
	out := &lineWriter{w: os.Stdout}
	in := &eofReader{r: os.Stdin, eof: make(chan struct{})}
	server := newServer(*name, ev)
	t := &faultTransport{inner: &mcp.IOTransport{Reader: in, Writer: out}, out: out}
	done := make(chan error, 1)
	go func() { done <- server.Run(context.Background(), t) }()
	// The server exits when its client closes stdin, even with a hung call in flight (Run
	// would wait for it forever), so a host closing it is not held up by the fault. SIGTERM
	// keeps its default: the process dies.
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "warden-faultserver: %v\n", err)
		}
	case <-in.eof:
	}
}

// eofReader is stdin, reporting when it ends.
type eofReader struct {
	r    io.Reader
	once sync.Once
	eof  chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

func (e *eofReader) Close() error { return nil }

// eventLog records the tool calls the server receives; a nil *eventLog records nothing.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func (e *eventLog) call(tool string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.f.WriteString("call " + tool + "\n")
}

func newServer(name string, ev *eventLog) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "v0.1.0"}, nil)
	// Every call is recorded before its handler runs, so a test that read the event knows
	// the call reached the server.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				ev.call(p.Name)
			}
			return next(ctx, method, req)
		}
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	type slowArgs struct {
		MS int `json:"ms"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleep ms milliseconds (cancellable), then answer done."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-t.C:
				return text("done"), nil, nil
			}
		})
	type untilArgs struct {
		Path string `json:"path"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "until", Description: "Answer done once path exists (cancellable)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in untilArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-gates.opened(in.Path):
				return text("done"), nil, nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the process while the call is in flight."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "warden-faultserver: crashing on purpose")
			os.Exit(crashStatus)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answer, not even to a cancellation."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			select {} // the process ends when the client closes stdin or kills it
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garbage", Description: "Answer with a line of HTML instead of JSON-RPC."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(markGarbage), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "not_rpc", Description: "Answer with a JSON object that is not JSON-RPC."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(markNotRPC), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "bad_result", Description: "Answer with a JSON-RPC response whose result is not a tool result."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(markBadResult), nil, nil
		})
	return s
}

// gates watches the paths "until" waits for: one poller per path, however many calls wait
// on it (a test holds a hundred at once).
var gates = &gateSet{m: map[string]chan struct{}{}}

type gateSet struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// opened returns a channel closed once path exists.
func (g *gateSet) opened(path string) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch, ok := g.m[path]; ok {
		return ch
	}
	ch := make(chan struct{})
	g.m[path] = ch
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if _, err := os.Stat(path); err == nil {
				close(ch)
				return
			}
		}
	}()
	return ch
}

// lineWriter serializes whole-line writes to stdout, so that a replaced response never
// lands inside a message the SDK is writing (the SDK writes each message, newline
// included, in one Write).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// faultTransport wraps the stdio transport so that responses carrying a marker are
// replaced on the wire.
type faultTransport struct {
	inner mcp.Transport
	out   *lineWriter
}

func (t *faultTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &faultConn{Connection: c, out: t.out}, nil
}

type faultConn struct {
	mcp.Connection
	out *lineWriter
}

func (c *faultConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return c.Connection.Write(ctx, msg)
	}
	switch {
	case bytes.Contains(resp.Result, []byte(jsonEscaped(markGarbage))):
		_, err := c.out.Write([]byte(garbageLine + "\n"))
		return err
	case bytes.Contains(resp.Result, []byte(jsonEscaped(markNotRPC))):
		_, err := c.out.Write([]byte(`{"status":"ok","answer":42}` + "\n"))
		return err
	case bytes.Contains(resp.Result, []byte(jsonEscaped(markBadResult))):
		line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": resp.ID.Raw(), "result": "this is not a tool result"})
		if err != nil {
			return err
		}
		_, err = c.out.Write(append(line, '\n'))
		return err
	}
	return c.Connection.Write(ctx, msg)
}

// jsonEscaped is s as it appears inside a JSON string.
func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
