package frontdoor

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/thread"
)

// StatusURI is the front door's own resource: the thread's configured servers, their
// state and why a server is failed or disabled, as JSON.
const StatusURI = "warden://status"

// initializeWait bounds how long initialize waits for servers still starting, to pass
// their instructions on.
const initializeWait = 5 * time.Second

// maxNotes bounds the upstream notifications (log messages, resource updates) queued for
// a thread's worker; past it they are dropped (and counted in the log) rather than
// holding up the thread manager.
const maxNotes = 256

// threadServer is one thread served as an MCP server.
type threadServer struct {
	f    *FrontDoor
	th   *thread.Thread
	srv  *mcp.Server
	http http.Handler

	ctx    context.Context // ends the worker
	cancel context.CancelFunc
	kick   chan struct{}
	notes  chan thread.Event // *thread.LogMessage and *thread.ResourceUpdated, for the worker

	mu        sync.Mutex // serializes syncs; guards the served sets, last and retired
	tools     map[string]served[*mcp.Tool]
	prompts   map[string]served[*mcp.Prompt]
	resources map[string]served[*mcp.Resource]         // by front-door URI
	templates map[string]served[*mcp.ResourceTemplate] // by URI template
	last      []thread.ServerStatus                    // the status of the last sync
	retired   bool

	cmu      sync.Mutex // guards the client fields below
	caps     *mcp.ClientCapabilities
	sessions []*clientSession // in initialize order
	subs     map[string]int   // front-door URI -> subscribed sessions
	dropped  int              // notifications dropped since the last report
}

// served is one upstream item a front-door name (or URI) stands for.
type served[T any] struct {
	server, name string // name: the upstream tool or prompt name, resource URI or template
	up           T
	def          []byte // the upstream definition, JSON, for change detection
}

// clientSession is what the front door knows of one client session.
type clientSession struct {
	ss    *mcp.ServerSession
	caps  *mcp.ClientCapabilities
	level mcp.LoggingLevel  // its logging/setLevel, "" before one
	calls []context.Context // the contexts of its tool calls in flight
	// roots are the roots it last reported; rootsFetched is set once they were asked for
	// since it initialized or reported a change.
	roots        *mcp.ListRootsResult
	rootsFetched bool
}

func (f *FrontDoor) newThreadServer(th *thread.Thread) *threadServer {
	ctx, cancel := context.WithCancel(f.ctx)
	ts := &threadServer{
		f: f, th: th, ctx: ctx, cancel: cancel,
		kick:  make(chan struct{}, 1),
		notes: make(chan thread.Event, maxNotes),
		subs:  map[string]int{},
	}
	ts.srv = mcp.NewServer(&mcp.Implementation{Name: "warden", Title: "warden thread " + th.ID(), Version: f.version}, &mcp.ServerOptions{
		Instructions: "Tools, prompts and resources of the MCP servers this warden thread exposes.",
		// Every feature is advertised from the start, so that a client listens for the
		// list_changed of servers that become ready later.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Logging:     &mcp.LoggingCapabilities{},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler:       ts.complete,
		SubscribeHandler:        ts.subscribe,
		UnsubscribeHandler:      ts.unsubscribe,
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) { ts.rootsChanged(ctx, req.Session) },
	})
	ts.srv.AddReceivingMiddleware(ts.middleware)
	ts.srv.AddResource(&mcp.Resource{
		URI: StatusURI, Name: "warden-status", Title: "warden: servers of this thread", MIMEType: "application/json",
		Description: "The thread's configured MCP servers: state (starting, ready, failed, disabled) and why a server is failed or disabled.",
	}, ts.readStatus)
	ts.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout: f.sessionTimeout,
	})
	return ts
}

func (ts *threadServer) wake() {
	select {
	case ts.kick <- struct{}{}:
	default:
	}
}

// note queues an upstream notification for the worker, never blocking.
func (ts *threadServer) note(ev thread.Event) {
	select {
	case ts.notes <- ev:
	default:
		ts.cmu.Lock()
		ts.dropped++
		ts.cmu.Unlock()
	}
}

