package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
)

// connectInMemory runs newServer(opts) on an in-memory transport (optionally
// wrapped by wrap) and returns a connected client session.
func connectInMemory(t *testing.T, opts serverOptions, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, wrap func(mcp.Transport) mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	var serverT mcp.Transport = st
	if wrap != nil {
		serverT = wrap(st)
	}
	ss, err := newServer(opts).Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, copts).Connect(ctx, ct, sopts)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func fakeEnv(m map[string]string) lookupEnvFunc {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func listToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	names := []string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestListTools(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		want  []string
	}{
		{"default is all", nil, sorted(toolNames())},
		{"subset", []string{"echo", "add"}, []string{"add", "echo"}},
		{"none", []string{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connectInMemory(t, serverOptions{Tools: tt.tools}, nil, nil, nil)
			if diff := cmp.Diff(tt.want, listToolNames(t, cs)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolSchemas(t *testing.T) {
	cs := connectInMemory(t, serverOptions{}, nil, nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	tests := []struct {
		tool         string
		wantRequired []string
		wantOutput   bool
	}{
		{"echo", []string{"text"}, true},
		{"env", []string{"name"}, true},
		{"slow", []string{"ms"}, true},
		{"fail", []string{"message"}, false},
		{"add", []string{"a", "b"}, true},
		{"headers", nil, true},
		{"header_digest", []string{"name"}, true},
		{"set_tools", []string{"tools"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			i := slices.IndexFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == tt.tool })
			if i < 0 {
				t.Fatalf("tool %s not listed", tt.tool)
			}
			tool := res.Tools[i]
			if tool.Description == "" {
				t.Error("no description")
			}
			raw, err := json.Marshal(tool.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var in schema
			if err := json.Unmarshal(raw, &in); err != nil {
				t.Fatal(err)
			}
			if in.Type != "object" {
				t.Errorf("input schema type = %q, want object", in.Type)
			}
			if diff := cmp.Diff(sorted(tt.wantRequired), sorted(in.Required)); diff != "" {
				t.Errorf("required (-want +got):\n%s", diff)
			}
			if got := tool.OutputSchema != nil; got != tt.wantOutput {
				t.Errorf("has output schema = %v, want %v", got, tt.wantOutput)
			}
		})
	}
}

// callResult is the interesting part of a CallToolResult.
type callResult struct {
	Text       string
	IsError    bool
	Structured map[string]any
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) callResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return toCallResult(t, res)
}

func toCallResult(t *testing.T, res *mcp.CallToolResult) callResult {
	t.Helper()
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	got := callResult{Text: strings.Join(texts, "\n"), IsError: res.IsError}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &got.Structured); err != nil {
			t.Fatalf("structured content %s: %v", raw, err)
		}
	}
	return got
}

func TestCallTools(t *testing.T) {
	cs := connectInMemory(t, serverOptions{
		Name:      "unit",
		LookupEnv: fakeEnv(map[string]string{"PRESENT": "yes", "EMPTY": ""}),
	}, nil, nil, nil)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want callResult
	}{
		{"echo", "echo", map[string]any{"text": "hello"},
			callResult{Text: "hello", Structured: map[string]any{"text": "hello", "server": "unit"}}},
		{"add", "add", map[string]any{"a": 1.5, "b": 2},
			callResult{Text: "3.5", Structured: map[string]any{"sum": 3.5}}},
		{"add negative", "add", map[string]any{"a": -1, "b": -2},
			callResult{Text: "-3", Structured: map[string]any{"sum": -3.0}}},
		{"fail", "fail", map[string]any{"message": "boom"},
			callResult{Text: "boom", IsError: true}},
		{"env set", "env", map[string]any{"name": "PRESENT"},
			callResult{Text: "PRESENT=yes", Structured: map[string]any{"name": "PRESENT", "set": true, "value": "yes"}}},
		{"env set but empty", "env", map[string]any{"name": "EMPTY"},
			callResult{Text: "EMPTY=", Structured: map[string]any{"name": "EMPTY", "set": true, "value": ""}}},
		{"env unset", "env", map[string]any{"name": "ABSENT"},
			callResult{Text: "ABSENT is not set", Structured: map[string]any{"name": "ABSENT", "set": false, "value": ""}}},
		{"slow", "slow", map[string]any{"ms": 1},
			callResult{Text: "done", Structured: map[string]any{"status": "done", "ms": 1.0}}},
		{"headers without HTTP", "headers", map[string]any{},
			callResult{Text: "", Structured: map[string]any{"headers": []any{}}}},
		{"header_digest without HTTP", "header_digest", map[string]any{"name": "authorization"},
			callResult{Text: "header Authorization not present", Structured: map[string]any{"name": "Authorization", "present": false, "sha256": ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callTool(t, cs, tt.tool, tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCallToolErrors(t *testing.T) {
	cs := connectInMemory(t, serverOptions{}, nil, nil, nil)
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		wantText string
	}{
		{"add wrong type", "add", map[string]any{"a": "one", "b": 2}, "validating"},
		{"add missing arg", "add", map[string]any{"a": 1}, "validating"},
		{"echo unknown property", "echo", map[string]any{"text": "x", "extra": 1}, "validating"},
		{"slow negative", "slow", map[string]any{"ms": -1}, "must not be negative"},
		{"env empty name", "env", map[string]any{"name": ""}, "must not be empty"},
		{"set_tools unknown", "set_tools", map[string]any{"tools": []string{"echo", "nope"}}, "unknown tool: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := callTool(t, cs, tt.tool, tt.args)
			if !got.IsError || !strings.Contains(got.Text, tt.wantText) {
				t.Errorf("got %+v, want a tool error containing %q", got, tt.wantText)
			}
		})
	}
	// A failed set_tools changes nothing.
	if diff := cmp.Diff(sorted(toolNames()), listToolNames(t, cs)); diff != "" {
		t.Errorf("tools after failed set_tools (-want +got):\n%s", diff)
	}
}

func TestSlowHonoursCancellation(t *testing.T) {
	cs := connectInMemory(t, serverOptions{}, nil, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 60_000}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool error = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelled slow call took %v", d)
	}
}

func TestSetTools(t *testing.T) {
	changed := make(chan struct{}, 16)
	cs := connectInMemory(t, serverOptions{Tools: []string{"echo", "set_tools"}}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		},
	}, nil, nil)

	steps := []struct {
		name        string
		tools       []string
		wantAdded   []any
		wantRemoved []any
		wantList    []string
	}{
		{"add tools", []string{"echo", "add", "fail", "set_tools"}, []any{"fail", "add"}, []any{}, []string{"add", "echo", "fail", "set_tools"}},
		{"remove tools", []string{"add", "set_tools"}, []any{}, []any{"echo", "fail"}, []string{"add", "set_tools"}},
		{"swap", []string{"echo", "set_tools"}, []any{"echo"}, []any{"add"}, []string{"echo", "set_tools"}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			got := callTool(t, cs, "set_tools", map[string]any{"tools": step.tools})
			if got.IsError {
				t.Fatalf("set_tools failed: %s", got.Text)
			}
			if diff := cmp.Diff(step.wantAdded, got.Structured["added"]); diff != "" {
				t.Errorf("added (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(step.wantRemoved, got.Structured["removed"]); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/tools/list_changed")
			}
			if diff := cmp.Diff(step.wantList, listToolNames(t, cs)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("remove everything", func(t *testing.T) {
		got := callTool(t, cs, "set_tools", map[string]any{"tools": []string{}})
		if got.IsError {
			t.Fatalf("set_tools failed: %s", got.Text)
		}
		if diff := cmp.Diff([]string{}, listToolNames(t, cs)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
	})
}

func TestCountingTransport(t *testing.T) {
	tests := []struct {
		name            string
		serverVersions  []string // --protocol-versions
		protocolVersion string   // client's requested version
		wantHandshake   []string
	}{
		{"legacy handshake", nil, "2025-11-25", []string{"initialize", "notifications/initialized"}},
		{"2025-06-18", nil, "2025-06-18", []string{"initialize", "notifications/initialized"}},
		// go-sdk v1.8 clients default to 2026-07-28: a stateless
		// server/discover instead of initialize.
		{"sdk default", nil, "", []string{"server/discover"}},
		// A server restricted to legacy versions makes them fall back.
		{"sdk default, legacy server", []string{"2025-11-25"}, "", []string{"server/discover", "initialize", "notifications/initialized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "count")
			counter, err := openMethodCounter(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = counter.Close() })
			cs := connectInMemory(t, serverOptions{ProtocolVersions: tt.serverVersions}, nil, &mcp.ClientSessionOptions{ProtocolVersion: tt.protocolVersion},
				func(inner mcp.Transport) mcp.Transport { return &countingTransport{inner: inner, counter: counter} })
			listToolNames(t, cs)
			callTool(t, cs, "echo", map[string]any{"text": "x"})
			callTool(t, cs, "add", map[string]any{"a": 1, "b": 2})
			want := append(slices.Clone(tt.wantHandshake), "tools/list", "tools/call", "tools/call")
			if diff := cmp.Diff(want, mcpservertest.Methods(t, path)); diff != "" {
				t.Errorf("counted methods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeaderDigestAndHeadersUseRequestHeaders(t *testing.T) {
	// The tools read req.Extra.Header, which only the HTTP transport fills
	// in; exercise them directly with a synthetic request.
	req := &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: map[string][]string{
		"Authorization": {"Bearer s3cret"},
		"X-Api-Key":     {"k1", "k2"},
	}}}
	sum := sha256.Sum256([]byte("Bearer s3cret"))
	tests := []struct {
		name string
		arg  string
		want headerDigestOut
	}{
		{"canonicalises name", "authorization", headerDigestOut{Name: "Authorization", Present: true, SHA256: hex.EncodeToString(sum[:])}},
		{"first value", "x-api-key", headerDigestOut{Name: "X-Api-Key", Present: true, SHA256: sha256Hex("k1")}},
		{"absent", "x-missing", headerDigestOut{Name: "X-Missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, out, err := headerDigest(context.Background(), req, headerDigestArgs{Name: tt.arg})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "s3cret") {
				t.Errorf("header_digest leaked the header value: %q", text)
			}
		})
	}
	t.Run("headers lists names only", func(t *testing.T) {
		res, out, err := headers(context.Background(), req, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"Authorization", "X-Api-Key"}, out.Headers); diff != "" {
			t.Errorf("headers (-want +got):\n%s", diff)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; strings.Contains(text, "s3cret") {
			t.Errorf("headers leaked a value: %q", text)
		}
	})
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// With Items the server lists and serves its resource, template and prompt; without, none.
func TestItems(t *testing.T) {
	ctx := context.Background()
	cs := connectInMemory(t, serverOptions{Name: "itemized", Items: true}, nil, nil, nil)
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != readmeURI {
		t.Fatalf("resources/list = %+v, %v", rs, err)
	}
	ts, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(ts.ResourceTemplates) != 1 || ts.ResourceTemplates[0].URITemplate != docsTemplate {
		t.Fatalf("resources/templates/list = %+v, %v", ts, err)
	}
	for uri, want := range map[string]string{readmeURI: "readme of itemized", "file:///docs/a/b.txt": "file a/b.txt"} {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != want {
			t.Errorf("resources/read %s = %+v, %v; want %q", uri, r, err, want)
		}
	}
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: greetPrompt, Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada!" {
		t.Errorf("prompts/get = %+v, %v", p, err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: greetPrompt}); err == nil {
		t.Error("prompts/get without the name argument succeeded")
	}

	plain := connectInMemory(t, serverOptions{}, nil, nil, nil)
	if plain.InitializeResult().Capabilities.Resources != nil || plain.InitializeResult().Capabilities.Prompts != nil {
		t.Errorf("a server without Items advertises %+v", plain.InitializeResult().Capabilities)
	}
}
