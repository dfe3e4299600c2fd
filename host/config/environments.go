package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
)

// Environments is environments.toml: the executors the host can reach, and which environment
// a declaration without `environment_id` runs in.
type Environments struct {
	// File is the path the environments were read from ("" for DefaultEnvironments).
	File string
	// Default is the environment for declarations with no environment_id: LocalEnvironment or
	// the id of an entry of List. It is "" only when the file is invalid and names no usable
	// default.
	Default string
	// IncludeLocal reports whether the local environment (the host machine) is offered at all.
	IncludeLocal bool
	// List holds the `[[environments]]` entries, in file order.
	List []Environment
}

// Environment is one `[[environments]]` entry: an executor reached by exactly one of URL (a
// running executor) and Program (spawned, spoken to over stdio).
type Environment struct {
	// ID names the environment; it is unique, not empty and not "local".
	ID string
	// URL is a ws:// or wss:// executor address.
	URL string
	// TokenEnv names the host environment variable holding the bearer token the executor
	// at URL requires (its --token-env); only with URL.
	TokenEnv string
	// Program, Args and Env spawn an executor; Env adds literal variables to its environment.
	Program string
	Args    []string
	Env     map[string]string
	// Pos is where the entry starts.
	Pos Position
}

// DefaultEnvironments is what a missing environments.toml means: the local environment only.
func DefaultEnvironments() *Environments {
	return &Environments{Default: LocalEnvironment, IncludeLocal: true}
}

// Lookup returns the executor entry with the given id.
func (e *Environments) Lookup(id string) (*Environment, bool) {
	for i := range e.List {
		if e.List[i].ID == id {
			return &e.List[i], true
		}
	}
	return nil, false
}

// Has reports whether id names an offered environment: "local" when IncludeLocal, or an entry.
func (e *Environments) Has(id string) bool {
	if id == LocalEnvironment {
		return e.IncludeLocal
	}
	_, ok := e.Lookup(id)
	return ok
}

// environmentIDPattern is the rule for executor ids (they appear in origins and store keys).
const environmentIDPattern = "^[A-Za-z0-9_.-]+$"

func validEnvironmentID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isBareKeyByte(id[i]) && id[i] != '.' {
			return false
		}
	}
	return true
}

func environmentsTopKeys() []string { return []string{"default", "include_local", "environments"} }
func environmentKeys() []string     { return []string{"id", "url", "token_env", "program", "args", "env"} }

// LoadEnvironments reads environments.toml. A missing file means DefaultEnvironments().
//
// The returned *Environments is never nil: on error it holds the valid entries, and the error,
// of type Errors, lists every problem, naming the file, the line and the environment id.
func LoadEnvironments(path string) (*Environments, error) {
	data, rerr := readFile(path)
	if rerr != nil {
		if errors.Is(rerr.Err, fs.ErrNotExist) {
			return DefaultEnvironments(), nil
		}
		envs := DefaultEnvironments()
		envs.File = path
		return envs, Errors{rerr}
	}
	return ParseEnvironments(path, data)
}