func (ts *threadServer) stop() { ts.cancel() }

// run is the worker: it syncs the served sets when the thread reports a change, applies
// queued refreshes and forwards upstream notifications.
func (ts *threadServer) run() {
	for {
		select {
		case <-ts.ctx.Done():
			return
		case <-ts.kick:
			ts.sync(ts.ctx, 0)
		case ev := <-ts.notes:
			ts.forward(ev)
		}
	}
}

// closeSessions closes every MCP session of the server (which removes HTTP sessions from the
// handler and ends a Serve).
func (ts *threadServer) closeSessions() {
	for ss := range ts.srv.Sessions() {
		_ = ss.Close()
	}
}

// middleware keeps the served sets current for the requests that read them (waiting for
// servers still starting, bounded by StartupWait), and handles the parts of initialize and
// logging/setLevel that concern the upstream servers.
func (ts *threadServer) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		// A bug reached by one client's request fails that request, not the process.
		defer func() {
			if r := recover(); r != nil {
				ts.f.log.Error("front-door request panicked", "thread", ts.th.ID(), "method", method, "panic", r)
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error in warden's front door"}
			}
		}()
		if method != "initialize" && !strings.HasPrefix(method, "notifications/") {
			ts.knowSession(req.GetSession())
			ts.fetchRoots(ctx, req.GetSession())
		}
		switch method {
		case "initialize":
			return ts.initialize(ctx, next, method, req)
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			ts.sync(ctx, ts.f.startupWait)
		case "tools/call":
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && !ts.has(p.Name) {
				ts.sync(ctx, ts.f.startupWait)
			}
		case "logging/setLevel":
			res, err := next(ctx, method, req)
			if err == nil {
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
					ts.setLevel(ctx, req.GetSession(), p.Level)
				}
			}
			return res, err
		}
		res, err = next(ctx, method, req)
		if err != nil {
			return res, err
		}
		return forSession(req.GetSession(), res), nil
	}
}

// initialize records the client's capabilities (a client that can answer sampling,
// elicitation or roots gets the thread's servers as its own, see thread.Thread.SetClient),
// waits for the thread's servers and passes their instructions on.
func (ts *threadServer) initialize(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
		if p, ok := req.GetParams().(*mcp.InitializeParams); ok {
			ts.addSession(ss, p.Capabilities)
		}
	}
	// Clients bound initialize tightly (the Inspector: 10 s): wait for the servers' merged
	// instructions only briefly; tools/list waits the full StartupWait.
	ts.sync(ctx, min(ts.f.startupWait, initializeWait))
	if ir, ok := res.(*mcp.InitializeResult); ok {
		ir.Instructions = ts.instructions()
	}
	return res, nil
}

// instructions merges the upstream servers' instructions.
func (ts *threadServer) instructions() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var b strings.Builder
	b.WriteString("Tools, prompts and resources of the MCP servers this warden thread exposes")
	if ts.f.toolNames == ToolNamesBare {
		b.WriteString(" (a name used by two servers is qualified server__name).")
	} else {
		b.WriteString(", named server__name.")
	}
	for _, s := range ts.last {
		if s.Status == thread.StateReady && strings.TrimSpace(s.Instructions) != "" {
			fmt.Fprintf(&b, "\n\n## %s\n\n%s", s.Name, strings.TrimSpace(s.Instructions))
		}
	}
	return b.String()
}

func (ts *threadServer) has(name string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, ok := ts.tools[name]
	return ok
}

