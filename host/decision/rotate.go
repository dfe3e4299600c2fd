package decision

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// RotatingFileOptions configure OpenRotatingFile.
type RotatingFileOptions struct {
	// MaxBytes is the size a write may not take the file past: before such a write the
	// file is rotated. 0 never rotates.
	MaxBytes int64
	// Keep is how many rotated files (PATH.1, the newest, to PATH.Keep) are kept; below 1
	// means 1.
	Keep int
	// Logger receives the file's failures (a rotation or a write that failed), each once
	// until it clears. nil: none.
	Logger hclog.Logger
}

// RotatingFile is the decision log's file: append-only, created 0600, and rotated by size.
// When a write would take it past MaxBytes, PATH is renamed to PATH.1 (PATH.1 to PATH.2 and
// so on, the files beyond Keep deleted) and a new PATH is created 0600. Each Write lands
// whole in one file, so a Log line is never split across files; a line longer than
// MaxBytes gets a file of its own.
//
// A failed rotation (a read-only directory, no inodes, no file descriptors) never blocks or
// drops a write: it is logged once, the line is appended to the current file, which grows
// past MaxBytes, and rotation is tried again rotateRetry later. A failed write is returned
// (Log drops it, so that a decision never depends on its log line) and logged once.
//
// Several processes may share one PATH (each `warden mcp` of one home): every write is an
// O_APPEND write, and a process whose PATH was rotated by another, or replaced or removed
// by an operator, notices within reopenCheck and reopens PATH instead of writing on to the
// renamed file.
//
// RotatingFile is safe for concurrent use; Log serializes its writes anyway, so rotation
// happens under Log's lock and no line interleaves with another.
type RotatingFile struct {
	path     string
	maxBytes int64
	keep     int
	log      hclog.Logger
	now      func() time.Time // replaced by tests that step past rotateRetry
	regular  bool             // PATH is a regular file: rotated, and reopened when moved

	mu            sync.Mutex
	f             *os.File
	fi            os.FileInfo // f's identity, to tell whether PATH still names it
	size          int64       // f's size: at open, plus what this process wrote since
	checked       time.Time   // when PATH was last compared with f
	retryAt       time.Time   // after a failed rotation: when to try again
	rotateFailing bool        // a rotation failure was logged and none succeeded since
	reopenFailing bool        // likewise for reopening a PATH that no longer names f
	writeFailing  bool        // likewise for a failed write
	closed        bool
}

const (
	// rotateRetry spaces the attempts after a failed rotation: each costs a few failing
	// system calls, and the condition (a directory's permissions, a full disk) is one an
	// operator fixes in minutes, not microseconds.
	rotateRetry = 10 * time.Second
	// reopenCheck is how often a write compares PATH with the open file (one stat).
	reopenCheck = time.Second
)

// OpenRotatingFile opens path for appending (creating it 0600, and its directory 0700, when
// missing). A path that is not a regular file (a FIFO, /dev/stderr) is written to but
// never rotated.
func OpenRotatingFile(path string, o RotatingFileOptions) (*RotatingFile, error) {
	r := &RotatingFile{path: path, maxBytes: max(o.MaxBytes, 0), keep: max(o.Keep, 1), log: o.Logger, now: time.Now}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	f, fi, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	r.regular = fi.Mode().IsRegular()
	if !r.regular {
		r.maxBytes = 0
	}
	r.f, r.fi, r.size, r.checked = f, fi, fi.Size(), r.now()
	return r, nil
}

// openAppend opens path for appending, creating it 0600, and returns its identity.
func openAppend(path string) (*os.File, os.FileInfo, error) {
	// The os errors below are *fs.PathError values: they name the file.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("decision log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("decision log: %w", err)
	}
	return f, fi, nil
}

// Path is the file's path (the current file; the rotated ones are Path()+".N").
func (r *RotatingFile) Path() string { return r.path }

