package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolNames returns every tool this server knows, in registration order.
func toolNames() []string {
	return []string{"echo", "env", "slow", "fail", "add", "headers", "header_digest", "set_tools"}
}

var errUnknownTool = errors.New("unknown tool")

func checkToolNames(names []string) error {
	var unknown []string
	for _, n := range names {
		if !slices.Contains(toolNames(), n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %s (known: %s)", errUnknownTool, strings.Join(unknown, ", "), strings.Join(toolNames(), ", "))
	}
	return nil
}

// serverOptions configures newServer.
type serverOptions struct {
	// Name is the implementation name reported in initialize/discover and in
	// echo's structured output. Empty means defaultName.
	Name string
	// Tools is the initial tool set; nil means every tool.
	Tools []string
	// ProtocolVersions restricts the protocol versions offered; nil means all.
	ProtocolVersions []string
	// LookupEnv is used by the env tool; nil means os.LookupEnv.
	LookupEnv lookupEnvFunc
	// Logger receives server logs; nil discards them.
	Logger *slog.Logger
	// Items registers the example resources, resource template and prompt (addItems).
	Items bool
}

// newServer builds the example MCP server. It can be run on any transport:
// stdio, streamable HTTP, or in-memory transports in tests.
func newServer(opts serverOptions) *mcp.Server {
	if opts.Name == "" {
		opts.Name = defaultName
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: "v0.1.0"}, &mcp.ServerOptions{
		Logger:                    opts.Logger,
		SupportedProtocolVersions: opts.ProtocolVersions,
		// Advertise tools (with listChanged) even when started with none, so
		// set_tools-driven changes are visible to clients.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	ts := &toolSet{server: server, opts: opts, active: map[string]bool{}}
	initial := opts.Tools
	if initial == nil {
		initial = toolNames()
	}
	// Names were validated by the caller; unknown ones are ignored here.
	_, _, _ = ts.set(initial)
	if opts.Items {
		addItems(server, opts.Name)
	}
	return server
}

// toolSet tracks which tools are registered on a running server.
type toolSet struct {
	server *mcp.Server
	opts   serverOptions

	mu     sync.Mutex
	active map[string]bool
}

// set makes the registered tools exactly names, adding and removing as
// needed. The go-sdk sends notifications/tools/list_changed for each change.
func (ts *toolSet) set(names []string) (added, removed []string, err error) {
	if err := checkToolNames(names); err != nil {
		return nil, nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	added, removed = []string{}, []string{}
	for _, n := range toolNames() {
		if ts.active[n] && !slices.Contains(names, n) {
			removed = append(removed, n)
			delete(ts.active, n)
		}
	}
	if len(removed) > 0 {
		ts.server.RemoveTools(removed...)
	}
	for _, n := range toolNames() {
		if !ts.active[n] && slices.Contains(names, n) {
			ts.add(n)
			ts.active[n] = true
			added = append(added, n)
		}
	}
	return added, removed, nil
}

func (ts *toolSet) current() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := []string{}
	for _, n := range toolNames() {
		if ts.active[n] {
			out = append(out, n)
		}
	}
	return out
}

func (ts *toolSet) add(name string) {
	s := ts.server
	switch name {
	case "echo":
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the given text back."}, ts.echo)
	case "env":
		mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Report whether an environment variable is set in the server process, and its value. A test probe for credential routing."}, ts.env)
	case "slow":
		mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleep for ms milliseconds (honouring cancellation), then return \"done\"."}, slow)
	case "fail":
		mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Return a tool error (isError: true) with the given message."}, fail)
	case "add":
		mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."}, add)
	case "headers":
		mcp.AddTool(s, &mcp.Tool{Name: "headers", Description: "List the names (not values) of the HTTP request headers of the current request. Empty over stdio."}, headers)
	case "header_digest":
		mcp.AddTool(s, &mcp.Tool{Name: "header_digest", Description: "SHA-256 (hex) of the named HTTP request header's value, so callers can check a credential without it being echoed."}, headerDigest)
	case "set_tools":
		mcp.AddTool(s, &mcp.Tool{Name: "set_tools", Description: "Replace the registered tool set with exactly the given tools (include set_tools to keep it), sending notifications/tools/list_changed."}, ts.setTools)
	}
}

func textResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type echoOut struct {
	Text   string `json:"text" jsonschema:"the echoed text"`
	Server string `json:"server" jsonschema:"the server's implementation name"`
}

func (ts *toolSet) echo(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, echoOut, error) {
	return textResult("%s", in.Text), echoOut{Text: in.Text, Server: ts.opts.Name}, nil
}

type envArgs struct {
	Name string `json:"name" jsonschema:"the environment variable to look up"`
}

type envOut struct {
	Name  string `json:"name"`
	Set   bool   `json:"set"`
	Value string `json:"value"`
}

func (ts *toolSet) env(_ context.Context, _ *mcp.CallToolRequest, in envArgs) (*mcp.CallToolResult, envOut, error) {
	if in.Name == "" {
		return nil, envOut{}, errors.New("name must not be empty")
	}
	v, ok := ts.opts.LookupEnv(in.Name)
	out := envOut{Name: in.Name, Set: ok, Value: v}
	if !ok {
		return textResult("%s is not set", in.Name), out, nil
	}
	return textResult("%s=%s", in.Name, v), out, nil
}

type slowArgs struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type slowOut struct {
	Status string `json:"status"`
	MS     int    `json:"ms"`
}

func slow(ctx context.Context, _ *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, slowOut, error) {
	if in.MS < 0 {
		return nil, slowOut{}, fmt.Errorf("ms must not be negative, got %d", in.MS)
	}
	t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, slowOut{}, fmt.Errorf("slow cancelled: %w", ctx.Err())
	case <-t.C:
	}
	return textResult("done"), slowOut{Status: "done", MS: in.MS}, nil
}

type failArgs struct {
	Message string `json:"message" jsonschema:"the error message to return"`
}

func fail(_ context.Context, _ *mcp.CallToolRequest, in failArgs) (*mcp.CallToolResult, any, error) {
	res := textResult("%s", in.Message)
	res.IsError = true
	return res, nil, nil
}

type addArgs struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, addOut, error) {
	sum := in.A + in.B
	return textResult("%v", sum), addOut{Sum: sum}, nil
}

type headersOut struct {
	Headers []string `json:"headers" jsonschema:"canonical names of the request headers, sorted"`
}

func requestHeader(req *mcp.CallToolRequest) http.Header {
	if req == nil || req.Extra == nil {
		return nil
	}
	return req.Extra.Header
}

func headers(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, headersOut, error) {
	names := []string{}
	for k := range requestHeader(req) {
		names = append(names, http.CanonicalHeaderKey(k))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return textResult("%s", strings.Join(names, "\n")), headersOut{Headers: names}, nil
}

type headerDigestArgs struct {
	Name string `json:"name" jsonschema:"the HTTP header name (case-insensitive)"`
}

type headerDigestOut struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	SHA256  string `json:"sha256" jsonschema:"hex SHA-256 of the header's first value; empty when absent"`
}

func headerDigest(_ context.Context, req *mcp.CallToolRequest, in headerDigestArgs) (*mcp.CallToolResult, headerDigestOut, error) {
	if in.Name == "" {
		return nil, headerDigestOut{}, errors.New("name must not be empty")
	}
	out := headerDigestOut{Name: http.CanonicalHeaderKey(in.Name)}
	vals := requestHeader(req).Values(in.Name)
	if len(vals) == 0 {
		return textResult("header %s not present", out.Name), out, nil
	}
	sum := sha256.Sum256([]byte(vals[0]))
	out.Present = true
	out.SHA256 = hex.EncodeToString(sum[:])
	return textResult("%s", out.SHA256), out, nil
}

type setToolsArgs struct {
	Tools []string `json:"tools" jsonschema:"the complete new tool set"`
}

type setToolsOut struct {
	Tools   []string `json:"tools" jsonschema:"the tool set now registered"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

func (ts *toolSet) setTools(_ context.Context, _ *mcp.CallToolRequest, in setToolsArgs) (*mcp.CallToolResult, setToolsOut, error) {
	added, removed, err := ts.set(in.Tools)
	if err != nil {
		return nil, setToolsOut{}, fmt.Errorf("set_tools: %w", err)
	}
	out := setToolsOut{Tools: ts.current(), Added: added, Removed: removed}
	return textResult("tools: %s", strings.Join(out.Tools, ", ")), out, nil
}
