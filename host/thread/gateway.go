package thread

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/mcpconn"
)

// Client is the MCP client a thread is served to (the front door's): what its sessions
// with upstream servers declare, and where the servers' own requests (sampling,
// elicitation, roots) go. See Thread.SetClient. Its methods are called concurrently.
type Client = mcpconn.ClientHandler

// SetClient makes the thread's server connections its own, declaring c's capabilities
// upstream and sending the servers' requests to c; nil goes back to shared connections
// that declare none.
//
// Connections are shared between threads with the same effective declaration, and a
// server's request carries no trace of the call it serves: on a shared session, a sampling
// request raised during thread A's call could not be told from one raised for thread B.
// So a thread with a Client gets sessions of its own (the sharing key gains the thread id
// and a digest of the capabilities), and a request can only reach that thread's client.
// The cost is one session (a stdio server: one process) per such thread and server.
//
// The change is queued as a refresh (applied before the next Status or call), so servers
// restart once with the new capabilities.
func (t *Thread) SetClient(c Client) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.client = c
	t.clientKey = ""
	if c != nil {
		caps, _ := json.Marshal(c.Capabilities())
		sum := sha256.Sum256(caps)
		t.clientKey = "|client:" + t.id + ":" + hex.EncodeToString(sum[:8])
	}
	p := t.latest
	t.mu.Unlock()
	if p != nil {
		t.setPending(p)
	}
}

// withClient makes spec the thread client's own, if the thread has one.
func (t *Thread) withClient(spec mcpconn.Spec) mcpconn.Spec {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.client != nil {
		spec.Client = t.client
		spec.Key += t.clientKey
	}
	return spec
}

// usable is a ready server of the thread, resolved for one request.
type usable struct {
	e      *entry
	conn   *mcpconn.Conn
	thread abi.Thread
}

// use applies a pending refresh, finds server and waits for it to be ready. unavailable
// makes the error for a server that cannot be used, with the reason ("" for an unknown or
// hidden server).
func (t *Thread) use(ctx context.Context, server string, unavailable func(reason string) error) (*usable, error) {
	if err := t.applyPending(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	e := t.servers[server]
	var at abi.Thread
	if t.current != nil {
		at = t.current.input.Thread
	}
	t.mu.Unlock()
	if e == nil {
		return nil, unavailable("")
	}
	switch {
	case e.disabled != "":
		return nil, unavailable(fmt.Sprintf("MCP server %q is disabled: %s", server, e.disabled))
	case e.failErr != nil:
		return nil, unavailable(e.failErr.Error())
	}
	if err := e.sess.wait(ctx); err != nil {
		return nil, fmt.Errorf("thread %s: waiting for MCP server %q: %w", t.id, server, err)
	}
	if e.sess.err != nil {
		return nil, unavailable(e.sess.err.Error())
	}
	if err := e.sess.conn.Ready(ctx); err != nil {
		return nil, unavailable(err.Error())
	}
	return &usable{e: e, conn: e.sess.conn, thread: at}, nil
}

// unavailableAs makes the errors for an item that cannot be used, given the reason ("" for
// an unknown or hidden server).
func unavailableAs(kind, server, name string) func(reason string) error {
	return func(reason string) error {
		return &UnavailableError{Kind: kind, Server: server, Name: name, Reason: reason}
	}
}

// upstreamErr wraps an upstream failure: a connection the thread dropped during the request
// is reported as such.
func (t *Thread) upstreamErr(u *usable, what string, err error, unavailable func(string) error) error {
	if errors.Is(err, mcpconn.ErrClosed) && u.e.sess.closed.Load() {
		return unavailable(fmt.Sprintf("MCP server %q was removed by a refresh during the request", u.e.name()))
	}
	return fmt.Errorf("thread %s: %s: %w", t.id, what, err)
}

// ReadResource reads a resource of server (resources/read) after the server's resource
// lists and the resource_read hook allowed it (a refusal is a *DeniedError).
func (t *Thread) ReadResource(ctx context.Context, server, uri, caller string) (*mcp.ReadResourceResult, error) {
	unavailable := unavailableAs(KindResource, server, uri)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return nil, err
	}
	v := t.m.engine.ResourceRead(ctx, &abi.ResourceReadInput{
		Thread: u.thread, Server: server, PluginID: u.e.cand.decl.Origin.PluginID, URI: uri, Caller: caller,
	}, u.e.resources)
	if !v.Allowed {
		return nil, &DeniedError{Kind: KindResource, Server: server, Name: uri, Reason: v.Reason, DecidedBy: v.DecidedBy}
	}
	res, err := u.conn.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, t.upstreamErr(u, fmt.Sprintf("MCP resource `%s` of %q", uri, server), err, unavailable)
	}
	return res, nil
}

