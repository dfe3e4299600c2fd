package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallOptions carries what a front-door request adds to a tools/call.
type CallOptions struct {
	// Meta is the originating request's _meta, sent upstream as the call's _meta (a copy;
	// the map is not modified). Its progressToken is never forwarded (see OnProgress), nor
	// are the protocol's own "io.modelcontextprotocol/" keys: they describe the
	// originating session (its protocol version, client, capabilities), and the upstream
	// session sets its own.
	Meta map[string]any
	// OnProgress, when non-nil, receives the server's progress for this call: a fresh
	// progress token, unique within the Manager's connection, is sent upstream, and each
	// notifications/progress carrying it is passed to OnProgress with ProgressToken set to
	// nil (the caller puts its own client's token back) until CallToolWith returns;
	// progress for unknown or finished tokens is dropped. The go-sdk handles notifications
	// on the session's one notification goroutine, after the responses that arrived with
	// them, so progress the server sent just before its result may come after it: a call
	// with OnProgress waits up to 25 ms after its result for it (less once a notification
	// with Progress >= Total arrived); what comes later still is dropped. OnProgress
	// runs on that goroutine, one notification at a time: it must not block (hand the
	// value to your own goroutine or a bounded queue) and must not call methods of this
	// Conn that wait for the server.
	OnProgress func(*mcp.ProgressNotificationParams)
}

// CallTool calls tool name with args — a json.RawMessage, a map[string]any, or anything
// that marshals to a JSON object; nil sends {} — and returns the server's result. A tool
// error is a result with IsError set, not an error. It is CallToolWith with no options.
func (c *Conn) CallTool(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	return c.CallToolWith(ctx, name, args, CallOptions{})
}

