package mcpconn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

func hostEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestBuildSpecStdioEnvironment(t *testing.T) {
	d := &config.ServerDecl{
		Name:    "docs",
		Command: "docs-mcp",
		Args:    []string{"--stdio"},
		Env:     map[string]string{"MODE": "ro", "PATH": "/declared/bin"},
		EnvVars: []config.EnvVar{{Name: "DOCS_TOKEN"}},
		Cwd:     "srv",
	}
	r := MapResolver("local", map[string]string{"DOCS_TOKEN": secretToken, "OTHER": "x"})
	host := hostEnv(map[string]string{
		"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8",
		"AWS_SECRET_ACCESS_KEY": "host-only", "DOCS_TOKEN": "host-value",
	})
	s, err := BuildSpec(d, r, BuildOptions{BaseDir: "/etc/warden", BaseEnv: host})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DOCS_TOKEN=" + secretToken, "HOME=/home/u", "LANG=C.UTF-8", "MODE=ro", "PATH=/declared/bin"}
	if !slices.Equal(s.Env, want) {
		t.Errorf("Env = %q, want %q", s.Env, want)
	}
	if s.Cwd != filepath.Join("/etc/warden", "srv") {
		t.Errorf("Cwd = %q", s.Cwd)
	}
	if s.Transport != config.TransportStdio || s.Environment != "local" {
		t.Errorf("Transport/Environment = %s/%s", s.Transport, s.Environment)
	}
	if s.StartupTimeout != config.DefaultStartupTimeout || s.ToolTimeout != config.DefaultToolTimeout {
		t.Errorf("timeouts = %s/%s, want the defaults", s.StartupTimeout, s.ToolTimeout)
	}
	// A Spec never prints its values, whatever the verb.
	for _, text := range []string{s.String(), fmt.Sprintf("%v|%+v|%#v|%s", s, s, s, s), mustJSON(t, s)} {
		if strings.Contains(text, secretToken) || strings.Contains(text, "/home/u") {
			t.Errorf("formatted Spec leaks a value: %s", text)
		}
	}
	if !strings.Contains(mustJSON(t, s), `"DOCS_TOKEN"`) {
		t.Errorf("JSON lacks the env names: %s", mustJSON(t, s))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBuildSpecErrors(t *testing.T) {
	r := MapResolver("exec-1", map[string]string{"EMPTY": ""})
	cases := []struct {
		name    string
		decl    config.ServerDecl
		opts    BuildOptions
		is      error
		mention []string
	}{
		{"missing env_vars", config.ServerDecl{Name: "a", Command: "x", EnvVars: []config.EnvVar{{Name: "NOPE"}}},
			BuildOptions{}, ErrMissingCredential, []string{`"a"`, "env_vars", `"NOPE"`, `"exec-1"`}},
		{"missing bearer", config.ServerDecl{Name: "b", URL: "http://h/mcp", BearerTokenEnvVar: "TOK"},
			BuildOptions{}, ErrMissingCredential, []string{`"b"`, "bearer_token_env_var", `"TOK"`}},
		{"empty bearer", config.ServerDecl{Name: "c", URL: "http://h/mcp", BearerTokenEnvVar: "EMPTY"},
			BuildOptions{}, ErrMissingCredential, []string{`"EMPTY"`}},
		{"missing header var", config.ServerDecl{Name: "d", URL: "http://h/mcp", EnvHTTPHeaders: map[string]string{"X-Key": "KEYVAR"}},
			BuildOptions{}, ErrMissingCredential, []string{"env_http_headers", `"X-Key"`, `"KEYVAR"`}},
		{"reserved header", config.ServerDecl{Name: "e", URL: "http://h/mcp", HTTPHeaders: map[string]string{"mcp-session-id": "x"}},
			BuildOptions{}, ErrInvalidDecl, []string{"Mcp-Session-Id"}},
		{"relative cwd without base", config.ServerDecl{Name: "f", Command: "x", Cwd: "srv"},
			BuildOptions{}, ErrInvalidDecl, []string{`"srv"`}},
		{"no transport", config.ServerDecl{Name: "g"}, BuildOptions{}, ErrInvalidDecl, []string{"neither"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildSpec(&tc.decl, r, tc.opts)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %s", err, m)
				}
			}
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("MCP server %q ", tc.decl.Name)) {
				t.Errorf("error %q does not name the server first", err)
			}
		})
	}
}

