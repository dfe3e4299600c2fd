package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Set is an immutable snapshot of every capability root found in some plugins dirs. All of
// its methods are safe for concurrent use.
type Set struct {
	roots    []*Root // sorted by ID, then Dir
	byID     map[string][]*Root
	byDir    map[string]*Root
	problems []error
	fp       string

	// Bookkeeping for the Watcher.
	plugDirs   []plugDir
	candidates []candidate
	loaded     map[string]*Root // candidate path -> root before duplicate marking
}

// plugDir is one configured plugins dir as found by a scan.
type plugDir struct {
	path     string // absolute, as configured
	resolved string // symbolic links resolved; "" when it does not exist (or is unusable)
}

// candidate is an immediate subdirectory of a plugins dir (a root or not, yet).
type candidate struct {
	path     string // plugins dir (resolved) joined with the entry name
	resolved string // the directory it leads to
}

// Roots returns the roots sorted by ID (then Dir). The slice is a copy; the roots are
// shared and read-only.
func (s *Set) Roots() []*Root {
	return append([]*Root(nil), s.roots...)
}

// Len is the number of roots.
func (s *Set) Len() int { return len(s.roots) }

// Get returns the root with this id, or nil. When several roots share the id (all of them
// then have status error, see ErrDuplicateID) it returns the one whose Dir sorts first.
func (s *Set) Get(id string) *Root {
	if rs := s.byID[id]; len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// ByDir returns the root whose directory is path (compared after making path absolute
// and resolving its symbolic links), or nil.
func (s *Set) ByDir(path string) *Root {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if r, ok := s.byDir[abs]; ok {
		return r
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		return s.byDir[resolved]
	}
	return nil
}

// Problems returns the dir-level failures of the scan (a plugins dir that is missing,
// unreadable or not a directory; an entry that cannot be examined). Problems of one root
// are on that Root instead.
func (s *Set) Problems() []error {
	return append([]error(nil), s.problems...)
}

// Fingerprint is a hex digest of the set's content (every root's Fingerprint and the
// problems): equal fingerprints mean an identical scan result.
func (s *Set) Fingerprint() string { return s.fp }

// Scan loads every capability root that is an immediate subdirectory of one of dirs.
// Entries that are not directories, directories that are not roots and names starting
// with "." (hidden entries, editor and staging directories) are ignored; a symbolic link
// to a directory counts as that directory, and a directory reached twice is loaded once.
// Scan never fails: problems are in Set.Problems and on each Root.
func Scan(dirs []string, opts Options) *Set {
	return scan(dirs, opts.withDefaults(), nil)
}

// scan is Scan with an optional reuse hook: when reuse returns a root for a candidate path
// (a previous load of the same candidate), that root is kept instead of loading again.
func scan(dirs []string, opts Options, reuse func(candidatePath string) *Root) *Set {
	s := &Set{byID: map[string][]*Root{}, byDir: map[string]*Root{}, loaded: map[string]*Root{}}
	seenDir := map[string]bool{}  // plugins dirs
	seenRoot := map[string]bool{} // candidate directories
	for _, d := range dirs {
		pd := plugDir{path: d}
		if abs, err := filepath.Abs(d); err == nil {
			pd.path = abs
		}
		resolved, err := filepath.EvalSymlinks(pd.path)
		if err != nil {
			if isNotExist(err) {
				err = fmt.Errorf("plugins dir %s does not exist: %w", pd.path, err)
			} else {
				err = fmt.Errorf("plugins dir %s: %w", pd.path, err)
			}
			s.problems = append(s.problems, err)
			s.plugDirs = append(s.plugDirs, pd)
			continue
		}
		if fi, err := os.Stat(resolved); err == nil && !fi.IsDir() {
			s.problems = append(s.problems, fmt.Errorf("plugins dir %s is not a directory", pd.path))
			s.plugDirs = append(s.plugDirs, pd)
			continue
		}
		entries, err := os.ReadDir(resolved)
		if err != nil {
			s.problems = append(s.problems, fmt.Errorf("plugins dir %s: %w", pd.path, err))
			s.plugDirs = append(s.plugDirs, pd)
			continue
		}
		pd.resolved = resolved
		s.plugDirs = append(s.plugDirs, pd)
		if seenDir[resolved] {
			continue
		}
		seenDir[resolved] = true
		for _, e := range entries { // sorted by name
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			c := candidate{path: filepath.Join(resolved, e.Name())}
			fi, err := os.Stat(c.path)
			if err != nil {
				if e.Type()&os.ModeSymlink != 0 {
					s.problems = append(s.problems, fmt.Errorf("plugins dir %s: entry %s: %w", pd.path, e.Name(), err))
				}
				continue
			}
			if !fi.IsDir() {
				continue
			}
			if c.resolved, err = filepath.EvalSymlinks(c.path); err != nil {
				continue
			}
			if seenRoot[c.resolved] {
				continue // the same directory through another entry
			}
			seenRoot[c.resolved] = true
			s.candidates = append(s.candidates, c)
			if !isRoot(c.resolved) {
				continue
			}
			var r *Root
			if reuse != nil {
				r = reuse(c.path)
			}
			if r == nil {
				r = Load(c.path, opts)
			}
			s.loaded[c.path] = r
			s.roots = append(s.roots, r)
		}
	}
	s.markDuplicates()
	sort.SliceStable(s.roots, func(i, j int) bool {
		if s.roots[i].ID != s.roots[j].ID {
			return s.roots[i].ID < s.roots[j].ID
		}
		return s.roots[i].Dir < s.roots[j].Dir
	})
	for _, r := range s.roots {
		s.byID[r.ID] = append(s.byID[r.ID], r)
		s.byDir[r.Dir] = r
	}
	h := sha256.New()
	for _, r := range s.roots {
		io.WriteString(h, r.Fingerprint+"\n")
	}
	for _, p := range s.problems {
		fmt.Fprintf(h, "%d:%s\n", len(p.Error()), p.Error())
	}
	s.fp = hex.EncodeToString(h.Sum(nil))
	return s
}

// markDuplicates replaces every root that shares its id with another by a copy in status
// error naming the other directories.
func (s *Set) markDuplicates() {
	dirsByID := map[string][]string{}
	for _, r := range s.roots {
		dirsByID[r.ID] = append(dirsByID[r.ID], r.Dir)
	}
	for i, r := range s.roots {
		dirs := dirsByID[r.ID]
		if len(dirs) < 2 {
			continue
		}
		var others []string
		for _, d := range dirs {
			if d != r.Dir {
				others = append(others, d)
			}
		}
		sort.Strings(others)
		dup := *r
		dup.Err = errors.Join(r.Err, &Error{PluginID: r.ID, Dir: r.Dir,
			Err: fmt.Errorf("%w: also used by the root at %s", ErrDuplicateID, strings.Join(others, ", "))})
		setStatus(&dup)
		dup.Fingerprint = fingerprint(&dup)
		s.roots[i] = &dup
	}
}

// isRoot reports whether dir holds a manifest or a .mcp.json.
func isRoot(dir string) bool {
	for _, rel := range []string{CodexManifest, ClaudeManifest, MCPFile} {
		if lexists(filepath.Join(dir, filepath.FromSlash(rel))) {
			return true
		}
	}
	return false
}
