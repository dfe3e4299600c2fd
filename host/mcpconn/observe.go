package mcpconn

import (
	"cmp"
	"slices"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

// SessionInfo is one shared connection as an observer (the status page) sees it: names,
// counts and states, never a credential, an environment value or a URL's query string.
type SessionInfo struct {
	// Key is the sharing key (Spec.Key, a digest): threads whose servers have this key share
	// the session. ShortKey is its first 12 characters, as the logs print it.
	Key, ShortKey string
	// Server is the server's name, Transport its transport, Environment where it runs
	// ("local" or an executor id).
	Server, Transport, Environment string
	// Refs is how many handles hold the connection (a thread's server holds one); 0 during
	// an idle grace period.
	Refs int
	// State is starting, ready or failed; Error is the failure, "" otherwise (an *Error's
	// text: it names the server and holds no credential value; URLs in it are redacted).
	State State
	Error string
	// Restarts counts the starts after a session of the connection was ready.
	Restarts int
	// ReadySince is when the current session became ready (zero unless State is ready).
	ReadySince time.Time
	// PID is the stdio server's process id (0 for HTTP, an executor-run server, or no
	// process yet).
	PID int
	// Tools is the size of the session's tool catalog (before any thread's filter).
	Tools int
}

// Sessions lists the open shared connections, sorted by server name then key. It takes each
// connection's lock briefly and never waits for a connection attempt.
func (m *Manager) Sessions() []SessionInfo {
	m.mu.Lock()
	all := make([]*shared, 0, len(m.conns))
	for _, s := range m.conns {
		all = append(all, s)
	}
	m.mu.Unlock()
	out := make([]SessionInfo, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// OpenSessions is the number of open shared connections (what Sessions would list).
func (m *Manager) OpenSessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

func (s *shared) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.statusLocked()
	in := SessionInfo{
		Key: s.spec.Key, ShortKey: shortKey(s.spec.Key),
		Server: s.spec.Name, Transport: string(s.spec.Transport),
		Environment: cmp.Or(s.spec.Environment, config.LocalEnvironment),
		Refs:        s.refs, State: st.State, Restarts: s.restarts,
	}
	if st.Err != nil {
		in.Error = RedactURLs(st.Err.Error())
	}
	if st.State == StateReady {
		in.ReadySince = s.readyAt
		in.Tools = len(s.cat.tools)
		if s.sess != nil {
			in.PID = int(s.sess.pid.Load())
		}
	}
	return in
}