// ParseEnvironments is LoadEnvironments on data already read; name is used in errors.
func ParseEnvironments(name string, data []byte) (*Environments, error) {
	envs := &Environments{File: name, IncludeLocal: true}
	d, perr := parseTOML(name, data)
	if perr != nil {
		envs.Default = LocalEnvironment
		return envs, Errors{perr}
	}
	c := &collector{file: name}
	top := &tableReader{d: d, c: c, m: d.top}
	top.checkKeys(environmentsTopKeys(), environmentsTopKeys(), nil)
	if v, ok := top.boolean("include_local"); ok {
		envs.IncludeLocal = v
	}

	declared := map[string]int{} // id -> line of its first entry, valid or not
	if prim, ok := d.top["environments"]; ok {
		line := d.lineAt([]string{"environments"}, prim)
		arr, ok := d.tableArray(prim)
		if !ok {
			top.errf("environments", "`environments` must be an array of tables ([[environments]]), got %s", typeName(d.value(prim)))
		}
		elems := d.lines.arrays["environments"]
		if len(elems) != len(arr) {
			elems = nil
		}
		for i, m := range arr {
			r := &tableReader{d: d, c: c, path: []string{"environments"}, m: m, elemLines: map[string]int{},
				base: Error{Line: line, Table: fmt.Sprintf("environments[%d]", i)}}
			if elems != nil {
				r.base.Line, r.elemLines = elems[i].line, elems[i].keys
			}
			id, hasID := r.str("id")
			if hasID {
				r.base.Environment = id
				r.base.Table = fmt.Sprintf("environments[%d] (id %q)", i, id)
			}
			if env, ok := environment(r, id, hasID, declared); ok {
				envs.List = append(envs.List, env)
			}
		}
	}

	// default
	switch def, ok := top.str("default"); {
	case !top.has("default"):
		if envs.IncludeLocal {
			envs.Default = LocalEnvironment
		} else {
			top.errf("", "`default` must be set when `include_local = false`: name one of the [[environments]] ids")
		}
	case !ok:
	case def == LocalEnvironment && !envs.IncludeLocal:
		top.errf("default", "`default` is %q, but `include_local = false` removes the local environment", def)
	case def == LocalEnvironment || envs.Has(def):
		envs.Default = def
	case declared[def] > 0:
		// The entry it names is invalid and already reported.
	default:
		ids := make([]string, 0, len(envs.List)+1)
		if envs.IncludeLocal {
			ids = append(ids, fmt.Sprintf("%q", LocalEnvironment))
		}
		for _, e := range envs.List {
			ids = append(ids, fmt.Sprintf("%q", e.ID))
		}
		want := "no environment is defined"
		if len(ids) > 0 {
			want = "want one of " + strings.Join(ids, ", ")
		}
		top.errf("default", "`default` %q names no environment; %s", def, want)
		if envs.IncludeLocal {
			envs.Default = LocalEnvironment
		}
	}
	return envs, c.result()
}

// environment reads one `[[environments]]` entry.
func environment(r *tableReader, id string, hasID bool, firstLine map[string]int) (Environment, bool) {
	r.checkKeys(environmentKeys(), environmentKeys(), nil)
	env := Environment{ID: id, Pos: Position{File: r.c.file, Line: r.base.Line}}
	switch {
	case !r.has("id"):
		r.errf("", "`id` is required")
	case !hasID:
	case id == LocalEnvironment:
		r.errf("id", "`id` %q is reserved for the host machine; pick another id", id)
	case !validEnvironmentID(id):
		r.errf("id", "`id` %q must match %s", id, environmentIDPattern)
	default:
		if l, dup := firstLine[id]; dup {
			r.errf("id", "duplicate id %q (first defined at line %d)", id, l)
		} else {
			firstLine[id] = max(r.base.Line, 1)
		}
	}
	if raw, ok := r.nonEmpty("url"); ok {
		env.URL = raw
		if !strings.HasPrefix(raw, "ws://") && !strings.HasPrefix(raw, "wss://") {
			r.errf("url", "`url` %q must start with ws:// or wss://", raw)
		} else if u, err := url.Parse(raw); err != nil {
			r.errf("url", "`url` %q is not a valid URL: %v", raw, errors.Unwrap(err))
		} else if u.Host == "" {
			r.errf("url", "`url` %q has no host", raw)
		}
	}
	if v, ok := r.nonEmpty("token_env"); ok {
		if prob := envVarNameProblem(v); prob != "" {
			r.errf("token_env", "`token_env` %s", prob)
		} else {
			env.TokenEnv = v
		}
	}
	env.Program, _ = r.nonEmpty("program")
	env.Args, _ = r.strSlice("args", false)
	env.Env, _ = r.strMap("env", func(n, _ string) string { return envVarNameProblem(n) })
	switch {
	case r.has("url") && r.has("program"):
		r.errf("program", "set exactly one of `url` (connect to a running executor) and `program` (spawn one), not both")
	case !r.has("url") && !r.has("program"):
		r.errf("", "set exactly one of `url` (connect to a running executor) and `program` (spawn one)")
	case r.has("url"):
		for _, k := range []string{"args", "env"} {
			if r.has(k) {
				r.errf(k, "key `%s` is only valid with `program`, but this environment has `url`", k)
			}
		}
	case r.has("token_env"):
		r.errf("token_env", "key `token_env` is only valid with `url` (a spawned executor is reached over its stdio)")
	}
	return env, r.nerr == 0
}
