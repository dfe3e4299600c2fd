package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
)

func TestJSONRPCMethods(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"tools/list"}},
		{"notification", ` {"jsonrpc":"2.0","method":"notifications/initialized"}`, []string{"notifications/initialized"}},
		{"batch", "\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{}},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}]",
			[]string{"tools/list", "tools/call", "notifications/cancelled"}},
		{"batch with response", `[{"jsonrpc":"2.0","id":7,"result":{}},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, []string{"ping"}},
		{"response only", `{"jsonrpc":"2.0","id":7,"result":{}}`, nil},
		{"garbage", `not json`, nil},
		{"bad batch", `[1,2`, nil},
		{"empty", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, jsonRPCMethods([]byte(tt.body))); diff != "" {
				t.Errorf("methods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountingHandlerPassesBodyThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "count")
	counter, err := openMethodCounter(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer counter.Close()
	var gotBody string
	h := countingHandler(counter, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
	}))
	body := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`
	tests := []struct {
		name   string
		method string
		want   []string
	}{
		{"post batch", http.MethodPost, []string{"a", "b"}},
		{"get is not counted", http.MethodGet, []string{"a", "b"}},
		{"second post", http.MethodPost, []string{"a", "b", "a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(tt.method, "/mcp", strings.NewReader(body)))
			if gotBody != body {
				t.Errorf("inner handler got body %q, want %q", gotBody, body)
			}
			if diff := cmp.Diff(tt.want, mcpservertest.Methods(t, path)); diff != "" {
				t.Errorf("counted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequireHeaders(t *testing.T) {
	reqs := []headerRequirement{
		{header: "Authorization", envVar: "TOKEN", bearer: true, value: "tok"},
		{header: "X-Api-Key", envVar: "KEY", value: "key"},
	}
	h := requireHeaders(reqs, discardLogger(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"all present", map[string]string{"Authorization": "Bearer tok", "X-Api-Key": "key"}, http.StatusTeapot},
		{"scheme is case-insensitive", map[string]string{"Authorization": "bearer tok", "x-api-key": "key"}, http.StatusTeapot},
		{"no headers", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope", "X-Api-Key": "key"}, http.StatusUnauthorized},
		{"token prefix", map[string]string{"Authorization": "Bearer to", "X-Api-Key": "key"}, http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic tok", "X-Api-Key": "key"}, http.StatusUnauthorized},
		{"bare token", map[string]string{"Authorization": "tok", "X-Api-Key": "key"}, http.StatusUnauthorized},
		{"missing api key", map[string]string{"Authorization": "Bearer tok"}, http.StatusUnauthorized},
		{"wrong api key", map[string]string{"Authorization": "Bearer tok", "X-Api-Key": "KEY"}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status = %d, want %d", w.Code, tt.want)
			}
			if body := w.Body.String(); strings.Contains(body, "tok") || strings.Contains(body, "key") {
				t.Errorf("response body leaks a secret: %q", body)
			}
		})
	}
}

func TestDelayFirst(t *testing.T) {
	const d = 200 * time.Millisecond
	h := delayFirst(d, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tests := []struct {
		name      string
		wantSlow  bool
		wantUnder time.Duration
	}{
		{"first request is delayed", true, 0},
		{"second is not", false, d},
		{"third is not", false, d},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
			took := time.Since(start)
			if tt.wantSlow && took < d {
				t.Errorf("took %v, want at least %v", took, d)
			}
			if !tt.wantSlow && took >= tt.wantUnder {
				t.Errorf("took %v, want under %v", took, tt.wantUnder)
			}
		})
	}
	t.Run("cancelled first request returns early", func(t *testing.T) {
		h := delayFirst(time.Hour, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Error("inner handler ran for a cancelled request")
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx))
	})
}

// TestHTTPHandlerInProcess exercises newHTTPHandler end to end with a go-sdk
// client, without a separate process.
func TestHTTPHandlerInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "count")
	counter, err := openMethodCounter(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer counter.Close()
	o := options{name: "inproc", requirements: []headerRequirement{{header: "Authorization", envVar: "T", bearer: true, value: "tok"}}}
	srv := httptest.NewServer(newHTTPHandler(newServer(serverOptions{Name: o.name}), o, counter, discardLogger()))
	defer srv.Close()

	t.Run("other paths are 404", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status = %d, want 404", resp.StatusCode)
		}
	})

	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   srv.URL + mcpPath,
		HTTPClient: mcpservertest.HeaderClient(http.Header{"Authorization": {"Bearer tok"}}),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got := callTool(t, cs, "header_digest", map[string]any{"name": "Authorization"})
	if got.Structured["sha256"] != sha256Hex("Bearer tok") {
		t.Errorf("header_digest = %+v, want digest of the bearer header", got)
	}
	got = callTool(t, cs, "headers", map[string]any{})
	if !strings.Contains(got.Text, "Authorization") {
		t.Errorf("headers = %q, want Authorization listed", got.Text)
	}
	if n := mcpservertest.Count(t, path, "tools/call"); n != 2 {
		t.Errorf("tools/call counted %d times, want 2", n)
	}
}
