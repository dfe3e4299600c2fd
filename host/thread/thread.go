package thread

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/mcpconn"
)

// Thread is one conversation context: a kind, a set of selected capability roots and the
// MCP servers policy gave it.
//
// Refresh: a reload or a change of a selected root queues a refresh (a new candidate set
// built from the new configuration); the thread applies it lazily, before its next Status or
// CallTool, as Codex does. Applying re-runs policy; servers whose effective declaration and
// credential route are unchanged keep their session, new ones start, dropped ones are
// released.
//
// Concurrency: every method is safe for concurrent use. Status and CallTool take ctx first
// and wait (bounded by it) for the servers they need to finish starting.
type Thread struct {
	m         *Manager
	id        string
	kind      Kind
	selected  []SelectedRoot
	cwd       string
	created   time.Time
	ephemeral bool        // a DiscoverStatus probe: not registered, emits no events
	started   atomic.Bool // Start returned the thread: it is listed

	ctx    context.Context // cancelled by Close: ends server starts
	cancel context.CancelFunc

	applyMu sync.Mutex // serializes applying plans

	mu      sync.Mutex
	latest  *plan // newest plan built (applied or pending)
	current *plan // the plan servers comes from
	pending *plan // queued refresh
	servers map[string]*entry
	closed  bool
	// client, when set, owns the thread's connections (SetClient); clientKey is what it
	// adds to their sharing keys.
	client    Client
	clientKey string
	// logLevel is the client's logging/setLevel, applied to servers as they start.
	logLevel mcp.LoggingLevel
}

// ID is the thread id: "thr_" and 32 random hex digits.
func (t *Thread) ID() string { return t.id }

// Kind is the thread's kind.
func (t *Thread) Kind() Kind { return t.kind }

// SelectedRoots are the roots the thread selected at start (the caller's copy).
func (t *Thread) SelectedRoots() []SelectedRoot { return slices.Clone(t.selected) }

// Cwd is the working directory given at start.
func (t *Thread) Cwd() string { return t.cwd }

// CreatedAt is when the thread was started.
func (t *Thread) CreatedAt() time.Time { return t.created }

// RefreshPending reports whether a refresh is queued (it is applied by the next Status or
// CallTool).
func (t *Thread) RefreshPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending != nil
}

func (t *Thread) abiThread(rs []resolvedRoot) abi.Thread {
	at := abi.Thread{ID: t.id, Kind: string(t.kind)}
	for _, r := range rs {
		// Policies see the root's own id: a plugin's policy is keyed by it, whatever
		// spelling the client selected it with.
		at.Roots = append(at.Roots, abi.Root{ID: r.root.ID, Location: string(LocationLocal), Path: r.root.Dir})
	}
	return at
}

// entry is one listed server of a thread.
type entry struct {
	cand    *candidate
	verdict decision.ServerVerdict
	filter  decision.ToolFilter
	// prompts and resources are the server's prompt and resource lists (the policies').
	prompts, resources decision.ItemFilter
	// disabled is the reason a server is listed without tools and never started.
	disabled string
	// failErr is a failure before connecting (credential resolution, routing).
	failErr error
	// sess is the connection, for an exposed server that got one.
	sess *session
}

func (e *entry) name() string { return e.cand.decl.Name }

// state reports the entry's startup state and error text.
func (e *entry) state() (StartupState, string) {
	switch {
	case e.disabled != "":
		return StateDisabled, e.disabled
	case e.failErr != nil:
		return StateFailed, e.failErr.Error()
	}
	return e.sess.state()
}

