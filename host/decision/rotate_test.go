package decision

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openRotating opens a RotatingFile at dir/decisions.jsonl whose clock the test steps, and
// whose logger writes to the returned buffer.
func openRotating(t *testing.T, dir string, maxBytes int64, keep int) (*RotatingFile, *time.Time, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	r, err := OpenRotatingFile(filepath.Join(dir, "decisions.jsonl"), RotatingFileOptions{MaxBytes: maxBytes, Keep: keep, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 15, 4, 5, 0, time.UTC)
	r.now = func() time.Time { return now }
	r.checked = now // was the real clock's
	t.Cleanup(func() { _ = r.Close() })
	return r, &now, logs
}

// line is a fixed-width log line numbered i: width bytes with the newline.
func line(i, width int) []byte {
	s := fmt.Sprintf(`{"n":%d,"pad":"`, i)
	s += strings.Repeat("x", width-len(s)-3) + "\"}\n"
	return []byte(s)
}

func writeLines(t *testing.T, w io.Writer, from, to, width int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := w.Write(line(i, width)); err != nil {
			t.Fatal(err)
		}
	}
}

// numbers reads a file of line(i, …) lines and returns the i's, failing on a line that is
// not a whole JSON object.
func numbers(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ N int }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: a broken line %q: %v", path, sc.Text(), err)
		}
		out = append(out, l.N)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s does not end with a newline", path)
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// files lists dir's names.
func files(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func checkMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, fi.Mode().Perm())
	}
}

// A file may reach MaxBytes exactly; the write that would pass it goes to a new file.
func TestRotatingFileBoundary(t *testing.T) {
	dir := t.TempDir()
	const width = 100
	r, _, _ := openRotating(t, dir, 3*width, 5)
	path := r.Path()
	writeLines(t, r, 0, 3, width)
	if got := files(t, dir); !slices.Equal(got, []string{"decisions.jsonl"}) {
		t.Fatalf("at exactly max_size: files %v, want no rotation", got)
	}
	writeLines(t, r, 3, 4, width)
	if got := numbers(t, path+".1"); !slices.Equal(got, seq(0, 3)) {
		t.Errorf("decisions.jsonl.1 holds %v", got)
	}
	if got := numbers(t, path); !slices.Equal(got, []int{3}) {
		t.Errorf("decisions.jsonl holds %v", got)
	}
	checkMode(t, path)
	checkMode(t, path+".1")

	// A line longer than max_size is not split: it gets a file of its own.
	long := line(4, 5*width)
	if _, err := r.Write(long); err != nil {
		t.Fatal(err)
	}
	writeLines(t, r, 5, 6, width)
	if got := numbers(t, path+".1"); !slices.Equal(got, []int{4}) {
		t.Errorf("the long line's file holds %v", got)
	}
	if got := numbers(t, path); !slices.Equal(got, []int{5}) {
		t.Errorf("decisions.jsonl holds %v", got)
	}
}

// A reopened file counts what it already holds.
func TestRotatingFileReopenCountsSize(t *testing.T) {
	dir := t.TempDir()
	const width = 100
	r, _, _ := openRotating(t, dir, 3*width, 5)
	writeLines(t, r, 0, 2, width)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(line(9, width)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("a write after Close: %v, want os.ErrClosed", err)
	}
	r2, _, _ := openRotating(t, dir, 3*width, 5)
	writeLines(t, r2, 2, 4, width)
	if got := numbers(t, r2.Path()+".1"); !slices.Equal(got, seq(0, 3)) {
		t.Errorf("decisions.jsonl.1 holds %v", got)
	}
	if got := numbers(t, r2.Path()); !slices.Equal(got, []int{3}) {
		t.Errorf("decisions.jsonl holds %v", got)
	}
}

// keep rotated files are kept, the newest as .1; older ones (and those a larger keep
// left) are deleted; no temporary file stays behind.
func TestRotatingFileKeep(t *testing.T) {
	dir := t.TempDir()
	const width = 50
	// A larger keep before left .3 to .5 behind.
	for i := 3; i <= 5; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("decisions.jsonl.%d", i)), line(-i, width), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, _, _ := openRotating(t, dir, 2*width, 2)
	path := r.Path()
	writeLines(t, r, 0, 20, width) // ten files of two lines
	want := []string{"decisions.jsonl", "decisions.jsonl.1", "decisions.jsonl.2"}
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for i, name := range []string{path + ".2", path + ".1", path} {
		if got := numbers(t, name); !slices.Equal(got, seq(14+2*i, 16+2*i)) {
			t.Errorf("%s holds %v, want %v", name, got, seq(14+2*i, 16+2*i))
		}
		checkMode(t, name)
	}
}

