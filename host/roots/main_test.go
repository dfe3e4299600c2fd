package roots

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (the Watcher must
// release its file watcher and timers when Run returns).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// layout creates files under dir. A value "link:TARGET" makes a symbolic link, "dir:" an
// empty directory; anything else is file content. In targets and contents, {DIR} is
// replaced by dir and {OUT} by out.
func layout(t testing.TB, dir, out string, files map[string]string) {
	t.Helper()
	rep := strings.NewReplacer("{DIR}", dir, "{OUT}", out)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(content, "link:"):
			if err := os.Symlink(rep.Replace(strings.TrimPrefix(content, "link:")), p); err != nil {
				t.Fatal(err)
			}
		case content == "dir:":
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(rep.Replace(content)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// tempDir is t.TempDir with symbolic links resolved (so expected paths compare equal to
// Root.Dir).
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// errStrings renders errors for comparison.
func errStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}