func (e *entry) status(m *Manager) ServerStatus {
	st := ServerStatus{Name: e.name(), PluginID: e.cand.reported, AuthStatus: m.authStatus(e)}
	st.Status, st.ToolsError = e.state()
	if st.Status == StateReady {
		for _, tool := range e.sess.conn.Tools() {
			if ok, _ := toolAllowed(e.filter, tool.Name); ok {
				st.Tools = append(st.Tools, tool)
			}
		}
		slices.SortFunc(st.Tools, func(a, b *mcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
		conn := e.sess.conn
		st.Resources = allowed(conn.Resources(), e.resources, func(r *mcp.Resource) string { return r.URI })
		st.ResourceTemplates = allowed(conn.ResourceTemplates(), e.resources, func(r *mcp.ResourceTemplate) string { return r.URITemplate })
		st.Prompts = allowed(conn.Prompts(), e.prompts, func(p *mcp.Prompt) string { return p.Name })
		if ir := conn.InitializeResult(); ir != nil {
			st.Instructions = ir.Instructions
			st.Capabilities = ir.Capabilities
		}
	}
	return st
}

// allowed is the items f lets through, sorted by key.
func allowed[T any](items []T, f decision.ItemFilter, key func(T) string) []T {
	var out []T
	for _, it := range items {
		if ok, _ := f.Allowed(key(it)); ok {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return out
}

// toolAllowed applies a tool filter: the allow list (nil: every tool), then the deny list.
func toolAllowed(f decision.ToolFilter, tool string) (bool, string) {
	if !f.AllowListed(tool) {
		return false, "the tool is not in the server's allowed tools"
	}
	if f.DenyListed(tool) {
		return false, "the tool is disabled on this server"
	}
	return true, ""
}

// session is one thread's handle on a server connection, from the start attempt to its
// release. A refresh that keeps a server keeps its session.
type session struct {
	t      *Thread
	name   string
	spec   mcpconn.Spec
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed when the start attempt is over; conn and err are set before
	conn   *mcpconn.Conn
	err    error
	closed atomic.Bool
	once   sync.Once
}

func (t *Thread) newSession(spec mcpconn.Spec) *session {
	ctx, cancel := context.WithCancel(t.ctx)
	return &session{t: t, name: spec.Name, spec: spec, ctx: ctx, cancel: cancel, ready: make(chan struct{})}
}

// run makes the start attempt (mcpconn bounds it with the startup timeout).
func (s *session) run() {
	conn, err := s.t.m.conns.Acquire(s.ctx, s.spec)
	if err != nil {
		s.err = err
		close(s.ready)
		s.t.m.log.Warn("MCP server failed to start", "thread", s.t.id, "server", s.name, "error", err)
		s.t.emitStatus(s, StateFailed, err.Error())
		return
	}
	s.conn = conn
	conn.Subscribe(func(ev mcpconn.Event) {
		switch ev.Kind {
		case mcpconn.EventTools:
			s.t.emitTools(s)
		case mcpconn.EventStatus:
			st, msg := stateOf(ev.Status)
			s.t.emitStatus(s, st, msg)
		case mcpconn.EventResources, mcpconn.EventPrompts:
			s.t.emitEvent(s, &CatalogChanged{ThreadID: s.t.id, Server: s.name})
		case mcpconn.EventResourceUpdated:
			s.t.emitEvent(s, &ResourceUpdated{ThreadID: s.t.id, Server: s.name, URI: ev.URI})
		case mcpconn.EventLog:
			s.t.emitEvent(s, &LogMessage{ThreadID: s.t.id, Server: s.name, Params: ev.Log})
		}
	})
	s.t.mu.Lock()
	level := s.t.logLevel
	s.t.mu.Unlock()
	if level != "" {
		if err := conn.SetLogLevel(s.ctx, level); err != nil && !errors.Is(err, mcpconn.ErrNotSupported) {
			s.t.m.log.Debug("logging/setLevel failed", "thread", s.t.id, "server", s.name, "error", err)
		}
	}
	close(s.ready)
	s.t.emitStatus(s, StateReady, "")
}

// fail ends a session that never ran.
func (s *session) fail(err error) {
	s.err = err
	close(s.ready)
}

func (s *session) done() bool {
	select {
	case <-s.ready:
		return true
	default:
		return false
	}
}

func (s *session) reusable() bool { return !s.closed.Load() && (!s.done() || s.err == nil) }

func (s *session) state() (StartupState, string) {
	if !s.done() {
		return StateStarting, ""
	}
	if s.err != nil {
		return StateFailed, s.err.Error()
	}
	return stateOf(s.conn.Status())
}

func stateOf(st mcpconn.Status) (StartupState, string) {
	switch st.State {
	case mcpconn.StateReady:
		return StateReady, ""
	case mcpconn.StateStarting:
		return StateStarting, ""
	}
	if st.Err != nil {
		return StateFailed, st.Err.Error()
	}
	return StateFailed, "connection failed"
}

// wait waits for the start attempt to end, bounded by ctx.
func (s *session) wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close cancels the start attempt and releases the connection; it waits for both.
func (s *session) close() {
	s.once.Do(func() {
		s.closed.Store(true)
		s.cancel()
		<-s.ready
		if s.conn != nil {
			s.conn.Release()
		}
	})
}

func (t *Thread) emitStatus(s *session, st StartupState, msg string) {
	if t.ephemeral || (s != nil && s.closed.Load()) {
		return
	}
	name := ""
	if s != nil {
		name = s.name
	}
	t.m.emit(&StartupStatus{ThreadID: t.id, Name: name, Status: st, Error: msg})
}

func (t *Thread) emitTools(s *session) { t.emitEvent(s, &ToolsChanged{ThreadID: t.id, Server: s.name}) }

// emitEvent emits an event about the session's server, unless the thread is a probe or the
// session was dropped.
func (t *Thread) emitEvent(s *session, ev Event) {
	if t.ephemeral || s.closed.Load() {
		return
	}
	t.m.emit(ev)
}

// apply runs policy over plan p and makes the thread's servers match the verdicts. Only the
// server named only is materialized when only is not "" (DiscoverStatus). t.applyMu must
// be held.
func (t *Thread) apply(ctx context.Context, p *plan, only string) error {
	m := t.m
	// The verdicts outlive the request that triggered the refresh: a caller giving up must
	// not make policies fail (closed) for the thread's servers until the next refresh. Each
	// policy call is still bounded by its own deadline.
	ctx = context.WithoutCancel(ctx)
	in := p.input
	verdicts := m.engine.Servers(ctx, &in)

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return fmt.Errorf("thread %s %w", t.id, ErrClosed)
	}
	old := t.servers
	t.mu.Unlock()

	next := make(map[string]*entry, len(verdicts))
	var starts, retooled []*session
	kept := map[*session]bool{}
	type note struct {
		name string
		st   StartupState
		msg  string
	}
	var notes []note
	for i := range verdicts {
		v := verdicts[i]
		c := &p.cands[i]
		name := c.decl.Name
		if only != "" && name != only {
			continue
		}
		if v.Action == abi.ServerHide {
			continue
		}
		e := &entry{cand: c, verdict: v}
		byRef := false // the credentials resolve in the executor, by name
		next[name] = e
		prev := old[name]
		if v.Action != abi.ServerExpose {
			e.disabled = cmp.Or(v.Reason, "disabled by policy")
		} else {
			e.filter = decision.Filter(c.decl.EnabledTools, c.decl.DisabledTools, &v)
			e.prompts, e.resources = decision.PromptFilter(&v), decision.ResourceFilter(&v)
			e.disabled, e.failErr, byRef = t.connectable(ctx, p, c)
		}
		if e.disabled != "" || e.failErr != nil {
			st, msg := e.state()
			if prev == nil || prev.sess != nil || prev.disabled != e.disabled || errText(prev.failErr) != msg {
				notes = append(notes, note{name, st, msg})
			}
			continue
		}
		// The host reads a value only for a reference it owns and resolves itself; an
		// executor's references travel by name (a RefResolver), never as host values.
		var resolver mcpconn.Resolver = mcpconn.EnvResolver{Environment: config.LocalEnvironment, Lookup: m.lookupEnv}
		if byRef {
			resolver = mcpconn.RefResolver{Environment: c.route}
		}
		spec, err := mcpconn.BuildSpec(&c.decl, resolver,
			mcpconn.BuildOptions{BaseDir: c.baseDir, BaseEnv: m.lookupEnv, Grant: c.hostGrant(p.home.Config)})
		if errors.Is(err, mcpconn.ErrNotGranted) {
			// Listed, no tools, with the reason and the grant that would fix it.
			e.disabled = err.Error()
			if prev == nil || prev.sess != nil || prev.disabled != e.disabled {
				notes = append(notes, note{name, StateDisabled, e.disabled})
			}
			continue
		}
		if err != nil {
			e.failErr = err
			notes = append(notes, note{name, StateFailed, err.Error()})
			continue
		}
		spec = t.withClient(spec)
		if prev != nil && prev.sess != nil && prev.sess.spec.Key == spec.Key && prev.sess.reusable() {
			e.sess = prev.sess
			kept[prev.sess] = true
			if !sameFilter(prev.filter, e.filter) || !sameItems(prev.prompts, e.prompts) || !sameItems(prev.resources, e.resources) {
				retooled = append(retooled, prev.sess)
			}
			continue
		}
		e.sess = t.newSession(spec)
		starts = append(starts, e.sess)
	}

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return fmt.Errorf("thread %s %w", t.id, ErrClosed)
	}
	t.servers = next
	t.current = p
	t.mu.Unlock()

	for _, n := range notes {
		if !t.ephemeral {
			m.emit(&StartupStatus{ThreadID: t.id, Name: n.name, Status: n.st, Error: n.msg})
		}
	}
	for _, s := range retooled {
		t.emitTools(s) // same session, different tool filter
	}
	for _, s := range starts {
		t.emitStatus(s, StateStarting, "")
		if !m.goBackground(s.run) {
			s.fail(fmt.Errorf("MCP server %q: thread manager %w", s.name, ErrClosed))
		}
	}
	var drop []*session
	for _, e := range old {
		if e.sess != nil && !kept[e.sess] {
			drop = append(drop, e.sess)
		}
	}
	for _, s := range drop {
		if !m.goBackground(s.close) {
			s.close()
		}
	}
	return nil
}

func sameFilter(a, b decision.ToolFilter) bool {
	return (a.Allow == nil) == (b.Allow == nil) && slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny)
}

func sameItems(a, b decision.ItemFilter) bool {
	return (a.Allow == nil) == (b.Allow == nil) && slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// connectable runs the credentials hook for an exposed candidate and checks that the host
// can reach it. It returns the reason to list it disabled (a denied credential) or the
// failure to report; both empty means BuildSpec and connect, with byRef telling whether the
// server's credentials resolve by name in its executor (the credentials decision said
// "executor") or are read by the host.
func (t *Thread) connectable(ctx context.Context, p *plan, c *candidate) (disabled string, failErr error, byRef bool) {
	srv := c.srv
	srv.Credentials = slices.Clone(srv.Credentials)
	for i := range srv.Credentials {
		srv.Credentials[i].ResolvesAt = srv.Credentials[i].Owner
	}
	in := abi.CredentialsInput{Thread: p.input.Thread, Server: srv, Route: c.route, Environment: p.envs[c.route]}
	executorSide := false
	for _, v := range t.m.engine.Credentials(ctx, &in) {
		switch v.Action {
		case abi.CredentialDeny:
			return cmp.Or(v.Reason, "credential denied by "+v.DecidedBy), nil, false
		case abi.CredentialExecutor:
			executorSide = true
		}
	}
	if c.route == config.LocalEnvironment {
		if executorSide {
			return "", fmt.Errorf("MCP server %q: executor-side credential resolution %w", c.decl.Name, ErrNeedsExecutor), false
		}
		return "", nil, false
	}
	env, known := p.envs[c.route]
	switch {
	case !known || t.m.executorsF == nil:
		return "", fmt.Errorf("MCP server %q runs in environment %q, which %w", c.decl.Name, c.route, ErrNeedsExecutor), false
	case !env.Connected:
		return "", fmt.Errorf("MCP server %q runs in environment %q, which is not connected", c.decl.Name, c.route), false
	case c.decl.Transport() == config.TransportStdio && !env.Processes:
		return "", fmt.Errorf("MCP server %q is a stdio server, but executor %q does not announce running processes", c.decl.Name, c.route), false
	}
	return "", nil, executorSide
}

// waitRequired waits for the required servers (not executor-config ones) and reports the
// first that failed.
func (t *Thread) waitRequired(ctx context.Context) error {
	t.mu.Lock()
	var req []*entry
	for _, e := range t.servers {
		if e.cand.decl.Required && !e.cand.executorConfig() && e.disabled == "" {
			req = append(req, e)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(req, func(a, b *entry) int { return cmp.Compare(a.name(), b.name()) })
	for _, e := range req {
		if e.failErr != nil {
			return &RequiredServerError{ThreadID: t.id, Server: e.name(), Err: e.failErr}
		}
		if err := e.sess.wait(ctx); err != nil {
			return &RequiredServerError{ThreadID: t.id, Server: e.name(), Err: err}
		}
		if e.sess.err != nil {
			return &RequiredServerError{ThreadID: t.id, Server: e.name(), Err: e.sess.err}
		}
	}
	return nil
}

// setPending queues a refresh.
func (t *Thread) setPending(p *plan) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.pending = p
	t.latest = p
	t.mu.Unlock()
	t.m.emit(&RefreshQueued{ThreadID: t.id})
}

// applyPending applies a queued refresh, if any.
func (t *Thread) applyPending(ctx context.Context) error {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	p := t.pending
	t.pending = nil
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return fmt.Errorf("thread %s %w", t.id, ErrClosed)
	}
	if p == nil {
		return nil
	}
	if err := t.apply(ctx, p, ""); err != nil {
		return err
	}
	t.m.log.Debug("thread refreshed", "thread", t.id)
	return nil
}

// Status returns the thread's servers (mcpServerStatus/list with a threadId), sorted by
// name, or only the one named serverName (an unknown or hidden name gives an empty result).
// It first applies a pending refresh, then waits (bounded by ctx) for the servers it reports
// to finish starting. It reuses the thread's sessions and cached catalogs: a status read never
// makes a server handshake or list its tools again.
//
// detail is accepted for Codex compatibility (it selects how much of each server is
// reported); warden reports tools and auth status only, which both modes include.
func (t *Thread) Status(ctx context.Context, serverName string, detail bool) ([]ServerStatus, error) {
	_ = detail
	if err := t.applyPending(ctx); err != nil {
		return nil, err
	}
	return t.collect(ctx, serverName, true)
}

// StatusNow is Status without waiting: after applying a pending refresh it reports every
// server as it is at once, servers still starting as StateStarting.
func (t *Thread) StatusNow(ctx context.Context, serverName string) ([]ServerStatus, error) {
	if err := t.applyPending(ctx); err != nil {
		return nil, err
	}
	return t.collect(ctx, serverName, false)
}

func (t *Thread) collect(ctx context.Context, name string, wait bool) ([]ServerStatus, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, fmt.Errorf("thread %s %w", t.id, ErrClosed)
	}
	var es []*entry
	for n, e := range t.servers {
		if name == "" || n == name {
			es = append(es, e)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.name(), b.name()) })
	out := make([]ServerStatus, 0, len(es))
	for _, e := range es {
		if e.sess != nil && wait {
			if err := e.sess.wait(ctx); err != nil {
				return nil, fmt.Errorf("thread %s: waiting for MCP server %q: %w", t.id, e.name(), err)
			}
		}
		out = append(out, e.status(t.m))
	}
	return out, nil
}

