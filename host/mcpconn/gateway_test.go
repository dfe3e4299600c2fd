package mcpconn

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
)

// upstream is a real go-sdk MCP server on a loopback streamable HTTP endpoint that records
// the methods (and their params) it receives.
type upstream struct {
	srv *mcp.Server
	url string

	mu       sync.Mutex
	received []string // "method" or "method param" for the recorded ones
	// standalone is closed once the client's standalone SSE stream is up: from then on the
	// server's own notifications (list_changed, resources/updated) reach the client.
	standalone chan struct{}
	once       sync.Once
}

func newUpstream(t *testing.T, opts *mcp.ServerOptions, setup func(*mcp.Server)) *upstream {
	t.Helper()
	return newUpstreamHTTP(t, opts, setup, nil)
}

func newUpstreamHTTP(t *testing.T, opts *mcp.ServerOptions, setup func(*mcp.Server), hopts *mcp.StreamableHTTPOptions) *upstream {
	t.Helper()
	u := &upstream{standalone: make(chan struct{})}
	if opts == nil {
		opts = &mcp.ServerOptions{}
	}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, opts)
	u.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			entry := method
			switch p := req.GetParams().(type) {
			case *mcp.SubscribeParams:
				entry += " " + p.URI
			case *mcp.UnsubscribeParams:
				entry += " " + p.URI
			case *mcp.SetLoggingLevelParams:
				entry += " " + string(p.Level)
			}
			u.mu.Lock()
			u.received = append(u.received, entry)
			u.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	if setup != nil {
		setup(u.srv)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, hopts)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w = &headerWatch{ResponseWriter: w, wrote: func() { u.once.Do(func() { close(u.standalone) }) }}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

// headerWatch reports when the response's header is written.
type headerWatch struct {
	http.ResponseWriter
	wrote func()
}

func (w *headerWatch) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		w.wrote()
	}
}

func (w *headerWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// saw returns the recorded entries that start with prefix.
func (u *upstream) saw(prefix string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, e := range u.received {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

func (u *upstream) waitStandalone(t *testing.T) {
	t.Helper()
	select {
	case <-u.standalone:
	case <-time.After(30 * time.Second):
		t.Fatal("the client never opened its standalone SSE stream")
	}
}

func (u *upstream) spec(t *testing.T, name string) Spec {
	return mustSpec(t, &config.ServerDecl{Name: name, URL: u.url, ToolTimeout: 20 * time.Second}, nil)
}

// nextEvent waits for the next event of kind, skipping others.
func nextEvent(t *testing.T, events <-chan Event, kind EventKind) Event {
	t.Helper()
	return waitEvent(t, events, kind.String()+" event", func(ev Event) bool { return ev.Kind == kind })
}

// waitEvent waits for the next event that match accepts, skipping others.
func waitEvent(t *testing.T, events <-chan Event, what string, match func(Event) bool) Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s", what)
			return Event{}
		}
	}
}

// twoHandles acquires two handles on one connection to u.
func twoHandles(t *testing.T, u *upstream) (a, b *Conn) {
	m, _ := newManager(t, Options{})
	spec := u.spec(t, "gw")
	return mustAcquire(t, m, spec), mustAcquire(t, m, spec)
}

func subscribe(t *testing.T, c *Conn) <-chan Event {
	events := make(chan Event, 100)
	t.Cleanup(c.Subscribe(func(ev Event) { events <- ev }))
	return events
}

func textResource(uri, text string) mcp.ResourceHandler {
	return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: text}}}, nil
	}
}

func gatewayServer(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "test://a", Name: "a", MIMEType: "text/plain"}, textResource("test://a", "alpha"))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "item"}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
}

func gatewayOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{
		Instructions: "use the greet prompt",
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{r.Params.Argument.Value + "-1"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
}

func TestCatalogsAndListChanged(t *testing.T) {
	u := newUpstream(t, gatewayOptions(), gatewayServer)
	m, _ := newManager(t, Options{})
	c := mustAcquire(t, m, u.spec(t, "gw"))
	if r := c.Resources(); len(r) != 1 || r[0].URI != "test://a" {
		t.Errorf("Resources() = %v", r)
	}
	if r := c.ResourceTemplates(); len(r) != 1 || r[0].URITemplate != "test://items/{id}" {
		t.Errorf("ResourceTemplates() = %v", r)
	}
	if p := c.Prompts(); len(p) != 1 || p[0].Name != "greet" {
		t.Errorf("Prompts() = %v", p)
	}
	ir := c.InitializeResult()
	if ir == nil || ir.Instructions != "use the greet prompt" || ir.ServerInfo.Name != "upstream" ||
		ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		t.Errorf("InitializeResult() = %+v", ir)
	}

	events := subscribe(t, c)
	u.waitStandalone(t)
	u.srv.AddResource(&mcp.Resource{URI: "test://b", Name: "b"}, textResource("test://b", "beta"))
	ev := nextEvent(t, events, EventResources)
	if len(ev.Resources) != 2 || len(ev.ResourceTemplates) != 1 || len(c.Resources()) != 2 {
		t.Errorf("after resources/list_changed: event %v / %v, Resources() %v", ev.Resources, ev.ResourceTemplates, c.Resources())
	}
	u.srv.RemovePrompts("greet")
	ev = nextEvent(t, events, EventPrompts)
	if len(ev.Prompts) != 0 || len(c.Prompts()) != 0 {
		t.Errorf("after prompts/list_changed: event %v, Prompts() %v", ev.Prompts, c.Prompts())
	}
	if n := len(u.saw("resources/list")); n != 2 {
		t.Errorf("resources/list sent %d times, want 2 (start and refresh)", n)
	}
}

func TestCatalogsOfAToolsOnlyServer(t *testing.T) {
	u := newUpstream(t, nil, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	})
	m, _ := newManager(t, Options{})
	c := mustAcquire(t, m, u.spec(t, "toolsonly"))
	if c.Resources() != nil || c.Prompts() != nil || len(c.Tools()) != 1 {
		t.Errorf("resources %v, prompts %v, tools %v", c.Resources(), c.Prompts(), toolNames(c.Tools()))
	}
	if got := u.saw("resources/"); len(got) != 0 {
		t.Errorf("a server without resources was asked %q", got)
	}
	ctx := context.Background()
	_, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "x"})
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), `MCP server "toolsonly" does not support prompts/get "x" (no prompts capability)`) {
		t.Errorf("GetPrompt: %v", err)
	}
	if _, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://a"}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("ReadResource: %v", err)
	}
	if _, err := c.Complete(ctx, &mcp.CompleteParams{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Complete: %v", err)
	}
	if err := c.SubscribeResource(ctx, "test://a"); !errors.Is(err, ErrNotSupported) {
		t.Errorf("SubscribeResource: %v", err)
	}
	if err := c.NotifyRootsChanged(ctx); !errors.Is(err, ErrNotSupported) {
		t.Errorf("NotifyRootsChanged without a ClientHandler: %v", err)
	}
}

// A server that advertises resources but fails to list them still starts, with an empty
// resource catalog and working tools.
func TestFailingResourceListKeepsTools(t *testing.T) {
	u := newUpstream(t, &mcp.ServerOptions{HasResources: true}, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "resources/list" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "resource index broken"}
				}
				return next(ctx, method, req)
			}
		})
	})
	m, logs := newManager(t, Options{})
	c := mustAcquire(t, m, u.spec(t, "halfbroken"))
	if len(c.Tools()) != 1 || len(c.Resources()) != 0 {
		t.Errorf("tools %v, resources %v", toolNames(c.Tools()), c.Resources())
	}
	callTool(t, c, "noop", nil)
	if !strings.Contains(logs.String(), "resource index broken") {
		t.Errorf("the failed resources/list was not logged:\n%s", logs.String())
	}
}

func TestPassThroughRequests(t *testing.T) {
	u := newUpstream(t, gatewayOptions(), gatewayServer)
	m, _ := newManager(t, Options{})
	c := mustAcquire(t, m, u.spec(t, "gw"))
	ctx := context.Background()

	rr, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://a"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "alpha" {
		t.Errorf("ReadResource = %v, %v", rr, err)
	}
	rr, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/7"})
	if err != nil || rr.Contents[0].URI != "test://items/7" {
		t.Errorf("ReadResource(template) = %v, %v", rr, err)
	}
	_, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://missing"})
	var wire *jsonrpc.Error
	if !errors.As(err, &wire) || wire.Code != mcp.CodeResourceNotFound ||
		!strings.HasPrefix(err.Error(), `MCP server "gw" rejected resources/read "test://missing"`) {
		t.Errorf("ReadResource(missing) = %v", err)
	}
	gp, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ada"}})
	if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "hello ada" {
		t.Errorf("GetPrompt = %v, %v", gp, err)
	}
	if _, err := c.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}); !errors.As(err, &wire) {
		t.Errorf("GetPrompt(nope) = %v, want the server's JSON-RPC error", err)
	}
	cr, err := c.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "ad"}})
	if err != nil || !slices.Equal(cr.Completion.Values, []string{"ad-1"}) {
		t.Errorf("Complete = %v, %v", cr, err)
	}
	if st := c.Status(); st.State != StateReady {
		t.Errorf("status after rejected requests: %+v", st)
	}
}