// GetPrompt gets a prompt of server (prompts/get) after the server's prompt lists and the
// prompt_get hook allowed it; the hook may rewrite the arguments.
func (t *Thread) GetPrompt(ctx context.Context, server, name string, args map[string]string, caller string) (*mcp.GetPromptResult, error) {
	unavailable := unavailableAs(KindPrompt, server, name)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(u.conn.Prompts(), func(p *mcp.Prompt) bool { return p.Name == name }) {
		return nil, unavailable(fmt.Sprintf("MCP server %q has no prompt %q", server, name))
	}
	raw, err := json.Marshal(cmpOrEmpty(args))
	if err != nil {
		return nil, fmt.Errorf("thread %s: MCP prompt `%s/%s`: %w: %w", t.id, server, name, ErrInvalidParams, err)
	}
	v := t.m.engine.PromptGet(ctx, &abi.PromptGetInput{
		Thread: u.thread, Server: server, PluginID: u.e.cand.decl.Origin.PluginID, Name: name,
		Arguments: abi.RawJSON(raw), Caller: caller,
	}, u.e.prompts)
	if !v.Allowed {
		return nil, &DeniedError{Kind: KindPrompt, Server: server, Name: name, Reason: v.Reason, DecidedBy: v.DecidedBy}
	}
	if !bytes.Equal(v.Arguments, raw) {
		args = nil
		if err := json.Unmarshal(v.Arguments, &args); err != nil {
			return nil, &DeniedError{Kind: KindPrompt, Server: server, Name: name, DecidedBy: v.DecidedBy,
				Reason: fmt.Sprintf("%s rewrote the prompt arguments to something that is not an object of strings", v.DecidedBy)}
		}
	}
	res, err := u.conn.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, t.upstreamErr(u, fmt.Sprintf("MCP prompt `%s/%s`", server, name), err, unavailable)
	}
	return res, nil
}

func cmpOrEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Complete asks server for argument completions (completion/complete). The reference must
// name a prompt or resource template the thread can see.
func (t *Thread) Complete(ctx context.Context, server string, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if p == nil || p.Ref == nil {
		return nil, fmt.Errorf("thread %s: completion/complete: %w: no ref", t.id, ErrInvalidParams)
	}
	kind, name := KindPrompt, p.Ref.Name
	if p.Ref.Type == "ref/resource" {
		kind, name = KindResource, p.Ref.URI
	}
	unavailable := unavailableAs(kind, server, name)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return nil, err
	}
	f := u.e.prompts
	if kind == KindResource {
		f = u.e.resources
	}
	if ok, why := f.Allowed(name); !ok {
		return nil, unavailable(why)
	}
	res, err := u.conn.Complete(ctx, p)
	if err != nil {
		return nil, t.upstreamErr(u, fmt.Sprintf("completion/complete on %q", server), err, unavailable)
	}
	return res, nil
}

// SubscribeResource subscribes the thread to updates of a resource of server; the updates
// arrive as *ResourceUpdated events.
func (t *Thread) SubscribeResource(ctx context.Context, server, uri string) error {
	unavailable := unavailableAs(KindResource, server, uri)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return err
	}
	if ok, why := u.e.resources.Allowed(uri); !ok {
		return unavailable(why)
	}
	if err := u.conn.SubscribeResource(ctx, uri); err != nil {
		return t.upstreamErr(u, fmt.Sprintf("resources/subscribe %q on %q", uri, server), err, unavailable)
	}
	return nil
}

