package frontdoor

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/thread"
)

// The bridge: server→client requests (sampling/createMessage, elicitation/create,
// roots/list) of a thread's upstream servers reach the client session whose request caused
// them, and never a session of another thread.
//
// Upstream sessions are shared between threads, and a server's request names no request of
// ours, so routing on a shared session cannot be exact. A thread whose client declares any
// of these capabilities therefore gets upstream sessions of its own (thread.SetClient),
// which declare the union of its client sessions' capabilities. Within the thread, a
// request goes to: the session the upstream call was made for, when the request arrives
// within that call's context (the 2026-07-28 protocol's multi-round-trip results do); else
// the only session with a tool call in flight; else the session that initialized last;
// each time only among the sessions that declared the capability. No such session: the
// standard refusal, as if the client had been asked directly.

// sessionKey carries the client session of a tool call in its context.
type sessionKey struct{}

func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, ss)
}

// bridge is the thread's client (thread.Client) while one of its sessions declares a
// capability that servers can use.
type bridge struct {
	ts   *threadServer
	caps *mcp.ClientCapabilities // fixed: a change of capabilities makes a new bridge
}

var _ thread.Client = (*bridge)(nil)

func (b *bridge) Capabilities() *mcp.ClientCapabilities { return b.caps }

func (b *bridge) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	ss, ctx, done, err := b.ts.pick(ctx, "sampling", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if err != nil {
		return nil, err
	}
	defer done()
	return ss.CreateMessageWithTools(ctx, p)
}

func (b *bridge) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ss, ctx, done, err := b.ts.pick(ctx, "elicitation", func(c *mcp.ClientCapabilities) bool { return c.Elicitation != nil })
	if err != nil {
		return nil, err
	}
	defer done()
	return ss.Elicit(ctx, p)
}

// ListRoots asks the chosen client session, and falls back to the roots it last reported:
// a server asks for roots when it starts (during the client's initialize, when the client
// cannot be asked yet) and after roots/list_changed, outside any call, when a streamable
// HTTP client may have no stream open to carry the request.
func (b *bridge) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	ss, rctx, done, err := b.ts.pick(ctx, "roots", hasRoots)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := ss.ListRoots(rctx, &mcp.ListRootsParams{})
	if err == nil {
		b.ts.setRoots(ss, res)
		return res, nil
	}
	if cached := b.ts.cachedRoots(ss); cached != nil {
		return cached, nil
	}
	return nil, err
}

func hasRoots(c *mcp.ClientCapabilities) bool { return c.RootsV2 != nil || c.Roots.ListChanged }

// bridged reports whether caps holds anything an upstream server can ask for.
func bridged(c *mcp.ClientCapabilities) bool {
	return c != nil && (c.Sampling != nil || c.Elicitation != nil || hasRoots(c))
}

// union merges the bridged capabilities of b into a (a copy).
func union(a, b *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	out := &mcp.ClientCapabilities{}
	for _, c := range []*mcp.ClientCapabilities{a, b} {
		if c == nil {
			continue
		}
		if c.Sampling != nil {
			out.Sampling = c.Sampling
		}
		if c.Elicitation != nil {
			out.Elicitation = c.Elicitation
		}
		if hasRoots(c) {
			out.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
			out.Roots.ListChanged = true
		}
	}
	return out
}

// knowSession records a session that did not use initialize (2026-07-28: the SDK takes its
// capabilities from its first request).
func (ts *threadServer) knowSession(s mcp.Session) {
	ss, ok := s.(*mcp.ServerSession)
	if !ok || ts.session(ss) != nil {
		return
	}
	if ip := ss.InitializeParams(); ip != nil {
		ts.addSession(ss, ip.Capabilities)
	}
}

// addSession records an initialized client session; a capability the thread's client did
// not have yet makes the thread's servers its own (again, with the new set).
func (ts *threadServer) addSession(ss *mcp.ServerSession, caps *mcp.ClientCapabilities) {
	if !legacySession(ss) {
		// A 2026-07-28 client is asked through multi-round-trip results, which the SDK
		// implements by calling the tool handler again with the answers: a gateway would
		// call the upstream tool twice. Such a session is not asked (the servers get the
		// standard refusal; a prompt-mode tool is refused).
		caps = nil
	}
	ts.cmu.Lock()
	ts.sessions = slices.DeleteFunc(ts.sessions, func(c *clientSession) bool { return c.ss == ss })
	ts.sessions = append(ts.sessions, &clientSession{ss: ss, caps: caps})
	var set *mcp.ClientCapabilities
	if bridged(caps) {
		next := union(ts.caps, caps)
		if !sameCaps(ts.caps, next) {
			ts.caps, set = next, next
		}
	}
	ts.cmu.Unlock()
	if set != nil {
		ts.th.SetClient(&bridge{ts: ts, caps: set})
	}
}

func sameCaps(a, b *mcp.ClientCapabilities) bool {
	if a == nil || b == nil {
		return a == b
	}
	return (a.Sampling != nil) == (b.Sampling != nil) && (a.Elicitation != nil) == (b.Elicitation != nil) && hasRoots(a) == hasRoots(b)
}

// session returns what is known of ss (nil for an unknown session).
func (ts *threadServer) session(ss *mcp.ServerSession) *clientSession {
	ts.cmu.Lock()
	defer ts.cmu.Unlock()
	for _, c := range ts.sessions {
		if c.ss == ss {
			return c
		}
	}
	return nil
}