// Write appends p to the file in one write, rotating it first when p would take it past
// MaxBytes.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, fmt.Errorf("decision log %s: %w", r.path, os.ErrClosed)
	}
	now := r.now()
	if r.regular && now.Sub(r.checked) >= reopenCheck {
		r.checked = now
		if r.movedAway() {
			r.reopen()
		}
	}
	if r.maxBytes > 0 && r.size > 0 && r.size+int64(len(p)) > r.maxBytes && !now.Before(r.retryAt) {
		r.rotate(now)
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	if err != nil {
		if !r.writeFailing {
			r.writeFailing = true
			r.log.Error("decision log: cannot write; decisions go unlogged until it can", "path", r.path, "error", err)
		}
		return n, fmt.Errorf("decision log: %w", err) // a *fs.PathError: it names the file
	}
	if r.writeFailing {
		r.writeFailing = false
		r.log.Info("decision log: writing again", "path", r.path)
	}
	return n, nil
}

// movedAway reports whether PATH no longer names the open file: another process rotated
// it, or an operator moved or removed it.
func (r *RotatingFile) movedAway() bool {
	fi, err := os.Stat(r.path)
	return err != nil || !os.SameFile(fi, r.fi)
}

// reopen switches to PATH (created when missing) after PATH stopped naming the open file,
// and reports whether it did; on failure the writes go on to the moved file.
func (r *RotatingFile) reopen() bool {
	f, fi, err := openAppend(r.path)
	if err != nil {
		if !r.reopenFailing {
			r.reopenFailing = true
			r.log.Error("decision log: the file was moved away and cannot be created again; writing on to the moved file", "path", r.path, "error", err)
		}
		return false
	}
	if r.reopenFailing {
		r.reopenFailing = false
		r.log.Info("decision log: writing to the file again", "path", r.path)
	}
	_ = r.f.Close() // written with plain writes: nothing is buffered to lose
	r.f, r.fi, r.size = f, fi, fi.Size()
	return true
}

// rotate renames PATH to PATH.1 (after shifting the older files up) and switches to a new
// PATH. The new file is created first, under a temporary name, so that the likely failures
// (a read-only directory, no inodes or descriptors left) happen before anything is
// renamed; on any failure the current file stays and the caller's line goes to it.
func (r *RotatingFile) rotate(now time.Time) {
	if r.movedAway() && r.reopen() {
		// Another process has just rotated PATH (or it was removed): write to the new one
		// rather than rotate again, which would push an almost empty file aside.
		return
	}
	if err := r.rotateFiles(); err != nil {
		r.retryAt = now.Add(rotateRetry)
		if !r.rotateFailing {
			r.rotateFailing = true
			r.log.Error("decision log: cannot rotate; lines are appended past max_size_mb until it can",
				"path", r.path, "max_bytes", r.maxBytes, "retry_every", rotateRetry, "error", err)
		}
		return
	}
	if r.rotateFailing {
		r.rotateFailing = false
		r.log.Info("decision log: rotated again", "path", r.path)
	}
}

func (r *RotatingFile) rotateFiles() error {
	dir, base := filepath.Split(r.path)
	tmp, err := os.CreateTemp(dir, base+".new-*") // 0600, and never a name grep reads
	if err != nil {
		return err
	}
	fi, err := tmp.Stat()
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	abort := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	// Shift the run PATH.1, PATH.2, … up by one, stopping at the first missing file or at
	// PATH.keep: a rename replaces its target, so the oldest kept file (or a stale one past
	// a gap an operator made) is overwritten, and a rotation costs a few system calls
	// whatever keep is.
	n := 0
	for n < r.keep-1 {
		if _, err := os.Lstat(r.rotated(n + 1)); err != nil {
			break
		}
		n++
	}
	for i := n; i >= 1; i-- {
		if err := os.Rename(r.rotated(i), r.rotated(i+1)); err != nil {
			return abort(err)
		}
	}
	if err := os.Rename(r.path, r.rotated(1)); err != nil {
		return abort(err)
	}
	if err := os.Rename(tmp.Name(), r.path); err != nil {
		// Put the current file back where readers and the next rotation look for it.
		_ = os.Rename(r.rotated(1), r.path)
		return abort(err)
	}
	// Files left beyond keep by a larger keep before.
	for i := r.keep + 1; ; i++ {
		if os.Remove(r.rotated(i)) != nil {
			break
		}
	}
	_ = r.f.Close()
	r.f, r.fi, r.size = tmp, fi, 0
	return nil
}

// rotated is the name of the i-th rotated file.
func (r *RotatingFile) rotated(i int) string { return r.path + "." + strconv.Itoa(i) }

// Close closes the file; later writes fail.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}
