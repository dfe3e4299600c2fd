package mcpconn

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientHandler answers the requests a server sends its client, for a connection that is
// one client's own (Spec.Client). Methods are called concurrently from the session's
// goroutines with a context that ends with the server's request; they must honour it.
//
// On a session of protocol 2026-07-28, a server asks for sampling, elicitation or roots
// inside the answer to a tools/call, prompts/get or resources/read (multi round-trip); the
// go-sdk then calls CreateMessage and Elicit with the context of that originating call
// (the ctx given to CallToolWith, GetPrompt or ReadResource, so also bounded by the Spec's
// ToolTimeout), which is how a caller can tell which of its requests caused them. On older
// sessions the server sends real requests, and the context is that request's own. Roots are the exception there: the go-sdk
// answers a multi round-trip roots request from the client's own root list, which this
// package keeps equal to ListRoots (read once when the session starts, and again on
// Conn.NotifyRootsChanged).
type ClientHandler interface {
	// Capabilities is what the session declares in initialize (sampling, elicitation,
	// roots); read once per connection attempt. Roots are declared when RootsV2 is set (or
	// the deprecated Roots field has ListChanged).
	Capabilities() *mcp.ClientCapabilities
	// CreateMessage answers sampling/createMessage (only if Sampling is declared).
	CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit answers elicitation/create (only if Elicitation is declared).
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots answers roots/list (only if roots are declared).
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
}

// clientOptions builds the session's client options: with no ClientHandler, no capability
// at all (a server's sampling, elicitation and roots requests get the go-sdk's standard
// answers: refused, refused, an empty list); with one, exactly its capabilities, each
// routed to it.
func (s *shared) clientOptions(sess *session) (*mcp.ClientOptions, *mcp.ClientCapabilities) {
	o := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		// These run on the session's read goroutine: only signal, or queue and return.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal(sess.refreshTools) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			signal(sess.refreshResources)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { signal(sess.refreshPrompts) },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if r.Params != nil {
				s.notify(sess, Event{Kind: EventResourceUpdated, URI: r.Params.URI})
			}
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if r.Params != nil {
				s.notify(sess, Event{Kind: EventLog, Log: r.Params})
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.progress.deliver(r.Params)
		},
	}
	h := s.spec.Client
	if h == nil {
		return o, nil
	}
	caps := h.Capabilities()
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	decl := *caps // the SDK copies it again; the handler's value is never modified
	if decl.RootsV2 == nil && decl.Roots.ListChanged {
		decl.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	o.Capabilities = &decl
	if decl.Sampling != nil {
		o.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return h.CreateMessage(ctx, r.Params)
		}
	}
	if decl.Elicitation != nil {
		o.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return h.Elicit(ctx, r.Params)
		}
	}
	return o, &decl
}

// routeClientRequests makes a legacy roots/list request from the server reach the ClientHandler
// (the go-sdk would answer it from the client's root list), and an elicitation/create go to
// it as the server sent it: the SDK's own check of the requested schema is stricter than
// the specification (it refuses SEP-1330's multi-select enums), and the client the handler
// asks checks the schema itself.
func routeClientRequests(h ClientHandler, decl *mcp.ClientCapabilities) mcp.Middleware {
	//lint:ignore SA1019 roots are deprecated (SEP-2577), not removed
	roots, elicit := decl.RootsV2 != nil, decl.Elicitation != nil
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch {
			case method == "roots/list" && roots:
				res, err := h.ListRoots(ctx)
				if err == nil && res == nil {
					res = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
				}
				return res, err
			case method == "elicitation/create" && elicit:
				if p, ok := req.GetParams().(*mcp.ElicitParams); ok && p != nil && (p.Mode == "" || p.Mode == "form") {
					return h.Elicit(ctx, p)
				}
			}
			return next(ctx, method, req)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// rootMirror is the session client's root list, kept equal to the ClientHandler's: the
// go-sdk answers multi round-trip roots requests from it, and changing it is the only way
// its public API sends notifications/roots/list_changed. It is safe for concurrent use.
type rootMirror struct {
	mu    sync.Mutex
	roots map[string]*mcp.Root // by URI
}

// sync makes client's roots equal to roots. On a connected client each change notifies the
// server (at most two notifications: one for removals, one for the rest).
func (m *rootMirror) sync(client *mcp.Client, roots []*mcp.Root) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := map[string]*mcp.Root{}
	for _, r := range roots {
		if r != nil {
			next[r.URI] = r
		}
	}
	var gone []string
	for uri := range m.roots {
		if next[uri] == nil {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		client.RemoveRoots(gone...)
	}
	if len(next) > 0 {
		client.AddRoots(slices.Collect(maps.Values(next))...)
	}
	m.roots = next
}

// primeRoots reads the handler's roots into the session's client before it connects (so
// no notification is sent), when roots are declared.
func (s *shared) primeRoots(ctx context.Context, sess *session, decl *mcp.ClientCapabilities) {
	if decl == nil || decl.RootsV2 == nil {
		return
	}
	res, err := s.spec.Client.ListRoots(ctx)
	if err != nil {
		// Expected while the client is still initializing (the front door asks again and
		// sends roots/list_changed once it can).
		s.log.Debug("reading the client's roots failed; the server sees none until NotifyRootsChanged",
			"error", newError(&s.spec, nil, "roots/list (client)", err))
		return
	}
	if res != nil {
		sess.roots.sync(sess.client, res.Roots)
	}
}

// NotifyRootsChanged tells the server that the client's roots changed
// (notifications/roots/list_changed): it reads ClientHandler.ListRoots, bounded by ctx and
// the Spec's ToolTimeout, and updates the session's root list, which notifies the server
// (within the go-sdk's own 10s bound). It needs a Spec.Client that declares
// roots.listChanged, else the error wraps ErrNotSupported; a connection that is not ready
// is made ready first (and reads the roots as it starts).
func (c *Conn) NotifyRootsChanged(ctx context.Context) error {
	h := c.s.spec.Client
	_, err := request(ctx, c, "notifications/roots/list_changed", "",
		func(ctx context.Context, sess *session) (struct{}, error) {
			if h == nil || sess.decl == nil || sess.decl.RootsV2 == nil || !sess.decl.RootsV2.ListChanged {
				return struct{}{}, newError(&c.s.spec, ErrNotSupported,
					"cannot send notifications/roots/list_changed: its client does not declare roots.listChanged", nil)
			}
			res, err := h.ListRoots(ctx)
			if err != nil {
				return struct{}{}, fmt.Errorf("the client's roots/list: %w", err)
			}
			var roots []*mcp.Root
			if res != nil {
				roots = res.Roots
			}
			sess.roots.sync(sess.client, roots)
			return struct{}{}, nil
		})
	return err
}