// sync reads the thread's status (applying a queued refresh) and makes the server's tools,
// prompts, resources and resource templates exactly those of its ready servers. Only real
// changes touch the server, so only they send list_changed notifications. It waits up to
// wait for servers still starting.
func (ts *threadServer) sync(ctx context.Context, wait time.Duration) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ts.ctx, cancel)
	defer stop()

	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.retired {
		return
	}
	st, err := ts.status(ctx, wait)
	if err != nil {
		if errors.Is(err, thread.ErrClosed) {
			ts.retired = true
			ts.f.retire(ts)
			return
		}
		if ctx.Err() == nil {
			ts.f.log.Warn("cannot read the thread's status; served sets unchanged", "thread", ts.th.ID(), "error", err)
		}
		return
	}
	ts.reportChanges(st)
	ts.last = st
	tools, prompts, resources, templates := ts.wanted(st)
	warn := func(kind string) func(string, string, string, error) {
		return func(name, server, upstream string, err error) {
			ts.f.log.Warn("upstream "+kind+" cannot be served; not exposed", "server", server, kind, upstream, "error", err)
		}
	}
	var changed [4]bool
	ts.tools, changed[0] = applyDiff(ts.tools, tools, ts.srv.RemoveTools, ts.addTool, warn("tool"))
	ts.prompts, changed[1] = applyDiff(ts.prompts, prompts, ts.srv.RemovePrompts, ts.addPrompt, warn("prompt"))
	ts.resources, changed[2] = applyDiff(ts.resources, resources, ts.srv.RemoveResources, ts.addResource, warn("resource"))
	ts.templates, changed[3] = applyDiff(ts.templates, templates, ts.srv.RemoveResourceTemplates, ts.addTemplate, warn("resource template"))
	if changed != [4]bool{} {
		ts.f.log.Debug("thread's served sets updated", "thread", ts.th.ID(), "tools", len(ts.tools),
			"prompts", len(ts.prompts), "resources", len(ts.resources), "templates", len(ts.templates))
	}
}

// reportChanges tells the client sessions (as a log message, at warning) about servers
// that became failed or disabled since the last sync (ts.mu held).
func (ts *threadServer) reportChanges(st []thread.ServerStatus) {
	before := map[string]thread.ServerStatus{}
	for _, s := range ts.last {
		before[s.Name] = s
	}
	for _, s := range st {
		if s.Status != thread.StateFailed && s.Status != thread.StateDisabled {
			continue
		}
		if b, ok := before[s.Name]; ok && b.Status == s.Status && b.ToolsError == s.ToolsError {
			continue
		}
		ts.note(&thread.LogMessage{ThreadID: ts.th.ID(), Params: &mcp.LoggingMessageParams{
			Level: "warning",
			Data:  map[string]any{"server": s.Name, "status": string(s.Status), "error": s.ToolsError},
		}})
	}
}

// wanted computes the served sets of a status (ts.mu held).
func (ts *threadServer) wanted(st []thread.ServerStatus) (tools map[string]served[*mcp.Tool], prompts map[string]served[*mcp.Prompt], resources map[string]served[*mcp.Resource], templates map[string]served[*mcp.ResourceTemplate]) {
	var toolItems, promptItems []upstreamItem
	toolDefs := map[upstreamItem]*mcp.Tool{}
	promptDefs := map[upstreamItem]*mcp.Prompt{}
	uris := map[string]int{} // upstream URI -> servers with it
	var ready []thread.ServerStatus
	for _, s := range st {
		if s.Status != thread.StateReady {
			continue
		}
		ready = append(ready, s)
		for _, t := range s.Tools {
			it := upstreamItem{s.Name, t.Name}
			toolItems = append(toolItems, it)
			toolDefs[it] = t
		}
		for _, p := range s.Prompts {
			it := upstreamItem{s.Name, p.Name}
			promptItems = append(promptItems, it)
			promptDefs[it] = p
		}
		for _, r := range s.Resources {
			uris[r.URI]++
		}
	}
	tools = named(ts.f, "tool", toolItems, toolDefs)
	prompts = named(ts.f, "prompt", promptItems, promptDefs)

	resources = map[string]served[*mcp.Resource]{}
	templates = map[string]served[*mcp.ResourceTemplate]{}
	for _, s := range ready { // sorted by server name: the first server keeps a shared template
		for _, r := range s.Resources {
			front := r.URI
			if uris[r.URI] > 1 || strings.HasPrefix(r.URI, "warden:") {
				front = QualifiedURI(s.Name, r.URI)
			}
			if _, taken := resources[front]; taken {
				continue
			}
			resources[front] = served[*mcp.Resource]{server: s.Name, name: r.URI, up: r, def: mustJSON(r)}
		}
		for _, rt := range s.ResourceTemplates {
			if old, taken := templates[rt.URITemplate]; taken {
				ts.f.log.Debug("resource template served by another server; not exposed", "server", s.Name,
					"template", rt.URITemplate, "served by", old.server)
				continue
			}
			templates[rt.URITemplate] = served[*mcp.ResourceTemplate]{server: s.Name, name: rt.URITemplate, up: rt, def: mustJSON(rt)}
		}
	}
	return tools, prompts, resources, templates
}

