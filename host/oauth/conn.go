package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/warden-mcp/warden/host/oauth/store"
)

// Handler returns the OAuth handler of one connection to the server k names, for
// mcp.StreamableClientTransport.OAuthHandler: it sends k's stored token (only k's: an
// executor-owned login's token is sent only on its executor's connections, because the
// key's owner is the environment the connection runs in), refreshes it before it expires,
// and on a 401 refreshes once. It never starts a login: without a usable login the
// connection fails with ErrNotLoggedIn or ErrExpired, naming the fix.
//
// The handler reads the store on its first request and again when its token nears expiry
// or is refused, so a login or refresh by another process (warden oauth login) is picked
// up, and a server that needs no token costs nothing per request.
func (m *Manager) Handler(k store.Key) auth.OAuthHandler {
	return &connHandler{m: m, key: k}
}

type connHandler struct {
	m   *Manager
	key store.Key

	mu        sync.Mutex
	loaded    bool        // cached holds what the store had (possibly nothing)
	cached    store.Entry // the last entry read; AccessToken "" when none
	refreshed string      // the access token a 401-triggered refresh replaced
}

var _ auth.OAuthHandler = (*connHandler)(nil)

// TokenSource implements auth.OAuthHandler.
func (h *connHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h: h, ctx: ctx}, nil
}

type tokenSource struct {
	h   *connHandler
	ctx context.Context
}

// Token is the token for the next request: nil (no Authorization header) without a
// usable login, so that the server's 401 reaches Authorize.
func (ts tokenSource) Token() (*oauth2.Token, error) {
	h := ts.h
	if h.m.Expired(h.key) != "" {
		return nil, nil
	}
	h.mu.Lock()
	e, loaded := h.cached, h.loaded
	h.mu.Unlock()
	// What was read stands until it is near expiry or the server refuses it (Authorize
	// reads the store again): a server that needs no token costs no store read per request.
	if !loaded || (e.AccessToken != "" && !fresh(e)) {
		var err error
		if e, _, err = h.m.o.Store.Get(ts.ctx, h.key); err != nil {
			return nil, fmt.Errorf("MCP server %q: reading its OAuth login: %w", h.key.Server, err)
		}
		h.remember(e)
	}
	if e.AccessToken == "" {
		return nil, nil
	}
	if !fresh(e) && e.HasRefreshToken() {
		ne, err := h.refresh(ts.ctx, e.AccessToken)
		if err != nil {
			if errors.Is(err, ErrExpired) {
				return nil, nil // the 401 reports it
			}
			return nil, err
		}
		e = ne
	}
	return e.Token(), nil
}

func (h *connHandler) remember(e store.Entry) {
	h.mu.Lock()
	h.cached, h.loaded = e, true
	h.mu.Unlock()
}

// fresh reports whether e's access token is usable for RefreshMargin more.
func fresh(e store.Entry) bool {
	return e.AccessToken != "" && (e.Expiry.IsZero() || time.Until(e.Expiry) > RefreshMargin)
}

