package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

// methodFIFO makes a named pipe for the example server's --count-file and returns its path
// and the methods the server receives, one per line, as they arrive (every server process
// started with it writes there, restarts included). The pipe is held open for reading and
// writing, so that the server's open never blocks; cleanup closes it, which ends the
// reader.
func methodFIFO(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "methods")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := make(chan string, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			select {
			case methods <- sc.Text():
			default: // the test reads only the first few; later lines are dropped
			}
		}
	}()
	t.Cleanup(func() {
		_ = f.Close()
		<-done
	})
	return path, methods
}

// waitMethod waits until the upstream receives a method that match accepts.
func waitMethod(t *testing.T, ctx context.Context, methods <-chan string, what string, match func(string) bool) {
	t.Helper()
	for {
		select {
		case m := <-methods:
			if match(m) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("waiting for the upstream to receive %s: %v", what, ctx.Err())
		}
	}
}

// newestChild finds the newest live process that this test process started with bin and
// the argument marker (each test gives its server a unique --name), through /proc: a
// server's earlier sessions may still be exiting.
func newestChild(t *testing.T, bin, marker string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	newest, newestStart := 0, uint64(0)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid … starttime (field 22): comm may hold spaces, so the
		// fields are counted after its last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 20 || fields[1] != self || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		start, err := strconv.ParseUint(fields[19], 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: starttime %q: %v", pid, fields[19], err)
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if args[0] == bin && slices.Contains(args, marker) && (newest == 0 || start > newestStart || start == newestStart && pid > newest) {
			newest, newestStart = pid, start
		}
	}
	if newest == 0 {
		t.Fatalf("no child process of %s with %s", bin, marker)
	}
	return newest
}

// isSessionStart reports whether method opens an MCP session (initialize, or server/discover
// in protocol 2026-07-28).
func isSessionStart(method string) bool { return method == "initialize" || method == "server/discover" }

// TestGatewayUpstreamRestart: a stdio upstream killed mid-session, through the front door
// with a go-sdk client over streamable HTTP. The call in flight when it died (slow) gets an
// error naming the server and the cause; the server is restarted on its own (a new process,
// a new session); the client gets notifications/tools/list_changed and the server's tools
// are listed and callable again.
func TestGatewayUpstreamRestart(t *testing.T) {
	ctx := testCtx(t)
	const name = "crashy-e2e-restart"
	fifo, methods := methodFIFO(t)
	h := newHost(t, newHome(t, serverTOML("crashy", exampleBin, []string{"--name", name, "--count-file", fifo}, "required = true")))
	th, err := h.Threads().Start(ctx, thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	// restarted is set when the upstream receives the restarted session's initialize; each
	// tools/list_changed the client gets carries whether it came after that.
	var restarted atomic.Bool
	changed := make(chan bool, 64)
	cs := connectWith(t, ctx, frontDoorHTTP(t, h)+frontdoor.ThreadPath(th.ID()), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- restarted.Load():
			default:
			}
		},
	})
	slow, echo := frontdoor.ToolName("crashy", "slow"), frontdoor.ToolName("crashy", "echo")
	if tools := listToolNames(t, ctx, cs); !slices.Contains(tools, slow) || !slices.Contains(tools, echo) {
		t.Fatalf("tools before the crash: %q", tools)
	}

	// A call in flight: the upstream has received it when the pipe says so.
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	inFlight := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: slow, Arguments: map[string]any{"ms": 600000}})
		inFlight <- answer{res, err}
	}()
	waitMethod(t, ctx, methods, "the slow call", func(m string) bool { return m == "tools/call" })
	// The session serving the call is the server's newest process.
	pid := newestChild(t, exampleBin, name)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the upstream (pid %d): %v", pid, err)
	}

	var a answer
	select {
	case a = <-inFlight:
	case <-ctx.Done():
		t.Fatalf("the call in flight never ended: %v", ctx.Err())
	}
	text := ""
	switch {
	case a.err != nil:
		text = a.err.Error()
	case a.res.IsError:
		text = textOf(a.res)
	default:
		t.Fatalf("the call in flight succeeded: %q", textOf(a.res))
	}
	if !strings.Contains(text, `MCP server "crashy" lost tools/call "slow"`) || !strings.Contains(text, "signal: killed") {
		t.Errorf("the call in flight got %q; want an error naming the server, the call and the cause", text)
	}
	t.Logf("the call in flight: %s", text)

	// The restart: a new session of a new process.
	waitMethod(t, ctx, methods, "a new session", isSessionStart)
	restarted.Store(true)
	vanished := false
	for back := false; !back; {
		select {
		case after := <-changed:
			tools := listToolNames(t, ctx, cs)
			has := slices.Contains(tools, slow) && slices.Contains(tools, echo)
			vanished = vanished || !has
			back = after && has
		case <-ctx.Done():
			t.Fatalf("no tools/list_changed bringing crashy's tools back: %v", ctx.Err())
		}
	}
	if !vanished {
		t.Log("the client never listed the tools while the server was down (the restart was quicker than its listing)")
	}
	if newPid := newestChild(t, exampleBin, name); newPid == pid {
		t.Errorf("the restarted server has the old pid %d", pid)
	}
	if got, res := callText(t, ctx, cs, echo, map[string]any{"text": "back"}); res.IsError || got != "back" {
		t.Errorf("echo after the restart: %q (isError %v)", got, res.IsError)
	}
}