// CallTool calls tool on server through the thread (mcpServer/tool/call): after applying a
// pending refresh, it checks that the server is listed, enabled and started and that the
// tool passes the server's tool filter and is in its catalog (else an *UnavailableError);
// runs the tool_call hook (deny: a *DeniedError with the policy's reason; a rewrite
// replaces args); and calls the tool, bounded by ctx and the server's tool timeout. args is
// a JSON object (nil or empty means {}); caller names who is calling, for policies. A tool
// that fails is a result with IsError set, not an error. CallTool is CallToolWith without
// options: a call that needs approval is refused.
func (t *Thread) CallTool(ctx context.Context, server, tool string, args json.RawMessage, caller string) (*mcp.CallToolResult, error) {
	return t.CallToolWith(ctx, server, tool, args, caller, CallOptions{})
}

// callToolWith is CallToolWith without the outcome report (Options.OnToolCall).
func (t *Thread) callToolWith(ctx context.Context, server, tool string, args json.RawMessage, caller string, o CallOptions) (*mcp.CallToolResult, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, fmt.Errorf("thread %s: MCP tool `%s/%s`: %w: arguments must be a JSON object", t.id, server, tool, ErrInvalidParams)
	}
	unavailable := unavailableAs(KindTool, server, tool)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return nil, err
	}
	e := u.e
	if ok, why := toolAllowed(e.filter, tool); !ok {
		return nil, unavailable(why)
	}
	if !slices.ContainsFunc(u.conn.Tools(), func(x *mcp.Tool) bool { return x.Name == tool }) {
		return nil, unavailable(fmt.Sprintf("MCP server %q has no tool %q", server, tool))
	}
	pluginID := e.cand.decl.Origin.PluginID
	v := t.m.engine.ToolCall(ctx, &abi.ToolCallInput{
		Thread:    u.thread,
		Server:    server,
		PluginID:  pluginID,
		Tool:      tool,
		Arguments: abi.RawJSON(args),
		Caller:    caller,
	}, e.filter)
	if v.Action == abi.ToolCallDeny {
		return nil, &DeniedError{Kind: KindTool, Server: server, Name: tool, Reason: v.Reason, DecidedBy: v.DecidedBy}
	}
	if need, reason, by := approval(&e.cand.decl, tool, &v); need {
		if err := t.approve(ctx, o.Approve, &ApprovalRequest{Server: server, Tool: tool, Arguments: v.Arguments, Reason: reason, DecidedBy: by}); err != nil {
			return nil, err
		}
	}
	res, err := u.conn.CallToolWith(ctx, tool, json.RawMessage(v.Arguments), mcpconn.CallOptions{Meta: o.Meta, OnProgress: o.OnProgress})
	if err != nil {
		return nil, t.upstreamErr(u, fmt.Sprintf("MCP tool `%s/%s`", server, tool), err, unavailable)
	}
	if !t.m.engine.Wants(abi.HookToolResult, pluginID) {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("thread %s: MCP tool `%s/%s`: result does not encode: %w", t.id, server, tool, err)
	}
	rv := t.m.engine.ToolResult(ctx, &abi.ToolResultInput{
		Thread: u.thread, Server: server, PluginID: pluginID, Tool: tool,
		Arguments: abi.RawJSON(v.Arguments), Result: abi.RawJSON(raw), IsError: res.IsError, Caller: caller,
	})
	switch rv.Action {
	case abi.ToolResultPass:
		return res, nil
	case abi.ToolResultRewrite:
		var out mcp.CallToolResult
		if err := json.Unmarshal(rv.Result, &out); err == nil {
			return &out, nil
		}
		return toolErrorResult(fmt.Sprintf("tool %q: %s rewrote the result to something that is not a tool result", tool, rv.DecidedBy)), nil
	}
	return toolErrorResult(rv.Reason), nil
}

