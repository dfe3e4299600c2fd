package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/safefile"
)

// dirReader reads rel under dir from this machine's disk: the environment that serves a
// remote root, played by a temp dir.
func dirReader(dir string, reads *[]string) ReadFunc {
	return func(rel string, max int64) ([]byte, error) {
		*reads = append(*reads, rel)
		return safefile.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)), max)
	}
}

func TestLoadRemote(t *testing.T) {
	write := func(t *testing.T, dir string, files map[string]string) {
		for name, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("manifest, servers and policy", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string]string{
			CodexManifest:   `{"name":"exec-demo","version":"1","policy":"./p/policy.wasm"}`,
			MCPFile:         `{"mcpServers":{"demo":{"command":"./bin/demo","env_vars":["TOKEN"],"cwd":"srv"},"web":{"url":"https://x.example/mcp","bearer_token_env_var":"WEB_TOKEN"}}}`,
			"p/policy.wasm": "module bytes",
		})
		var reads []string
		r := LoadRemote("/srv/plugins/demo", dirReader(dir, &reads), Options{Environment: "exec-1"})
		if r.Status == StatusError {
			t.Fatalf("load: %v", r.Err)
		}
		if r.ID != "exec-demo@1" || r.Dir != "/srv/plugins/demo" || len(r.Servers) != 2 {
			t.Fatalf("root = %s in %s with %d servers", r.ID, r.Dir, len(r.Servers))
		}
		demo := r.Servers[0]
		if demo.Origin != (config.Origin{Kind: config.OriginPlugin, Environment: "exec-1", PluginID: "exec-demo@1"}) ||
			demo.Command != "/srv/plugins/demo/bin/demo" || demo.Cwd != "/srv/plugins/demo/srv" {
			t.Errorf("demo = origin %+v, command %q, cwd %q", demo.Origin, demo.Command, demo.Cwd)
		}
		sum := sha256.Sum256([]byte("module bytes"))
		if r.Policy == nil || string(r.Policy.Data) != "module bytes" || r.Policy.SHA256 != hex.EncodeToString(sum[:]) || r.Policy.Path != "/srv/plugins/demo/p/policy.wasm" {
			t.Errorf("policy = %+v", r.Policy)
		}
		if strings.Join(reads, ",") != ".codex-plugin/plugin.json,.mcp.json,p/policy.wasm" {
			t.Errorf("reads = %q", reads)
		}
	})
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  error
		text  string
	}{
		{"neither manifest nor servers", map[string]string{"README": "x"}, ErrNotRoot, ""},
		{"server file outside the root", map[string]string{CodexManifest: `{"name":"x","mcpServers":"../elsewhere.json"}`}, ErrEscapesRoot, "mcpServers"},
		{"policy outside the root", map[string]string{CodexManifest: `{"name":"x","policy":"../p.wasm"}`, MCPFile: `{"a":{"url":"https://a.example/mcp"}}`}, ErrEscapesRoot, "policy"},
		{"declared policy missing", map[string]string{CodexManifest: `{"name":"x","policy":"gone.wasm"}`, MCPFile: `{"a":{"url":"https://a.example/mcp"}}`}, ErrPolicy, "does not exist"},
		{"cwd outside the root", map[string]string{MCPFile: `{"a":{"command":"x","cwd":"../.."}}`}, nil, "cwd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, tt.files)
			var reads []string
			r := LoadRemote("/srv/plugins/x", dirReader(dir, &reads), Options{Environment: "exec-1"})
			if r.Status != StatusError {
				t.Fatalf("status %v, want an error", r.Status)
			}
			if tt.want != nil && !errors.Is(r.Err, tt.want) {
				t.Errorf("err = %v, want %v", r.Err, tt.want)
			}
			if text := errors.Join(append([]error{r.Err}, r.ServerErrors...)...).Error(); !strings.Contains(text, tt.text) {
				t.Errorf("errors = %v, want one that mentions %q", text, tt.text)
			}
		})
	}
}

// Codex's approval keys are read from .mcp.json and executor declarations alike (an
// executor's prompt-mode tool must not run unasked), and bad values are refused.
func TestApprovalModesInServerEntries(t *testing.T) {
	entries := map[string]json.RawMessage{
		"docs": json.RawMessage(`{"command":"docs-mcp","default_tools_approval_mode":"approve",
			"tools":{"delete":{"approval_mode":"prompt","output_token_limit":10}}}`),
	}
	servers, errs := ParseExecutorServers(entries, "executor exec-1", "exec-1")
	if len(errs) != 0 || len(servers) != 1 {
		t.Fatalf("servers %v, errors %v", servers, errs)
	}
	d := &servers[0]
	if d.ApprovalMode("delete") != config.ApprovalPrompt || d.ApprovalMode("read") != config.ApprovalApprove {
		t.Errorf("approval modes: delete %q, read %q", d.ApprovalMode("delete"), d.ApprovalMode("read"))
	}
	_, errs = ParseExecutorServers(map[string]json.RawMessage{
		"docs": json.RawMessage(`{"command":"docs-mcp","tools":{"delete":{"approval_mode":"never"}}}`),
	}, "executor exec-1", "exec-1")
	if len(errs) == 0 {
		t.Error("approval_mode \"never\" was accepted")
	}
}
