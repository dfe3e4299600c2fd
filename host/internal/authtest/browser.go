package authtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Errors of the browser stand-in.
var (
	// ErrNotThisServer: the authorization URL does not point at this server's /authorize.
	ErrNotThisServer = errors.New("authorization URL is not this server's authorization endpoint")
	// ErrNoRedirect: /authorize answered without redirecting (an unknown client or
	// redirect URI gets an error page, as RFC 6749 requires).
	ErrNoRedirect = errors.New("authorization endpoint did not redirect")
)

// AuthorizationError is an error the authorization server sent back in the redirect,
// such as access_denied.
type AuthorizationError struct {
	Code        string
	Description string
}

func (e *AuthorizationError) Error() string {
	return fmt.Sprintf("authorization server answered %s: %s", e.Code, e.Description)
}

// AuthorizationResponse is what the redirect back to the client carried.
type AuthorizationResponse struct {
	// RedirectURL is where the browser was sent, without its query.
	RedirectURL string
	Code        Secret
	State       string
	// Iss is the RFC 9207 issuer; HasIss reports whether the parameter was there.
	Iss    string
	HasIss bool
	// Error and ErrorDescription are set when the server refused.
	Error            string
	ErrorDescription string
}

// authorize plays the browser's first leg: GET the authorization URL (consent happens
// on the server) and return the redirect it answers with.
func (s *Server) authorize(ctx context.Context, authorizationURL string) (*url.URL, error) {
	u, err := url.Parse(authorizationURL)
	if err != nil {
		return nil, fmt.Errorf("authtest: parse authorization URL: %w", err)
	}
	if u.Scheme+"://"+u.Host != s.issuer || u.Path != "/authorize" {
		return nil, fmt.Errorf("authtest: %w: %s://%s%s", ErrNotThisServer, u.Scheme, u.Host, u.Path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("authtest: authorization request: %w", err)
	}
	resp, err := s.browser.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authtest: authorization request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusFound {
		return nil, fmt.Errorf("authtest: %w: status %d: %q", ErrNoRedirect, resp.StatusCode, body)
	}
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("authtest: authorization redirect: %w", err)
	}
	return loc, nil
}

// AuthorizationCode follows authorizationURL like a browser as far as the redirect back
// to the client, and returns what the redirect carried without calling the client's
// callback. A refusal (access_denied) is a response with Error set, not an error.
func (s *Server) AuthorizationCode(ctx context.Context, authorizationURL string) (*AuthorizationResponse, error) {
	loc, err := s.authorize(ctx, authorizationURL)
	if err != nil {
		return nil, err
	}
	q := loc.Query()
	loc.RawQuery = ""
	return &AuthorizationResponse{
		RedirectURL:      loc.String(),
		Code:             Secret(q.Get("code")),
		State:            q.Get("state"),
		Iss:              q.Get("iss"),
		HasIss:           q.Has("iss"),
		Error:            q.Get("error"),
		ErrorDescription: q.Get("error_description"),
	}, nil
}

// Browse follows authorizationURL like a browser all the way: it GETs /authorize (the
// consent step runs there), then GETs the client's redirect URI with the code, state and
// iss (or the error) — so a real callback listener gets the request. It returns the
// callback's response; the caller closes its body. A refusal still goes to the
// callback, as a browser's would.
func (s *Server) Browse(ctx context.Context, authorizationURL string) (*http.Response, error) {
	loc, err := s.authorize(ctx, authorizationURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("authtest: callback request: %w", err)
	}
	resp, err := s.browser.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authtest: callback request: %w", err)
	}
	return resp, nil
}

// Fetcher is an auth.AuthorizationCodeFetcher that runs AuthorizationCode, for a
// handler whose test needs no callback listener. A refusal becomes an
// *AuthorizationError.
func (s *Server) Fetcher() auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		r, err := s.AuthorizationCode(ctx, args.URL)
		if err != nil {
			return nil, err
		}
		if r.Error != "" {
			return nil, &AuthorizationError{Code: r.Error, Description: r.ErrorDescription}
		}
		return &auth.AuthorizationResult{Code: r.Code.Reveal(), State: r.State, Iss: r.Iss}, nil
	}
}
