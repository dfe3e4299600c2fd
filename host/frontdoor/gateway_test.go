package frontdoor_test

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

// upstream is a go-sdk MCP server over loopback streamable HTTP with everything a gateway
// must pass on: resources (static, template, subscribable), a prompt with completion,
// logging, progress, and tools that ask their client for sampling, elicitation and roots.
type upstream struct {
	url      string
	srv      *mcp.Server
	sessions atomic.Int32 // initialized sessions
	mu       sync.Mutex
	subs     []string // "subscribe URI" / "unsubscribe URI", in order
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		Instructions:       "Use up's tools wisely.",
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { u.sessions.Add(1) },
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vals []string
			for _, v := range []string{"alpha", "alpine", "beta"} {
				if strings.HasPrefix(v, req.Params.Argument.Value) {
					vals = append(vals, v)
				}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		},
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subs = append(u.subs, "subscribe "+req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subs = append(u.subs, "unsubscribe "+req.Params.URI)
			return nil
		},
	})
	text := func(uri, s string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: s}}}
	}
	u.srv.AddResource(&mcp.Resource{URI: "test://static", Name: "static", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(req.Params.URI, "static text"), nil
		})
	u.srv.AddResource(&mcp.Resource{URI: "test://secret", Name: "secret", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(req.Params.URI, "the secret"), nil
		})
	u.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(req.Params.URI, "item "+strings.TrimPrefix(req.Params.URI, "test://items/")), nil
		})
	u.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Tell me about " + req.Params.Arguments["topic"]}}}}, nil
		})
	tool := func(name string, h func(context.Context, *mcp.CallToolRequest) (string, error)) {
		u.srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				s, err := h(ctx, req)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
			})
	}
	tool("progress", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		tok := req.Params.GetProgressToken()
		if tok == nil {
			return "no progress token", nil
		}
		for i := 1; i <= 3; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)}); err != nil {
				return "", err
			}
			// A round trip after each, so that the client has read the notification before
			// the result (the SDK may otherwise handle a notification after the response
			// that overtook it).
			if err := req.Session.Ping(ctx, nil); err != nil {
				return "", err
			}
		}
		return "done", nil
	})
	tool("sample", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return "", err
		}
		return "sampled: " + res.Content.(*mcp.TextContent).Text, nil
	})
	tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "color?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}}})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %v", res.Action, res.Content["color"]), nil
	})
	tool("roots", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return strings.Join(uris, ","), nil
	})
	tool("log", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		return "logged", req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "worker", Data: "hello log"})
	})
	tool("touch", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		return "touched", u.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://static"})
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, nil))
	t.Cleanup(func() {
		hs.Close()
		// The SDK keeps a stateful session's reader until the session is closed.
		for ss := range u.srv.Sessions() {
			_ = ss.Close()
		}
	})
	u.url = hs.URL
	return u
}

func (u *upstream) subscriptions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.subs)
}

// gatewayHome is a home with the upstream as server "up" and the example server as "plain".
func gatewayHome(t *testing.T, u *upstream, extra string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.toml"),
		fmt.Sprintf("[mcp_servers.up]\nurl = %q\n\n[mcp_servers.plain]\ncommand = %q\n\n", u.url, exampleBin)+extra)
	return dir
}

// client is a front-door client with the handlers a test needs.
type client struct {
	cs       *mcp.ClientSession
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updated  chan string
	sampled  atomic.Int32
	elicited atomic.Int32
}

type clientOpts struct {
	name                   string
	sampling, elicitation  bool
	roots                  []string
	elicitAction, elicitIn string
	protocol               string // "": 2025-11-25, what clients in the wild speak
}