func TestBuildSpecHTTPHeaders(t *testing.T) {
	d := &config.ServerDecl{
		Name:              "remote",
		URL:               "https://mcp.example.com/mcp",
		BearerTokenEnvVar: "REMOTE_TOKEN",
		HTTPHeaders:       map[string]string{"x-team": "blue"},
		EnvHTTPHeaders:    map[string]string{"X-Key": "REMOTE_KEY"},
		StartupTimeout:    3 * time.Second,
	}
	r := MapResolver("", map[string]string{"REMOTE_TOKEN": secretToken, "REMOTE_KEY": "k-" + secretToken})
	s, err := BuildSpec(d, r, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Authorization": {"Bearer " + secretToken}, "X-Team": {"blue"}, "X-Key": {"k-" + secretToken}}
	if fmt.Sprint(map[string][]string(s.Headers)) != fmt.Sprint(map[string][]string(want)) {
		t.Errorf("Headers = %v, want %v", map[string][]string(s.Headers), map[string][]string(want))
	}
	if s.Env != nil || s.Command != "" {
		t.Errorf("an HTTP spec has stdio fields: %q %q", s.Env, s.Command)
	}
	if s.StartupTimeout != 3*time.Second {
		t.Errorf("StartupTimeout = %s", s.StartupTimeout)
	}
	// The longer secret (which contains the shorter) is scrubbed whole.
	if got := redact("a k-"+secretToken+" b "+secretToken, s.secrets); got != "a [REDACTED] b [REDACTED]" {
		t.Errorf("redact = %q", got)
	}
}

func TestSpecKey(t *testing.T) {
	base := func() *config.ServerDecl {
		return &config.ServerDecl{Name: "remote", URL: "https://h/mcp", BearerTokenEnvVar: "TOK",
			HTTPHeaders: map[string]string{"X-Team": "blue"}}
	}
	key := func(d *config.ServerDecl, r Resolver) string {
		t.Helper()
		s, err := BuildSpec(d, r, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.Key, secretToken) || len(s.Key) != 64 {
			t.Fatalf("bad key %q", s.Key)
		}
		return s.Key
	}
	local := MapResolver("local", map[string]string{"TOK": secretToken})
	k0 := key(base(), local)
	if k := key(base(), MapResolver("local", map[string]string{"TOK": "another-value"})); k != k0 {
		t.Error("the key depends on a credential value; it must depend on the route only")
	}
	if k := key(base(), MapResolver("exec-1", map[string]string{"TOK": secretToken})); k == k0 {
		t.Error("the same reference resolved in another environment gives the same key")
	}
	changes := map[string]func(d *config.ServerDecl){
		"name":       func(d *config.ServerDecl) { d.Name = "other" },
		"url":        func(d *config.ServerDecl) { d.URL = "https://h/other" },
		"header":     func(d *config.ServerDecl) { d.HTTPHeaders["X-Team"] = "red" },
		"bearer var": func(d *config.ServerDecl) { d.BearerTokenEnvVar = "TOK2" },
		"env":        func(d *config.ServerDecl) { d.EnvironmentID = "exec-1" },
		"timeout":    func(d *config.ServerDecl) { d.ToolTimeout = time.Second },
	}
	both := MapResolver("local", map[string]string{"TOK": secretToken, "TOK2": secretToken})
	for what, change := range changes {
		d := base()
		change(d)
		if key(d, both) == k0 {
			t.Errorf("changing the %s keeps the key", what)
		}
	}
	// Per-thread settings are not part of the key.
	d := base()
	d.EnabledTools, d.Required = []string{"echo"}, true
	if key(d, local) != k0 {
		t.Error("enabled_tools/required change the key")
	}
}

func TestBaseEnvVars(t *testing.T) {
	if !slices.Contains(baseEnvVars("windows"), "SYSTEMROOT") || slices.Contains(baseEnvVars("linux"), "SYSTEMROOT") {
		t.Error("SYSTEMROOT belongs to the windows base environment only")
	}
	for _, name := range []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "TZ", "TERM", "SHELL"} {
		if !slices.Contains(baseEnvVars("linux"), name) {
			t.Errorf("%s missing from the unix base environment", name)
		}
	}
}

func TestHeaderTransportSameOriginOnly(t *testing.T) {
	var seen []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.Host+"="+r.Header.Get("Authorization"))
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	rt := newHeaderTransport(base, "http://127.0.0.1:8080/mcp", http.Header{"Authorization": {"Bearer t"}})
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://evil.example/mcp", "https://127.0.0.1:8080/mcp"} {
		req, _ := http.NewRequest("POST", u, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if req.Header.Get("Authorization") != "" {
			t.Error("RoundTrip modified the caller's request")
		}
	}
	want := []string{"127.0.0.1:8080=Bearer t", "evil.example=", "127.0.0.1:8080="}
	if !slices.Equal(seen, want) {
		t.Errorf("seen %q, want %q", seen, want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStderrSink(t *testing.T) {
	logs := &syncBuffer{}
	w := newStderrSink(newTestLogger(logs), []string{secretToken}, 64)
	fmt.Fprintf(w, "first line\nsecond %s line\npartial", secretToken)
	if got := w.String(); got != "first line | second [REDACTED] line | partial" {
		t.Errorf("tail = %q", got)
	}
	for i := range 10 {
		fmt.Fprintf(w, "\nline number %d", i)
	}
	got := w.String()
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "line number 9") || len(got) > 100 {
		t.Errorf("truncated tail = %q", got)
	}
	if strings.Contains(logs.String(), secretToken) || !strings.Contains(logs.String(), "[REDACTED]") {
		t.Errorf("stderr log not scrubbed:\n%s", logs.String())
	}
}