// Many goroutines log through one Log: every line lands whole, exactly once, in a file of
// at most max_size bytes (run with -race).
func TestRotatingFileConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	const maxBytes = 4096
	const writers, perWriter = 16, 200
	r, _, _ := openRotating(t, dir, maxBytes, 1000)
	e := NewEngine(Options{Log: NewLog(r)})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				e.LogApproval(fmt.Sprintf("t%d", w), "docs", fmt.Sprintf("tool-%d", i), ApprovalAccepted, "")
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	names := files(t, dir)
	if len(names) < 10 {
		t.Fatalf("only %d files: the test did not rotate much", len(names))
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if name != "decisions.jsonl" && !strings.HasPrefix(name, "decisions.jsonl.") {
			t.Errorf("unexpected file %s", name)
			continue
		}
		checkMode(t, p)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > maxBytes {
			t.Errorf("%s is %d bytes, past %d", name, len(data), maxBytes)
		}
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if l == "" {
				continue
			}
			var v struct{ Thread, Tool string }
			if !strings.HasSuffix(l, "\n") || json.Unmarshal([]byte(l), &v) != nil {
				t.Fatalf("%s: a broken line %q", name, l)
			}
			seen[v.Thread+"/"+v.Tool]++
		}
	}
	if len(seen) != writers*perWriter {
		t.Errorf("%d distinct lines, want %d", len(seen), writers*perWriter)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s logged %d times", k, n)
		}
	}
}

// A file moved away (another process rotated it, an operator removed it) is left for a
// new PATH within reopenCheck.
func TestRotatingFileMovedAway(t *testing.T) {
	dir := t.TempDir()
	const width = 100
	r, now, _ := openRotating(t, dir, 10*width, 5)
	path := r.Path()
	writeLines(t, r, 0, 2, width)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	writeLines(t, r, 2, 3, width) // within reopenCheck: still the moved file
	*now = now.Add(reopenCheck)
	writeLines(t, r, 3, 5, width)
	if got := numbers(t, path+".1"); !slices.Equal(got, seq(0, 3)) {
		t.Errorf("the moved file holds %v", got)
	}
	if got := numbers(t, path); !slices.Equal(got, seq(3, 5)) {
		t.Errorf("the new file holds %v", got)
	}
	checkMode(t, path)
}

const readOnlyChildEnv = "WARDEN_TEST_ROTATE_READONLY_DIR"

// A rotation that fails (the directory is read-only) loses no line and blocks no write:
// lines go on to the current file past max_size, the failure is logged once, and rotation
// resumes once the directory is writable again.
//
// root ignores directory permissions, so as root the check runs in a child process of this
// test binary as the unprivileged user nobody.
func TestRotatingFileReadOnlyDir(t *testing.T) {
	if dir := os.Getenv(readOnlyChildEnv); dir != "" {
		readOnlyDirCheck(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		readOnlyDirCheck(t, t.TempDir())
		return
	}
	const nobody = 65534
	// The child must reach its binary and its directory: a world-traversable copy.
	top, err := os.MkdirTemp("", "warden-rotate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(top, "decision.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestRotatingFileReadOnlyDir$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), readOnlyChildEnv+"="+dir)
	cmd.Dir = top
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestRotatingFileReadOnlyDir")) {
		t.Fatalf("the check as user nobody: %v\n%s", err, out)
	}
}

func readOnlyDirCheck(t *testing.T, dir string) {
	const width = 100
	r, now, logs := openRotating(t, dir, 2*width, 3)
	path := r.Path()
	writeLines(t, r, 0, 2, width)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
	writeLines(t, r, 2, 5, width) // the first one past max_size tries to rotate, and fails
	*now = now.Add(rotateRetry)
	writeLines(t, r, 5, 7, width) // tried again after rotateRetry: fails again
	if got := numbers(t, path); !slices.Equal(got, seq(0, 7)) {
		t.Errorf("with rotation failing, the file holds %v, want every line", got)
	}
	if n := strings.Count(logs.String(), "cannot rotate"); n != 1 {
		t.Errorf("the rotation failure is logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), path) {
		t.Errorf("the failure does not name the file:\n%s", logs)
	}

	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(rotateRetry)
	writeLines(t, r, 7, 8, width)
	if got := numbers(t, path+".1"); !slices.Equal(got, seq(0, 7)) {
		t.Errorf("after recovery, decisions.jsonl.1 holds %v", got)
	}
	if got := numbers(t, path); !slices.Equal(got, []int{7}) {
		t.Errorf("after recovery, decisions.jsonl holds %v", got)
	}
	if !strings.Contains(logs.String(), "rotated again") {
		t.Errorf("the recovery is not logged:\n%s", logs)
	}
	if got := files(t, dir); !slices.Equal(got, []string{"decisions.jsonl", "decisions.jsonl.1"}) {
		t.Errorf("files %v: a temporary file stayed behind", got)
	}
}

// A path that is not a regular file is written to and never rotated.
func TestRotatingFileNotRegular(t *testing.T) {
	r, err := OpenRotatingFile(os.DevNull, RotatingFileOptions{MaxBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 3 {
		if _, err := r.Write([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(os.DevNull + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.1: %v; /dev/null was rotated", os.DevNull, err)
	}
}
