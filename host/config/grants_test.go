package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Grants and limits decode strictly: every problem names file, line and table, and a grant
// with a problem is dropped whole (it never widens what a plugin may read).
func TestGrantsAndLimits(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		grants   map[string]Grant
		limits   Limits
		problems []string
	}{
		{
			name: "valid",
			src: "[plugins]\ndirs = []\n\n[plugins.grants.\"acme@1\"]\nenv_vars = [\"ACME_TOKEN\", \"ACME_KEY\"]\n\n" +
				"[limits]\nmax_concurrent_server_starts = 4\nmax_threads = 10\n",
			grants: map[string]Grant{"acme@1": {EnvVars: []string{"ACME_TOKEN", "ACME_KEY"}, Pos: Position{File: "config.toml", Line: 4}}},
			limits: Limits{MaxConcurrentServerStarts: 4, MaxThreads: 10},
		},
		{
			name: "unknown grant key",
			src:  "[plugins.grants.\"acme@1\"]\nenv_var = [\"ACME_TOKEN\"]\n",
			problems: []string{
				"config.toml:2: plugins.grants.\"acme@1\": unknown key `env_var` (did you mean `env_vars`?)",
			},
		},
		{
			name:   "bad names drop the grant",
			src:    "[plugins.grants.\"acme@1\"]\nenv_vars = [\"OK\", \"A=B\", \"\"]\n[plugins.grants.\"good@2\"]\nenv_vars = [\"G\"]\n",
			grants: map[string]Grant{"good@2": {EnvVars: []string{"G"}, Pos: Position{File: "config.toml", Line: 3}}},
			problems: []string{
				"config.toml:2: plugins.grants.\"acme@1\": `env_vars[2]` must not be empty",
				"config.toml:2: plugins.grants.\"acme@1\": `env_vars[1]` \"A=B\" is not a valid environment variable name (it contains '=' or NUL)",
			},
		},
		{
			name:     "grant not a table",
			src:      "[plugins.grants]\n\"acme@1\" = [\"ACME_TOKEN\"]\n",
			problems: []string{"config.toml:2: plugins.grants.\"acme@1\": must be a table with `env_vars`, got array"},
		},
		{
			name:     "grants not a table",
			src:      "[plugins]\ngrants = [\"ACME_TOKEN\"]\n",
			problems: []string{"config.toml:2: plugins: `grants` must be a table of plugin ids, as in [plugins.grants.\"acme@1\"], got array"},
		},
		{
			name:     "env_vars not an array",
			src:      "[plugins.grants.\"acme@1\"]\nenv_vars = \"ACME_TOKEN\"\n",
			problems: []string{"config.toml:2: plugins.grants.\"acme@1\": `env_vars` must be an array of strings, got string"},
		},
		{
			name: "limits out of range and unknown",
			src:  "[limits]\nmax_threads = 0\nmax_concurrent_server_starts = 5000\nmax_procs = 1\n",
			problems: []string{
				"config.toml:2: limits: `max_threads` must be between 1 and 65536 (threads), got 0",
				"config.toml:3: limits: `max_concurrent_server_starts` must be between 1 and 1024 (servers), got 5000",
				"config.toml:4: limits: unknown key `max_procs`",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig("config.toml", []byte(tt.src), hostOrigin)
			if diff := cmp.Diff(tt.problems, errLines(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.grants, cfg.Plugins.Grants); diff != "" {
				t.Errorf("grants (-want +got):\n%s", diff)
			}
			if cfg.Limits != tt.limits {
				t.Errorf("limits = %+v, want %+v", cfg.Limits, tt.limits)
			}
		})
	}

	cfg, _ := ParseConfig("config.toml", []byte("[plugins.grants.\"acme@1\"]\nenv_vars = [\"ACME_TOKEN\"]\n"), hostOrigin)
	if !cfg.Plugins.EnvVarGranted("acme@1", "ACME_TOKEN") || cfg.Plugins.EnvVarGranted("acme@1", "GITHUB_TOKEN") ||
		cfg.Plugins.EnvVarGranted("acme@2", "ACME_TOKEN") {
		t.Errorf("EnvVarGranted does not match exactly by plugin id and name: %+v", cfg.Plugins.Grants)
	}
	if got := (Limits{}).WithDefaults(); got != (Limits{DefaultMaxConcurrentServerStarts, DefaultMaxThreads}) {
		t.Errorf("Limits{}.WithDefaults() = %+v", got)
	}
	if got := GrantTable("odd id"); got != `[plugins.grants."odd id"]` {
		t.Errorf("GrantTable = %q", got)
	}
}

// A config file that is a FIFO, a device or oversized is refused at once with an error
// naming the file; it never blocks the reader (a FIFO without a writer would block open(2)
// forever) and never reads more than the size limit.
func TestConfigFilesNotRegular(t *testing.T) {
	type loader func(path string) error
	loaders := map[string]loader{
		ConfigFile:       func(p string) error { _, err := LoadConfig(p, hostOrigin); return err },
		RequirementsFile: func(p string) error { _, err := LoadRequirements(p); return err },
		EnvironmentsFile: func(p string) error { _, err := LoadEnvironments(p); return err },
	}
	kinds := []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err) // a filesystem without FIFOs cannot plant one either
			}
		}, ": cannot read: not a regular file (a FIFO)"},
		{"device", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, ": cannot read: not a regular file (a device)"},
		{"oversized", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(1 << 30); err != nil { // sparse: 1 GiB of zeros, no disk
				t.Fatal(err)
			}
		}, ": file is too large; the limit is 262144 bytes"},
	}
	for file, load := range loaders {
		for _, k := range kinds {
			t.Run(file+"/"+k.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, file)
				k.make(t, path)
				done := make(chan error, 1)
				go func() { done <- load(path) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second): // a failure bound, not a timing assertion
					// Unblock the reader so the goroutine ends: open the FIFO for writing.
					if w, oerr := os.OpenFile(path, os.O_WRONLY, 0); oerr == nil {
						w.Close()
					}
					t.Fatalf("loading a %s %s did not return", k.name, file)
				}
				if err == nil || !strings.Contains(err.Error(), path+k.want) {
					t.Errorf("error = %v, want it to contain %q", err, path+k.want)
				}
			})
		}
	}
}