// approve puts r to the user through ask and records the answer in the decision log.
func (t *Thread) approve(ctx context.Context, ask func(context.Context, *ApprovalRequest) (Approval, error), r *ApprovalRequest) error {
	denied := func(by, why string) error {
		return &DeniedError{Kind: KindTool, Server: r.Server, Name: r.Tool, Reason: why, DecidedBy: by}
	}
	if ask == nil {
		t.m.engine.LogApproval(t.id, r.Server, r.Tool, "refused", "the client cannot ask its user")
		return denied("config", fmt.Sprintf("needs the user's approval (%s), and this client cannot ask its user", r.Reason))
	}
	ans, err := ask(ctx, r)
	switch {
	case err != nil:
		t.m.engine.LogApproval(t.id, r.Server, r.Tool, "refused", err.Error())
		return denied("user", fmt.Sprintf("needs the user's approval (%s), which could not be asked: %v", r.Reason, err))
	case ans == ApprovalDeclined:
		t.m.engine.LogApproval(t.id, r.Server, r.Tool, "declined", r.Reason)
		return denied("user", "the user declined the call")
	case ans == ApprovalCancelled:
		t.m.engine.LogApproval(t.id, r.Server, r.Tool, "cancelled", r.Reason)
		return denied("user", "the user cancelled the call")
	}
	t.m.engine.LogApproval(t.id, r.Server, r.Tool, "accepted", r.Reason)
	return nil
}

func toolErrorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Close ends the thread: it is removed from the Manager, its server starts are cancelled and
// its connections released (a shared session closes when its last user lets go). Close
// waits for all of that and is idempotent.
func (t *Thread) Close() error {
	t.m.mu.Lock()
	if t.m.threads[t.id] == t {
		delete(t.m.threads, t.id)
	}
	t.m.mu.Unlock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	servers := t.servers
	t.servers, t.pending = nil, nil
	t.mu.Unlock()
	t.cancel()
	var wg sync.WaitGroup
	for _, e := range servers {
		if e.sess != nil {
			wg.Go(e.sess.close)
		}
	}
	wg.Wait()
	if !t.ephemeral {
		t.m.emit(&ThreadClosed{ThreadID: t.id})
	}
	return nil
}
