package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/.

// checkErrors asserts the shape every loader error has.
func checkErrors(t *testing.T, name string, data []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty Errors", err, err)
	}
	lines := strings.Count(string(data), "\n") + 1
	for _, e := range es {
		if e == nil || e.File != name || e.Msg == "" || e.Line < 0 || e.Line > lines+1 {
			t.Fatalf("malformed error %#v (file has %d lines)", e, lines)
		}
	}
}

// checkLineIndex asserts that the line index (a scan of the source) agrees with the
// library's positions wherever both know a key, four levels deep. Arrays of tables are
// skipped: the library keeps one position for all their elements. A failure here means the
// index misplaced a key, and error messages would name a wrong line.
func checkLineIndex(t *testing.T, data []byte) {
	t.Helper()
	d, perr := parseTOML("f.toml", data)
	if perr != nil {
		return
	}
	var walk func(path []string, m map[string]toml.Primitive)
	walk = func(path []string, m map[string]toml.Primitive) {
		for k, p := range m {
			if _, isAOT := d.value(p).([]map[string]any); isAOT {
				continue
			}
			full := append(append([]string(nil), path...), k)
			sub, isTable := d.table(p)
			if _, emptyKey := sub[""]; emptyKey {
				// BurntSushi/toml records an empty key `"" = 1` at its table's own key, so the
				// library's line for such a table is the empty key's.
				continue
			}
			if l, ok := d.lines.exact[toml.Key(full).String()]; ok {
				pl := d.probe(p)
				_, isString := d.value(p).(string)
				switch {
				case pl == 0:
				case isString && pl > l:
					// The library places a multi-line string where it ends; the index, like an
					// error message should, where its key is.
				case pl != l:
					t.Fatalf("key %s: index says line %d, library says %d", toml.Key(full), l, pl)
				}
			}
			if isTable && len(full) < 4 {
				walk(full, sub)
			}
		}
	}
	walk(nil, d.top)
}

func FuzzParseConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLineIndex(t, data)
		const name = "/etc/warden/config.toml"
		cfg, err := ParseConfig(name, data, Origin{Kind: OriginHostConfig})
		if cfg == nil {
			t.Fatal("nil *Config")
		}
		checkErrors(t, name, data, err)
		seen := map[string]bool{}
		for i := range cfg.Servers {
			d := &cfg.Servers[i]
			if p := CheckServer(d); p != nil {
				t.Fatalf("server %q passes ParseConfig but not CheckServer: %v", d.Name, p)
			}
			if !validServerName(d.Name) || seen[d.Name] {
				t.Fatalf("server name %q invalid or repeated", d.Name)
			}
			seen[d.Name] = true
			if d.Pos.File != name || d.Pos.Line < 1 {
				t.Fatalf("server %q has position %v", d.Name, d.Pos)
			}
		}
		for _, p := range cfg.Policies {
			if p.Path == "" || (p.SHA256 != "" && len(p.SHA256) != 64) {
				t.Fatalf("policy %+v", p)
			}
		}
		l := cfg.PolicyLimits
		if l.MemoryMB < 0 || l.MemoryMB > MaxPolicyMemoryMB || l.TimeoutMS < 0 || l.TimeoutMS > MaxPolicyTimeoutMS {
			t.Fatalf("limits %+v", l)
		}
	})
}

func FuzzParseRequirements(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLineIndex(t, data)
		const name = "/etc/warden/requirements.toml"
		req, err := ParseRequirements(name, data)
		if req == nil {
			t.Fatal("nil *Requirements")
		}
		checkErrors(t, name, data, err)
		for n, id := range req.Servers {
			if (id.URL == "") == (id.Command == "") {
				t.Fatalf("identity of %q has url %q and command %q", n, id.URL, id.Command)
			}
			d := &ServerDecl{Name: n, URL: id.URL, Command: id.Command}
			if ok, reason := req.Check(d); !ok {
				t.Fatalf("listed server %q with its own identity is blocked: %s", n, reason)
			}
			d.Name += "-other"
			if ok, _ := req.Check(d); ok && req.Servers[d.Name] == (Identity{}) {
				t.Fatalf("unlisted server %q allowed", d.Name)
			}
		}
	})
}

func FuzzParseEnvironments(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLineIndex(t, data)
		const name = "/etc/warden/environments.toml"
		envs, err := ParseEnvironments(name, data)
		if envs == nil {
			t.Fatal("nil *Environments")
		}
		checkErrors(t, name, data, err)
		ids := map[string]bool{}
		for _, e := range envs.List {
			if !validEnvironmentID(e.ID) || e.ID == LocalEnvironment || ids[e.ID] {
				t.Fatalf("bad or repeated id %q", e.ID)
			}
			ids[e.ID] = true
			if (e.URL == "") == (e.Program == "") {
				t.Fatalf("environment %q has url %q and program %q", e.ID, e.URL, e.Program)
			}
		}
		if err == nil && !envs.Has(envs.Default) {
			t.Fatalf("default %q is not offered (include_local %v)", envs.Default, envs.IncludeLocal)
		}
	})
}