func TestResourceSubscriptionsAreCounted(t *testing.T) {
	u := newUpstream(t, gatewayOptions(), gatewayServer)
	a, b := twoHandles(t, u)
	events := subscribe(t, b)
	ctx := context.Background()
	for _, c := range []*Conn{a, b, a} {
		if err := c.SubscribeResource(ctx, "test://a"); err != nil {
			t.Fatalf("SubscribeResource: %v", err)
		}
	}
	if got := u.saw("resources/subscribe"); !slices.Equal(got, []string{"resources/subscribe test://a"}) {
		t.Errorf("upstream saw %q, want one subscribe", got)
	}
	u.waitStandalone(t)
	if err := u.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, events, EventResourceUpdated); ev.URI != "test://a" {
		t.Errorf("resource updated event for %q", ev.URI)
	}
	if err := a.UnsubscribeResource(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if got := u.saw("resources/unsubscribe"); len(got) != 0 {
		t.Errorf("unsubscribed upstream while b still subscribes: %q", got)
	}
	b.Release() // the last subscriber
	if got := u.saw("resources/unsubscribe"); !slices.Equal(got, []string{"resources/unsubscribe test://a"}) {
		t.Errorf("upstream saw %q, want one unsubscribe", got)
	}
}

func TestSetLogLevelMostVerboseWins(t *testing.T) {
	u := newUpstream(t, nil, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "log"}, func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			err := r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "up", Data: "hello log"})
			return &mcp.CallToolResult{}, nil, err
		})
	})
	a, b := twoHandles(t, u)
	events := subscribe(t, a)
	ctx := context.Background()
	if err := a.SetLogLevel(ctx, "error"); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLogLevel(ctx, "info"); err != nil {
		t.Fatal(err)
	}
	if err := a.SetLogLevel(ctx, "warning"); err != nil { // info still wins: nothing sent
		t.Fatal(err)
	}
	if err := a.SetLogLevel(ctx, "loud"); err == nil {
		t.Error("an unknown level was accepted")
	}
	callTool(t, a, "log", nil)
	if ev := nextEvent(t, events, EventLog); ev.Log.Data != "hello log" || ev.Log.Level != "info" {
		t.Errorf("log event %+v", ev.Log)
	}
	b.Release()
	if got := u.saw("logging/setLevel"); !slices.Equal(got, []string{"logging/setLevel error", "logging/setLevel info", "logging/setLevel warning"}) {
		t.Errorf("upstream saw %q", got)
	}
}

