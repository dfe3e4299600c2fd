package authtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// prmPath is where RFC 9728 protected resource metadata lives.
const prmPath = "/.well-known/oauth-protected-resource"

// maxResourceBody caps a request body the wrapper lets through to the MCP handler.
const maxResourceBody = 4 << 20

// Resource is an http.Handler that makes an MCP handler an OAuth-protected resource of
// its Server. It must be served at the root of its HTTP server: it answers the RFC 9728
// metadata paths itself and checks the bearer token of every other request. Its
// methods are safe for concurrent use.
type Resource struct {
	s      *Server
	next   http.Handler
	scopes []string

	mu   sync.Mutex
	seen []ResourceRecord
}

// Resource wraps next. A request needs a token s issued for this resource's URL, not
// expired, carrying every one of scopes; scopes are also advertised as the resource's
// scopes_supported and in the challenge, which is where the go-sdk client takes the
// scopes it asks for.
func (s *Server) Resource(next http.Handler, scopes ...string) *Resource {
	s.addScopes(scopes)
	return &Resource{s: s, next: next, scopes: slices.Clone(scopes)}
}

// Seen returns every request the resource saw (metadata fetches excluded), oldest first.
// The records hold the Authorization headers as Secrets: compare them, do not print
// their Reveal.
func (res *Resource) Seen() []ResourceRecord {
	res.mu.Lock()
	defer res.mu.Unlock()
	return slices.Clone(res.seen)
}

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (res *Resource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == prmPath || strings.HasPrefix(r.URL.Path, prmPath+"/") {
		res.serveMetadata(w, r)
		return
	}
	rec := ResourceRecord{Method: r.Method, Path: r.URL.Path, Authorization: Secret(r.Header.Get("Authorization"))}
	resourceURL := baseURL(r) + r.URL.Path
	challenge := fmt.Sprintf("Bearer resource_metadata=%q", baseURL(r)+prmPath+r.URL.Path)
	if len(res.scopes) > 0 {
		challenge += fmt.Sprintf(", scope=%q", strings.Join(res.scopes, " "))
	}
	reject := func(status int, code, desc string) {
		rec.Status, rec.Error = status, code
		res.record(rec)
		c := challenge
		if code != "" {
			c += fmt.Sprintf(", error=%q, error_description=%q", code, desc)
		}
		w.Header().Set("WWW-Authenticate", c)
		http.Error(w, desc, status)
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		reject(http.StatusUnauthorized, "", "bearer token required")
		return
	}
	rec.Token = Secret(token)
	if code, desc := res.s.checkAccess(token, resourceURL, res.scopes); code != "" {
		status := http.StatusUnauthorized
		if code == "insufficient_scope" {
			status = http.StatusForbidden
		}
		reject(status, code, desc)
		return
	}
	res.record(rec)
	r.Body = http.MaxBytesReader(w, r.Body, maxResourceBody)
	res.next.ServeHTTP(w, r)
}

func (res *Resource) record(rec ResourceRecord) {
	res.mu.Lock()
	defer res.mu.Unlock()
	res.seen = appendRecord(res.seen, rec)
}

// serveMetadata answers both discovery forms the go-sdk tries: the path-suffixed one
// (the resource is the URL of that path) and the root one (the resource is the origin).
func (res *Resource) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	resource := baseURL(r) + strings.TrimPrefix(r.URL.Path, prmPath)
	m := map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{res.s.URL()},
		"bearer_methods_supported": []string{"header"},
	}
	if len(res.scopes) > 0 {
		m["scopes_supported"] = res.scopes
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}
