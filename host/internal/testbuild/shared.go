package testbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The shared cache holds every build result of a test run on disk, so that the package test
// binaries go test runs (in parallel) build each guest and helper binary once between them,
// not once each. An entry is a directory named by the sha256 of everything its build reads
// (the sources, the tool and its flags, the Go version and target), holding the one output
// file; it appears by an atomic rename, so an entry that exists is complete. A per-entry
// flock makes the other processes that want the same entry wait for the first to build it.
// Entries unused for pruneAfter are removed when a new entry is written.

// CacheEnv overrides the shared cache directory (default <module root>/.cache/testbuild, or
// <user cache dir>/warden/testbuild outside the module).
const CacheEnv = "WARDEN_TESTBUILD_CACHE"

// layout versions the key derivation; bump it to invalidate every entry.
const layout = "testbuild-1"

// pruneAfter is how long an entry may go unused before a new build removes it.
const pruneAfter = 7 * 24 * time.Hour

// sharedRoot is the cache directory, created if needed.
func sharedRoot() (string, error) {
	root := os.Getenv(CacheEnv)
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		if mod := moduleRoot(wd); mod != "" {
			root = filepath.Join(mod, ".cache", "testbuild")
		} else {
			base, err := os.UserCacheDir()
			if err != nil {
				return "", err
			}
			root = filepath.Join(base, "warden", "testbuild")
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("testbuild cache %s: %w", root, err)
	}
	return root, nil
}

// shared returns the path of the file name in the cache entry for key, running build (which
// writes the file at the path it is given) only when no entry exists yet. built reports
// whether this call ran build.
func shared(key, name string, build func(out string) error) (path string, built bool, err error) {
	root, err := sharedRoot()
	if err != nil {
		return "", false, err
	}
	entry := filepath.Join(root, key)
	path = filepath.Join(entry, name)
	if hit(path) {
		return path, false, nil
	}
	unlock, err := lockFile(entry + ".lock")
	if err != nil {
		return "", false, fmt.Errorf("locking testbuild cache entry %s: %w", entry, err)
	}
	defer unlock()
	if hit(path) { // another process built it while this one waited
		return path, false, nil
	}
	tmp, err := os.MkdirTemp(root, "tmp-")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(tmp)
	if err := build(filepath.Join(tmp, name)); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, entry); err != nil {
		if hit(path) { // without a lock (non-unix), a concurrent build may have won
			return path, false, nil
		}
		return "", false, fmt.Errorf("testbuild cache entry %s: %w", entry, err)
	}
	prune(root)
	return path, true, nil
}

// hit reports whether path exists, marking its entry used.
func hit(path string) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Dir(path), now, now)
	return true
}

// prune removes the entries (and their lock files) unused for pruneAfter.
func prune(root string) {
	des, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || time.Since(fi.ModTime()) < pruneAfter {
			continue
		}
		p := filepath.Join(root, de.Name())
		if de.IsDir() {
			_ = os.RemoveAll(p)
			_ = os.Remove(p + ".lock")
		}
	}
}

// keyer accumulates a cache key.
type keyer struct{ h io.Writer }

func newKeyer(kind string) (*keyer, func() string) {
	h := sha256.New()
	k := &keyer{h: h}
	k.add(layout, kind)
	return k, func() string { return hex.EncodeToString(h.Sum(nil)) }
}

// add hashes strings, each length-prefixed so that no two lists hash alike.
func (k *keyer) add(ss ...string) {
	for _, s := range ss {
		fmt.Fprintf(k.h, "%d:%s\n", len(s), s)
	}
}

// file hashes a file's name and content, reading it in the test process, which is also what
// makes go test's result cache see it: go test hashes the files a test opens, while the
// compilers run in subprocesses whose reads it cannot see.
func (k *keyer) file(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	k.add("file", path, string(data))
	return nil
}

// tool hashes a tool's identity: its path, size and modification time (an upgraded tool is
// a new key).
func (k *keyer) tool(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	k.add("tool", path, fmt.Sprint(fi.Size()), fi.ModTime().UTC().Format(time.RFC3339Nano))
	return nil
}

// goEnvOnce reads the go command's version and the settings every Go build depends on, once
// per process.
var goEnvOnce = sync.OnceValues(func() (string, error) {
	gotool, err := goTool()
	if err != nil {
		return "", err
	}
	out, err := exec.Command(gotool, "env", "GOVERSION", "GOOS", "GOARCH", "GOFLAGS", "GOEXPERIMENT", "CGO_ENABLED", "GOAMD64", "GOARM64").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	return gotool + "\n" + string(out), nil
})

// listedPackage is the part of `go list -json` output a key needs.
type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct {
		Path    string
		Version string
		GoMod   string
	}
	GoFiles, CgoFiles, CFiles, HFiles, SFiles, EmbedFiles, SysoFiles []string
}

// goKey is the key of a go build of pkg, run in dir, with env added
// to the environment and args before the package: the Go toolchain and its settings, then
// for every package the build compiles from outside the standard library either its
// module's path and version (the module cache's content is fixed by go.sum, hashed too) or,
// for a package of a module on disk, every source file it compiles or embeds.
func goKey(dir, pkg string, env, args []string) (string, error) {
	k, sum := newKeyer("go")
	ge, err := goEnvOnce()
	if err != nil {
		return "", err
	}
	k.add(ge)
	k.add(env...)
	k.add(args...)
	k.add("target", pkg)
	gotool, _ := goTool()
	cmd := exec.Command(gotool, "list", "-deps", "-json=ImportPath,Dir,Standard,Module,GoFiles,CgoFiles,CFiles,HFiles,SFiles,EmbedFiles,SysoFiles", pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -deps in %s: %w\n%s", dir, err, stderr.Bytes())
	}
	mods := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("go list -deps in %s: %w", dir, err)
		}
		if p.Standard {
			continue
		}
		k.add("pkg", p.ImportPath)
		if p.Module != nil && p.Module.Version != "" {
			k.add("module", p.Module.Path+"@"+p.Module.Version)
			continue
		}
		if p.Module != nil && p.Module.GoMod != "" {
			mods[p.Module.GoMod] = true
		}
		files := slices.Concat(p.GoFiles, p.CgoFiles, p.CFiles, p.HFiles, p.SFiles, p.EmbedFiles, p.SysoFiles)
		sort.Strings(files)
		for _, f := range files {
			if err := k.file(filepath.Join(p.Dir, f)); err != nil {
				return "", err
			}
		}
	}
	for _, gomod := range slices.Sorted(maps.Keys(mods)) {
		if err := k.file(gomod); err != nil {
			return "", err
		}
		gosum := strings.TrimSuffix(gomod, ".mod") + ".sum"
		if fileExists(gosum) {
			if err := k.file(gosum); err != nil {
				return "", err
			}
		}
	}
	return sum(), nil
}

// WazeroCacheDir is a wazero compilation cache directory in the shared cache, for every
// test process of a run (and later runs): a policy one package's tests compiled, seconds
// of work under the race detector, loads in milliseconds in the others. wazero keys its
// entries by its version, the module and the compiler settings, and writes each by atomic
// rename, so concurrent processes can share the directory. Tests of compilation itself
// must use a directory of their own.
func WazeroCacheDir() (string, error) {
	root, err := sharedRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "wazero")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testbuild cache %s: %w", dir, err)
	}
	return dir, nil
}

// WazeroCache is WazeroCacheDir for a test, which it fails on error.
func WazeroCache(tb testing.TB) string {
	tb.Helper()
	dir, err := WazeroCacheDir()
	if err != nil {
		tb.Fatalf("testbuild: %v", err)
	}
	return dir
}