// CallToolWith calls tool name like CallTool, sending o.Meta and routing progress to
// o.OnProgress. Like every request of a Conn, the call first makes the connection ready as
// Ready does and is bounded by ctx and the Spec's ToolTimeout (ErrToolTimeout). A JSON-RPC
// error the server answered is an *Error wrapping the *jsonrpc.Error (errors.As finds it);
// if the server dies during the call, it returns promptly with ErrServerExited, the exit
// status and the stderr tail.
func (c *Conn) CallToolWith(ctx context.Context, name string, args any, o CallOptions) (*mcp.CallToolResult, error) {
	return request(ctx, c, fmt.Sprintf("tools/call %q", name), "",
		func(ctx context.Context, sess *session) (*mcp.CallToolResult, error) {
			p := &mcp.CallToolParams{Name: name, Arguments: args, Meta: forwardMeta(o.Meta)}
			if o.OnProgress == nil {
				return sess.cs.CallTool(ctx, p)
			}
			complete := make(chan struct{})
			var once sync.Once
			token := c.s.progress.add(func(n *mcp.ProgressNotificationParams) {
				o.OnProgress(n)
				if n.Total > 0 && n.Progress >= n.Total {
					once.Do(func() { close(complete) })
				}
			})
			defer c.s.progress.remove(token)
			p.SetProgressToken(token)
			res, err := sess.cs.CallTool(ctx, p)
			if err == nil {
				// The SDK may hand a notification to its handler after the response that
				// overtook it: give progress the server sent before its result a moment to
				// arrive, unless the last step was seen already.
				t := time.NewTimer(progressLinger)
				select {
				case <-complete:
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
			return res, err
		})
}

// progressLinger bounds how long a call that asked for progress waits, after its result,
// for progress notifications the SDK delivers late.
const progressLinger = 25 * time.Millisecond

// ReadResource passes resources/read through to the server (see CallToolWith for the
// bounds and errors). A server without the resources capability gets no request: the error
// wraps ErrNotSupported.
func (c *Conn) ReadResource(ctx context.Context, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if p == nil {
		p = &mcp.ReadResourceParams{}
	}
	return request(ctx, c, fmt.Sprintf("resources/read %q", p.URI), capResources,
		func(ctx context.Context, sess *session) (*mcp.ReadResourceResult, error) {
			return sess.cs.ReadResource(ctx, p)
		})
}

// GetPrompt passes prompts/get through to the server (see CallToolWith for the bounds and
// errors). A server without the prompts capability gets no request: ErrNotSupported.
func (c *Conn) GetPrompt(ctx context.Context, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if p == nil {
		p = &mcp.GetPromptParams{}
	}
	return request(ctx, c, fmt.Sprintf("prompts/get %q", p.Name), capPrompts,
		func(ctx context.Context, sess *session) (*mcp.GetPromptResult, error) {
			return sess.cs.GetPrompt(ctx, p)
		})
}

// Complete passes completion/complete through to the server (see CallToolWith for the
// bounds and errors). A server without the completions capability gets no request:
// ErrNotSupported.
func (c *Conn) Complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return request(ctx, c, "completion/complete", capCompletions,
		func(ctx context.Context, sess *session) (*mcp.CompleteResult, error) {
			q := *p
			q.Meta = forwardMeta(p.Meta)
			return sess.cs.Complete(ctx, &q)
		})
}

// forwardMeta is the part of a caller's _meta that goes upstream: not its progress token
// (the session has its own, see CallOptions.OnProgress) nor the io.modelcontextprotocol/
// keys, which describe the caller's own session (2026-07-28 sends its protocol version,
// client info and capabilities there) and would make a stateful server refuse the request.
func forwardMeta(m map[string]any) map[string]any {
	var out map[string]any
	for k, v := range m {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

// capability names a server capability a request needs ("" for none).
type capability string

const (
	capResources   capability = "resources"
	capSubscribe   capability = "resources.subscribe"
	capPrompts     capability = "prompts"
	capCompletions capability = "completions"
	capLogging     capability = "logging"
)

// has reports whether the session's server advertised capability c.
func (x *session) has(c capability) bool {
	var caps *mcp.ServerCapabilities
	if x.init != nil {
		caps = x.init.Capabilities
	}
	if caps == nil {
		return c == ""
	}
	switch c {
	case capResources:
		return caps.Resources != nil
	case capSubscribe:
		return caps.Resources != nil && caps.Resources.Subscribe
	case capPrompts:
		return caps.Prompts != nil
	case capCompletions:
		return caps.Completions != nil
	case capLogging:
		//lint:ignore SA1019 logging, roots and sampling are deprecated (SEP-2577), not removed: passed through for whoever still uses them
		return caps.Logging != nil
	}
	return true
}

// request is the one path every request to the server takes: make the connection ready,
// check the capability the method needs (need; "" for none), run do under ctx and the
// Spec's ToolTimeout, cut it short when the session dies, and classify its failure. what
// names the request in errors (`tools/call "x"`).
func request[R any](ctx context.Context, c *Conn, what string, need capability,
	do func(context.Context, *session) (R, error)) (R, error) {
	if c.released.Load() {
		var zero R
		return zero, c.closedErr()
	}
	return sharedRequest(ctx, c.s, what, need, do)
}

// sharedRequest is request on behalf of the connection itself rather than a live handle
// (a released handle's unsubscribe).
func sharedRequest[R any](ctx context.Context, s *shared, what string, need capability,
	do func(context.Context, *session) (R, error)) (R, error) {
	var zero R
	sess, err := s.ready(ctx)
	if err != nil {
		return zero, err
	}
	spec := &s.spec
	if !sess.has(need) {
		return zero, notSupported(spec, what, need)
	}
	callCtx, cancelTimeout := context.WithTimeoutCause(ctx, spec.ToolTimeout, ErrToolTimeout)
	defer cancelTimeout()
	callCtx, cancelDead := context.WithCancelCause(callCtx)
	defer cancelDead(nil)
	stop := context.AfterFunc(sess.dead, func() { cancelDead(context.Cause(sess.dead)) })
	defer stop()

	res, err := do(callCtx, sess)
	if err == nil {
		return res, nil
	}
	return zero, s.classify(ctx, callCtx, sess, what, err)
}

// classify turns a failed request into the package's error: the server's own JSON-RPC
// answer, a timeout, the caller giving up, or a lost session (with the exit status).
func (s *shared) classify(ctx, callCtx context.Context, sess *session, what string, err error) error {
	spec := &s.spec
	var own *Error
	switch {
	case errors.As(err, &own) && own.Server == spec.Name:
		return err // already ours
	case isServerAnswer(err):
		// The server answered with a JSON-RPC error; the session is fine.
		return newError(spec, nil, "rejected "+what, err)
	case errors.Is(context.Cause(callCtx), ErrToolTimeout) && ctx.Err() == nil:
		return newError(spec, ErrToolTimeout, fmt.Sprintf("did not answer %s within %s", what, spec.ToolTimeout), nil)
	case ctx.Err() != nil && sess.dead.Err() == nil:
		return newError(spec, nil, what+" abandoned", ctx.Err())
	}
	if sess.stderr != nil {
		// A stdio transport error: the server is probably gone. Give the watcher a moment
		// to reap it, so the error can say why (exit status, stderr).
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-sess.dead.Done():
		case <-t.C:
		}
	}
	if sess.dead.Err() != nil {
		return newError(spec, nil, "lost "+what, context.Cause(sess.dead))
	}
	return newError(spec, nil, "failed "+what, err)
}

// notSupported is the error for a request the server's capabilities rule out.
func notSupported(spec *Spec, what string, need capability) error {
	return newError(spec, ErrNotSupported, fmt.Sprintf("does not support %s (no %s capability)", what, need), nil)
}

// progressRoutes maps the progress tokens of calls in flight to their callbacks. Tokens
// are unique for the lifetime of the shared connection, so a late notification for a
// finished call never reaches a newer one. It is safe for concurrent use.
type progressRoutes struct {
	mu     sync.Mutex
	seq    uint64
	routes map[string]func(*mcp.ProgressNotificationParams)
}

func (p *progressRoutes) add(fn func(*mcp.ProgressNotificationParams)) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	token := "warden-" + strconv.FormatUint(p.seq, 10)
	if p.routes == nil {
		p.routes = map[string]func(*mcp.ProgressNotificationParams){}
	}
	p.routes[token] = fn
	return token
}

func (p *progressRoutes) remove(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.routes, token)
}

// deliver passes a progress notification to the call whose token it carries; others are
// dropped. It runs on the session's notification goroutine.
func (p *progressRoutes) deliver(n *mcp.ProgressNotificationParams) {
	if n == nil {
		return
	}
	token, ok := n.ProgressToken.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	fn := p.routes[token]
	p.mu.Unlock()
	if fn == nil {
		return
	}
	cp := *n
	cp.ProgressToken = nil
	fn(&cp)
}
