package mcpconn

//lint:file-ignore SA1019 roots, sampling and logging are deprecated by protocol 2026-07-28 (SEP-2577), not removed: a gateway passes them through for the servers and clients that use them

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// features is what the handles of one connection asked of its session: resource
// subscriptions (reference-counted by URI) and log levels. Each new session is told all
// of it again. Guarded by shared.mu; changed under shared.featMu.
type features struct {
	subs   map[string]int            // URI → number of handles subscribed
	uris   map[*Conn]map[string]bool // each handle's subscriptions
	levels map[*Conn]mcp.LoggingLevel
	sent   mcp.LoggingLevel // the level the current session was last told
}

func newFeatures() features {
	return features{subs: map[string]int{}, uris: map[*Conn]map[string]bool{}, levels: map[*Conn]mcp.LoggingLevel{}}
}

// logLevels are MCP's levels, most verbose first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// effectiveLevel is the most verbose level any handle asked for ("" if none did).
func (f *features) effectiveLevel() mcp.LoggingLevel {
	best := -1
	for _, l := range f.levels {
		if i := slices.Index(logLevels, l); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return logLevels[best]
}

// SubscribeResource subscribes this handle to updates of the resource uri: the server's
// notifications/resources/updated for it arrive as EventResourceUpdated (to every
// subscriber of the connection; filtering by URI is the caller's job). Subscriptions are
// counted across the handles of a connection: only the first handle subscribing to a URI
// sends resources/subscribe, and a restarted session is subscribed again to every URI
// still subscribed. Subscribing twice is one subscription. A server without
// resources.subscribe gets no request: the error wraps ErrNotSupported. The request is
// bounded like CallToolWith's.
func (c *Conn) SubscribeResource(ctx context.Context, uri string) error {
	s := c.s
	s.featMu.Lock()
	defer s.featMu.Unlock()
	if c.released.Load() {
		return c.closedErr()
	}
	s.mu.Lock()
	if s.feats.uris[c][uri] {
		s.mu.Unlock()
		return nil
	}
	// Counted before the request, so a session that restarts meanwhile subscribes too.
	first := s.feats.subs[uri] == 0
	s.feats.addURI(c, uri)
	s.mu.Unlock()
	if !first {
		return nil
	}
	_, err := request(ctx, c, fmt.Sprintf("resources/subscribe %q", uri), capSubscribe,
		func(ctx context.Context, sess *session) (struct{}, error) {
			return struct{}{}, sess.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		})
	if err != nil {
		s.mu.Lock()
		s.feats.removeURI(c, uri)
		s.mu.Unlock()
	}
	return err
}

// UnsubscribeResource ends this handle's subscription to uri (nothing if it has none). The
// last handle unsubscribing sends resources/unsubscribe to a ready session; a connection
// that is not ready is not started for it. Release unsubscribes a handle from everything.
func (c *Conn) UnsubscribeResource(ctx context.Context, uri string) error {
	s := c.s
	s.featMu.Lock()
	defer s.featMu.Unlock()
	if c.released.Load() {
		return c.closedErr()
	}
	return s.unsubscribe(ctx, c, uri)
}

// unsubscribe drops c's subscription to uri (s.featMu held) and tells a ready session when
// it was the last.
func (s *shared) unsubscribe(ctx context.Context, c *Conn, uri string) error {
	s.mu.Lock()
	if !s.feats.uris[c][uri] {
		s.mu.Unlock()
		return nil
	}
	last := s.feats.removeURI(c, uri)
	ready := s.state == stateReady && !s.closed
	s.mu.Unlock()
	if !last || !ready {
		return nil
	}
	_, err := sharedRequest(ctx, s, fmt.Sprintf("resources/unsubscribe %q", uri), capSubscribe,
		func(ctx context.Context, sess *session) (struct{}, error) {
			return struct{}{}, sess.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		})
	return err
}

func (f *features) addURI(c *Conn, uri string) {
	if f.uris[c] == nil {
		f.uris[c] = map[string]bool{}
	}
	f.uris[c][uri] = true
	f.subs[uri]++
}

// removeURI drops c's subscription to uri and reports whether it was the last one.
func (f *features) removeURI(c *Conn, uri string) bool {
	delete(f.uris[c], uri)
	if len(f.uris[c]) == 0 {
		delete(f.uris, c)
	}
	f.subs[uri]--
	if f.subs[uri] > 0 {
		return false
	}
	delete(f.subs, uri)
	return true
}

// SetLogLevel sets the level of log messages this handle wants (logging/setLevel). The
// shared session is told the most verbose level any live handle asked for, and a restarted
// session is told it again; a handle's Release recomputes it (with no handle asking, the
// session keeps its last level). Every subscriber gets every EventLog at the session's
// level: filtering for a handle's own level is the caller's job. A server without the
// logging capability gets no request: ErrNotSupported. The request is bounded like
// CallToolWith's.
func (c *Conn) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	s := c.s
	if !slices.Contains(logLevels, level) {
		return newError(&s.spec, nil, fmt.Sprintf("cannot set log level %q (want one of %v)", level, logLevels), nil)
	}
	s.featMu.Lock()
	defer s.featMu.Unlock()
	if c.released.Load() {
		return c.closedErr()
	}
	s.mu.Lock()
	prev, had := s.feats.levels[c]
	s.feats.levels[c] = level
	s.mu.Unlock()
	err := s.applyLevel(ctx, c, true)
	if err != nil {
		s.mu.Lock()
		if had {
			s.feats.levels[c] = prev
		} else {
			delete(s.feats.levels, c)
		}
		s.mu.Unlock()
	}
	return err
}

