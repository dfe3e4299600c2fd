package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodCounter appends one line per received JSON-RPC method to a file, so
// tests in other processes can count what the server saw. Each line is
// written with a single unbuffered write to an O_APPEND file. A nil
// *methodCounter records nothing.
type methodCounter struct {
	logger *slog.Logger

	mu sync.Mutex
	f  *os.File
}

func openMethodCounter(path string, logger *slog.Logger) (*methodCounter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening count file: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &methodCounter{f: f, logger: logger}, nil
}

func (c *methodCounter) record(method string) {
	if c == nil || method == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.f.WriteString(method + "\n"); err != nil {
		c.logger.Error("writing count file", "error", err)
	}
}

func (c *methodCounter) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("closing count file: %w", err)
	}
	return nil
}

// countingTransport wraps a message-oriented transport (stdio, in-memory) and
// records the method of every request and notification read from the peer.
type countingTransport struct {
	inner   mcp.Transport
	counter *methodCounter
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting inner transport: %w", err)
	}
	return &countingConn{Connection: conn, counter: t.counter}, nil
}

type countingConn struct {
	mcp.Connection
	counter *methodCounter
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.counter.record(req.Method)
	}
	return msg, err
}

// maxCountedBody bounds how much of a POST body the counter buffers; it
// matches the go-sdk's default request limit, which rejects larger bodies.
const maxCountedBody = mcp.DefaultMaxRequestBodyBytes

// countingHandler records the method of every JSON-RPC message (single or
// batch) in a POST body, then hands the untouched body to next.
func countingHandler(counter *methodCounter, next http.Handler) http.Handler {
	if counter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxCountedBody+1))
			if err != nil {
				http.Error(w, "reading body", http.StatusBadRequest)
				return
			}
			// Hand on what we read followed by anything left unread.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			for _, m := range jsonRPCMethods(body) {
				counter.record(m)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// jsonRPCMethods returns the "method" of each message in a JSON-RPC body,
// which may be a single message or a batch. Responses (no method) and
// unparsable input yield nothing.
func jsonRPCMethods(body []byte) []string {
	type msg struct {
		Method string `json:"method"`
	}
	body = bytes.TrimSpace(body)
	var msgs []msg
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &msgs); err != nil {
			return nil
		}
	} else {
		var m msg
		if err := json.Unmarshal(body, &m); err != nil {
			return nil
		}
		msgs = []msg{m}
	}
	var out []string
	for _, m := range msgs {
		if m.Method != "" {
			out = append(out, m.Method)
		}
	}
	return out
}
