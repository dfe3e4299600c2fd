package client

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/internal/testmain"
)

// exampleBin and wardenBin are built once per test process by TestMain.
var exampleBin, wardenBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, &wardenBin)) }

// execToken is the executors' bearer token in these tests (not a secret).
const execToken = "test-executor-token-0123456789"

// testTimeout bounds every wait of these tests (a failure bound, not a speed assertion).
const testTimeout = 30 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs into a buffer the test can scan, and to t on failure.
func testLogger(t *testing.T) (hclog.Logger, *testmain.SyncBuffer) {
	buf := &testmain.SyncBuffer{}
	t.Cleanup(func() {
		for _, secret := range []string{execToken, execValue, canaryValue} {
			if strings.Contains(buf.String(), secret) {
				t.Errorf("the client log carries the value %q", secret)
			}
		}
		if t.Failed() {
			t.Logf("client log:\n%s", buf.String())
		}
	})
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug}), buf
}

// fastBackoff keeps reconnect tests quick: a fixed short wait.
var fastBackoff = Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}

// executorProc is a real `warden executor` process listening on WebSocket.
type executorProc struct {
	cmd    *exec.Cmd
	URL    string
	stderr *testmain.SyncBuffer
	exited chan struct{}
}

// baseEnv is the environment an executor child gets in these tests: PATH and HOME, a
// private WARDEN_HOME, then extra.
func baseEnv(t *testing.T, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "WARDEN_HOME=" + t.TempDir()}
	return append(env, extra...)
}

// startExecutor starts `warden executor --listen ADDR --token-env EXEC_TOKEN ARGS…` with
// env (EXEC_TOKEN is added) and waits for the URL it prints. It is killed at cleanup.
func startExecutor(t *testing.T, addr string, env []string, args ...string) *executorProc {
	t.Helper()
	argv := append([]string{"executor", "--listen", addr, "--token-env", "EXEC_TOKEN"}, args...)
	cmd := exec.Command(wardenBin, argv...)
	cmd.Env = append(env, "EXEC_TOKEN="+execToken)
	p := &executorProc{cmd: cmd, stderr: &testmain.SyncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting warden executor: %v", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("executor %v stderr:\n%s", argv, p.stderr.String())
		}
	})
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "ws://") {
			p.kill()
			t.Fatalf("warden executor printed %q, not its URL; stderr:\n%s", line, p.stderr.String())
		}
		p.URL = line
	case <-time.After(testTimeout):
		t.Fatalf("warden executor printed no URL; stderr:\n%s", p.stderr.String())
	}
	return p
}

// kill ends the executor abruptly (SIGKILL) and waits until it is reaped.
func (p *executorProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// events collects a client's events on a channel.
func events(t *testing.T, c *Client) <-chan Event {
	ch := make(chan Event, 64)
	unsub := c.Subscribe(func(ev Event) {
		select {
		case ch <- ev:
		default:
			t.Errorf("event channel full; dropped %+v", ev)
		}
	})
	t.Cleanup(unsub)
	return ch
}

// waitEvent returns the next event in state s, skipping others.
func waitEvent(t *testing.T, ch <-chan Event, s State) Event {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	for {
		select {
		case ev := <-ch:
			if ev.State == s {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %s event within %s", s, testTimeout)
		}
	}
}