// QualifiedURI is the front-door URI of a resource whose URI two servers of a thread
// share (or that is in warden's own warden: scheme): warden://SERVER/ followed by the
// upstream URI, percent-encoded as one path segment.
func QualifiedURI(server, uri string) string {
	return "warden://" + server + "/" + url.PathEscape(uri)
}

// named gives items of one kind their front-door names, with their definitions.
func named[T any](f *FrontDoor, kind string, items []upstreamItem, defs map[upstreamItem]T) map[string]served[T] {
	names, dropped := assignNames(items, f.toolNames)
	for _, it := range dropped {
		f.log.Warn("upstream "+kind+" has no free front-door name; not exposed", "server", it.server, kind, it.name)
	}
	out := make(map[string]served[T], len(names))
	for name, it := range names {
		d := defs[it]
		out[name] = served[T]{server: it.server, name: it.name, up: d, def: mustJSON(d)}
	}
	return out
}

// mustJSON encodes an upstream definition for change detection; nil (never equal to
// another encoding) when it does not encode, so it is re-added, and refused, each sync.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// applyDiff makes the served set old into want: remove what went, add what is new or
// changed, keep what is the same (no notification). It reports whether anything changed.
func applyDiff[T any](old, want map[string]served[T], remove func(...string), add func(string, served[T]) error, warn func(name, server, upstream string, err error)) (map[string]served[T], bool) {
	var gone []string
	for name := range old {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	changed := len(gone) > 0
	next := make(map[string]served[T], len(want))
	for name, w := range want {
		if o, ok := old[name]; ok && o.server == w.server && o.def != nil && bytes.Equal(o.def, w.def) {
			next[name] = w
			continue
		}
		changed = true
		if w.def == nil {
			warn(name, w.server, w.name, errors.New("definition does not encode"))
		} else if err := guarded(func() { _ = add(name, w) }); err != nil {
			warn(name, w.server, w.name, err)
		} else {
			next[name] = w
			continue
		}
		if _, ok := old[name]; ok {
			remove(name)
		}
	}
	return next, changed
}

// guarded runs fn, turning a panic into an error: the SDK's Add methods panic on a
// definition they refuse (an input schema that is not an object, a URI that does not
// parse), and an upstream server must not be able to take the host down.
func guarded(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("refused by the MCP SDK: %v", r)
		}
	}()
	fn()
	return nil
}

func (ts *threadServer) addTool(name string, w served[*mcp.Tool]) error {
	t := *w.up // shallow copy: schemas and annotations are shared, never modified
	t.Name = name
	if t.InputSchema == nil {
		t.InputSchema = map[string]any{"type": "object"}
	}
	ts.srv.AddTool(&t, ts.callTool(name, w.server, w.name))
	return nil
}

func (ts *threadServer) addPrompt(name string, w served[*mcp.Prompt]) error {
	p := *w.up
	p.Name = name
	server, upstream := w.server, w.name
	ts.srv.AddPrompt(&p, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		var args map[string]string
		if req.Params != nil {
			args = req.Params.Arguments
		}
		res, err := ts.th.GetPrompt(ctx, server, upstream, args, callerName(req.Session))
		return res, requestError(err)
	})
	return nil
}

