package testbuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// npmTimeout bounds one npm ci (a failure bound: a warm cache runs none).
const npmTimeout = 10 * time.Minute

// npmFiles are what an npm install reads from the directory given to NPM.
var npmFiles = []string{"package.json", "package-lock.json"}

// NPM installs the npm project in dir (its package.json and package-lock.json, which pins
// every package, dependencies included) with `npm ci --ignore-scripts` into the shared
// cache and returns the installed project's directory (packages in DIR/node_modules,
// their commands in DIR/node_modules/.bin); the caller must not modify it. dir may be
// relative to the test's working directory.
//
// The install runs once per content key — the two files, the npm and node commands — in
// the shared cache, whichever test process asks first; the others wait for it and reuse
// it. The test fails (it does not skip) when npm is missing or the install fails: CI
// provides Node.js, npm and the registry.
func NPM(tb testing.TB, dir string) string {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatalf("testbuild.NPM(%q): %v", dir, err)
	}
	out, err := cached("npm:"+abs, func() ([]byte, error) {
		p, err := installNPM(abs)
		return []byte(p), err
	})
	if err != nil {
		tb.Fatalf("testbuild.NPM: %v", err)
	}
	return string(out)
}

func installNPM(abs string) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm not found in PATH: install Node.js with npm (CI provides both)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node not found in PATH: install Node.js with npm (CI provides both)")
	}
	k, sum := newKeyer("npm")
	for _, t := range []string{npm, node} {
		if err := k.tool(t); err != nil {
			return "", err
		}
	}
	for _, f := range npmFiles {
		if err := k.file(filepath.Join(abs, f)); err != nil {
			return "", fmt.Errorf("npm project %s: %w", abs, err)
		}
	}
	path, _, err := shared(sum(), "npm", func(out string) error {
		if err := os.Mkdir(out, 0o755); err != nil {
			return err
		}
		for _, f := range npmFiles {
			data, err := os.ReadFile(filepath.Join(abs, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(out, f), data, 0o644); err != nil {
				return err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
		defer cancel()
		args := []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts", "--no-update-notifier", "--loglevel=error"}
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = out
		var output bytes.Buffer
		cmd.Stdout, cmd.Stderr = &output, &output
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("(cd %s && npm %v) for %s: %w\n%s", out, args, abs, err, output.Bytes())
		}
		return nil
	})
	return path, err
}
