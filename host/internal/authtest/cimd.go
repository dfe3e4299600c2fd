package authtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Limits on fetching a client ID metadata document.
const (
	// maxDocumentBytes follows draft-ietf-oauth-client-id-metadata-document, which has
	// the authorization server cap a document at 5 KiB.
	maxDocumentBytes = 5 << 10
	// documentTimeout bounds one fetch, so a document server that stalls fails the
	// authorization instead of holding the browser.
	documentTimeout = 10 * time.Second
)

// newDocumentClient is the HTTP client that fetches client ID metadata documents: bounded
// in time, trusting ca (else the system roots), never following a redirect (the draft
// has the document served at its URL; a redirect is a failure), no proxy (the
// authorization server reaches the document server directly) and no kept connections,
// so that nothing outlives the test.
func newDocumentClient(ca *CA) *http.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != nil {
		tc.RootCAs = ca.Pool()
	}
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:        tc,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       documentTimeout,
	}
}

// isDocumentClientID reports whether a client_id names a client ID metadata document: an
// https URL with a path (the draft: https, a path component, no fragment, no user info,
// no dot segments). Anything else is an ordinary client id.
func isDocumentClientID(id string) bool {
	if !strings.HasPrefix(id, "https://") {
		return false
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.Path == "" || u.Path == "/" {
		return false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// documentError is why a client ID metadata document cannot be used; code is the OAuth
// error the authorization endpoint records.
type documentError struct {
	code, reason string
}

func (e *documentError) Error() string { return e.reason }

// fetchDocumentClient fetches the client ID metadata document at id and returns the
// client it describes, public whatever it says (token_endpoint_auth_method none), or a
// *documentError.
func (s *Server) fetchDocumentClient(ctx context.Context, id string) (*Client, error) {
	invalid := func(format string, args ...any) error {
		return &documentError{code: "invalid_client", reason: fmt.Sprintf("client metadata document %s: ", id) + fmt.Sprintf(format, args...)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, invalid("cannot make the request: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.docs.Do(req)
	if err != nil {
		return nil, invalid("cannot be fetched: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, invalid("answered %s, want 200", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, invalid("reading it: %v", err)
	}
	if len(body) > maxDocumentBytes {
		return nil, invalid("is over %d bytes", maxDocumentBytes)
	}
	var doc struct {
		ClientID                string   `json:"client_id"`
		ClientName              string   `json:"client_name"`
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		ClientSecret            *string  `json:"client_secret"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, invalid("is not a JSON client metadata object: %v", err)
	}
	switch {
	case doc.ClientID != id:
		return nil, invalid("names client_id %s, not its own URL", strconvQuote(doc.ClientID))
	case doc.ClientSecret != nil:
		// The draft forbids a shared secret in a public document.
		return nil, invalid("carries a client_secret")
	case doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none":
		return nil, invalid("asks for token_endpoint_auth_method %s; only none is supported", strconvQuote(doc.TokenEndpointAuthMethod))
	case len(doc.RedirectURIs) == 0 || len(doc.RedirectURIs) > maxListItems:
		return nil, invalid("needs 1 to %d redirect_uris", maxListItems)
	}
	if slices.ContainsFunc(doc.RedirectURIs, func(u string) bool { return !validRedirectURI(u) }) {
		return nil, invalid("has a redirect URI that is not https, or http on loopback, without a fragment")
	}
	return &Client{ID: id, Name: doc.ClientName, RedirectURIs: doc.RedirectURIs}, nil
}

// rememberDocumentClient keeps c so that /token knows the client id /authorize accepted.
// A document fetched again replaces what was kept.
func (s *Server) rememberDocumentClient(c *Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.docClients[c.ID]; !ok && len(s.docClients) >= maxClients {
		return &documentError{code: "temporarily_unavailable", reason: "too many clients"}
	}
	s.docClients[c.ID] = c
	return nil
}
