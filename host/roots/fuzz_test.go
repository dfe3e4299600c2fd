package roots

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/host/config"
)

// Seed corpora: testdata/fuzz/FuzzParsePluginJSON and testdata/fuzz/FuzzParseMCPJSON
// (realistic Codex and Claude Code files, plus broken ones).

// fuzzRoot builds a small root to parse against: a binary, a directory, a symbolic link
// out of the root and a policy module, so path rules have something to bite on.
func fuzzRoot(f *testing.F) string {
	dir, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	layout(f, dir, "", map[string]string{
		"bin/demo":    "#!/bin/sh\n",
		"srv":         "dir:",
		"out":         "link:/",
		"up":          "link:..",
		"policy.wasm": "\x00asm\x01\x00\x00\x00",
	})
	return dir
}

func FuzzParsePluginJSON(f *testing.F) {
	dir := fuzzRoot(f)
	file := filepath.Join(dir, CodexManifest)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, servers, serverErrs, err := parsePluginJSON(data, dir, file, serverCtx{dir: dir, pluginID: "fallback", env: "local"})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Dir != dir {
				t.Fatalf("root error is not an *Error for the root: %#v", err)
			}
			_ = err.Error()
			if servers != nil || serverErrs != nil {
				t.Fatalf("servers returned with a root error")
			}
			return
		}
		if m == nil || m.id == "" || m.name == "" {
			t.Fatalf("no manifest or id: %+v", m)
		}
		if (m.version == "") != (m.id == m.name) || strings.Count(m.id, "@") > 1 {
			t.Fatalf("id %q does not match name %q version %q", m.id, m.name, m.version)
		}
		if m.inline && m.mcpServers != "" {
			t.Fatalf("both inline servers and a servers path")
		}
		checkFuzzServers(t, dir, m.id, servers, serverErrs)
	})
}

func FuzzParseMCPJSON(f *testing.F) {
	dir := fuzzRoot(f)
	file := filepath.Join(dir, MCPFile)
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, serverErrs, err := parseMCPJSON(data, file, serverCtx{dir: dir, pluginID: "demo@1", env: "local"})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != MCPFile || e.PluginID != "demo@1" {
				t.Fatalf("file error is not an *Error for .mcp.json: %#v", err)
			}
			_ = err.Error()
			if servers != nil || serverErrs != nil {
				t.Fatalf("servers returned with a file error")
			}
			return
		}
		checkFuzzServers(t, dir, "demo@1", servers, serverErrs)
	})
}

// checkFuzzServers asserts the invariants of parsed servers: every one passes
// config.CheckServer, carries the plugin origin, has a valid unique name, and has no
// unexpanded root placeholder or path outside the root; every error names its server.
func checkFuzzServers(t *testing.T, dir, id string, servers []config.ServerDecl, serverErrs []error) {
	t.Helper()
	seen := map[string]bool{}
	for i := range servers {
		d := &servers[i]
		if p := config.CheckServer(d); len(p) > 0 {
			t.Fatalf("server %q fails CheckServer: %q", d.Name, p)
		}
		if d.Origin != (config.Origin{Kind: config.OriginPlugin, Environment: "local", PluginID: id}) {
			t.Fatalf("server %q origin %+v", d.Name, d.Origin)
		}
		if checkServerName(d.Name) != nil || seen[d.Name] {
			t.Fatalf("bad or duplicate name %q", d.Name)
		}
		seen[d.Name] = true
		if i > 0 && !sort.StringsAreSorted([]string{servers[i-1].Name, d.Name}) {
			t.Fatalf("servers not sorted")
		}
		for _, s := range append(append([]string{d.Command, d.Cwd, d.URL}, d.Args...), mapValues(d.Env)...) {
			if strings.Contains(s, rootVar) || strings.Contains(s, claudeRootVar) {
				t.Fatalf("unexpanded placeholder in %q", s)
			}
		}
		if d.Cwd != "" {
			if r, err := resolvePath(d.Cwd); err != nil || !within(dir, r) {
				t.Fatalf("cwd %q outside the root (%q, %v)", d.Cwd, r, err)
			}
		}
		if d.Command != "" && !filepath.IsAbs(d.Command) && strings.ContainsRune(d.Command, os.PathSeparator) {
			t.Fatalf("relative path command %q was not resolved", d.Command)
		}
		if filepath.IsAbs(d.Command) && within(dir, d.Command) {
			if r, err := resolvePath(d.Command); err != nil || !within(dir, r) {
				t.Fatalf("command %q resolves outside the root (%q, %v)", d.Command, r, err)
			}
		}
		if d.StartupTimeout < 0 || d.ToolTimeout < 0 {
			t.Fatalf("negative timeout: %+v", d)
		}
	}
	for _, err := range serverErrs {
		var e *Error
		if !errors.As(err, &e) || e.Server == "" && !strings.HasSuffix(err.Error(), "server name is empty") || e.PluginID != id {
			t.Fatalf("server error without server or plugin: %#v", err)
		}
		if seen[e.Server] {
			t.Fatalf("server %q is both usable and rejected", e.Server)
		}
		_ = err.Error()
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
