package npmtest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDir(t *testing.T) {
	t.Setenv("WARDEN_NPM_CACHE", t.TempDir())
	a, err := Dir("@scope/pkg@1.2.3", "other@2026.8.31")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Dir("other@2026.8.31", "@scope/pkg@1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("the package order changed the directory: %s vs %s", a, b)
	}
	c, err := Dir("other@2026.8.31", "@scope/pkg@1.2.4")
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Errorf("another version shares the directory %s", a)
	}
	if filepath.Dir(a) != filepath.Clean(filepathEnv(t)) {
		t.Errorf("Dir = %s, want it under $WARDEN_NPM_CACHE", a)
	}
	for _, bad := range [][]string{nil, {"pkg"}, {"pkg@^1.2.3"}, {"pkg@latest"}, {"@scope/pkg@1.2"}, {"ok@1.0.0", "pkg@~1.0.0"}} {
		if _, err := Dir(bad...); err == nil {
			t.Errorf("Dir(%q) accepted a package list that is not pinned", bad)
		} else if len(bad) > 0 && !strings.Contains(err.Error(), "pinned") {
			t.Errorf("Dir(%q) = %v, want it to say the package is not pinned", bad, err)
		}
	}
}

func filepathEnv(t *testing.T) string {
	d, err := cacheRoot()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := lockFile(path, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockFile(path, 0); err == nil {
		t.Fatal("a second lock succeeded while the first was held")
	}
	unlock()
	unlock2, err := lockFile(path, 0)
	if err != nil {
		t.Fatalf("locking after release: %v", err)
	}
	unlock2()
}
