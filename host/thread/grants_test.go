package thread_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/thread"
)

// recordingProxy is a loopback HTTP server that records every request's headers and passes
// the request on to target (a real MCP server).
type recordingProxy struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = ""
	rp := &recordingProxy{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	rp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.mu.Lock()
		rp.headers = append(rp.headers, r.Header.Clone())
		rp.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rp.Close)
	return rp
}

// saw reports how many requests arrived and whether any header value contained value.
func (rp *recordingProxy) saw(value string) (requests int, found bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	for _, h := range rp.headers {
		for _, vs := range h {
			for _, v := range vs {
				if strings.Contains(v, value) {
					found = true
				}
			}
		}
	}
	return len(rp.headers), found
}

// A selected local plugin that names host environment variables (bearer_token_env_var,
// env_http_headers, env_vars) gets none of their values unless config.toml grants them to
// that plugin: without the grant its servers are disabled with a reason naming the variable
// and the grant, no request carrying a value leaves the host and no process starts, and the
// thread's other servers work; with the grant the values arrive.
func TestPluginHostCredentialsNeedAGrant(t *testing.T) {
	const (
		bearer = "wrdn-canary-bearer-41c9"
		header = "wrdn-canary-header-8d02"
		envval = "wrdn-canary-env-5e77"
	)
	t.Setenv("WARDEN_CANARY_BEARER", bearer)
	t.Setenv("WARDEN_CANARY_HEADER", header)
	t.Setenv("WARDEN_CANARY_ENV", envval)

	upstream := mcpservertest.StartHTTP(t, exampleBin, os.Environ())
	rec := newRecordingProxy(t, upstream.URL)
	count := filepath.Join(t.TempDir(), "stdio.count")

	f := newFixture(t, stdioServer("host_srv", nil, ""), nil)
	plugin(t, filepath.Join(f.plugins, "acme"), `{"name":"acme","version":"1"}`, map[string]any{
		"acme_http": map[string]any{
			"url":                  rec.URL + "/mcp",
			"bearer_token_env_var": "WARDEN_CANARY_BEARER",
			"env_http_headers":     map[string]string{"X-Key": "WARDEN_CANARY_HEADER"},
		},
		"acme_stdio": map[string]any{"command": exampleBin, "args": []string{"--count-file", count}, "env_vars": []string{"WARDEN_CANARY_ENV"}},
		"acme_plain": stdioJSON(),
	})
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(f.home, "config.toml")
	sel := thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "acme@1"}}}

	// No grant.
	th := f.start(sel)
	st := byName(status(t, th, ""))
	wantReasons := map[string][]string{
		"acme_http": {
			`plugin acme@1 names host environment variable WARDEN_CANARY_BEARER (bearer_token_env_var) without a grant; add it to [plugins.grants."acme@1"] env_vars in ` + cfgFile,
			`plugin acme@1 names host environment variable WARDEN_CANARY_HEADER (env_http_headers (header "X-Key")) without a grant`,
		},
		"acme_stdio": {
			`plugin acme@1 names host environment variable WARDEN_CANARY_ENV (env_vars) without a grant; add it to [plugins.grants."acme@1"] env_vars in ` + cfgFile,
		},
	}
	for name, wants := range wantReasons {
		s := st[name]
		if s.Status != thread.StateDisabled || len(s.Tools) != 0 {
			t.Errorf("%s = %+v, want disabled with no tools", name, s)
		}
		for _, w := range wants {
			if !strings.Contains(s.ToolsError, w) {
				t.Errorf("%s toolsError = %q, want it to contain %q", name, s.ToolsError, w)
			}
		}
		for _, secret := range []string{bearer, header, envval} {
			if strings.Contains(s.ToolsError, secret) {
				t.Errorf("%s toolsError contains a credential value", name)
			}
		}
	}
	for _, name := range []string{"host_srv", "acme_plain"} {
		if st[name].Status != thread.StateReady {
			t.Errorf("%s = %+v, want ready: an ungranted sibling must not affect it", name, st[name])
		}
	}
	if got := call(t, th, "acme_plain", "echo", `{"text":"still here"}`); got["text"] != "still here" {
		t.Errorf("acme_plain/echo = %v", got)
	}
	_, err := th.CallTool(ctx(t), "acme_http", "echo", []byte(`{"text":"x"}`), "test")
	unavailable(t, err, "without a grant")
	if n, found := rec.saw(bearer); found || n != 0 {
		t.Errorf("the plugin's endpoint got %d requests (bearer canary present: %v), want none", n, found)
	}
	if _, err := os.Stat(count); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ungranted stdio server was started (count file: %v)", err)
	}
	if strings.Contains(f.logs.String(), bearer) || strings.Contains(f.logs.String(), envval) {
		t.Errorf("the log contains a credential value")
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}

	// A grant for another plugin, or of other names, changes nothing.
	f.writeConfig("[plugins.grants.\"other@1\"]\nenv_vars = [\"WARDEN_CANARY_BEARER\", \"WARDEN_CANARY_HEADER\", \"WARDEN_CANARY_ENV\"]\n" +
		"[plugins.grants.\"acme@1\"]\nenv_vars = [\"WARDEN_CANARY_BEARER\"]\n\n" + stdioServer("host_srv", nil, ""))
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	th = f.start(sel)
	st = byName(status(t, th, ""))
	if s := st["acme_http"]; s.Status != thread.StateDisabled || !strings.Contains(s.ToolsError, "WARDEN_CANARY_HEADER") ||
		strings.Contains(s.ToolsError, "WARDEN_CANARY_BEARER (") {
		t.Errorf("acme_http with only the bearer granted = %+v, want disabled naming only the header variable", s)
	}
	if s := st["acme_stdio"]; s.Status != thread.StateDisabled {
		t.Errorf("acme_stdio with a grant to another plugin = %+v, want disabled", s)
	}
	if n, found := rec.saw(bearer); found || n != 0 {
		t.Errorf("a partly granted server sent %d requests (bearer canary present: %v), want none", n, found)
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}

	// The grant.
	f.writeConfig("[plugins.grants.\"acme@1\"]\nenv_vars = [\"WARDEN_CANARY_BEARER\", \"WARDEN_CANARY_HEADER\", \"WARDEN_CANARY_ENV\"]\n\n" +
		stdioServer("host_srv", nil, ""))
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	th = f.start(sel)
	st = byName(status(t, th, ""))
	for _, name := range []string{"acme_http", "acme_stdio", "acme_plain", "host_srv"} {
		if st[name].Status != thread.StateReady {
			t.Errorf("granted: %s = %+v, want ready", name, st[name])
		}
	}
	if got := call(t, th, "acme_stdio", "env", `{"name":"WARDEN_CANARY_ENV"}`); got["set"] != true || got["value"] != envval {
		t.Errorf("granted env_vars: child env WARDEN_CANARY_ENV = %v", got)
	}
	call(t, th, "acme_http", "echo", `{"text":"granted"}`)
	if _, found := rec.saw("Bearer " + bearer); !found {
		t.Errorf("granted: the bearer token did not arrive")
	}
	if _, found := rec.saw(header); !found {
		t.Errorf("granted: the X-Key header did not arrive")
	}
}

// thread/start beyond [limits] max_threads fails with a reason naming the limit and the
// key; closing a thread frees its place.
func TestMaxThreads(t *testing.T) {
	f := newFixture(t, "[limits]\nmax_threads = 2\n", nil)
	a := f.start(thread.StartParams{})
	f.start(thread.StartParams{})
	_, err := f.m.Start(ctx(t), thread.StartParams{})
	if !errors.Is(err, thread.ErrThreadLimit) || !strings.Contains(err.Error(), "max_threads in [limits] of "+filepath.Join(f.home, "config.toml")) ||
		!strings.Contains(err.Error(), "2 threads are open") {
		t.Fatalf("third thread: %v, want ErrThreadLimit naming max_threads and the file", err)
	}
	if got := len(f.m.List()); got != 2 {
		t.Errorf("%d threads listed after a refused start, want 2", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	f.start(thread.StartParams{})
}