// UnsubscribeResource ends a SubscribeResource.
func (t *Thread) UnsubscribeResource(ctx context.Context, server, uri string) error {
	unavailable := unavailableAs(KindResource, server, uri)
	u, err := t.use(ctx, server, unavailable)
	if err != nil {
		return err
	}
	if err := u.conn.UnsubscribeResource(ctx, uri); err != nil {
		return t.upstreamErr(u, fmt.Sprintf("resources/unsubscribe %q on %q", uri, server), err, unavailable)
	}
	return nil
}

// SetLogLevel asks every ready server of the thread that logs to send messages at level
// and above (logging/setLevel); they arrive as *LogMessage events. A server without the
// logging capability is skipped. It returns the failures, joined.
func (t *Thread) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if err := t.applyPending(ctx); err != nil {
		return err
	}
	t.mu.Lock()
	t.logLevel = level
	conns := t.readyConnsLocked()
	t.mu.Unlock()
	var errs []error
	for _, c := range conns {
		if err := c.SetLogLevel(ctx, level); err != nil && !errors.Is(err, mcpconn.ErrNotSupported) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// NotifyRootsChanged tells every ready server of the thread that the client's roots changed
// (notifications/roots/list_changed), for a thread with a Client.
func (t *Thread) NotifyRootsChanged(ctx context.Context) {
	t.mu.Lock()
	conns := t.readyConnsLocked()
	t.mu.Unlock()
	for _, c := range conns {
		if err := c.NotifyRootsChanged(ctx); err != nil {
			t.m.log.Debug("roots/list_changed not delivered", "thread", t.id, "server", c.Name(), "error", err)
		}
	}
}

// readyConnsLocked is the connections of the servers that started (t.mu held).
func (t *Thread) readyConnsLocked() []*mcpconn.Conn {
	var conns []*mcpconn.Conn
	for _, e := range t.servers {
		if e.sess != nil && e.sess.done() && e.sess.err == nil {
			conns = append(conns, e.sess.conn)
		}
	}
	return conns
}

// ApprovalRequest is a tool call put to the user before it runs: the server's approval_mode
// is "prompt", or a policy answered ask.
type ApprovalRequest struct {
	Server, Tool string
	// Arguments are the arguments the call would send (after any rewrite).
	Arguments json.RawMessage
	// Reason is why approval is needed: the asking policy's reason, or the approval mode.
	Reason string
	// DecidedBy names who asked: "config" (approval_mode) or the policy.
	DecidedBy string
}

// Approval is the user's answer.
type Approval int

// Answers to an ApprovalRequest.
const (
	// ApprovalAccepted: run the call.
	ApprovalAccepted Approval = iota
	// ApprovalDeclined: the user said no.
	ApprovalDeclined
	// ApprovalCancelled: the user dismissed the question.
	ApprovalCancelled
)

// CallOptions are the optional parts of a tool call.
type CallOptions struct {
	// Meta is the client request's _meta, sent upstream (a progress token is replaced by
	// one of the upstream session's own; see OnProgress).
	Meta map[string]any
	// OnProgress, when set, receives the upstream's progress notifications for this call
	// (with a nil token: the caller restores its own). It runs on a connection's read
	// goroutine and must not block.
	OnProgress func(*mcp.ProgressNotificationParams)
	// Approve puts a call that needs approval to the user. nil: such a call is refused with
	// an *ApprovalError.
	Approve func(ctx context.Context, r *ApprovalRequest) (Approval, error)
}

// approval decides whether a call needs the user: the policy's ask verdict first, then the
// declaration's approval_mode.
func approval(decl *config.ServerDecl, tool string, v *decision.ToolCallVerdict) (need bool, reason, by string) {
	if v.Action == abi.ToolCallAsk {
		return true, v.Reason, v.DecidedBy
	}
	if decl.ApprovalMode(tool) == config.ApprovalPrompt {
		return true, fmt.Sprintf("approval_mode of %s is \"prompt\"", tool), "config"
	}
	return false, "", ""
}
