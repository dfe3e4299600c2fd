package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/decision"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// followed is a running `warden decisions tail -f`: its stdout lines, its stderr, and its
// exit code once ctx is cancelled.
type followed struct {
	lines  chan string
	stderr *lockedBuffer
	done   chan struct{} // closed when Main has returned code
	code   int
	cancel context.CancelFunc
}

func startFollow(t *testing.T, home string, args ...string) *followed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &followed{lines: make(chan string, 4096), stderr: &lockedBuffer{}, done: make(chan struct{}), cancel: cancel}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	go func() {
		f.code = Main(ctx, append([]string{"--home", home, "decisions", "tail", "-f"}, args...),
			IO{Stdin: strings.NewReader(""), Stdout: pw, Stderr: f.stderr, Getenv: func(string) string { return "" }})
		_ = pw.Close()
		close(f.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// expect waits, within a deadline, for the next line and checks that it holds want.
func (f *followed) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case l, ok := <-f.lines:
		if !ok {
			t.Fatalf("tail -f ended before a line holding %q; stderr:\n%s", want, f.stderr)
		}
		if !strings.Contains(l, want) {
			t.Fatalf("next line %q, want one holding %q", l, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no line holding %q within 10s; stderr:\n%s", want, f.stderr)
	}
}

// stop cancels the command (what Ctrl-C does) and checks it exits 0 with no line left over.
func (f *followed) stop(t *testing.T) {
	t.Helper()
	f.cancel()
	select {
	case <-f.done:
		if f.code != 0 {
			t.Errorf("tail -f exited %d; stderr:\n%s", f.code, f.stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("tail -f did not stop within 5s of its cancellation")
	}
	for l := range f.lines {
		t.Errorf("an extra line after the last one: %q", l)
	}
}

func writeHome(t *testing.T, config string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// tail -f prints every line once and in order while the host's writer rotates the file:
// a burst of dozens of rotations within one poll, then rotations between polls.
func TestDecisionsTailFollowsRotation(t *testing.T) {
	home := writeHome(t, "[decision_log]\npath = \"logs/decisions.jsonl\"\n")
	path := filepath.Join(home, "logs", "decisions.jsonl")
	// The host's writer, small enough to rotate every few lines; keep is large so that
	// no file is deleted before the follower reads it.
	rf, err := decision.OpenRotatingFile(path, decision.RotatingFileOptions{MaxBytes: 1024, Keep: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rf.Close() })
	e := decision.NewEngine(decision.Options{Log: decision.NewLog(rf)})
	e.LogApproval("t0", "docs", "older", decision.ApprovalAccepted, "")
	e.LogApproval("t0", "docs", "before", decision.ApprovalDeclined, "not now")

	// Polls more often than an operator's terminal needs, for the paced part's twelve
	// rounds; restored after the command ended (cleanups run last-registered first).
	poll := followPoll
	followPoll = 20 * time.Millisecond
	t.Cleanup(func() { followPoll = poll })
	f := startFollow(t, home, "-n", "1")
	f.expect(t, " t0 user approval docs/before call=declined (call: not now)")

	const burst = 200
	for i := range burst {
		e.LogApproval("t1", "docs", fmt.Sprintf("burst-%d", i), decision.ApprovalAccepted, "")
	}
	for i := range burst {
		f.expect(t, fmt.Sprintf(" t1 user approval docs/burst-%d call=accepted", i))
	}
	rotated, err := rotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) < 20 {
		t.Fatalf("%d rotations: the burst did not rotate much", len(rotated))
	}

	// One line at a time, each waited for: the follower switches files between polls.
	for i := range 12 {
		e.LogApproval("t2", "docs", fmt.Sprintf("paced-%d", i), decision.ApprovalAccepted, "")
		f.expect(t, fmt.Sprintf(" t2 user approval docs/paced-%d ", i))
	}
	if more, _ := rotatedFiles(path); len(more) <= len(rotated) {
		t.Fatalf("no rotation while paced (%d rotated files before, %d after)", len(rotated), len(more))
	}
	f.stop(t)
	if s := f.stderr.String(); strings.Contains(s, "warning") {
		t.Errorf("tail -f warned:\n%s", s)
	}
}

// tail -f on a log not written yet waits for it, with its filters.
func TestDecisionsTailFollowWaitsForFile(t *testing.T) {
	home := writeHome(t, "[decision_log]\npath = \"decisions.jsonl\"\n")
	f := startFollow(t, home, "--outcome", "declined")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(f.stderr.String(), "waiting for") {
		if time.Now().After(deadline) {
			t.Fatalf("tail -f does not say it waits; stderr:\n%s", f.stderr)
		}
		time.Sleep(10 * time.Millisecond) // polling the command's stderr, bounded above
	}
	rf, err := decision.OpenRotatingFile(filepath.Join(home, "decisions.jsonl"), decision.RotatingFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rf.Close() })
	e := decision.NewEngine(decision.Options{Log: decision.NewLog(rf)})
	e.LogApproval("t1", "docs", "a", decision.ApprovalAccepted, "")
	e.LogApproval("t1", "docs", "b", decision.ApprovalDeclined, "")
	f.expect(t, " t1 user approval docs/b call=declined")
	f.stop(t)
}

// A line longer than the reader's buffer is read whole; a control character in it is
// printed escaped, so that a reason cannot forge terminal output.
func TestDecisionsTailLongLine(t *testing.T) {
	home := writeHome(t, "[decision_log]\npath = \"decisions.jsonl\"\n")
	rf, err := decision.OpenRotatingFile(filepath.Join(home, "decisions.jsonl"), decision.RotatingFileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	e := decision.NewEngine(decision.Options{Log: decision.NewLog(rf)})
	reason := strings.Repeat("r", 300<<10) + "\x1b[2J"
	e.LogApproval("t1", "docs", "big", decision.ApprovalDeclined, reason)
	e.LogApproval("t1", "docs", "small", decision.ApprovalAccepted, "")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"--home", home, "decisions", "tail", "--outcome", "declined"},
		IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	if code != 0 || stderr.Len() > 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	want := " t1 user approval docs/big call=declined (call: " + strings.Repeat("r", 300<<10) + `\x1b[2J)` + "\n"
	if got := stdout.String(); !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("tail printed %d bytes (%d lines), not the long line whole and escaped", len(got), strings.Count(got, "\n"))
	}
}
