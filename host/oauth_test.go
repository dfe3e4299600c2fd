package host_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/authtest"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
	"github.com/warden-mcp/warden/host/thread"
)

// protectedServer is an echo MCP server behind a real local authorization server.
func protectedServer(t *testing.T, o authtest.Options) (*authtest.Server, *authtest.Resource, string) {
	t.Helper()
	as := authtest.NewServer(t, o)
	res, url := as.EchoMCP(t, "mcp:tools")
	return as, res, url
}

// loginThrough runs mcpServer/oauth/login for a thread's server, plays the browser, and
// returns the completion event.
func loginThrough(t *testing.T, h *host.Host, as *authtest.Server, threadID, name string) *thread.OAuthLoginCompleted {
	t.Helper()
	done := make(chan *thread.OAuthLoginCompleted, 1)
	cancel := h.Threads().Subscribe(func(ev thread.Event) {
		if e, ok := ev.(*thread.OAuthLoginCompleted); ok && e.Name == name {
			done <- e
		}
	})
	defer cancel()
	l, err := h.Threads().OAuthLogin(ctx(t), thread.OAuthLoginParams{ThreadID: threadID, Name: name})
	if err != nil {
		t.Fatalf("OAuthLogin: %v", err)
	}
	resp, err := as.Browse(ctx(t), l.AuthorizationURL)
	if err != nil {
		t.Fatalf("browse: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	select {
	case e := <-done:
		return e
	case <-ctx(t).Done():
		t.Fatal("no OAuthLoginCompleted event")
		return nil
	}
}

// A thread whose OAuth server has no login lists it failed, notLoggedIn, with the fix; a
// login by another process recovers it in the same thread; a refresh token the server
// refuses turns it expired; a login through the thread layer recovers it once more.
func TestOAuthLoginRecoversRunningThread(t *testing.T) {
	as, _, url := protectedServer(t, authtest.Options{AccessTokenLifetime: 5 * time.Second})
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), "[mcp_servers.docs]\nurl = \""+url+"\"\noauth = {}\nstartup_timeout_sec = 10\n")
	h, logs := newHost(t, home, host.Options{PolicyCacheDir: "-"})
	th := start(t, h, thread.StartParams{})

	st := status(t, th)["docs"]
	if st.Status != thread.StateFailed || st.AuthStatus != thread.AuthNotLoggedIn || !strings.Contains(st.ToolsError, "warden oauth login docs") {
		t.Fatalf("before login: %+v", st)
	}

	// The first login is another process's (warden oauth login): a second Manager over
	// the same store file. The host notices the file change.
	other, err := store.Open(filepath.Join(home, config.OAuthCredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	om, err := oauth.New(oauth.Options{Store: other})
	if err != nil {
		t.Fatal(err)
	}
	defer om.Close()
	l, err := om.Start(ctx(t), oauth.LoginRequest{Key: store.Key{Owner: store.OwnerLocal, Server: "docs", URL: url}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := as.Browse(ctx(t), l.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := l.Wait(ctx(t)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "docs ready after another process's login", func() bool {
		st = status(t, th)["docs"]
		return st.Status == thread.StateReady
	})
	if st.AuthStatus != thread.AuthOAuth {
		t.Errorf("authStatus after login = %s", st.AuthStatus)
	}
	call := func() (*mcp.CallToolResult, error) {
		return th.CallTool(ctx(t), "docs", "echo", []byte(`{"text":"hi"}`), "test")
	}
	if res, err := call(); err != nil || textOf(res) != "echo: hi" {
		t.Fatalf("echo: %v %v", res, err)
	}

	// The refresh token dies; the next request's refresh is refused.
	as.ExpireRefreshTokens()
	as.ExpireAccessTokens()
	if res, err := call(); err == nil && !res.IsError {
		t.Fatalf("a call with a dead login succeeded")
	}
	eventually(t, 30*time.Second, "docs expired", func() bool {
		return status(t, th)["docs"].AuthStatus == thread.AuthExpired
	})

	if e := loginThrough(t, h, as, th.ID(), "docs"); !e.Success || e.ThreadID != th.ID() {
		t.Fatalf("second login: %+v", e)
	}
	eventually(t, 30*time.Second, "docs usable after the second login", func() bool {
		res, err := call()
		return err == nil && !res.IsError
	})
	if st := status(t, th)["docs"]; st.AuthStatus != thread.AuthOAuth {
		t.Errorf("authStatus after the second login = %s", st.AuthStatus)
	}

	// No token in the host log; the store file is 0600.
	data, err := os.ReadFile(filepath.Join(home, config.OAuthCredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range as.TokenRequests() {
		if tok := r.AccessToken.Reveal(); tok != "" && strings.Contains(logs.String(), tok) {
			t.Error("an access token is in the host log")
		}
		if tok := r.RefreshToken.Reveal(); tok != "" && strings.Contains(logs.String(), tok) {
			t.Error("a refresh token is in the host log")
		}
	}
	if len(data) == 0 {
		t.Error("empty store")
	}
	if fi, err := os.Stat(filepath.Join(home, config.OAuthCredentialsFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v %v", fi.Mode(), err)
	}
}

// A login that fails reaches the client as OAuthLoginCompleted with success false and the
// precise cause, and stores nothing: the server stays notLoggedIn.
func TestOAuthLoginFailureEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    authtest.Options
		want string
	}{
		{"denied consent", authtest.Options{Consent: authtest.ConsentDeny}, "access_denied"},
		{"wrong iss", authtest.Options{Iss: authtest.IssWrong}, "does not match expected issuer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as, _, url := protectedServer(t, tc.o)
			home := t.TempDir()
			writeFile(t, filepath.Join(home, "config.toml"), "[mcp_servers.docs]\nurl = \""+url+"\"\n")
			h, _ := newHost(t, home, host.Options{PolicyCacheDir: "-"})
			th := start(t, h, thread.StartParams{})
			e := loginThrough(t, h, as, th.ID(), "docs")
			if e.Success || !strings.Contains(e.Error, tc.want) || !strings.Contains(e.Error, `"docs"`) {
				t.Fatalf("completion = %+v, want a failure naming docs and %q", e, tc.want)
			}
			if st := status(t, th)["docs"]; st.AuthStatus != thread.AuthNotLoggedIn {
				t.Errorf("authStatus after a failed login = %s", st.AuthStatus)
			}
			if _, err := os.Stat(filepath.Join(home, config.OAuthCredentialsFile)); err == nil {
				if list, err := h.OAuth().Store().List(ctx(t)); err != nil || len(list) != 0 {
					t.Errorf("stored after a failed login: %v %v", list, err)
				}
			}
		})
	}
}
