package mcpconn

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

// Spec is the effective, credential-resolved description of one MCP server connection: what
// BuildSpec makes of a declaration once every credential reference has been resolved in the
// environment that owns it. A Spec holds secret values (Env, Headers); its String, Format and
// MarshalJSON methods print names and the Key only, so a Spec can be logged safely, but never
// copy Env or Headers into a log or error yourself.
//
// A Spec is a value; treat a built one as immutable (its slices and maps are not copied by
// the Manager). It is safe to share between goroutines for reading.
type Spec struct {
	// Name is the server's name (the declaration's table key). Every error names it.
	Name string
	// Transport is config.TransportStdio or config.TransportHTTP.
	Transport config.Transport
	// Environment is where the server runs or is routed: "local" for the host machine, else
	// an executor id. BuildSpec takes it from the declaration's environment_id ("" means
	// local; apply environments.toml's default to the declaration first). A Manager starts
	// stdio servers locally only, and reaches a non-local HTTP server only through an
	// Options.RoundTripper, which routes by RequestEnvironment.
	Environment string

	// Command, Args, Cwd and Env describe a stdio server. Cwd is absolute, or "" for the
	// host process's working directory. Env is the COMPLETE child environment, "NAME=value"
	// sorted by name: the minimal base (BaseEnvVars that are set), then the resolved
	// env_vars, then the literal env (a literal wins a name clash).
	Command string
	Args    []string
	Cwd     string
	Env     []string

	// URL and Headers describe a streamable HTTP server. Headers holds the resolved values
	// (canonical names, one value each), including Authorization for bearer_token_env_var.
	URL     string
	Headers http.Header

	// EnvVarRefs and HeaderRefs are the credential references a RefResolver left for the
	// environment that owns them to resolve (an executor): env_vars names for a stdio
	// server, and headers whose value is an executor variable (bearer_token_env_var as
	// Authorization with the prefix "Bearer ", env_http_headers). They hold names only.
	// With them, Env holds only the literal env: the owning environment adds its own base
	// environment.
	EnvVarRefs []string
	HeaderRefs []HeaderRef

	// StartupTimeout bounds connect + handshake + reading the catalogs (tools, and
	// resources, templates and prompts where advertised); ToolTimeout bounds each request
	// (tools/call, resources/read, prompts/get, ...). Both are positive (BuildSpec applies
	// the config defaults).
	StartupTimeout time.Duration
	ToolTimeout    time.Duration

	// Key is the sharing key: connections are shared between everyone who acquires a Spec
	// with the same Key. See BuildSpec for what it covers. It is safe to log.
	Key string

	// Client, when set, makes the connection one client's own: the session declares
	// Client.Capabilities() and the server's sampling, elicitation and roots requests go to
	// it (see ClientHandler). BuildSpec never sets it and Key does not cover it, so the
	// caller that sets it must also make Key unique to that client (e.g. append the
	// client's session id and hash), or another acquirer of the same Key would share — and
	// answer for — this client's session. nil: the session declares no client capability,
	// and such requests get the go-sdk's standard refusal.
	Client ClientHandler

	// secrets are the values resolved from credential references, longest first; every
	// error and log line of this server is scrubbed of them.
	secrets []string
	// origin is the declaration's: whether a host-resolved value may travel to an
	// executor at all (DESIGN.md §5 rule 1) is checked again by Acquire.
	origin config.Origin
}

// String renders the server's name, transport and key; never a value of Env or Headers.
func (s Spec) String() string {
	return fmt.Sprintf("mcp server %q (%s, key %s)", s.Name, s.Transport, shortKey(s.Key))
}

// Format makes every fmt verb (%v, %+v, %#v, %s, ...) print String, so formatting a Spec
// can never leak a credential.
func (s Spec) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON renders a Spec without values: Env and Headers appear as their names only,
// and the URL through RedactURL (a query string often carries a key).
// This keeps a Spec passed to a JSON logger (hclog JSONFormat) safe.
func (s Spec) MarshalJSON() ([]byte, error) {
	envNames := make([]string, 0, len(s.Env))
	for _, kv := range s.Env {
		name, _, _ := strings.Cut(kv, "=")
		envNames = append(envNames, name)
	}
	return json.Marshal(struct {
		Name           string   `json:"name"`
		Transport      string   `json:"transport"`
		Environment    string   `json:"environment"`
		Command        string   `json:"command,omitempty"`
		Args           []string `json:"args,omitempty"`
		Cwd            string   `json:"cwd,omitempty"`
		EnvNames       []string `json:"envNames,omitempty"`
		URL            string   `json:"url,omitempty"`
		HeaderNames    []string `json:"headerNames,omitempty"`
		StartupTimeout string   `json:"startupTimeout"`
		ToolTimeout    string   `json:"toolTimeout"`
		Key            string   `json:"key"`
	}{s.Name, string(s.Transport), s.Environment, s.Command, s.Args, s.Cwd, envNames, RedactURL(s.URL),
		slices.Sorted(maps.Keys(s.Headers)), s.StartupTimeout.String(), s.ToolTimeout.String(), s.Key})
}