// track records a tool call in flight for cs until the returned func is called.
func (ts *threadServer) track(cs *clientSession, ctx context.Context) (untrack func()) {
	if cs == nil {
		return func() {}
	}
	ts.cmu.Lock()
	cs.calls = append(cs.calls, ctx)
	ts.cmu.Unlock()
	return func() {
		ts.cmu.Lock()
		if i := slices.Index(cs.calls, ctx); i >= 0 {
			cs.calls = slices.Delete(cs.calls, i, i+1)
		}
		ts.cmu.Unlock()
	}
}

// live drops the sessions that ended (ts.cmu held).
func (ts *threadServer) liveLocked() []*clientSession {
	open := map[*mcp.ServerSession]bool{}
	for ss := range ts.srv.Sessions() {
		open[ss] = true
	}
	ts.sessions = slices.DeleteFunc(ts.sessions, func(c *clientSession) bool { return !open[c.ss] })
	return ts.sessions
}

// pick chooses the client session for a server's request (see the bridge's rules) and
// the context to send it with: one that carries the client call's identity when there is
// one (over streamable HTTP the request then travels on that call's response stream, which
// the client is sure to read), ending with the server's request. done releases it.
func (ts *threadServer) pick(ctx context.Context, what string, has func(*mcp.ClientCapabilities) bool) (*mcp.ServerSession, context.Context, func(), error) {
	ok := func(c *clientSession) bool { return c.caps != nil && has(c.caps) }
	ts.cmu.Lock()
	defer ts.cmu.Unlock()
	live := ts.liveLocked()
	if ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession); ss != nil {
		for _, c := range live {
			if c.ss == ss && ok(c) {
				return ss, ctx, func() {}, nil // ctx already is the call's
			}
		}
	}
	var busy []*clientSession
	for _, c := range live {
		if len(c.calls) > 0 && ok(c) {
			busy = append(busy, c)
		}
	}
	if len(busy) == 1 {
		c := busy[0]
		rctx, done := related(c.calls[len(c.calls)-1], ctx)
		return c.ss, rctx, done, nil
	}
	for i := len(live) - 1; i >= 0; i-- {
		if ok(live[i]) {
			return live[i].ss, ctx, func() {}, nil
		}
	}
	return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("the client does not support %s", what)}
}

// related is a context with the values of call (the client request's identity) that ends
// when req does.
func related(call, req context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(call))
	stop := context.AfterFunc(req, cancel)
	callStop := context.AfterFunc(call, cancel)
	return ctx, func() { stop(); callStop(); cancel() }
}

// setLevel records a session's logging level and asks the thread's servers for the most
// verbose level any session wants.
func (ts *threadServer) setLevel(ctx context.Context, s mcp.Session, level mcp.LoggingLevel) {
	ss, _ := s.(*mcp.ServerSession)
	ts.cmu.Lock()
	most := level
	for _, c := range ts.liveLocked() {
		if c.ss == ss {
			c.level = level
		}
		if c.level != "" && levelRank(c.level) < levelRank(most) {
			most = c.level
		}
	}
	ts.cmu.Unlock()
	if err := ts.th.SetLogLevel(ctx, most); err != nil {
		ts.f.log.Debug("logging/setLevel not applied to every server", "thread", ts.th.ID(), "error", err)
	}
}

// levelRank orders logging levels from the most verbose.
func levelRank(l mcp.LoggingLevel) int {
	i := slices.Index([]mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, l)
	if i < 0 {
		return 0
	}
	return i
}

// fetchRoots reads the roots of a client session that declared roots, once after it
// initialized, within one of its requests (so that over streamable HTTP the question
// travels on that request's response stream), and tells the thread's servers, which asked
// while the client could not answer yet.
func (ts *threadServer) fetchRoots(ctx context.Context, s mcp.Session) {
	ss, _ := s.(*mcp.ServerSession)
	cs := ts.session(ss)
	if cs == nil || cs.caps == nil || !hasRoots(cs.caps) {
		return
	}
	ts.cmu.Lock()
	fetched := cs.rootsFetched
	cs.rootsFetched = true
	ts.cmu.Unlock()
	if fetched {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, ts.f.notifyTimeout)
	defer cancel()
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		ts.f.log.Debug("cannot read the client's roots", "thread", ts.th.ID(), "error", err)
		return
	}
	ts.setRoots(ss, res)
	ts.th.NotifyRootsChanged(ctx)
}

// rootsChanged handles the client's notifications/roots/list_changed: the session's roots
// are read again on its next request, and the servers are told now.
func (ts *threadServer) rootsChanged(ctx context.Context, s mcp.Session) {
	ss, _ := s.(*mcp.ServerSession)
	if cs := ts.session(ss); cs != nil {
		ts.cmu.Lock()
		cs.rootsFetched = false
		ts.cmu.Unlock()
	}
	ts.th.NotifyRootsChanged(ctx)
}

func (ts *threadServer) setRoots(ss *mcp.ServerSession, res *mcp.ListRootsResult) {
	if cs := ts.session(ss); cs != nil {
		ts.cmu.Lock()
		cs.roots = res
		ts.cmu.Unlock()
	}
}

func (ts *threadServer) cachedRoots(ss *mcp.ServerSession) *mcp.ListRootsResult {
	cs := ts.session(ss)
	if cs == nil {
		return nil
	}
	ts.cmu.Lock()
	defer ts.cmu.Unlock()
	return cs.roots
}