func TestProgressIsRoutedPerCall(t *testing.T) {
	const calls = 2
	var arrived sync.WaitGroup
	arrived.Add(calls)
	// acks[tag] receives one value per progress notification the call's OnProgress got; the
	// tool waits for it before going on, so every notification is handled while the call is
	// in flight (the go-sdk handles notifications on their own goroutine, after a response
	// that overtook them).
	acks := map[string]chan struct{}{}
	for i := range calls {
		acks[fmt.Sprintf("call-%d", i)] = make(chan struct{}, 3)
	}
	u := newUpstream(t, nil, func(s *mcp.Server) {
		type in struct {
			Tag string `json:"tag"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "work"}, func(ctx context.Context, r *mcp.CallToolRequest, x in) (*mcp.CallToolResult, any, error) {
			// Both calls are in flight on the one session before either reports progress.
			arrived.Done()
			arrived.Wait()
			// A notification for a token no call has is dropped.
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "warden-999999", Message: x.Tag})
			token := r.Params.GetProgressToken()
			for i := range 3 {
				if err := r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i + 1), Total: 3, Message: x.Tag}); err != nil {
					return nil, nil, err
				}
				select {
				case <-acks[x.Tag]:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			if v, ok := r.Params.Meta[mcp.MetaKeyProtocolVersion]; ok {
				return nil, nil, fmt.Errorf("the originating session's protocol version %v was forwarded", v)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(r.Params.Meta["trace"])}}}, nil, nil
		})
	})
	a, b := twoHandles(t, u)
	type got struct {
		mu    sync.Mutex
		items []*mcp.ProgressNotificationParams
	}
	var wg sync.WaitGroup
	results := make([]*got, calls)
	for i, c := range []*Conn{a, b} {
		results[i] = &got{}
		tag := fmt.Sprintf("call-%d", i)
		wg.Go(func() {
			g := results[i]
			res, err := c.CallToolWith(context.Background(), "work", map[string]any{"tag": tag}, CallOptions{
				Meta: map[string]any{"trace": tag, "progressToken": "client-token", mcp.MetaKeyProtocolVersion: "2025-06-18"},
				OnProgress: func(p *mcp.ProgressNotificationParams) {
					g.mu.Lock()
					g.items = append(g.items, p)
					g.mu.Unlock()
					select {
					case acks[p.Message] <- struct{}{}:
					default:
					}
				},
			})
			if err != nil {
				t.Errorf("%s: %v", tag, err)
				return
			}
			if text := res.Content[0].(*mcp.TextContent).Text; text != tag {
				t.Errorf("%s: the server saw _meta.trace %q", tag, text)
			}
		})
	}
	wg.Wait()
	for i, g := range results {
		tag := fmt.Sprintf("call-%d", i)
		g.mu.Lock()
		if len(g.items) != 3 {
			t.Errorf("%s got %d progress notifications, want 3", tag, len(g.items))
		}
		for j, p := range g.items {
			if p.Message != tag || p.ProgressToken != nil || p.Progress != float64(j+1) {
				t.Errorf("%s got %+v", tag, p)
			}
		}
		g.mu.Unlock()
	}
	a.s.progress.mu.Lock()
	left := len(a.s.progress.routes)
	a.s.progress.mu.Unlock()
	if left != 0 {
		t.Errorf("%d progress routes left after the calls", left)
	}
}

// clientHandler answers like a front-door client that declares sampling, elicitation and
// roots; it records the contexts' values to show routing by the originating call.
type clientHandler struct {
	mu    sync.Mutex
	roots []*mcp.Root
	asked []string
}

type callTag struct{}

func (h *clientHandler) note(ctx context.Context, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tag, _ := ctx.Value(callTag{}).(string)
	h.asked = append(h.asked, what+"@"+tag)
}

func (h *clientHandler) Capabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		RootsV2:     &mcp.RootCapabilities{ListChanged: true}}
}

func (h *clientHandler) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	h.note(ctx, "sampling")
	return &mcp.CreateMessageWithToolsResult{Model: "test-model", Role: "assistant",
		Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
}

func (h *clientHandler) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.note(ctx, "elicit")
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
}

func (h *clientHandler) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	h.note(ctx, "roots")
	h.mu.Lock()
	defer h.mu.Unlock()
	return &mcp.ListRootsResult{Roots: slices.Clone(h.roots)}, nil
}

// askServer has a tool that asks its client for sampling, elicitation and roots and
// reports what it got (or the refusal).
func askServer(rootsChanged chan<- struct{}) (*mcp.ServerOptions, func(*mcp.Server)) {
	opts := &mcp.ServerOptions{RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) {
		select {
		case rootsChanged <- struct{}{}:
		default:
		}
	}}
	return opts, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			var out []string
			msg, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
			if err != nil {
				out = append(out, "sampling refused")
			} else {
				out = append(out, "sampling "+msg.Model)
			}
			el, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "ok?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			if err != nil {
				out = append(out, "elicit refused")
			} else {
				out = append(out, "elicit "+el.Action)
			}
			roots, err := r.Session.ListRoots(ctx, nil)
			if err != nil {
				out = append(out, "roots refused")
			} else {
				var uris []string
				for _, rt := range roots.Roots {
					uris = append(uris, rt.URI)
				}
				out = append(out, "roots ["+strings.Join(uris, ",")+"]")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "; ")}}}, nil, nil
		})
	}
}

func TestClientHandlerRequests(t *testing.T) {
	rootsChanged := make(chan struct{}, 1)
	opts, setup := askServer(rootsChanged)
	u := newUpstream(t, opts, setup)
	m, _ := newManager(t, Options{})
	ask := func(c *Conn, tag string) string {
		t.Helper()
		ctx := context.WithValue(context.Background(), callTag{}, tag)
		res, err := c.CallTool(ctx, "ask", nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	// Without a ClientHandler the server gets the standard refusals (roots: an empty list).
	plain := mustAcquire(t, m, u.spec(t, "plain"))
	if got := ask(plain, "plain"); got != "sampling refused; elicit refused; roots []" {
		t.Errorf("without a ClientHandler: %q", got)
	}

	h := &clientHandler{roots: []*mcp.Root{{URI: "file:///work", Name: "work"}}}
	spec := u.spec(t, "own")
	spec.Client = h
	spec.Key += "/client-1"
	c := mustAcquire(t, m, spec)
	if got := ask(c, "call-1"); got != "sampling test-model; elicit accept; roots [file:///work]" {
		t.Errorf("with a ClientHandler: %q", got)
	}
	h.mu.Lock()
	asked := slices.Clone(h.asked)
	h.mu.Unlock()
	// "roots@" first is the read when the session started. A 2025-11-25 session's server
	// requests carry their own context, not the call's.
	if !slices.Equal(asked, []string{"roots@", "sampling@", "elicit@", "roots@"}) {
		t.Errorf("handler calls %q", asked)
	}

	h.mu.Lock()
	h.roots = append(h.roots, &mcp.Root{URI: "file:///other"})
	h.mu.Unlock()
	if err := c.NotifyRootsChanged(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rootsChanged:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never got notifications/roots/list_changed")
	}
	if got := ask(c, "call-2"); got != "sampling test-model; elicit accept; roots [file:///other,file:///work]" &&
		got != "sampling test-model; elicit accept; roots [file:///work,file:///other]" {
		t.Errorf("after the roots changed: %q", got)
	}
}

// On a 2026-07-28 session the server asks for input inside its answer (multi round-trip);
// the go-sdk fulfils it through the ClientHandler with the context of the originating call,
// and answers roots from the root list read from ListRoots.
func TestClientHandlerMultiRoundTrip(t *testing.T) {
	u := newUpstreamHTTP(t, nil, func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "mrtr"}, func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if len(r.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"s": &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
					"e": &mcp.ElicitParams{Message: "ok?", RequestedSchema: map[string]any{"type": "object"}},
					"r": &mcp.ListRootsParams{},
				}}, nil, nil
			}
			var out []string
			for _, id := range []string{"s", "e", "r"} {
				switch v := r.Params.InputResponses[id].(type) {
				case *mcp.CreateMessageResult:
					out = append(out, "sampling "+v.Model)
				case *mcp.CreateMessageWithToolsResult:
					out = append(out, "sampling "+v.Model)
				case *mcp.ElicitResult:
					out = append(out, "elicit "+v.Action)
				case *mcp.ListRootsResult:
					var uris []string
					for _, rt := range v.Roots {
						uris = append(uris, rt.URI)
					}
					out = append(out, "roots ["+strings.Join(uris, ",")+"]")
				default:
					out = append(out, fmt.Sprintf("%s: %T", id, v))
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "; ")}}}, nil, nil
		})
	}, &mcp.StreamableHTTPOptions{Stateless: true})
	m, _ := newManager(t, Options{})
	h := &clientHandler{roots: []*mcp.Root{{URI: "file:///work"}}}
	spec := u.spec(t, "mrtr")
	spec.Client = h
	c := mustAcquire(t, m, spec)
	if v := c.Status().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want a 2026-07-28 session", v)
	}
	res, err := c.CallTool(context.WithValue(context.Background(), callTag{}, "call-m"), "mrtr", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "sampling test-model; elicit accept; roots [file:///work]" {
		t.Errorf("multi round-trip answers: %q", got)
	}
	h.mu.Lock()
	asked := slices.Clone(h.asked)
	h.mu.Unlock()
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"elicit@call-m", "roots@", "sampling@call-m"}) {
		t.Errorf("handler calls %q", asked)
	}
}

// A session that the server ends is restarted on its own, and the new session is told the
// handles' subscriptions and log level again.
func TestRestartReappliesFeatures(t *testing.T) {
	u := newUpstream(t, gatewayOptions(), gatewayServer)
	m, _ := newManager(t, Options{Backoff: Backoff{Initial: time.Millisecond}})
	c := mustAcquire(t, m, u.spec(t, "gw"))
	events := subscribe(t, c)
	ctx := context.Background()
	if err := c.SubscribeResource(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLogLevel(ctx, "notice"); err != nil {
		t.Fatal(err)
	}
	u.waitStandalone(t)
	for ss := range u.srv.Sessions() {
		ss.Close()
	}
	waitStatus(t, events, StateFailed)
	if ev := waitStatus(t, events, StateReady); ev.State != StateReady {
		t.Fatal(ev)
	}
	if got := u.saw("resources/subscribe"); !slices.Equal(got, []string{"resources/subscribe test://a", "resources/subscribe test://a"}) {
		t.Errorf("upstream saw %q, want the subscription on both sessions", got)
	}
	if got := u.saw("logging/setLevel"); !slices.Equal(got, []string{"logging/setLevel notice", "logging/setLevel notice"}) {
		t.Errorf("upstream saw %q, want the level on both sessions", got)
	}
	if len(c.Resources()) != 1 || len(c.Prompts()) != 1 {
		t.Errorf("catalogs after the restart: %v, %v", c.Resources(), c.Prompts())
	}
}