// SendsAuthorization reports whether the Spec sends an Authorization header of its own
// (a resolved one in Headers, or one its executor resolves from HeaderRefs); such a server
// is never given an OAuth token.
func (s *Spec) SendsAuthorization() bool {
	if s.Headers.Get("Authorization") != "" {
		return true
	}
	for _, r := range s.HeaderRefs {
		if strings.EqualFold(r.Name, "Authorization") {
			return true
		}
	}
	return false
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}

// Resolver resolves credential references (variable names) for the environment that owns a
// declaration. Implementations must be safe for concurrent use if shared.
type Resolver interface {
	// LookupEnv returns the value of variable name and whether it is set.
	LookupEnv(name string) (value string, ok bool)
	// Route names the environment that resolves name: "local" for the host, else an
	// executor id. The route — never the value — is what Spec.Key records for a reference.
	Route(name string) string
}

// HeaderRef is a header whose value the owning environment resolves from its variable
// EnvVar, prefixed with Prefix.
type HeaderRef struct {
	Name   string
	EnvVar string
	Prefix string
}

// RefResolver is the Resolver of an environment whose values the host never holds (an
// executor): BuildSpec records each reference by name (Spec.EnvVarRefs, Spec.HeaderRefs)
// instead of reading it, routed to Environment.
type RefResolver struct {
	Environment string
}

// LookupEnv implements Resolver: the host has no value.
func (RefResolver) LookupEnv(string) (string, bool) { return "", false }

// Route implements Resolver.
func (r RefResolver) Route(string) string { return r.Environment }

// EnvResolver is the Resolver of one environment's variables. The zero value resolves
// nothing and routes to "local". It is safe for concurrent use if Lookup is.
type EnvResolver struct {
	// Environment is the route recorded for every reference; "" means "local".
	Environment string
	// Lookup reads a variable; nil resolves nothing (every reference is missing).
	Lookup func(name string) (string, bool)
}

// LookupEnv implements Resolver.
func (r EnvResolver) LookupEnv(name string) (string, bool) {
	if r.Lookup == nil {
		return "", false
	}
	return r.Lookup(name)
}

// Route implements Resolver: every name routes to r.Environment.
func (r EnvResolver) Route(string) string { return cmp.Or(r.Environment, config.LocalEnvironment) }

// HostResolver resolves references from the host process's own environment (os.LookupEnv),
// routed "local". It is what production uses for host-config and local-plugin declarations.
func HostResolver() EnvResolver {
	return EnvResolver{Environment: config.LocalEnvironment, Lookup: os.LookupEnv}
}

// MapResolver resolves references from vars (copied), routed to environment ("" means
// "local"). Tests use it to pin exactly what is set.
func MapResolver(environment string, vars map[string]string) EnvResolver {
	vars = maps.Clone(vars)
	return EnvResolver{Environment: environment, Lookup: func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}}
}

// BuildOptions configures BuildSpec. The zero value is usable: a relative cwd is then an
// error and the base environment is read from the host.
type BuildOptions struct {
	// BaseDir is the directory a relative cwd resolves against (the directory of the file
	// that declared the server, typically). "" makes a relative cwd an ErrInvalidDecl.
	BaseDir string
	// BaseEnv reads the minimal base variables (BaseEnvVars) for a stdio child; nil means
	// os.LookupEnv (the host). Only the names in BaseEnvVars are ever read through it.
	BaseEnv func(name string) (string, bool)
	// Grant, when set, is asked about every credential reference before any is read: key
	// is the declaration key ("env_vars", "bearer_token_env_var" or
	// `env_http_headers (header "X-Key")`), name the variable. A non-empty refusal means no
	// reference of the declaration is looked up through the Resolver at all, and BuildSpec
	// fails with an *Error wrapping ErrNotGranted whose text carries every refusal. nil
	// reads every reference (a declaration of the environment's own operator).
	Grant func(key, name string) (refusal string)
}

// BaseEnvVars lists the variables a stdio server inherits from the host when they are set
// (DESIGN.md §5 rule 9): just enough for a program to find its tools, home, locale, temp
// directory and terminal. Everything else reaches a child only through the declaration's
// env (literal) or env_vars (by name).
func BaseEnvVars() []string { return baseEnvVars(runtime.GOOS) }