// Authorize implements auth.OAuthHandler: called on a 401 or 403, it makes a retry worth
// trying — a token someone else stored meanwhile, or one refresh of the refused token —
// or fails with why not.
func (h *connHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenge := resp.Header.Values("WWW-Authenticate")
	status := resp.Status
	forbidden := resp.StatusCode == http.StatusForbidden
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	name := h.key.Server
	if forbidden {
		return fmt.Errorf("MCP server %q: %w (%s%s)", name, ErrForbidden, status, challengeError(challenge))
	}
	used := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if why := h.m.Expired(h.key); why != "" {
		h.m.waitFor(h.key, used)
		return fmt.Errorf("MCP server %q: %w: %s; log in again (warden oauth login %s, or mcpServer/oauth/login)", name, ErrExpired, why, name)
	}
	e, ok, err := h.m.o.Store.Get(ctx, h.key)
	switch {
	case err != nil:
		return fmt.Errorf("MCP server %q: reading its OAuth login: %w", name, err)
	case !ok || e.AccessToken == "":
		h.m.waitFor(h.key, "")
		return fmt.Errorf("MCP server %q %w: log in with `warden oauth login %s` (or mcpServer/oauth/login)", name, ErrNotLoggedIn, name)
	case e.AccessToken != used:
		h.remember(e) // a newer token than the refused one: try it
		return nil
	case !e.HasRefreshToken():
		why := "the server refused the access token and the login has no refresh token"
		h.m.markExpired(h.key, why)
		h.m.waitFor(h.key, used)
		return fmt.Errorf("MCP server %q: %w: %s; log in again (warden oauth login %s)", name, ErrExpired, why, name)
	}
	h.mu.Lock()
	again := h.refreshed == used
	h.mu.Unlock()
	if again {
		return fmt.Errorf("MCP server %q: the server refused a freshly refreshed OAuth token (%s%s)", name, status, challengeError(challenge))
	}
	if _, err := h.refresh(ctx, used); err != nil {
		return err
	}
	return nil
}

// refresh replaces the token from (the one a request used) under the store's lock: if
// the stored token is already another one, someone refreshed first and that one is used.
// A refusal of the refresh token (invalid_grant) marks the login expired.
func (h *connHandler) refresh(ctx context.Context, from string) (store.Entry, error) {
	name := h.key.Server
	var out store.Entry
	err := h.m.o.Store.Update(ctx, h.key, func(old store.Entry, ok bool) (store.Entry, bool, error) {
		switch {
		case !ok || old.AccessToken == "":
			return old, false, fmt.Errorf("MCP server %q %w: log in with `warden oauth login %s`", name, ErrNotLoggedIn, name)
		case old.AccessToken != from && fresh(old):
			out = old
			return old, false, nil
		case !old.HasRefreshToken():
			return old, false, fmt.Errorf("MCP server %q: %w: the token expired and there is no refresh token", name, ErrExpired)
		case old.TokenURL == "":
			return old, false, fmt.Errorf("MCP server %q: %w: the stored login has no token endpoint to refresh at", name, ErrExpired)
		}
		client, err := h.m.client(h.key.Owner)
		if err != nil {
			return old, false, err
		}
		cfg := oauth2.Config{ClientID: old.ClientID, ClientSecret: old.ClientSecret, Scopes: old.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: old.TokenURL, AuthStyle: authStyle(old.TokenAuth)}}
		// A token with only a refresh token makes the source refresh at once.
		tok, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, client),
			&oauth2.Token{RefreshToken: old.RefreshToken}).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
				return old, false, &refusedRefresh{err: describe(err)}
			}
			return old, false, fmt.Errorf("MCP server %q: refreshing its OAuth token: %w", name, describe(err))
		}
		out = old.WithToken(tok)
		return out, true, nil
	})
	var rr *refusedRefresh
	if errors.As(err, &rr) {
		why := "the authorization server refused the refresh token (" + rr.err.Error() + ")"
		h.m.markExpired(h.key, why)
		h.m.waitFor(h.key, from)
		return store.Entry{}, fmt.Errorf("MCP server %q: %w: %s; log in again (warden oauth login %s, or mcpServer/oauth/login)", name, ErrExpired, why, name)
	}
	if err != nil {
		return store.Entry{}, err
	}
	h.mu.Lock()
	h.cached, h.loaded, h.refreshed = out, true, from
	h.mu.Unlock()
	h.m.log.Debug("OAuth token refreshed", "owner", h.key.Owner, "server", name, "expiry", out.Expiry)
	return out, nil
}

type refusedRefresh struct{ err error }

func (r *refusedRefresh) Error() string { return r.err.Error() }

// challengeError is ", error=CODE" from a Bearer challenge, or "".
func challengeError(values []string) string {
	cs, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil {
		return ""
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] != "" {
			return ", error=" + printable(c.Params["error"])
		}
	}
	return ""
}
