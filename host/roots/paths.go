package roots

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds symbolic-link resolution (Linux gives up at 40 as well).
const maxLinks = 40

// within reports whether the clean absolute path p is dir or lies under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolvePath evaluates every symbolic link in the absolute path p, including links in
// components that do not exist yet and dangling links (their target is followed as far as
// it exists). The result is what the kernel would reach if the missing parts were created,
// which is what must stay inside a root.
func resolvePath(p string) (string, error) {
	return resolveDepth(filepath.Clean(p), 0)
}

func resolveDepth(p string, depth int) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	rp, err := resolveDepth(parent, depth)
	if err != nil {
		return "", err
	}
	cand := filepath.Join(rp, filepath.Base(p))
	fi, err := os.Lstat(cand)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		// Missing (or below a non-directory), or present but not resolvable for another
		// reason: either way no link redirects it, so its path is cand.
		return cand, nil
	}
	if depth >= maxLinks {
		return "", fmt.Errorf("too many levels of symbolic links at %s", cand)
	}
	target, err := os.Readlink(cand)
	if err != nil {
		return "", fmt.Errorf("reading symbolic link: %w", err)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rp, target)
	}
	return resolveDepth(filepath.Clean(target), depth+1)
}

// insideRoot joins a plugin-relative (or absolute) path to the resolved root dir and checks
// that it stays inside, lexically and after resolving symbolic links. It returns the clean
// absolute path (links not resolved, so a command keeps its argv[0]) and the resolved path.
// what names the value in error messages, e.g. `cwd "../x"`.
func insideRoot(dir, p, what string) (abs, resolved string, err error) {
	abs = p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	abs = filepath.Clean(abs)
	if !within(dir, abs) {
		return "", "", fmt.Errorf("%s %q %w", what, p, ErrEscapesRoot)
	}
	resolved, err = resolvePath(abs)
	if err != nil {
		return "", "", fmt.Errorf("%s %q: %w", what, p, err)
	}
	if !within(dir, resolved) {
		return "", "", fmt.Errorf("%s %q %w (it resolves to %s)", what, p, ErrEscapesRoot, resolved)
	}
	return abs, resolved, nil
}

// lexists reports whether p exists, without following a final symbolic link.
func lexists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// relTo renders p relative to dir with forward slashes when p is inside dir, else p.
func relTo(dir, p string) string {
	if dir != "" && within(dir, p) {
		if rel, err := filepath.Rel(dir, p); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return p
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