func (ts *threadServer) addResource(uri string, w served[*mcp.Resource]) error {
	r := *w.up
	r.URI = uri
	ts.srv.AddResource(&r, ts.readResource(w.server, func(string) string { return w.name }))
	return nil
}

func (ts *threadServer) addTemplate(tmpl string, w served[*mcp.ResourceTemplate]) error {
	rt := *w.up
	ts.srv.AddResourceTemplate(&rt, ts.readResource(w.server, func(uri string) string { return uri }))
	return nil
}

// readResource reads through the thread (the resource lists and the resource_read hook
// apply); upstream maps the requested URI to the server's.
func (ts *threadServer) readResource(server string, upstream func(string) string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := upstream(req.Params.URI)
		res, err := ts.th.ReadResource(ctx, server, uri, callerName(req.Session))
		if err != nil {
			return nil, requestError(err)
		}
		if uri != req.Params.URI { // the client asked by the qualified URI: answer with it
			c := *res
			c.Contents = make([]*mcp.ResourceContents, len(res.Contents))
			for i, rc := range res.Contents {
				cc := *rc
				if cc.URI == uri {
					cc.URI = req.Params.URI
				}
				c.Contents[i] = &cc
			}
			res = &c
		}
		return res, nil
	}
}

// readStatus serves StatusURI.
func (ts *threadServer) readStatus(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	st, err := ts.th.StatusNow(ctx, "")
	if err != nil {
		return nil, err
	}
	type server struct {
		Name      string `json:"name"`
		PluginID  string `json:"pluginId,omitempty"`
		Status    string `json:"status"`
		Error     string `json:"error,omitempty"`
		Auth      string `json:"authStatus"`
		Tools     int    `json:"tools"`
		Prompts   int    `json:"prompts"`
		Resources int    `json:"resources"`
	}
	out := struct {
		Thread  string   `json:"thread"`
		Servers []server `json:"servers"`
	}{Thread: ts.th.ID(), Servers: []server{}}
	for _, s := range st {
		out.Servers = append(out.Servers, server{s.Name, s.PluginID, string(s.Status), s.ToolsError, string(s.AuthStatus),
			len(s.Tools), len(s.Prompts), len(s.Resources) + len(s.ResourceTemplates)})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StatusURI, MIMEType: "application/json", Text: string(b)}}}, nil
}

// resolveURI finds the server and upstream URI of a front-door resource URI: a listed
// resource, else the server of the first template (in template order) that matches, else
// the only server that has resources.
func (ts *threadServer) resolveURI(uri string) (server, upstream string, ok bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if r, ok := ts.resources[uri]; ok {
		return r.server, r.name, true
	}
	if t, ok := ts.templates[uri]; ok { // completion refers to a template by its string
		return t.server, uri, true
	}
	var only string
	for _, s := range ts.last {
		if s.Status == thread.StateReady && (len(s.Resources) > 0 || len(s.ResourceTemplates) > 0) {
			if only != "" {
				return "", "", false
			}
			only = s.Name
		}
	}
	return only, uri, only != ""
}

// complete routes completion/complete to the server of the prompt or resource template.
func (ts *threadServer) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := *req.Params
	if p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: no ref"}
	}
	ref := *p.Ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		ts.mu.Lock()
		pr, ok := ts.prompts[ref.Name]
		ts.mu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		server, ref.Name = pr.server, pr.name
	case "ref/resource":
		s, up, ok := ts.resolveURI(ref.URI)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", ref.URI)}
		}
		server, ref.URI = s, up
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	p.Ref = &ref
	res, err := ts.th.Complete(ctx, server, &p)
	return res, requestError(err)
}