// applyLevel tells the session the effective level if it changed (s.featMu held). With
// start false a connection that is not ready is left alone (Release); with start true it
// is made ready, as any request does.
func (s *shared) applyLevel(ctx context.Context, c *Conn, start bool) error {
	s.mu.Lock()
	eff, sent := s.feats.effectiveLevel(), s.feats.sent
	ready := s.state == stateReady && !s.closed
	s.mu.Unlock()
	if eff == "" || (eff == sent && ready) || (!start && !ready) {
		return nil
	}
	do := func(ctx context.Context, sess *session) (struct{}, error) {
		return struct{}{}, sess.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: eff})
	}
	what := fmt.Sprintf("logging/setLevel %q", eff)
	var err error
	if start {
		_, err = request(ctx, c, what, capLogging, do)
	} else {
		_, err = sharedRequest(ctx, s, what, capLogging, do)
	}
	if err == nil {
		s.mu.Lock()
		s.feats.sent = eff
		s.mu.Unlock()
	}
	return err
}

// dropFeatures forgets what released handle c asked for: its subscriptions (the last
// handle of a URI unsubscribes a ready session) and its log level (recomputed). It is
// bounded by the Spec's ToolTimeout per request and never starts the server.
func (s *shared) dropFeatures(c *Conn) {
	s.featMu.Lock()
	defer s.featMu.Unlock()
	s.mu.Lock()
	uris := slices.Sorted(maps.Keys(s.feats.uris[c]))
	_, hadLevel := s.feats.levels[c]
	delete(s.feats.levels, c)
	s.mu.Unlock()
	for _, uri := range uris {
		if err := s.unsubscribe(s.ctx, c, uri); err != nil {
			s.log.Warn("resources/unsubscribe at release failed", "error", err)
		}
	}
	if hadLevel {
		if err := s.applyLevel(s.ctx, c, false); err != nil {
			s.log.Warn("logging/setLevel at release failed", "error", err)
		}
	}
}

// reapply tells a new session, before it is published, what the handles asked of the
// previous one: every subscribed URI and the effective log level. Failures are logged;
// the session is used anyway.
func (s *shared) reapply(ctx context.Context, sess *session) {
	s.mu.Lock()
	uris := slices.Sorted(maps.Keys(s.feats.subs))
	level := s.feats.effectiveLevel()
	s.feats.sent = ""
	s.mu.Unlock()
	if len(uris) > 0 && sess.has(capSubscribe) {
		for _, uri := range uris {
			if err := sess.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				s.log.Warn("re-subscribing after a restart failed",
					"error", newError(&s.spec, nil, fmt.Sprintf("resources/subscribe %q", uri), err))
			}
		}
	}
	if level != "" && sess.has(capLogging) {
		if err := sess.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			s.log.Warn("re-applying the log level after a restart failed",
				"error", newError(&s.spec, nil, fmt.Sprintf("logging/setLevel %q", level), err))
			return
		}
		s.mu.Lock()
		s.feats.sent = level
		s.mu.Unlock()
	}
}
