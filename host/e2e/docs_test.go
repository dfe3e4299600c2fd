package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runnableDocs are the documents whose shell blocks a newcomer runs as written.
var runnableDocs = []string{"docs/operators.md", "docs/plugin-authors.md"}

// TestDocsShellBlocks runs every ```sh block of each runnable document, in order, as one
// bash script (set -euo pipefail) from the repository root — as a reader with a checkout
// would — with HOME a fresh directory, so ~/.warden is the reader's own new home. Blocks
// fenced otherwise (```text, ```toml, ```console) are shown, not run. A block may start
// processes in the background; they are killed with the script's process group.
func TestDocsShellBlocks(t *testing.T) {
	root := repoRoot(t)
	for _, doc := range runnableDocs {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			script, n := shellBlocks(t, filepath.Join(root, doc))
			if n == 0 {
				t.Fatalf("%s has no ```sh block", doc)
			}
			home := t.TempDir()
			file := filepath.Join(t.TempDir(), filepath.Base(doc)+".sh")
			if err := os.WriteFile(file, []byte("set -euo pipefail\nPS4='+ ${BASH_SOURCE##*/}:${LINENO}: '\nset -x\n"+script), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("bash", file)
			cmd.Dir = root
			cmd.Env = docEnv(t, home)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(4 * time.Minute):
				err = context.DeadlineExceeded
			}
			// Background processes the document started (a warden serve) go with the group.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			if err == context.DeadlineExceeded {
				<-done
			}
			if err != nil {
				t.Fatalf("%s: the shell blocks failed: %v\n%s", doc, err, tail(out.String(), 80))
			}
		})
	}
}

// shellBlocks returns the ```sh blocks of a markdown file joined in order, and how many
// there were.
func shellBlocks(t *testing.T, path string) (string, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	n, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "```sh":
			in, n = true, n+1
		case in && strings.TrimSpace(line) == "```":
			in = false
			b.WriteString("\n")
		case in:
			b.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if in {
		t.Fatalf("%s: a ```sh block is not closed", path)
	}
	return b.String(), n
}

// docEnv is the reader's environment: this process's, with HOME a new directory and no
// WARDEN_* variables, keeping Go's caches where they are (a new HOME would otherwise
// rebuild everything from scratch).
func docEnv(t *testing.T, home string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "WARDEN_") {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return append(env, "HOME="+home)
}

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
