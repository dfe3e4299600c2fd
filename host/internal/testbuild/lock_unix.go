//go:build unix

package testbuild

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if needed), blocking until the holder
// releases it. The kernel drops the lock when its process dies, so a crashed test run never
// wedges the cache.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
