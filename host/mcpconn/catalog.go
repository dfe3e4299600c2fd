package mcpconn

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalog is what a session offers, read at connect and re-read on list_changed. Its slices
// are replaced, never modified, so handing them out (cloned) is safe.
type catalog struct {
	tools     []*mcp.Tool
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt
}

// maxToolPages bounds pagination against a server that keeps returning cursors; it applies
// to every list (tools, resources, resource templates, prompts).
const maxToolPages = 1000

// listAll reads a paginated list, following cursors: at most maxToolPages pages, failing on
// a repeated cursor.
func listAll[T any](ctx context.Context, method string, page func(context.Context, string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	seen := map[string]bool{}
	for range maxToolPages {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s repeated cursor %q", method, next)
		}
		seen[next] = true
		cursor = next
	}
	return nil, fmt.Errorf("%s returned more than %d pages", method, maxToolPages)
}

// listTools reads the whole tool catalog.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	return listAll(ctx, "tools/list", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
}

func listResources(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Resource, error) {
	return listAll(ctx, "resources/list", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	})
}

func listTemplates(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.ResourceTemplate, error) {
	return listAll(ctx, "resources/templates/list", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	})
}

func listPrompts(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Prompt, error) {
	return listAll(ctx, "prompts/list", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	})
}

// readOptional reads one optional catalog of a server that advertised it, into *dst. A
// failure is logged and leaves *dst as it was (empty at connect): the server's tools still
// work.
func readOptional[T any](ctx context.Context, s *shared, cs *mcp.ClientSession, method string,
	list func(context.Context, *mcp.ClientSession) ([]T, error), dst *[]T) {
	items, err := list(ctx, cs)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn(method+" failed; keeping the previous (at start: an empty) catalog",
				"error", newError(&s.spec, nil, method, err))
		}
		return
	}
	*dst = items
}

// readResources reads the resource and template catalogs into cat, if the server has
// resources.
func (s *shared) readResources(ctx context.Context, sess *session, cat *catalog) {
	if sess.has(capResources) {
		readOptional(ctx, s, sess.cs, "resources/list", listResources, &cat.resources)
		readOptional(ctx, s, sess.cs, "resources/templates/list", listTemplates, &cat.templates)
	}
}

// readPrompts reads the prompt catalog into cat, if the server has prompts.
func (s *shared) readPrompts(ctx context.Context, sess *session, cat *catalog) {
	if sess.has(capPrompts) {
		readOptional(ctx, s, sess.cs, "prompts/list", listPrompts, &cat.prompts)
	}
}

// refresher re-reads a catalog after each list_changed of its kind (signals of one kind
// are coalesced), until the session ends.
func (s *shared) refresher(sess *session) {
	defer s.m.wg.Done()
	for {
		var kind EventKind
		select {
		case <-sess.dead.Done():
			return
		case <-sess.refreshTools:
			kind = EventTools
		case <-sess.refreshResources:
			kind = EventResources
		case <-sess.refreshPrompts:
			kind = EventPrompts
		}
		ctx, cancel := context.WithTimeout(sess.dead, s.spec.StartupTimeout)
		s.mu.Lock()
		cat := s.cat // the lists are replaced, never modified: a shallow copy is a snapshot
		s.mu.Unlock()
		ok := true
		switch kind {
		case EventTools:
			tools, err := listTools(ctx, sess.cs)
			ok = err == nil
			if ok {
				cat.tools = tools
			} else if sess.dead.Err() == nil {
				s.log.Warn("re-reading the tool catalog after tools/list_changed failed; keeping the old one",
					"error", newError(&s.spec, nil, "tools/list", err))
			}
		case EventResources:
			s.readResources(ctx, sess, &cat)
		case EventPrompts:
			s.readPrompts(ctx, sess, &cat)
		}
		cancel()
		if !ok || sess.dead.Err() != nil {
			continue
		}
		s.mu.Lock()
		if s.sess != sess || s.closed {
			s.mu.Unlock()
			return
		}
		// Only this goroutine changes a ready session's catalog, so the snapshot is current.
		s.cat = cat
		s.emitLocked(Event{Kind: kind})
		s.mu.Unlock()
		s.log.Debug("catalog refreshed", "kind", kind.String())
		s.deliver()
	}
}

// String names the kind for logs.
func (k EventKind) String() string {
	switch k {
	case EventStatus:
		return "status"
	case EventTools:
		return "tools"
	case EventResources:
		return "resources"
	case EventPrompts:
		return "prompts"
	case EventResourceUpdated:
		return "resource-updated"
	case EventLog:
		return "log"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}