// connect serves thread id to a new in-memory client.
func connect(t *testing.T, fd *frontdoor.FrontDoor, id string, o clientOpts) *client {
	t.Helper()
	c := &client{
		progress: make(chan *mcp.ProgressNotificationParams, 16),
		logs:     make(chan *mcp.LoggingMessageParams, 16),
		updated:  make(chan string, 16),
	}
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.progress <- req.Params
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { c.logs <- req.Params },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			c.updated <- req.Params.URI
		},
	}
	if o.sampling {
		opts.CreateMessageHandler = func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			c.sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "from " + o.name}}, nil
		}
	}
	if o.elicitation {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.elicited.Add(1)
			return &mcp.ElicitResult{Action: cmpOr(o.elicitAction, "accept"), Content: map[string]any{"color": cmpOr(o.elicitIn, "blue")}}, nil
		}
	}
	if o.roots != nil {
		opts.Capabilities.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	mc := mcp.NewClient(&mcp.Implementation{Name: cmpOr(o.name, "gw-test"), Version: "1"}, opts)
	for _, r := range o.roots {
		mc.AddRoots(&mcp.Root{URI: r})
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- fd.Serve(ctx, id, st) }()
	cs, err := mc.Connect(testCtx(t), ct, &mcp.ClientSessionOptions{ProtocolVersion: cmpOr(o.protocol, "2025-11-25")})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
	})
	c.cs = cs
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func startThread(t *testing.T, th interface {
	Start(context.Context, thread.StartParams) (*thread.Thread, error)
}) *thread.Thread {
	t.Helper()
	x, err := th.Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// Resources, templates, prompts, completion, subscriptions, logging and progress pass
// through, with bare names.
func TestGatewayPassThrough(t *testing.T) {
	u := newUpstream(t)
	h, logs := newHost(t, gatewayHome(t, u, ""))
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: testLogger(logs), ToolNames: frontdoor.ToolNamesBare})
	t.Cleanup(func() { _ = fd.Close() })
	th := startThread(t, h.Threads())
	c := connect(t, fd, th.ID(), clientOpts{})
	ctx := testCtx(t)

	if ir := c.cs.InitializeResult(); !strings.Contains(ir.Instructions, "## up\n\nUse up's tools wisely.") {
		t.Errorf("instructions = %q, want up's merged in", ir.Instructions)
	}
	tools := toolNames(t, c.cs)
	for _, want := range []string{"progress", "sample", "echo", "add"} { // bare: no server has a clash
		if !slices.Contains(tools, want) {
			t.Errorf("tools/list = %q, missing %q", tools, want)
		}
	}

	// plain is the example server, which negotiates 2026-07-28 with warden: nothing of that
	// revision reaches this 2025-11-25 session.
	echo := callTool(t, c.cs, "echo", map[string]any{"text": "hi"})
	if b, _ := json.Marshal(echo); strings.Contains(string(b), "resultType") || strings.Contains(string(b), "io.modelcontextprotocol/") {
		t.Errorf("a 2025-11-25 session got 2026-07-28 fields: %s", b)
	}

	rl, err := c.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	if want := []string{"test://secret", "test://static", frontdoor.StatusURI}; !sameSet(uris, want) {
		t.Errorf("resources/list = %q, want %q", uris, want)
	}
	tl, err := c.cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate != "test://items/{id}" {
		t.Errorf("resources/templates/list = %+v, %v", tl, err)
	}
	if r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static"}); err != nil || r.Contents[0].Text != "static text" {
		t.Errorf("read test://static = %+v, %v", r, err)
	}
	if r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/42"}); err != nil || r.Contents[0].Text != "item 42" {
		t.Errorf("read test://items/42 = %+v, %v", r, err)
	}
	st, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: frontdoor.StatusURI})
	if err != nil || !strings.Contains(st.Contents[0].Text, `"name": "up"`) || !strings.Contains(st.Contents[0].Text, `"status": "ready"`) {
		t.Errorf("read %s = %+v, %v", frontdoor.StatusURI, st, err)
	}

	pl, err := c.cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "greet" {
		t.Fatalf("prompts/list = %+v, %v", pl, err)
	}
	gp, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"topic": "wasm"}})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "Tell me about wasm" {
		t.Errorf("prompts/get = %+v, %v", gp, err)
	}
	cr, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "al"}})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"alpha", "alpine"}) {
		t.Errorf("completion/complete = %+v, %v", cr, err)
	}

	// Subscriptions: the upstream is subscribed once, and its update reaches the client.
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://static"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, c.cs, "touch", nil)
	if got := <-c.updated; got != "test://static" {
		t.Errorf("resources/updated for %q", got)
	}
	if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://static"}); err != nil {
		t.Fatal(err)
	}
	if got := u.subscriptions(); !slices.Equal(got, []string{"subscribe test://static", "unsubscribe test://static"}) {
		t.Errorf("upstream saw %q", got)
	}

	// Logging: setLevel reaches the upstream, its messages reach the client tagged with
	// the server's name.
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, c.cs, "log", nil)
	for m := range c.logs {
		if m.Logger == "up/worker" && m.Data == "hello log" {
			break
		}
	}

	// Progress: the client's token goes upstream (replaced on the way) and comes back.
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "progress", Meta: mcp.Meta{"progressToken": "tok-1"}})
	if err != nil || textOf(res) != "done" {
		t.Fatalf("progress = %+v, %v", res, err)
	}
	for i := 1; i <= 3; i++ {
		p := <-c.progress
		if p.ProgressToken != "tok-1" || p.Total != 3 {
			t.Errorf("progress notification %+v", p)
		}
	}
}

