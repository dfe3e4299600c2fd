//go:build !unix

package npmtest

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// lockFile creates path exclusively, waiting at most wait for another holder to remove it.
// A lock file older than installTimeout is taken to be left by a crashed process and
// removed.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > installTimeout {
			_ = os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another process held %s for more than %s", path, wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
