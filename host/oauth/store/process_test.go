//go:build unix

package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The test binary re-executed as a writer process: helperEnv selects the mode, the others
// carry its arguments.
const (
	helperEnv     = "WARDEN_STORE_TEST_HELPER"
	helperPathEnv = "WARDEN_STORE_TEST_PATH"
	helperNameEnv = "WARDEN_STORE_TEST_WRITER"
	helperNEnv    = "WARDEN_STORE_TEST_N"
	// helperStallEnv set: a looping writer, at its Nth write, says "renaming" once its
	// temporary file is complete and then stalls before the rename until it is killed.
	helperStallEnv = "WARDEN_STORE_TEST_STALL_AT"
	// loopLimit bounds a looping writer whose parent never kills it.
	loopLimit = 5000
)

// helperMain runs a writer process and returns its exit code. Modes:
//
//   - "writer": prints "ready", waits for a line on stdin (so all writers start together),
//     then from 5 goroutines Puts entries 0..N-1 and increments the counter N times, and
//     prints "done".
//   - "loop": prints "writing", then Puts entry 0, 1, 2, … printing "committed I" after
//     each Put returns, until it is killed (see helperStallEnv).
func helperMain(mode string) int {
	ctx := context.Background()
	s, err := Open(os.Getenv(helperPathEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	name := os.Getenv(helperNameEnv)
	out := bufio.NewWriter(os.Stdout)
	say := func(line string) {
		out.WriteString(line + "\n")
		out.Flush()
	}
	switch mode {
	case "writer":
		n, err := strconv.Atoi(os.Getenv(helperNEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		say("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "waiting for the start line:", err)
			return 1
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for g := range 5 {
			wg.Go(func() {
				for i := g; i < n; i += 5 {
					k := writerKey(name, i)
					errs <- s.Put(ctx, entryFor(k, k.String()))
					errs <- increment(ctx, s)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		say("done")
		return 0
	case "loop":
		stallAt := -1
		if v := os.Getenv(helperStallEnv); v != "" {
			if stallAt, err = strconv.Atoi(v); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		say("writing")
		for i := range loopLimit {
			if i == stallAt {
				s.beforeRename = func() {
					say("renaming")
					_, _ = io.Copy(io.Discard, os.Stdin) // until killed
				}
			}
			k := writerKey(name, i)
			if err := s.Put(ctx, entryFor(k, k.String())); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			say("committed " + strconv.Itoa(i))
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

func helperCmd(t *testing.T, mode, path, name string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperEnv+"="+mode, helperPathEnv+"="+path, helperNameEnv+"="+name, helperNEnv+"="+strconv.Itoa(n))
	return cmd
}

func TestConcurrentProcesses(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	const procs, perProc = 4, 25
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  *bufio.Scanner
		stderr *bytes.Buffer
	}
	var ps []proc
	var names []string
	for i := range procs {
		name := "exec-" + strconv.Itoa(i)
		names = append(names, name)
		cmd := helperCmd(t, "writer", path, name, perProc)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &bytes.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		ps = append(ps, proc{cmd, stdin, bufio.NewScanner(stdout), stderr})
	}
	for i, p := range ps {
		if !p.lines.Scan() || p.lines.Text() != "ready" {
			t.Fatalf("writer %d did not get ready: %s", i, p.stderr)
		}
	}
	// All writers are open and waiting; release them together, and write from this
	// process's goroutines at the same time.
	for _, p := range ps {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*perProc)
	for i := range perProc {
		wg.Go(func() {
			k := writerKey("local-goroutines", i)
			errs <- s.Put(ctx, entryFor(k, k.String()))
			errs <- increment(ctx, s)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range ps {
		if !p.lines.Scan() || p.lines.Text() != "done" {
			t.Fatalf("writer %d did not finish: %s", i, p.stderr)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v: %s", i, err, p.stderr)
		}
	}
	checkCommitted(t, s, append(names, "local-goroutines"), perProc)
	if got, want := counter(t, s), (procs+1)*perProc; got != want {
		t.Fatalf("counter = %d after %d Updates from %d processes: updates were lost", got, want, procs+1)
	}
	if l, err := s.List(ctx); err != nil || len(l) != (procs+1)*perProc+1 {
		t.Fatalf("List = %d entries, %v", len(l), err)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Fatalf("mode %v", m)
	}
}

func TestKillDuringWrite(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	host := Key{Owner: OwnerLocal, Server: "host", URL: "https://host.test/mcp"}
	if err := s.Put(ctx, entryFor(host, "host")); err != nil {
		t.Fatal(err)
	}
	hostRaw := rawEntries(t, path)[host]
	const rounds = 6
	tornWrites := 0
	var writers []string
	committedIn := map[string]int{}
	for round := range rounds {
		name := "kill-" + strconv.Itoa(round)
		writers = append(writers, name)
		cmd := helperCmd(t, "loop", path, name, 0)
		// Even rounds kill at a random point; odd rounds kill a writer stalled between its
		// complete temporary file and the rename, the torn-write window itself.
		stall := round%2 == 1
		killAfter := 1 + rand.IntN(40)
		if stall {
			cmd.Env = append(cmd.Env, helperStallEnv+"="+strconv.Itoa(killAfter))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &bytes.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "writing" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("round %d: the writer did not start: %s", round, stderr)
		}
		// Kill once a random number of writes has been acknowledged: the writer is by
		// then inside its next write, at a point that varies from round to round.
		committed := -1
		for committed+1 < killAfter && lines.Scan() {
			committed = parseCommitted(t, lines.Text())
		}
		if stall && (!lines.Scan() || lines.Text() != "renaming") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("round %d: the writer did not stall before its rename: %s", round, stderr)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		// Lines already in the pipe are writes that completed before the kill.
		for lines.Scan() {
			committed = parseCommitted(t, lines.Text())
		}
		werr := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(werr, &exit) || exit.ExitCode() != -1 {
			t.Fatalf("round %d: the writer was not killed (%v): %s", round, werr, stderr)
		}
		if committed < 0 {
			t.Fatalf("round %d: no write was acknowledged: %s", round, stderr)
		}
		committedIn[name] = committed + 1
		_, err = os.Lstat(path + ".tmp")
		if err == nil {
			tornWrites++
		}
		if stall && err != nil {
			t.Fatalf("round %d: the writer killed before its rename left no temporary file (%v)", round, err)
		}
		if stall {
			// The stalled write never renamed: the file is the one before it.
			if _, ok, err := s.Get(ctx, writerKey(name, killAfter)); err != nil || ok {
				t.Fatalf("round %d: the entry of the write killed before its rename is visible (ok %v, %v)", round, ok, err)
			}
		}

		// The file loads, keeps mode 0600, and holds every acknowledged write of this and
		// the earlier rounds, and the host's entry unchanged.
		s2, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: Open after the kill: %v", round, err)
		}
		if m := modeOf(t, path); m != 0o600 {
			t.Fatalf("round %d: mode %v after the kill", round, m)
		}
		for _, w := range writers {
			checkCommitted(t, s2, []string{w}, committedIn[w])
		}
		if rawEntries(t, path)[host] != hostRaw {
			t.Fatalf("round %d: the host entry's bytes changed", round)
		}
		// The lock died with the writer: a write goes through, and removes any temporary
		// file the kill left.
		extra := Key{Owner: "after-kill", Server: "s", URL: "https://after.test/" + strconv.Itoa(round)}
		if err := s2.Put(ctx, entryFor(extra, "x")); err != nil {
			t.Fatalf("round %d: Put after the kill: %v", round, err)
		}
		if _, err := os.Lstat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: a temporary file remains after a write (%v)", round, err)
		}
	}
	t.Logf("%d of %d kills left a temporary file (%d of them by stalling the writer before its rename)", tornWrites, rounds, rounds/2)
	entries, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 { // the file and its lock
		t.Fatalf("files left beside the store: %v", entries)
	}
}

func parseCommitted(t *testing.T, line string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(line, "committed "))
	if err != nil || !strings.HasPrefix(line, "committed ") {
		t.Fatalf("writer said %q", line)
	}
	return n
}
