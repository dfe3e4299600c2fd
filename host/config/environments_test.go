package config

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvironmentsRoundTrip(t *testing.T) {
	src := `default = "exec-1"          # environment for declarations with no environment_id
include_local = false
[[environments]]
id = "exec-1"
url = "ws://127.0.0.1:7777"
[[environments]]
id = "exec-2"
program = "warden"
args = ["executor", "--listen", "stdio"]
[environments.env]
WARDEN_HOME = "/srv/exec2"
`
	envs, err := ParseEnvironments("environments.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Environments{
		File: "environments.toml", Default: "exec-1", IncludeLocal: false,
		List: []Environment{
			{ID: "exec-1", URL: "ws://127.0.0.1:7777", Pos: Position{File: "environments.toml", Line: 3}},
			{ID: "exec-2", Program: "warden", Args: []string{"executor", "--listen", "stdio"},
				Env: map[string]string{"WARDEN_HOME": "/srv/exec2"}, Pos: Position{File: "environments.toml", Line: 6}},
		},
	}
	if diff := cmp.Diff(want, envs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if envs.Has(LocalEnvironment) || !envs.Has("exec-2") || envs.Has("exec-3") {
		t.Error("Has")
	}
	if e, ok := envs.Lookup("exec-2"); !ok || e.Program != "warden" {
		t.Error("Lookup")
	}
}

func TestEnvironmentsRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"url and program", `
[[environments]]
id = "e"
url = "ws://h:1"
program = "warden"
`, []string{"environments.toml:5: environments[0] (id \"e\"): set exactly one of `url` (connect to a running executor) and `program` (spawn one), not both"}},
		{"neither", `
[[environments]]
id = "e"
`, []string{"environments.toml:2: environments[0] (id \"e\"): set exactly one of `url` (connect to a running executor) and `program` (spawn one)"}},
		{"url scheme", `
[[environments]]
id = "e"
url = "http://h:1"
`, []string{"environments.toml:4: environments[0] (id \"e\"): `url` \"http://h:1\" must start with ws:// or wss://"}},
		{"url without host", `
[[environments]]
id = "e"
url = "wss:///x"
`, []string{"environments.toml:4: environments[0] (id \"e\"): `url` \"wss:///x\" has no host"}},
		{"args with url", `
[[environments]]
id = "e"
url = "ws://h:1"
args = ["x"]
`, []string{"environments.toml:5: environments[0] (id \"e\"): key `args` is only valid with `program`, but this environment has `url`"}},
		{"missing id", `
[[environments]]
url = "ws://h:1"
`, []string{"environments.toml:2: environments[0]: `id` is required"}},
		{"empty id", `
[[environments]]
id = ""
url = "ws://h:1"
`, []string{"environments.toml:3: environments[0] (id \"\"): `id` \"\" must match ^[A-Za-z0-9_.-]+$"}},
		{"local id", `
[[environments]]
id = "local"
url = "ws://h:1"
`, []string{"environments.toml:3: environments[0] (id \"local\"): `id` \"local\" is reserved for the host machine; pick another id"}},
		{"duplicate id", `
[[environments]]
id = "e"
url = "ws://h:1"

[[environments]]
id = "e"
url = "ws://h:2"
`, []string{"environments.toml:7: environments[1] (id \"e\"): duplicate id \"e\" (first defined at line 2)"}},
		{"unknown key", `
[[environments]]
id = "e"
programme = "warden"
`, []string{
			"environments.toml:2: environments[0] (id \"e\"): set exactly one of `url` (connect to a running executor) and `program` (spawn one)",
			"environments.toml:4: environments[0] (id \"e\"): unknown key `programme` (did you mean `program`?)",
		}},
		{"unknown top-level key", `
defualt = "e"
`, []string{"environments.toml:2: unknown key `defualt` (did you mean `default`?)"}},
		{"default undefined", `
default = "exec-9"
[[environments]]
id = "exec-1"
url = "ws://h:1"
`, []string{"environments.toml:2: `default` \"exec-9\" names no environment; want one of \"local\", \"exec-1\""}},
		{"default local without local", `
default = "local"
include_local = false
[[environments]]
id = "exec-1"
url = "ws://h:1"
`, []string{"environments.toml:2: `default` is \"local\", but `include_local = false` removes the local environment"}},
		{"no default without local", `
include_local = false
[[environments]]
id = "exec-1"
url = "ws://h:1"
`, []string{"environments.toml: `default` must be set when `include_local = false`: name one of the [[environments]] ids"}},
		{"include_local type", `
include_local = "no"
`, []string{"environments.toml:2: `include_local` must be true or false, got string"}},
		{"environments not tables", `
environments = ["exec-1"]
`, []string{"environments.toml:2: `environments` must be an array of tables ([[environments]]), got array"}},
		{"env value type", `
[[environments]]
id = "e"
program = "warden"
env = { A = 1 }
`, []string{"environments.toml:5: environments[0] (id \"e\"): `env.A` must be a string, got integer"}},
		{"default names an invalid entry", `
default = "e"
[[environments]]
id = "e"
url = "ftp://h"
`, []string{"environments.toml:5: environments[0] (id \"e\"): `url` \"ftp://h\" must start with ws:// or wss://"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envs, err := ParseEnvironments("environments.toml", []byte(tt.src))
			if envs == nil {
				t.Fatal("nil *Environments")
			}
			if diff := cmp.Diff(tt.want, errLines(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvironmentsDefault(t *testing.T) {
	envs, err := LoadEnvironments(filepath.Join(t.TempDir(), "environments.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultEnvironments(), envs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !envs.Has(LocalEnvironment) || envs.Default != LocalEnvironment {
		t.Errorf("%+v", envs)
	}
	// An empty file is the same: local only.
	envs, err = ParseEnvironments("environments.toml", nil)
	if err != nil || envs.Default != LocalEnvironment || !envs.IncludeLocal || len(envs.List) != 0 {
		t.Errorf("empty file: %+v %v", envs, err)
	}
}
