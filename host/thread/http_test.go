package thread_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/thread"
)

// A streamable HTTP server on real loopback, with a bearer token resolved from the host's
// environment (the owner of a host-config declaration).
func TestHTTPServerWithBearerToken(t *testing.T) {
	const token = "thread-test-bearer-7c1d"
	count := filepath.Join(t.TempDir(), "http.count")
	p := mcpservertest.StartHTTP(t, exampleBin, append(os.Environ(), "EXPECTED_TOKEN="+token),
		"--require-bearer-env", "EXPECTED_TOKEN", "--count-file", count)
	f := newFixture(t, "[mcp_servers.remote]\nurl = "+strconv.Quote(p.URL)+"\nbearer_token_env_var = \"REMOTE_TOKEN\"\n", nil,
		withEnv(map[string]string{"REMOTE_TOKEN": token}))
	a := f.start(thread.StartParams{})
	b := f.start(thread.StartParams{})
	st := status(t, a, "remote")
	if len(st) != 1 || st[0].Status != thread.StateReady || st[0].AuthStatus != thread.AuthBearerToken {
		t.Fatalf("remote = %+v", st)
	}
	got := call(t, b, "remote", "header_digest", `{"name":"Authorization"}`)
	sum := sha256.Sum256([]byte("Bearer " + token))
	if got["sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("the server did not receive the host's bearer token: %v", got)
	}
	if n := mcpservertest.Count(t, count, "tools/list"); n != 1 {
		t.Errorf("two threads listed tools %d times, want 1 (one shared session)", n)
	}
}

// Status reads, tool calls, reloads and thread starts and closes, all at once (run with
// -race); then Close while a server is still starting returns promptly.
func TestConcurrentUse(t *testing.T) {
	f := newFixture(t, stdioServer("a", nil, "")+stdioServer("b", nil, ""), nil)
	th := f.start(thread.StartParams{})
	var wg sync.WaitGroup
	stop := time.Now().Add(1500 * time.Millisecond)
	for i := range 4 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				switch i {
				case 0:
					if _, err := th.Status(ctx(t), "", false); err != nil {
						t.Error(err)
						return
					}
				case 1:
					if _, err := th.CallTool(ctx(t), "a", "echo", []byte(`{"text":"x"}`), "test"); err != nil {
						t.Error(err)
						return
					}
				case 2:
					if _, err := f.m.Reload(ctx(t), true); err != nil {
						t.Error(err)
						return
					}
				case 3:
					other, err := f.m.Start(ctx(t), thread.StartParams{Kind: thread.KindSubagent})
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = other.Status(ctx(t), "b", false)
					_ = other.Close()
				}
			}
		})
	}
	wg.Wait()

	f.writeConfig(stdioServer("a", nil, "") + "[mcp_servers.sleepy]\ncommand = " + strconv.Quote(exampleBin) +
		"\nargs = [\"--startup-delay\", \"30s\"]\nstartup_timeout_sec = 60\n")
	if _, err := f.m.Reload(ctx(t), true); err != nil {
		t.Fatal(err)
	}
	slow := f.start(thread.StartParams{})
	_ = status(t, slow, "a") // waits for a only
	now, err := slow.StatusNow(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if st := byName(now); st["sleepy"].Status != thread.StateStarting || st["a"].Status != thread.StateReady {
		t.Errorf("StatusNow = %+v, want a ready and sleepy starting", st)
	}
	began := time.Now()
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("Close took %s with a server starting", d)
	}
	if _, err := f.m.Start(ctx(t), thread.StartParams{}); err == nil {
		t.Errorf("Start after Close succeeded")
	}
}
