package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadHomeEmpty(t *testing.T) {
	dir := t.TempDir()
	h, err := LoadHome(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.Dir != dir || h.Config == nil || len(h.Config.Servers) != 0 || h.Requirements != nil ||
		h.Config.File != filepath.Join(dir, ConfigFile) || h.Config.Origin.Kind != OriginHostConfig {
		t.Errorf("home = %+v, config = %+v", h, h.Config)
	}
	if diff := cmp.Diff(DefaultEnvironments(), h.Environments); diff != "" {
		t.Errorf("environments (-want +got):\n%s", diff)
	}
}

func TestLoadHome(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		ConfigFile: `[mcp_servers.host_remote]
url = "https://remote.example/mcp"
environment_id = "exec-1"

[mcp_servers.nowhere]
url = "https://nowhere.example/mcp"
environment_id = "exec-9"

[mcp_servers.local_one]
command = "x"
environment_id = "local"

[mcp_servers.broken]
command = 1
`,
		RequirementsFile: `[mcp_servers.host_remote.identity]
url = "https://remote.example/mcp"
[mcp_servers.x.identity]
`,
		EnvironmentsFile: `default = "exec-1"
include_local = false
[[environments]]
id = "exec-1"
url = "ws://127.0.0.1:7777"
[[environments]]
id = "exec-2"
`,
	})
	h, err := LoadHome(dir)
	cfg := filepath.Join(dir, ConfigFile)
	req := filepath.Join(dir, RequirementsFile)
	env := filepath.Join(dir, EnvironmentsFile)
	want := []string{
		cfg + ":14: mcp_servers.broken: `command` must be a string, got integer",
		req + ":3: mcp_servers.x.identity: set exactly one of `url` (streamable HTTP) and `command` (stdio)",
		env + ":6: environments[1] (id \"exec-2\"): set exactly one of `url` (connect to a running executor) and `program` (spawn one)",
		cfg + ":5: mcp_servers.nowhere: `environment_id` \"exec-9\" names no environment in environments.toml",
		cfg + ":9: mcp_servers.local_one: `environment_id` is \"local\", but environments.toml sets `include_local = false`",
	}
	if diff := cmp.Diff(want, errLines(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"host_remote"}, serverNames(h.Config)); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if allow, _ := h.Requirements.Check(&h.Config.Servers[0]); !allow {
		t.Error("host_remote blocked")
	}
	if h.Environments.Default != "exec-1" || len(h.Environments.List) != 1 {
		t.Errorf("environments = %+v", h.Environments)
	}
}

func TestDefaultHome(t *testing.T) {
	t.Setenv(HomeEnvVar, "/srv/warden-home")
	if dir, err := DefaultHome(); err != nil || dir != "/srv/warden-home" {
		t.Errorf("with %s: %q %v", HomeEnvVar, dir, err)
	}
	t.Setenv(HomeEnvVar, "")
	t.Setenv("HOME", "/home/op")
	if dir, err := DefaultHome(); err != nil || dir != "/home/op/.warden" {
		t.Errorf("default: %q %v", dir, err)
	}
}
