package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

// BuildSpec asks Grant about every reference before reading any: when one is refused,
// nothing at all is looked up through the Resolver, and the error carries every refusal.
func TestBuildSpecGrantRefusesBeforeReading(t *testing.T) {
	tests := []struct {
		name    string
		decl    *config.ServerDecl
		granted []string
		refused []string // variables named in the error; none: BuildSpec succeeds
	}{
		{"stdio env_vars", &config.ServerDecl{Name: "s", Command: "c", EnvVars: []config.EnvVar{{Name: "A"}, {Name: "B"}}},
			[]string{"A"}, []string{"B (env_vars)"}},
		{"http bearer and header", &config.ServerDecl{Name: "h", URL: "http://127.0.0.1:9/mcp", BearerTokenEnvVar: "A",
			EnvHTTPHeaders: map[string]string{"X-Key": "B"}},
			nil, []string{`B (env_http_headers (header "X-Key"))`, "A (bearer_token_env_var)"}},
		{"all granted", &config.ServerDecl{Name: "h", URL: "http://127.0.0.1:9/mcp", BearerTokenEnvVar: "A",
			EnvHTTPHeaders: map[string]string{"X-Key": "B"}}, []string{"A", "B"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var read []string
			r := EnvResolver{Lookup: func(name string) (string, bool) {
				mu.Lock()
				defer mu.Unlock()
				read = append(read, name)
				return secretToken, true
			}}
			grant := func(key, name string) string {
				for _, g := range tt.granted {
					if g == name {
						return ""
					}
				}
				return name + " (" + key + ") is not granted"
			}
			_, err := BuildSpec(tt.decl, r, BuildOptions{Grant: grant, BaseEnv: func(string) (string, bool) { return "", false }})
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("BuildSpec: %v", err)
				}
				if len(read) == 0 {
					t.Errorf("granted references were not read")
				}
				return
			}
			if !errors.Is(err, ErrNotGranted) {
				t.Fatalf("err = %v, want ErrNotGranted", err)
			}
			for _, w := range tt.refused {
				if !strings.Contains(err.Error(), w+" is not granted") {
					t.Errorf("err = %q, want it to name %q", err, w)
				}
			}
			if len(read) != 0 {
				t.Errorf("BuildSpec read %q although a reference was refused", read)
			}
			noSecret(t, err)
		})
	}
}

// blockingMCP is a loopback HTTP endpoint whose every request waits until release is
// closed and then fails, counting the requests in flight.
type blockingMCP struct {
	*httptest.Server
	release     chan struct{}
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func newBlockingMCP(t *testing.T) *blockingMCP {
	b := &blockingMCP{release: make(chan struct{})}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := b.inflight.Add(1)
		for {
			m := b.maxInflight.Load()
			if n <= m || b.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-b.release:
		case <-r.Context().Done():
		}
		b.inflight.Add(-1)
		http.Error(w, "not an MCP server", http.StatusInternalServerError)
	}))
	t.Cleanup(b.Close)
	return b
}

// At most MaxConcurrentStarts connection attempts run at once; the others wait for a slot
// within their startup timeout (and fail with a reason naming the limit when it ends), a
// waiter whose ctx ends leaves at once, and no slot leaks.
func TestMaxConcurrentStarts(t *testing.T) {
	srv := newBlockingMCP(t)
	m, _ := newManager(t, Options{MaxConcurrentStarts: 2, Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}})
	spec := func(i int, timeout time.Duration) Spec {
		return mustSpec(t, &config.ServerDecl{Name: fmt.Sprintf("s%d", i), URL: fmt.Sprintf("%s/mcp/%d", srv.URL, i),
			StartupTimeout: timeout}, nil)
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			if _, err := m.Acquire(context.Background(), spec(i, 60*time.Second)); err == nil {
				t.Errorf("s%d started against an endpoint that fails every request", i)
			}
		})
	}
	eventually(t, 30*time.Second, "two attempts running and three waiting", func() bool {
		m.starts.mu.Lock()
		defer m.starts.mu.Unlock()
		return m.starts.active == 2 && len(m.starts.waiters) == 3
	})
	if n := srv.inflight.Load(); n > 2 {
		t.Errorf("%d requests in flight with a limit of 2", n)
	}

	// A waiter whose startup timeout ends while waiting fails naming the limit.
	_, err := m.Acquire(context.Background(), spec(5, 100*time.Millisecond))
	if !errors.Is(err, ErrStartupTimeout) || !strings.Contains(err.Error(), "max_concurrent_server_starts") {
		t.Errorf("waiting past the startup timeout: %v", err)
	}
	// A waiter whose ctx is canceled leaves at once.
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := m.Acquire(cctx, spec(6, 60*time.Second)); done <- err }()
	eventually(t, 30*time.Second, "a fourth waiter", func() bool {
		m.starts.mu.Lock()
		defer m.starts.mu.Unlock()
		return len(m.starts.waiters) == 4
	})
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("a canceled Acquire succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a canceled Acquire did not return")
	}

	close(srv.release)
	wg.Wait()
	if got := srv.maxInflight.Load(); got > 2 {
		t.Errorf("max requests in flight = %d, want at most 2", got)
	}
	eventually(t, 30*time.Second, "every slot returned", func() bool {
		limit, active := m.starts.state()
		m.starts.mu.Lock()
		defer m.starts.mu.Unlock()
		return limit == 2 && active == 0 && len(m.starts.waiters) == 0
	})
	m.SetMaxConcurrentStarts(0)
	if limit, _ := m.starts.state(); limit != config.DefaultMaxConcurrentServerStarts {
		t.Errorf("SetMaxConcurrentStarts(0): limit %d, want the default", limit)
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?key=abc&x=1", "https://mcp.example.com/mcp?REDACTED"},
		{"https://user:pw@mcp.example.com:8443/a/b?k=v#frag", "https://REDACTED@mcp.example.com:8443/a/b?REDACTED#REDACTED"},
		{"http://h?k=v", "http://h?REDACTED"},
		{"http://h/p?", "http://h/p"},
		{"ws://a@b@h/x", "ws://REDACTED@h/x"},
		{"http://h/%zz?bad=%zz", "http://h/%zz?REDACTED"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	text := `Post "https://u:pw@h/mcp?key=abc": dial tcp: refused; also see http://h/x?y=z, then done.`
	want := `Post "https://REDACTED@h/mcp?REDACTED": dial tcp: refused; also see http://h/x?REDACTED, then done.`
	if got := RedactURLs(text); got != want {
		t.Errorf("redactURLs:\n got %q\nwant %q", got, want)
	}
}

// A URL's query string and userinfo never appear in an error (nor in the log): the SDK and
// net/http quote the full request URL in their errors.
func TestURLSecretsRedactedInErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every request fails with the URL in the error
	raw := "http://user:" + secretToken + "@" + addr + "/mcp?api_key=" + secretToken
	m, _ := newManager(t, Options{})
	spec := mustSpec(t, &config.ServerDecl{Name: "leaky", URL: raw, StartupTimeout: 10 * time.Second}, nil)
	_, err = m.Acquire(context.Background(), spec)
	if err == nil {
		t.Fatal("Acquire against a closed port succeeded")
	}
	noSecret(t, err)
	if !strings.Contains(err.Error(), "REDACTED@"+addr+"/mcp?REDACTED") {
		t.Errorf("err = %q, want the redacted URL", err)
	}
	js, err := spec.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), secretToken) {
		t.Errorf("Spec JSON contains the URL's secret: %s", js)
	}
}