// A sampling request raised during thread A's call reaches only thread A's client, though
// both threads use the same upstream server; elicitation and roots likewise go to the
// client whose thread asked. A client without the capability gets the standard refusal.
func TestGatewayServerRequestsIsolation(t *testing.T) {
	u := newUpstream(t)
	h, logs := newHost(t, gatewayHome(t, u, ""))
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: testLogger(logs)})
	t.Cleanup(func() { _ = fd.Close() })
	thA, thB := startThread(t, h.Threads()), startThread(t, h.Threads())
	a := connect(t, fd, thA.ID(), clientOpts{name: "A", sampling: true, elicitation: true, roots: []string{"file:///a"}})
	b := connect(t, fd, thB.ID(), clientOpts{name: "B", sampling: true, elicitation: true, roots: []string{"file:///b"}})

	if got := textOf(callTool(t, a.cs, "up__sample", nil)); got != "sampled: from A" {
		t.Errorf("A's sample = %q", got)
	}
	if a.sampled.Load() != 1 || b.sampled.Load() != 0 {
		t.Errorf("sampling requests: A got %d, B got %d; want 1 and 0", a.sampled.Load(), b.sampled.Load())
	}
	if got := textOf(callTool(t, b.cs, "up__sample", nil)); got != "sampled: from B" {
		t.Errorf("B's sample = %q", got)
	}
	if got := textOf(callTool(t, a.cs, "up__ask", nil)); got != "accept blue" {
		t.Errorf("A's ask = %q", got)
	}
	if a.elicited.Load() != 1 || b.elicited.Load() != 0 {
		t.Errorf("elicitations: A got %d, B got %d; want 1 and 0", a.elicited.Load(), b.elicited.Load())
	}
	if got := textOf(callTool(t, a.cs, "up__roots", nil)); got != "file:///a" {
		t.Errorf("A's roots = %q", got)
	}
	if got := textOf(callTool(t, b.cs, "up__roots", nil)); got != "file:///b" {
		t.Errorf("B's roots = %q", got)
	}
	if n := u.sessions.Load(); n < 2 {
		t.Errorf("the upstream saw %d sessions; each bridged thread needs its own", n)
	}

	// A thread whose client cannot sample: the upstream's request is refused.
	thC := startThread(t, h.Threads())
	c := connect(t, fd, thC.ID(), clientOpts{name: "C"})
	if r := callTool(t, c.cs, "up__sample", nil); !r.IsError {
		t.Errorf("C's sample = %+v, want the upstream's tool error for a refused sampling request", r)
	}
}

// approval_mode = "prompt": the call runs after the user accepts, not after a decline, and
// a client that cannot ask gets a refusal; each answer is in the decision log.
func TestGatewayApprovals(t *testing.T) {
	u := newUpstream(t)
	dir := gatewayHome(t, u, "[mcp_servers.plain.tools.echo]\napproval_mode = \"prompt\"\n")
	h, logs := newHost(t, dir)
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Logger: testLogger(logs)})
	t.Cleanup(func() { _ = fd.Close() })
	for _, c := range []struct {
		name   string
		opts   clientOpts
		want   string
		called bool
	}{
		{"accept", clientOpts{elicitation: true, elicitAction: "accept"}, "hi", true},
		{"decline", clientOpts{elicitation: true, elicitAction: "decline"}, "the user declined the call", true},
		{"no elicitation", clientOpts{}, "cannot ask its user", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			th := startThread(t, h.Threads())
			cl := connect(t, fd, th.ID(), c.opts)
			res := callTool(t, cl.cs, "plain__echo", map[string]any{"text": "hi"})
			if !strings.Contains(textOf(res), c.want) {
				t.Errorf("plain__echo = %q, want %q", textOf(res), c.want)
			}
			if got := cl.elicited.Load() == 1; got != c.called {
				t.Errorf("asked the user: %v, want %v", got, c.called)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func testLogger(w io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "fd", Level: hclog.Debug, Output: w})
}
