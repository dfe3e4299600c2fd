// Package npmtest installs pinned npm packages for tests, into a cache shared by every test
// process and run on the machine, so end-to-end tests can drive real Node.js MCP servers
// and clients (the reference servers, the TypeScript SDK) against warden.
//
//	node := npmtest.Node(t) // skips the test when node or npm is not on PATH
//	dir := npmtest.Install(t, "@modelcontextprotocol/server-everything@2026.8.31")
//	script := npmtest.File(t, dir, "@modelcontextprotocol/server-everything", "dist/index.js")
//	cmd := exec.Command(node, script, "stdio")
//
// The cache lives in <user cache dir>/warden/npm/<hash of the package list> (on Linux
// $XDG_CACHE_HOME or ~/.cache; $WARDEN_NPM_CACHE overrides the parent directory). Each
// directory is filled once by
//
//	npm install --no-audit --no-fund --ignore-scripts --prefix DIR pkg@version...
//
// under an exclusive lock file (DIR.lock), and marked complete only after every package was
// found at its pinned version; concurrent test processes wait for the lock and then reuse
// the directory. A half-finished install (an interrupted run) is removed and redone.
//
// Versions must be exact (name@1.2.3): a range would make the cache key lie about its
// content. Only the named packages are pinned; their dependencies resolve as npm resolves
// them on the day the cache directory is filled.
//
// Tests skip (with a message saying what is missing) only when node or npm is absent from
// PATH; a failing install fails the test.
package npmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// installTimeout bounds one npm install (a failure bound; a warm cache needs no install).
const installTimeout = 10 * time.Minute

// layout versions the cache directory format; bump it to invalidate every cache.
const layout = "1"

// completeMarker is written into a cache directory once its install succeeded.
const completeMarker = ".warden-npmtest-complete"

// pinned matches name@exact-version, the name possibly scoped.
var pinned = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*@[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$`)

// installs memoizes Install per cache directory within the test process (the lock file
// serializes processes; this spares repeated checks within one).
var installs sync.Map // dir -> *installResult

type installResult struct {
	once sync.Once
	err  error
}

// Node returns the path of the node binary. It skips tb when node or npm is not on PATH:
// the only condition under which a test that needs them does not run.
func Node(tb testing.TB) string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Skip("skipping: this test needs Node.js, and `node` is not on PATH (install Node.js ≥ 18 with npm)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		tb.Skip("skipping: this test needs npm, and `npm` is not on PATH (install Node.js ≥ 18 with npm)")
	}
	return node
}

// Install installs pkgs (each "name@exact-version") into their shared cache directory,
// once per machine, and returns that directory (the npm prefix: packages are in
// DIR/node_modules). It skips tb when node or npm is missing (see Node) and fails it when
// the install fails.
func Install(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	Node(tb)
	dir, err := Dir(pkgs...)
	if err != nil {
		tb.Fatalf("npmtest.Install: %v", err)
	}
	v, _ := installs.LoadOrStore(dir, &installResult{})
	r := v.(*installResult)
	r.once.Do(func() { r.err = install(dir, pkgs) })
	if r.err != nil {
		tb.Fatalf("npmtest.Install: %v", r.err)
	}
	return dir
}

// File returns the path of rel inside the installed package pkg (a name without version)
// under dir, failing tb when it does not exist.
func File(tb testing.TB, dir, pkg, rel string) string {
	tb.Helper()
	p := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("npmtest.File: %v", err)
	}
	return p
}

// Dir returns the cache directory for pkgs without installing anything. The package list is
// validated (exact versions only) and its order does not matter.
func Dir(pkgs ...string) (string, error) {
	if len(pkgs) == 0 {
		return "", errors.New("no packages")
	}
	sorted := slices.Clone(pkgs)
	slices.Sort(sorted)
	for _, p := range sorted {
		if !pinned.MatchString(p) {
			return "", fmt.Errorf("package %q is not pinned to an exact version (name@1.2.3)", p)
		}
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(layout + "\n" + strings.Join(sorted, "\n")))
	return filepath.Join(root, hex.EncodeToString(sum[:8])), nil
}

func cacheRoot() (string, error) {
	if d := os.Getenv("WARDEN_NPM_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "warden", "npm"), nil
}

// install fills dir with pkgs under dir's lock file, unless a previous install completed.
func install(dir string, pkgs []string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(dir+".lock", installTimeout)
	if err != nil {
		return fmt.Errorf("locking the npm cache %s: %w", dir, err)
	}
	defer unlock()

	want := strings.Join(pkgs, "\n") + "\n"
	if got, err := os.ReadFile(filepath.Join(dir, completeMarker)); err == nil && sameSet(string(got), want) {
		return nil
	}
	// Absent or half-done (an interrupted run): start over.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--ignore-scripts",
		"--no-update-notifier", "--loglevel=error", "--prefix", dir}, pkgs...)
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	for _, p := range pkgs {
		if err := checkVersion(dir, p); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, completeMarker), []byte(want), 0o644)
}

// checkVersion verifies that DIR/node_modules/NAME/package.json has the pinned version.
func checkVersion(dir, pkg string) error {
	at := strings.LastIndex(pkg, "@")
	name, version := pkg[:at], pkg[at+1:]
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return fmt.Errorf("npm install did not install %s: %w", pkg, err)
	}
	var meta struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("%s: package.json: %w", name, err)
	}
	if meta.Version != version {
		return fmt.Errorf("npm installed %s@%s, want %s", name, meta.Version, version)
	}
	return nil
}

func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
