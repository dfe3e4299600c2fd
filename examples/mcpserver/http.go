package main

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpPath is where the streamable HTTP endpoint is served.
const mcpPath = "/mcp"

// newHTTPHandler returns the full HTTP handler: /mcp wrapped (outermost
// first) in the first-request delay, the header requirements and the method
// counter. Requests rejected with 401 are not counted.
func newHTTPHandler(server *mcp.Server, o options, counter *methodCounter, logger *slog.Logger) http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: o.stateless, Logger: logger},
	)
	h = countingHandler(counter, h)
	h = requireHeaders(o.requirements, logger, h)
	h = delayFirst(o.firstResponseDelay, h)
	mux := http.NewServeMux()
	mux.Handle(mcpPath, h)
	return mux
}

// delayFirst delays the first request it sees by d (or until the request is
// cancelled); later requests pass straight through.
func delayFirst(d time.Duration, next http.Handler) http.Handler {
	if d <= 0 {
		return next
	}
	var seen atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.CompareAndSwap(false, true) {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// requireHeaders rejects with 401 any request missing one of reqs. It never
// logs or echoes the expected or received values.
func requireHeaders(reqs []headerRequirement, logger *slog.Logger, next http.Handler) http.Handler {
	if len(reqs) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, req := range reqs {
			if headerMatches(r.Header, req) {
				continue
			}
			_, present := r.Header[req.header]
			logger.Info("rejecting request", "method", r.Method, "header", req.header, "present", present, "expected_from_env", req.envVar)
			if req.bearer {
				w.Header().Set("WWW-Authenticate", `Bearer realm="warden-example"`)
			}
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func headerMatches(h http.Header, req headerRequirement) bool {
	got := h.Get(req.header)
	if req.bearer {
		scheme, token, ok := strings.Cut(got, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		got = token
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(req.value)) == 1
}
