//go:build !linux

package e2e_test

import (
	"context"
	"errors"
)

// errNoPidfd: the mcpdo test checks that the daemon it did not start has exited, which
// needs Linux's pidfds and /proc.
var errNoPidfd = errors.New("waiting on a process that is not a child needs Linux (pidfd, /proc)")

type process struct{}

func openProcess(int) (*process, error)      { return nil, errNoPidfd }
func (*process) wait(context.Context) error  { return errNoPidfd }
func (*process) kill() error                 { return errNoPidfd }
func (*process) close() error                { return errNoPidfd }
func processesWithEnv(string) ([]int, error) { return nil, errNoPidfd }
