package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/warden-mcp/warden/host/roots"
)

// policySource says where a `--plugin` argument's policy module comes from.
type policySource struct {
	id   string // plugin id, or the file/dir name
	wasm string // path of the module to load
	dir  string // directory holding tests/
}

// resolvePolicy turns a `--plugin` argument into a module path: a .wasm file; a capability
// root (its manifest's policy); or a Go main package, built for wasip1 into the user cache
// (policy authors iterate on source, so `warden policy test .` builds what it tests).
func resolvePolicy(ctx context.Context, arg string) (policySource, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return policySource{}, fmt.Errorf("policy %s: %w", arg, err)
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return policySource{}, err
	}
	if !st.IsDir() {
		return policySource{id: filepath.Base(abs), wasm: abs, dir: filepath.Dir(abs)}, nil
	}
	goFiles, _ := filepath.Glob(filepath.Join(abs, "*.go"))
	r := roots.Load(abs, roots.Options{})
	if r.Policy != nil && len(goFiles) == 0 {
		if r.Err != nil {
			return policySource{}, r.Err
		}
		return policySource{id: r.ID, wasm: r.Policy.Path, dir: abs}, nil
	}
	if len(goFiles) > 0 {
		out, err := buildGoPolicy(ctx, abs)
		if err != nil {
			return policySource{}, err
		}
		id := filepath.Base(abs)
		if r.Err == nil && r.ManifestPath != "" {
			id = r.ID
		}
		return policySource{id: id, wasm: out, dir: abs}, nil
	}
	if r.Err != nil {
		return policySource{}, r.Err
	}
	return policySource{}, fmt.Errorf("policy %s: the directory has no policy module and no Go source", arg)
}

// buildGoPolicy builds the Go main package in dir with GOOS=wasip1 GOARCH=wasm
// -buildmode=c-shared and returns the module's path in the user cache.
func buildGoPolicy(ctx context.Context, dir string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(dir))
	out := filepath.Join(cache, "warden", "policies", hex.EncodeToString(sum[:8])+".wasm")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("policy %s is Go source and building it needs the go command: %w", dir, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("building policy %s (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared):\n%s", dir, bytes.TrimSpace(stderr.Bytes()))
		}
		return "", fmt.Errorf("building policy %s: %w", dir, err)
	}
	return out, nil
}
