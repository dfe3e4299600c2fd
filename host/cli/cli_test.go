package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/warden-mcp/warden/host/internal/authtest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"warden": func() { os.Exit(Main(context.Background(), os.Args[1:], Stdio())) },
		// browse is the scripts' $BROWSER: it opens the authorization URL it is given as a
		// browser would — authtest approves (or denies) consent by itself, and the redirect
		// lands on warden's callback listener — and exits 0 on a 200 page.
		"browse": func() { os.Exit(browse(os.Args[1:])) },
	})
}

func browse(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: browse URL")
		return 2
	}
	c := &http.Client{Timeout: time.Minute} // follows redirects, as a browser does
	resp, err := c.Get(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "browse:", err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "browse: final page status", resp.Status)
		return 1
	}
	return 0
}

// protectedMCP starts an OAuth authorization server with o and, behind it, an echo MCP
// server; it returns the server and the MCP endpoint's URL. Both close when t ends.
func protectedMCP(t *testing.T, o authtest.Options) (*authtest.Server, string) {
	t.Helper()
	as := authtest.NewServer(t, o)
	_, url := as.EchoMCP(t, "mcp:tools")
	return as, url
}

// issuedSecrets are the codes and tokens the servers issued so far.
func issuedSecrets(servers ...*authtest.Server) []authtest.Secret {
	var out []authtest.Secret
	for _, as := range servers {
		for _, a := range as.Authorizations() {
			out = append(out, a.Code)
		}
		for _, tr := range as.TokenRequests() {
			out = append(out, tr.AccessToken, tr.RefreshToken)
		}
	}
	return out
}

// containsSecret reports whether data holds any of secrets (the empty one excluded).
func containsSecret(data []byte, secrets []authtest.Secret) bool {
	for _, s := range secrets {
		if s != "" && bytes.Contains(data, []byte(s.Reveal())) {
			return true
		}
	}
	return false
}

// TestScripts runs the CLI end to end, in-process, from testdata/script/*.txtar.
//
// The oauth_* scripts log in for real: OAUTH_DOCS_URL is an MCP server behind an
// authorization server that approves consent, OAUTH_DENY_URL one behind a server that
// denies it, and BROWSER is the browse program.
func TestScripts(t *testing.T) {
	okAS, docsURL := protectedMCP(t, authtest.Options{})
	denyAS, denyURL := protectedMCP(t, authtest.Options{Consent: authtest.ConsentDeny})
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("WARDEN_HOME", env.WorkDir+"/home")
			env.Setenv("OAUTH_DOCS_URL", docsURL)
			env.Setenv("OAUTH_DENY_URL", denyURL)
			env.Setenv("BROWSER", "browse")
			// Each command is this test binary run again; built with -race it would sleep
			// a second at exit for reports still being written. A race is reported when
			// found, so the wait buys nothing.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// expand FILE...: replaces $VAR and ${VAR} in each file with the script's
			// environment (testscript expands command arguments, not files).
			"expand": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) == 0 {
					ts.Fatalf("usage: expand FILE...")
				}
				for _, f := range args {
					p := ts.MkAbs(f)
					data, err := os.ReadFile(p)
					ts.Check(err)
					ts.Check(os.WriteFile(p, []byte(os.Expand(string(data), ts.Getenv)), 0o644))
				}
			},
			// issued-token FILE...: succeeds when a file (stdout and stderr name the last
			// command's output) holds a code or token the authorization servers issued;
			// negated, when none does. The secret itself is never printed.
			"issued-token": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) == 0 {
					ts.Fatalf("usage: [!] issued-token FILE...")
				}
				secrets := issuedSecrets(okAS, denyAS)
				found := ""
				for _, f := range args {
					if containsSecret([]byte(ts.ReadFile(f)), secrets) {
						found = f
						break
					}
				}
				switch {
				case neg && found != "":
					ts.Fatalf("%s holds a code or token issued by the authorization server", found)
				case !neg && found == "":
					ts.Fatalf("none of %v holds a token issued by the authorization server (%d issued)", args, len(secrets))
				}
			},
		},
	})
}
