//go:build !unix

package store

import (
	"fmt"
	"os"
)

const noFollow = 0

func openChecked(path string, _ int) (*os.File, error) {
	return nil, fmt.Errorf("credential store %s: %w", path, ErrUnsupported)
}

func openLockFile(path string) (*os.File, error) {
	return nil, fmt.Errorf("credential store %s: %w", path, ErrUnsupported)
}

func flockExclusive(*os.File) error { return ErrUnsupported }
