package cli

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPluginsWatchPicksUpNewRoot runs the real warden binary with `plugins list --watch` and
// drops a new capability root into the watched dir: it appears without a restart.
func TestPluginsWatchPicksUpNewRoot(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "warden")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/warden-mcp/warden/cmd/warden").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	writeRoot(t, filepath.Join(dir, "first"), `{"name":"first","version":"1"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--home", t.TempDir(), "plugins", "list", "--dir", dir, "--watch")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	}()
	lines := bufio.NewScanner(stdout)
	waitFor := func(want string) {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), want) {
				return
			}
		}
		t.Fatalf("output ended before %q appeared (err %v)", want, lines.Err())
	}
	waitFor("first@1")

	// Write the new root beside the dir and rename it in, as an operator's deploy would; a
	// root written file by file in place is picked up too (the watcher retries broken roots).
	staging := filepath.Join(t.TempDir(), "second")
	writeRoot(t, staging, `{"name":"second","version":"2"}`)
	if err := os.Rename(staging, filepath.Join(dir, "second")); err != nil {
		t.Fatal(err)
	}
	waitFor("second@2")

	writeRoot(t, filepath.Join(dir, "third"), `{"name":"third","version":"3"}`)
	waitFor("third@3")
}

func writeRoot(t *testing.T, dir, manifest string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".codex-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".codex-plugin", "plugin.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"s":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
}