// subscribe subscribes the thread upstream on the first client session's subscription.
func (ts *threadServer) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	server, up, ok := ts.resolveURI(uri)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", uri)}
	}
	ts.cmu.Lock()
	first := ts.subs[uri] == 0
	ts.subs[uri]++
	ts.cmu.Unlock()
	if !first {
		return nil
	}
	if err := ts.th.SubscribeResource(ctx, server, up); err != nil {
		ts.cmu.Lock()
		ts.subs[uri]--
		ts.cmu.Unlock()
		return requestError(err)
	}
	return nil
}

// unsubscribe unsubscribes upstream when the last client session lets go.
func (ts *threadServer) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	ts.cmu.Lock()
	n := ts.subs[uri]
	if n > 0 {
		ts.subs[uri] = n - 1
	}
	ts.cmu.Unlock()
	if n != 1 {
		return nil
	}
	delete(ts.subs, uri)
	server, up, ok := ts.resolveURI(uri)
	if !ok {
		return nil
	}
	return requestError(ts.th.UnsubscribeResource(ctx, server, up))
}

// forward delivers an upstream notification to the thread's client sessions (worker).
func (ts *threadServer) forward(ev thread.Event) {
	ctx, cancel := context.WithTimeout(ts.ctx, ts.f.notifyTimeout)
	defer cancel()
	switch e := ev.(type) {
	case *thread.LogMessage:
		p := *e.Params
		switch {
		case e.Server == "":
			p.Logger = "warden"
		case p.Logger != "":
			p.Logger = e.Server + "/" + p.Logger
		default:
			p.Logger = e.Server
		}
		for ss := range ts.srv.Sessions() {
			_ = ss.Log(ctx, &p) // the SDK drops it below the session's level
		}
	case *thread.ResourceUpdated:
		uri := e.URI
		ts.mu.Lock()
		for front, r := range ts.resources {
			if r.server == e.Server && r.name == e.URI {
				uri = front
				break
			}
		}
		ts.mu.Unlock()
		_ = ts.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
	ts.cmu.Lock()
	dropped := ts.dropped
	ts.dropped = 0
	ts.cmu.Unlock()
	if dropped > 0 {
		ts.f.log.Warn("upstream notifications dropped: the clients did not keep up", "thread", ts.th.ID(), "dropped", dropped)
	}
}

// requestError maps a thread error to what an MCP client should see for a prompt,
// resource or completion request: a refusal or an unavailable item is invalid params with
// the reason; the upstream server's own JSON-RPC error is passed through.
func requestError(err error) error {
	if err == nil {
		return nil
	}
	var denied *thread.DeniedError
	var na *thread.UnavailableError
	var jerr *jsonrpc.Error
	switch {
	case errors.As(err, &denied):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s %q denied by policy: %s", denied.Kind, denied.Name, cmp.Or(denied.Reason, "denied by "+denied.DecidedBy))}
	case errors.As(err, &na):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: na.Error()}
	case errors.As(err, &jerr):
		return jerr
	}
	return errors.New(clientText(err))
}

// callTool calls tool on server through the thread, so the tool_call and tool_result hooks
// and the approval mode apply, with the request's _meta and progress. A policy denial, a
// declined approval and an unavailable tool are tool errors (isError, the reason as text):
// the model reads them and can adapt. Other failures are JSON-RPC errors.
func (ts *threadServer) callTool(name, server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(ts.f.ctx, cancel)
		defer stop()
		var args json.RawMessage
		var o thread.CallOptions
		if req.Params != nil {
			args = req.Params.Arguments
			o.Meta = req.Params.Meta // mcpconn sends on only what is the client's
			if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
				var drain func()
				o.OnProgress, drain = ts.progress(ctx, req.Session, tok)
				// Every progress notification goes out before the result.
				defer drain()
			}
		}
		cs := ts.session(req.Session)
		if cs != nil && cs.caps != nil && cs.caps.Elicitation != nil {
			o.Approve = ts.approve(req.Session)
		}
		ctx = withSession(ctx, req.Session)
		defer ts.track(cs, ctx)()
		res, err := ts.th.CallToolWith(ctx, server, tool, args, callerName(req.Session), o)
		if err == nil {
			return res, nil
		}
		var denied *thread.DeniedError
		var na *thread.UnavailableError
		var jerr *jsonrpc.Error
		switch {
		case errors.As(err, &denied) && denied.DecidedBy == "user":
			return toolError(fmt.Sprintf("tool %q not run: %s", name, denied.Reason)), nil
		case errors.As(err, &denied):
			reason := cmp.Or(denied.Reason, "denied by "+denied.DecidedBy)
			return toolError(fmt.Sprintf("tool %q denied by policy: %s", name, reason)), nil
		case errors.As(err, &na):
			return toolError(na.Error()), nil
		case errors.Is(err, thread.ErrInvalidParams):
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: arguments must be a JSON object"}
		case errors.As(err, &jerr):
			// The upstream server's own JSON-RPC error, passed through.
			return nil, jerr
		}
		return nil, fmt.Errorf("tool %q failed: %s", name, clientText(err))
	}
}

