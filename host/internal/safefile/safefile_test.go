package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		max  int64
		want string
		err  error
	}{
		{"regular", regular, 10, "0123456789", nil},
		{"over the cap", regular, 9, "", ErrTooLarge},
		{"FIFO: refused, not a hang", fifo, 10, "", ErrNotRegular},
		{"device through a symlink: refused, not read forever", link, 10, "", ErrNotRegular},
		{"directory", dir, 10, "", ErrNotRegular},
		{"missing", filepath.Join(dir, "missing"), 10, "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(tt.path, tt.max)
			if !errors.Is(err, tt.err) || string(got) != tt.want {
				t.Fatalf("ReadFile = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				var pe *os.PathError
				if !errors.As(err, &pe) || pe.Path != tt.path {
					t.Errorf("error %v does not name %s", err, tt.path)
				}
			}
		})
	}
}
