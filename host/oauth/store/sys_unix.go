//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// noFollow makes open(2) fail on a symbolic link in the last path component.
const noFollow = syscall.O_NOFOLLOW

// openChecked opens path without following a final symlink and without blocking (a FIFO
// would otherwise hang open(2)), then applies checkFile to the opened descriptor, so a
// file swapped in after a stat cannot slip through.
func openChecked(path string, flag int) (*os.File, error) {
	what := "the file"
	if flag&os.O_CREATE != 0 {
		what = "the lock file"
	}
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, fmt.Errorf("credential store %s: %s is %w (a symbolic link); point the store at the real file", path, what, ErrNotRegular)
		case errors.Is(err, syscall.EISDIR):
			return nil, fmt.Errorf("credential store %s: %s is %w (a directory); remove it or choose another path", path, what, ErrNotRegular)
		}
		return nil, fmt.Errorf("credential store %s: opening %s: %w", path, what, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("credential store %s: %w", path, err)
	}
	uid := -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid = int(st.Uid)
	}
	if err := checkFile(path, what, fi, uid); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// openLockFile opens (creating, mode 0600) the lock file, with the same checks as the
// credential file: a lock file others can open is one they can hold forever. It is opened
// read-only because flock(2) needs no write access and nothing is ever written to it.
func openLockFile(path string) (*os.File, error) {
	return openChecked(path, os.O_RDONLY|os.O_CREATE)
}

// flockExclusive blocks until it holds an exclusive flock on f. The lock belongs to f's
// open file description, so two opens in one process exclude each other as two processes
// do, and the kernel drops it when the descriptor is closed or its process dies.
func flockExclusive(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), syscall.LOCK_EX)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
