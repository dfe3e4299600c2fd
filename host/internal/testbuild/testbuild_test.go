package testbuild

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// entries counts the shared cache's entries.
func entries(t *testing.T, root string) int {
	t.Helper()
	des, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if de.IsDir() && !strings.HasPrefix(de.Name(), "tmp-") {
			n++
		}
	}
	return n
}

// A Go guest is built again when its own source or a package it imports changes, and only
// then; the unchanged build is served from the shared cache.
func TestGoGuestRebuildsOnChange(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	mod := t.TempDir()
	write(t, filepath.Join(mod, "go.mod"), "module example.com/guest\n\ngo 1.24\n")
	write(t, filepath.Join(mod, "lib", "lib.go"), "package lib\n\nconst Name = \"one\"\n")
	main := func(expr string) string {
		return "package main\n\nimport \"example.com/guest/lib\"\n\n//go:wasmexport name_len\nfunc nameLen() int32 { return int32(" + expr + ") }\n\nfunc main() {}\n"
	}
	write(t, filepath.Join(mod, "main.go"), main("len(lib.Name)"))

	first, err := buildGo(mod)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := buildGo(mod); err != nil || !bytes.Equal(again, first) || entries(t, root) != 1 {
		t.Fatalf("unchanged guest: err %v, same bytes %v, %d cache entries; want the one cached build", err, bytes.Equal(again, first), entries(t, root))
	}

	write(t, filepath.Join(mod, "main.go"), main("2 * len(lib.Name)"))
	second, err := buildGo(mod)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(second, first) || entries(t, root) != 2 {
		t.Errorf("edited main.go: new bytes %v, %d cache entries; want a new build", !bytes.Equal(second, first), entries(t, root))
	}

	write(t, filepath.Join(mod, "lib", "lib.go"), "package lib\n\nconst Name = \"three\"\n")
	third, err := buildGo(mod)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(third, second) || entries(t, root) != 3 {
		t.Errorf("edited an imported package: new bytes %v, %d cache entries; want a new build", !bytes.Equal(third, second), entries(t, root))
	}
}

// A WAT guest is keyed by its content, not its path.
func TestWATRebuildsOnChange(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	tool, err := wat2wasm()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.wat")
	write(t, path, "(module (func (export \"a\")))")
	a, err := buildWAT(tool, path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, "(module (func (export \"b\")))")
	b, err := buildWAT(tool, path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) || !bytes.Contains(b, []byte{1, 'b'}) || entries(t, root) != 2 {
		t.Errorf("edited WAT: new bytes %v, %d entries; want a new build exporting b", !bytes.Equal(a, b), entries(t, root))
	}
}

// Callers that want the same entry at once (as parallel package test binaries do) build it
// once between them; the others wait for it.
func TestSharedBuildsOnce(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	var builds atomic.Int32
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Go(func() {
			p, _, err := shared("k", "out", func(out string) error {
				builds.Add(1)
				return os.WriteFile(out, []byte("built"), 0o644)
			})
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("%d builds, want 1", n)
	}
	for _, p := range paths {
		if data, err := os.ReadFile(p); err != nil || string(data) != "built" {
			t.Errorf("%s: %q, %v", p, data, err)
		}
	}
}
