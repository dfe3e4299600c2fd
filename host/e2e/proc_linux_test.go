//go:build linux

package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// process is a process the test did not start (so it cannot wait for it), opened as a pidfd:
// a pid reused after the process exits cannot be mistaken for it.
type process struct {
	pid int
	fd  int
}

// openProcess opens pid. Open it before asking it to exit, so that the exit is not missed.
func openProcess(pid int) (*process, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	return &process{pid: pid, fd: fd}, nil
}

// wait blocks until the process has exited (its pidfd turns readable) or ctx, which must
// have a deadline, is done.
func (p *process) wait(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return errors.New("process.wait needs a context with a deadline")
	}
	for {
		ms := time.Until(deadline).Milliseconds()
		if ms <= 0 {
			return fmt.Errorf("process %d has not exited: %w", p.pid, context.DeadlineExceeded)
		}
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(min(ms, 1<<30)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll on the pidfd of %d: %w", p.pid, err)
		}
		if n > 0 {
			return nil
		}
	}
}

// kill sends the process SIGKILL.
func (p *process) kill() error { return unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0) }

// close releases the pidfd.
func (p *process) close() error { return unix.Close(p.fd) }

// processesWithEnv returns the pids of the live processes whose environment holds the
// entry KEY=VALUE (those this user can read).
func processesWithEnv(entry string) ([]int, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue // exited meanwhile, or another user's
		}
		for _, e := range bytes.Split(env, []byte{0}) {
			if string(e) == entry {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}