// clientText is the text of an upstream failure for an MCP client: what failed and why,
// without the server's stderr tail (the operator's log has it; a client should not read a
// server's own output).
func clientText(err error) string {
	var me *mcpconn.Error
	if errors.As(err, &me) {
		return me.Summary()
	}
	return err.Error()
}

// maxProgress bounds the progress notifications queued for one call; past it they are
// dropped (progress is advisory).
const maxProgress = 64

// progress returns the OnProgress of a call whose client asked for progress with tok:
// notifications are sent to ss in order by one goroutine, so that the upstream's read
// goroutine never waits for this client; drain waits until every queued one is sent.
func (ts *threadServer) progress(ctx context.Context, ss *mcp.ServerSession, tok any) (on func(*mcp.ProgressNotificationParams), drain func()) {
	queue := make(chan *mcp.ProgressNotificationParams, maxProgress)
	done := make(chan struct{})
	var mu sync.Mutex
	closed := false
	go func() {
		defer close(done)
		for p := range queue {
			_ = ss.NotifyProgress(ctx, p)
		}
	}()
	on = func(p *mcp.ProgressNotificationParams) {
		q := *p
		q.ProgressToken = tok
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return // a late notification: the result has gone out
		}
		select {
		case queue <- &q:
		default:
		}
	}
	drain = func() {
		mu.Lock()
		closed = true
		close(queue)
		mu.Unlock()
		<-done
	}
	return on, drain
}

// approve asks the client's user, through elicitation, whether a call may run.
func (ts *threadServer) approve(ss *mcp.ServerSession) func(context.Context, *thread.ApprovalRequest) (thread.Approval, error) {
	return func(ctx context.Context, r *thread.ApprovalRequest) (thread.Approval, error) {
		msg := fmt.Sprintf("Allow the tool %q of the MCP server %q to run with these arguments?\n\n%s\n\n(%s)",
			r.Tool, r.Server, string(r.Arguments), r.Reason)
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: msg,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
		if err != nil {
			return thread.ApprovalCancelled, err
		}
		switch res.Action {
		case "accept":
			return thread.ApprovalAccepted, nil
		case "decline":
			return thread.ApprovalDeclined, nil
		}
		return thread.ApprovalCancelled, nil
	}
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// callerName names the MCP client for policies: "mcp:" and the client's name from
// initialize, or "mcp".
func callerName(s *mcp.ServerSession) string {
	if s == nil {
		return "mcp"
	}
	if ip := s.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
		return "mcp:" + ip.ClientInfo.Name
	}
	return "mcp"
}

// status reads the thread's servers: waiting up to wait for servers still starting (then
// as they are).
func (ts *threadServer) status(ctx context.Context, wait time.Duration) ([]thread.ServerStatus, error) {
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		st, err := ts.th.Status(wctx, "", false)
		cancel()
		if err == nil || errors.Is(err, thread.ErrClosed) || ctx.Err() != nil {
			return st, err
		}
	}
	return ts.th.StatusNow(ctx, "")
}
