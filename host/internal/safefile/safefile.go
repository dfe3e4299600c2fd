// Package safefile reads files that a hostile directory may have planted: regular files
// only, opened without blocking (a FIFO would hang open(2) and every read), checked with
// fstat on the descriptor that is read (so a file swapped after a stat cannot slip
// through), and read under a byte cap (a device or a growing file cannot exhaust memory).
//
//	data, err := safefile.ReadFile(path, 4<<20)
//	if errors.Is(err, safefile.ErrTooLarge) { … }
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Sentinel errors, wrapped with the path by ReadFile.
var (
	// ErrNotRegular: the path is a directory, FIFO, socket or device.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more than the cap.
	ErrTooLarge = errors.New("file too large")
)

// ReadFile returns the contents of the regular file at path, which must hold at most max
// bytes. Errors name the path; errors.Is distinguishes ErrNotRegular, ErrTooLarge and the
// fs errors (fs.ErrNotExist, fs.ErrPermission).
func ReadFile(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. It has no
	// effect on reads of a regular file, the only kind read below.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if fi.Size() > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrTooLarge, fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over the %d-byte limit", ErrTooLarge, max)}
	}
	return data, nil
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
