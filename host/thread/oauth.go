package thread

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
)

// OAuthLoginParams are the params of Manager.OAuthLogin.
type OAuthLoginParams struct {
	// ThreadID selects the thread whose server to log in to; "" means the server as a new
	// thread selecting SelectedRoots (none: host-config and executor-config servers only)
	// would see it — planned and decided by policy, never started.
	ThreadID string
	// SelectedRoots are the roots of that new thread, when ThreadID is "".
	SelectedRoots []SelectedRoot
	// Name is the server's name.
	Name string
	// Registration is how to obtain a client when none is configured (oauth.ParseRegistration).
	Registration string
	// Scopes replace the configured (or discovered) scopes.
	Scopes []string
	// Timeout bounds the login. 0: oauth.DefaultLoginTimeout.
	Timeout time.Duration
}

// OAuthTarget is what a login is for: the server's declaration and the environment it
// runs in, which owns the login and carries its traffic.
type OAuthTarget struct {
	Decl  config.ServerDecl
	Owner string
}

// Key is the target's credential store key.
func (t OAuthTarget) Key() store.Key {
	return store.Key{Owner: t.Owner, Server: t.Decl.Name, URL: t.Decl.URL}
}

// OAuthLogin starts an OAuth login for the named server of a thread (or of a default
// thread) and returns it once its authorization URL is known. The login belongs to the
// environment the server runs in: a server in an executor gets its own login, stored
// apart from the host's and made through the executor's network. When the login ends, an
// OAuthLoginCompleted event reports it and, on success, every thread is refreshed so that
// servers that failed for want of a token start again — no thread restarts.
func (m *Manager) OAuthLogin(ctx context.Context, p OAuthLoginParams) (*oauth.Login, error) {
	if m.oauth == nil {
		return nil, ErrOAuthUnavailable
	}
	target, err := m.OAuthTarget(ctx, p.ThreadID, p.SelectedRoots, p.Name)
	if err != nil {
		return nil, err
	}
	d := &target.Decl
	req := oauth.LoginRequest{Key: target.Key(), Registration: oauth.Registration(p.Registration), Scopes: p.Scopes, Timeout: p.Timeout}
	if d.OAuth != nil {
		req.ClientID, req.CallbackPort = d.OAuth.ClientID, d.OAuth.CallbackPort
		if len(req.Scopes) == 0 {
			req.Scopes = d.OAuth.Scopes
		}
	}
	l, err := m.oauth.Start(ctx, req)
	if err != nil {
		return nil, err
	}
	ok := m.goBackground(func() {
		<-l.Done()
		ev := &OAuthLoginCompleted{ThreadID: p.ThreadID, Name: p.Name, Success: l.Err() == nil}
		if err := l.Err(); err != nil {
			ev.Error = err.Error()
		} else {
			m.CredentialsChanged(context.Background(), target.Key())
		}
		m.emit(ev)
	})
	if !ok {
		l.Cancel()
		return nil, fmt.Errorf("OAuth login: thread manager %w", ErrClosed)
	}
	return l, nil
}

// CredentialsChanged starts again, in every thread, the servers that failed before the
// credential of k changed (a new OAuth login): their restart backoff is forgotten and a
// refresh is queued for every thread (applied before its next status read or call).
func (m *Manager) CredentialsChanged(ctx context.Context, k store.Key) {
	m.conns.ClearBackoff(k.Owner, k.Server, k.URL)
	m.refreshAll(ctx, "an OAuth login")
}

// OAuthTarget finds the named streamable HTTP server as thread id lists it, or for id ""
// as a new thread selecting sel would (see OAuthLoginParams.ThreadID), for a login.
func (m *Manager) OAuthTarget(ctx context.Context, id string, sel []SelectedRoot, name string) (OAuthTarget, error) {
	var c *candidate
	if id != "" {
		t, ok := m.Thread(id)
		if !ok {
			return OAuthTarget{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
		}
		t.mu.Lock()
		if e := t.servers[name]; e != nil {
			c = e.cand
		}
		t.mu.Unlock()
		if c == nil {
			return OAuthTarget{}, fmt.Errorf("thread %s: %w named %q", id, ErrNoSuchServer, name)
		}
	} else {
		snap, err := m.current()
		if err != nil {
			return OAuthTarget{}, err
		}
		t := m.newThread(KindInteractive, StartParams{SelectedRoots: sel})
		t.ephemeral = true
		defer t.Close()
		pl, err := m.buildPlan(snap, t, nil, true)
		if err != nil {
			return OAuthTarget{}, err
		}
		in := pl.input
		verdicts := m.engine.Servers(context.WithoutCancel(ctx), &in)
		for i := range pl.cands {
			if pl.cands[i].decl.Name == name && verdicts[i].Action != abi.ServerHide {
				c = &pl.cands[i]
				break
			}
		}
		if c == nil {
			if len(sel) == 0 {
				return OAuthTarget{}, fmt.Errorf("%w named %q in a default thread (a plugin's server needs its plugin selected)", ErrNoSuchServer, name)
			}
			return OAuthTarget{}, fmt.Errorf("%w named %q in a thread selecting those roots", ErrNoSuchServer, name)
		}
	}
	d := c.decl
	switch {
	case d.Transport() != config.TransportHTTP:
		return OAuthTarget{}, fmt.Errorf("MCP server %q %w: it is a stdio server (OAuth is for streamable HTTP servers)", name, ErrNotOAuth)
	case sendsAuthorization(&d):
		return OAuthTarget{}, fmt.Errorf("MCP server %q %w: it sends its own Authorization header (bearer_token_env_var or an Authorization header)", name, ErrNotOAuth)
	}
	return OAuthTarget{Decl: d, Owner: cmp.Or(c.route, config.LocalEnvironment)}, nil
}

func sendsAuthorization(d *config.ServerDecl) bool {
	if d.BearerTokenEnvVar != "" {
		return true
	}
	for h := range d.HTTPHeaders {
		if strings.EqualFold(h, "Authorization") {
			return true
		}
	}
	for h := range d.EnvHTTPHeaders {
		if http.CanonicalHeaderKey(h) == "Authorization" {
			return true
		}
	}
	return false
}

// authStatus is the server's authentication state: a bearer token it sends itself, else
// for a streamable HTTP server its OAuth login's state — logged in, expired, or not
// logged in when it declares `oauth` or its start failed for want of a login.
func (m *Manager) authStatus(e *entry) AuthStatus {
	d := &e.cand.decl
	switch {
	case sendsAuthorization(d):
		return AuthBearerToken
	case d.Transport() != config.TransportHTTP:
		return AuthUnsupported
	}
	if m.oauth != nil {
		k := store.Key{Owner: cmp.Or(e.cand.route, config.LocalEnvironment), Server: d.Name, URL: d.URL}
		switch m.oauth.Status(context.Background(), k) {
		case oauth.StatusLoggedIn:
			return AuthOAuth
		case oauth.StatusExpired:
			return AuthExpired
		}
	}
	if e.sess != nil && e.sess.done() && e.sess.err != nil {
		switch {
		case errors.Is(e.sess.err, oauth.ErrExpired):
			return AuthExpired
		case errors.Is(e.sess.err, oauth.ErrNotLoggedIn):
			return AuthNotLoggedIn
		}
	}
	if d.OAuth != nil {
		return AuthNotLoggedIn
	}
	return AuthUnsupported
}