func baseEnvVars(goos string) []string {
	if goos == "windows" {
		return []string{"APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH",
			"PATHEXT", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP",
			"USERDOMAIN", "USERNAME", "USERPROFILE"}
	}
	return []string{"HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}
}

// reservedHeader reports whether the streamable HTTP transport sets header canon (a
// canonical name) itself; a declaration may not override those (doing so would break the
// protocol, not configure it).
func reservedHeader(canon string) bool {
	switch canon {
	case "Accept", "Content-Type", "Content-Length", "Host", "Last-Event-Id",
		"Mcp-Protocol-Version", "Mcp-Session-Id":
		return true
	}
	return false
}

// keyVersion is mixed into every key; bump it when what the key covers changes.
const keyVersion = "mcpconn-key-v1"

// BuildSpec resolves declaration d into a Spec, reading every credential reference through
// r (the resolver of the environment that owns d) and the stdio base environment through
// o.BaseEnv.
//
// A referenced variable that r cannot resolve is an error (wrapping ErrMissingCredential)
// naming the server, the declaration key and the variable — never a value. bearer_token_env_var
// and env_http_headers variables must also be non-empty (an empty credential header is never
// what was meant); an env_vars variable may be set to "".
//
// Spec.Key, the sharing key, is the hex SHA-256 of, in a fixed length-prefixed encoding: the
// server name, transport, environment, command, args, absolute cwd, the base environment
// actually passed, the literal env and http_headers, the url, both timeouts, and for each
// credential reference its declaration key, variable name, env_vars source and the route
// r.Route reports for it. It never covers a resolved credential value, because keys are
// printed in logs and status output: a digest of a secret is an offline guessing oracle
// for low-entropy tokens, and the route already determines the value (the same variable in
// the same environment). Two declarations share a connection exactly when everything that
// reaches the server, and where each credential comes from, is the same. A consequence:
// a credential rotated in its environment takes effect when the shared connection is next
// established, not for a session that is already open. tool filters (enabled_tools,
// disabled_tools), required and enabled are per-thread decisions and not part of the key.
func BuildSpec(d *config.ServerDecl, r Resolver, o BuildOptions) (Spec, error) {
	s := Spec{
		origin:         d.Origin,
		Name:           d.Name,
		Transport:      d.Transport(),
		Environment:    cmp.Or(d.EnvironmentID, config.LocalEnvironment),
		StartupTimeout: cmp.Or(d.StartupTimeout, config.DefaultStartupTimeout),
		ToolTimeout:    cmp.Or(d.ToolTimeout, config.DefaultToolTimeout),
	}
	if d.StartupTimeout < 0 || d.ToolTimeout < 0 {
		return Spec{}, invalidDecl(d.Name, "has a negative timeout")
	}
	if r == nil {
		r = EnvResolver{}
	}
	k := newKeyHasher()
	k.field("name", s.Name)
	k.field("transport", string(s.Transport))
	k.field("environment", s.Environment)
	k.field("timeouts", s.StartupTimeout.String(), s.ToolTimeout.String())

	if o.Grant != nil {
		if err := checkGrants(d, s.Transport, o.Grant); err != nil {
			return Spec{}, err
		}
	}

	var secrets []string
	_, byRef := r.(RefResolver)
	switch {
	case d.Command == "" && d.URL == "":
		return Spec{}, invalidDecl(d.Name, "has neither command nor url")
	case d.Command != "" && d.URL != "":
		return Spec{}, invalidDecl(d.Name, "has both command and url")
	case s.Transport == config.TransportStdio:
		s.Command = d.Command
		s.Args = slices.Clone(d.Args)
		k.field("command", s.Command)
		k.field("args", s.Args...)
		if d.Cwd != "" {
			cwd := d.Cwd
			if !filepath.IsAbs(cwd) {
				if o.BaseDir == "" {
					return Spec{}, invalidDecl(d.Name, "has a relative cwd %q and no base directory to resolve it against", d.Cwd)
				}
				cwd = filepath.Join(o.BaseDir, cwd)
			}
			s.Cwd = filepath.Clean(cwd)
		}
		k.field("cwd", s.Cwd)

		env := map[string]string{}
		base := o.BaseEnv
		if base == nil {
			base = os.LookupEnv
		}
		if !byRef {
			// An environment that resolves the references starts the process with its own
			// base environment; the host's is never sent there.
			for _, name := range BaseEnvVars() {
				if v, ok := base(name); ok {
					env[name] = v
					k.field("base-env", name, v)
				}
			}
		}
		for _, ev := range d.EnvVars {
			if byRef {
				s.EnvVarRefs = append(s.EnvVarRefs, ev.Name)
				k.field("env-var-ref", ev.Name, ev.Source, r.Route(ev.Name))
				continue
			}
			v, ok := r.LookupEnv(ev.Name)
			route := r.Route(ev.Name)
			if !ok {
				return Spec{}, missingVar(d.Name, "env_vars", ev.Name, route)
			}
			env[ev.Name] = v
			secrets = append(secrets, v)
			k.field("env-var", ev.Name, ev.Source, route)
		}
		for _, name := range slices.Sorted(maps.Keys(d.Env)) {
			env[name] = d.Env[name]
			k.field("env", name, d.Env[name])
		}
		for _, name := range slices.Sorted(maps.Keys(env)) {
			s.Env = append(s.Env, name+"="+env[name])
		}
	default: // HTTP
		s.URL = d.URL
		k.field("url", s.URL)
		s.Headers = http.Header{}
		set := func(name, value string) error {
			canon := http.CanonicalHeaderKey(name)
			if reservedHeader(canon) {
				return invalidDecl(d.Name, "sets header %q, which the MCP transport manages itself", canon)
			}
			s.Headers[canon] = []string{value}
			return nil
		}
		for _, name := range slices.Sorted(maps.Keys(d.HTTPHeaders)) {
			if err := set(name, d.HTTPHeaders[name]); err != nil {
				return Spec{}, err
			}
			k.field("http-header", http.CanonicalHeaderKey(name), d.HTTPHeaders[name])
		}
		for _, name := range slices.Sorted(maps.Keys(d.EnvHTTPHeaders)) {
			variable := d.EnvHTTPHeaders[name]
			if byRef {
				canon := http.CanonicalHeaderKey(name)
				if reservedHeader(canon) {
					return Spec{}, invalidDecl(d.Name, "sets header %q, which the MCP transport manages itself", canon)
				}
				s.HeaderRefs = append(s.HeaderRefs, HeaderRef{Name: canon, EnvVar: variable})
				k.field("env-http-header-ref", canon, variable, r.Route(variable))
				continue
			}
			v, ok := r.LookupEnv(variable)
			route := r.Route(variable)
			if !ok || v == "" {
				return Spec{}, missingVar(d.Name, fmt.Sprintf("env_http_headers (header %q)", name), variable, route)
			}
			if err := set(name, v); err != nil {
				return Spec{}, err
			}
			secrets = append(secrets, v)
			k.field("env-http-header", http.CanonicalHeaderKey(name), variable, route)
		}
		if d.BearerTokenEnvVar != "" && byRef {
			s.HeaderRefs = append(s.HeaderRefs, HeaderRef{Name: "Authorization", EnvVar: d.BearerTokenEnvVar, Prefix: "Bearer "})
			k.field("bearer-ref", d.BearerTokenEnvVar, r.Route(d.BearerTokenEnvVar))
		} else if d.BearerTokenEnvVar != "" {
			v, ok := r.LookupEnv(d.BearerTokenEnvVar)
			route := r.Route(d.BearerTokenEnvVar)
			if !ok || v == "" {
				return Spec{}, missingVar(d.Name, "bearer_token_env_var", d.BearerTokenEnvVar, route)
			}
			s.Headers.Set("Authorization", "Bearer "+v)
			secrets = append(secrets, v)
			k.field("bearer", d.BearerTokenEnvVar, route)
		}
	}
	// Longest first, so a secret containing another is scrubbed whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	s.secrets = slices.Compact(secrets)
	s.Key = k.sum()
	return s, nil
}

// checkGrants asks grant about every credential reference d's transport reads, in the
// order BuildSpec reads them, and returns the refusals as one ErrNotGranted error.
func checkGrants(d *config.ServerDecl, transport config.Transport, grant func(key, name string) string) error {
	var refusals []string
	ask := func(key, name string) {
		if r := grant(key, name); r != "" {
			refusals = append(refusals, r)
		}
	}
	if transport == config.TransportStdio {
		for _, ev := range d.EnvVars {
			ask("env_vars", ev.Name)
		}
	} else {
		for _, name := range slices.Sorted(maps.Keys(d.EnvHTTPHeaders)) {
			ask(fmt.Sprintf("env_http_headers (header %q)", name), d.EnvHTTPHeaders[name])
		}
		if d.BearerTokenEnvVar != "" {
			ask("bearer_token_env_var", d.BearerTokenEnvVar)
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	return &Error{Server: d.Name, kind: ErrNotGranted, Msg: "is disabled: " + strings.Join(slices.Compact(refusals), "; ")}
}

// keyHasher writes tagged, length-prefixed fields, so that no two different field
// sequences hash the same input.
type keyHasher struct{ h hash.Hash }

func newKeyHasher() keyHasher {
	k := keyHasher{h: sha256.New()}
	k.field(keyVersion)
	return k
}

func (k keyHasher) field(tag string, vals ...string) {
	k.str(tag)
	k.h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(vals))))
	for _, v := range vals {
		k.str(v)
	}
}

func (k keyHasher) str(v string) {
	k.h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(v))))
	k.h.Write([]byte(v))
}

func (k keyHasher) sum() string { return hex.EncodeToString(k.h.Sum(nil)) }
