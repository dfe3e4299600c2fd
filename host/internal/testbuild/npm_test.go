package testbuild

import (
	"os"
	"path/filepath"
	"testing"
)

// An npm project is installed once per content: the same files are served from the shared
// cache, a changed lockfile is a new install. The project has no dependencies, so npm ci
// needs no registry.
func TestNPMCachedByContent(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	proj := t.TempDir()
	pkg := func(version string) {
		write(t, filepath.Join(proj, "package.json"), `{"name":"x","version":"`+version+`","private":true}`)
		write(t, filepath.Join(proj, "package-lock.json"), `{"name":"x","version":"`+version+`","lockfileVersion":3,"requires":true,"packages":{"":{"name":"x","version":"`+version+`"}}}`)
	}
	pkg("1.0.0")
	first, err := installNPM(proj)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(first, "package-lock.json")); err != nil || len(data) == 0 {
		t.Fatalf("the install has no lockfile: %v", err)
	}
	if again, err := installNPM(proj); err != nil || again != first || entries(t, root) != 1 {
		t.Fatalf("unchanged project: %q (err %v), %d cache entries; want %q, the one cached install", again, err, entries(t, root), first)
	}
	pkg("1.0.1")
	second, err := installNPM(proj)
	if err != nil {
		t.Fatal(err)
	}
	if second == first || entries(t, root) != 2 {
		t.Fatalf("changed project installed at %q (first %q), %d cache entries; want a second entry", second, first, entries(t, root))
	}
	if _, err := installNPM(t.TempDir()); err == nil {
		t.Error("a directory without package.json installed")
	}
}
