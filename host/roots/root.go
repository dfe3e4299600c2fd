package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/internal/safefile"
)

// Well-known names inside a capability root.
const (
	// CodexManifest is the preferred manifest location, relative to the root.
	CodexManifest = ".codex-plugin/plugin.json"
	// ClaudeManifest is the fallback manifest location, used when CodexManifest is absent.
	ClaudeManifest = ".claude-plugin/plugin.json"
	// MCPFile is the default server declaration file, relative to the root.
	MCPFile = ".mcp.json"
	// DefaultPolicyFile is the policy module used when the manifest names none.
	DefaultPolicyFile = "policy.wasm"
)

// Defaults for Options.
const (
	// DefaultMaxPolicySize caps a policy module's size.
	DefaultMaxPolicySize = 64 << 20
	// MaxJSONSize caps plugin.json and .mcp.json (and a manifest-named server file).
	MaxJSONSize = 4 << 20
)

// Status says whether a root can be used.
type Status string

// Root statuses.
const (
	// StatusOK: the root loaded without problems.
	StatusOK Status = "ok"
	// StatusPartial: some servers were rejected (see Root.ServerErrors); Root.Servers holds
	// the usable rest.
	StatusPartial Status = "partial"
	// StatusError: the root is unusable (see Root.Err); Root.Servers is empty.
	StatusError Status = "error"
)

// Options tune Load and Scan. The zero value is ready to use.
type Options struct {
	// Environment is recorded as Origin.Environment of every server: the environment the
	// root is located in. Empty means config.LocalEnvironment.
	Environment string
	// MaxPolicySize caps the policy module's size in bytes; 0 means DefaultMaxPolicySize.
	MaxPolicySize int64
}

func (o Options) withDefaults() Options {
	if o.Environment == "" {
		o.Environment = config.LocalEnvironment
	}
	if o.MaxPolicySize <= 0 {
		o.MaxPolicySize = DefaultMaxPolicySize
	}
	return o
}

// PolicyFile is a root's policy module, checked and hashed at load time.
type PolicyFile struct {
	// Path is the module's absolute path with symbolic links resolved (inside the root).
	Path string
	// SHA256 is the lower-case hex digest of the content read at load time.
	SHA256 string
	// Size is the number of bytes hashed.
	Size int64
	// Data is the module itself for a root loaded with LoadRemote (whose Path is in another
	// environment); nil for a local root, whose module is read from Path when it is loaded.
	Data []byte
}

// Root is one loaded capability root. A Root is an immutable snapshot: treat its fields,
// slices and maps as read-only (Sets share them between snapshots).
type Root struct {
	// ID is "name@version". When the manifest has no version the id is just the name, and
	// when there is no manifest (or it has no name) the name is the root directory's base
	// name. See Matches for how a selection id is compared.
	ID string
	// Name, Version and Description come from the manifest ("" when absent).
	Name, Version, Description string
	// Dir is the root's absolute directory with symbolic links resolved (the path given to
	// Load, made absolute, when it cannot be resolved).
	Dir string
	// ManifestPath is the absolute path of the manifest that was read (CodexManifest or,
	// failing that, ClaudeManifest), or "" when the root has only a .mcp.json.
	ManifestPath string
	// Servers are the usable declarations, sorted by name. Each has Origin
	// {Kind: config.OriginPlugin, Environment: Options.Environment, PluginID: ID} and Pos.File
	// set to the file it was declared in. Empty when Status is StatusError.
	Servers []config.ServerDecl
	// Policy is the root's policy module, or nil when it has none.
	Policy *PolicyFile
	// Status summarises Err and ServerErrors.
	Status Status
	// Err is the root-level failure that makes the root unusable (nil unless Status is
	// StatusError). It may join several *Error values (errors.Join).
	Err error
	// ServerErrors are per-server problems (each an *Error naming the file and server); the
	// servers concerned are not in Servers.
	ServerErrors []error
	// LoadedAt is when the root was read.
	LoadedAt time.Time
	// Fingerprint is a hex digest of everything above except LoadedAt: equal fingerprints
	// mean an identical load result.
	Fingerprint string

	// watchDirs are directories inside the root holding files the load read besides the
	// manifest directories (a manifest-named server file, the policy module).
	watchDirs []string
}

// Matches reports whether a selection id (thread/start's selectedCapabilityRoots[].id)
// names this root: it equals ID, or the root has no version and id is "Name@anything".
func (r *Root) Matches(id string) bool {
	if id == r.ID {
		return true
	}
	if r.Version == "" {
		if at := strings.LastIndexByte(id, '@'); at > 0 {
			return id[:at] == r.Name
		}
	}
	return false
}

// Load reads the capability root in dir. It never fails: problems are reported in the
// returned Root's Status, Err and ServerErrors.
func Load(dir string, opts Options) *Root {
	opts = opts.withDefaults()
	r := &Root{LoadedAt: time.Now()}
	l := &loader{r: r, opts: opts}
	l.load(dir)
	l.finish()
	return r
}

// loader accumulates one root's load.
type loader struct {
	r    *Root
	opts Options
	errs []error // root-level
}

// fail records a root-level problem.
func (l *loader) fail(file string, line, col int, err error) {
	l.errs = append(l.errs, &Error{PluginID: l.r.ID, Dir: l.r.Dir, File: file, Line: line, Column: col, Err: err})
}

func (l *loader) load(dir string) {
	r := l.r
	abs, err := filepath.Abs(dir)
	if err != nil {
		r.Dir, r.Name, r.ID = dir, filepath.Base(dir), filepath.Base(dir)
		l.fail("", 0, 0, fmt.Errorf("resolving %s: %w", dir, err))
		return
	}
	r.Dir, r.Name = abs, filepath.Base(abs)
	r.ID = r.Name
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		l.fail("", 0, 0, fmt.Errorf("resolving %s: %w", abs, err))
		return
	}
	r.Dir = resolved
	if fi, err := os.Stat(resolved); err != nil {
		l.fail("", 0, 0, err)
		return
	} else if !fi.IsDir() {
		l.fail("", 0, 0, fmt.Errorf("%s is not a directory", resolved))
		return
	}

	var m *manifest
	mcpPath := filepath.Join(r.Dir, MCPFile)
	hasMCP := lexists(mcpPath)
	for _, rel := range []string{CodexManifest, ClaudeManifest} {
		if p := filepath.Join(r.Dir, filepath.FromSlash(rel)); lexists(p) {
			r.ManifestPath = p
			break
		}
	}
	if r.ManifestPath == "" && !hasMCP {
		l.fail("", 0, 0, ErrNotRoot)
		return
	}

	sc := serverCtx{dir: r.Dir, pluginID: r.ID, env: l.opts.Environment}
	if r.ManifestPath != "" {
		rel := relTo(r.Dir, r.ManifestPath)
		data, err := safefile.ReadFile(r.ManifestPath, MaxJSONSize)
		if err != nil {
			l.fail(rel, 0, 0, err)
			return
		}
		var servers []config.ServerDecl
		var serverErrs []error
		m, servers, serverErrs, err = parsePluginJSON(data, r.Dir, r.ManifestPath, sc)
		if m != nil {
			r.Name, r.Version, r.Description, r.ID = m.name, m.version, m.description, m.id
			sc.pluginID = r.ID
		}
		if err != nil {
			l.errs = append(l.errs, err)
			return
		}
		if m.inline {
			r.Servers, r.ServerErrors = servers, serverErrs
		}
	}

	switch {
	case m != nil && m.inline:
		// Servers came inline from plugin.json; .mcp.json, if any, is not read.
	case m != nil && m.mcpServers != "":
		abs, resolved, err := insideRoot(r.Dir, m.mcpServers, "mcpServers")
		if err != nil {
			l.fail(relTo(r.Dir, r.ManifestPath), 0, 0, err)
			return
		}
		l.watchDir(filepath.Dir(resolved))
		if !lexists(resolved) {
			l.fail(relTo(r.Dir, r.ManifestPath), 0, 0, fmt.Errorf("mcpServers file %q does not exist", m.mcpServers))
			return
		}
		l.readMCP(abs, sc)
	case hasMCP:
		l.readMCP(mcpPath, sc)
	}
	if len(l.errs) > 0 {
		return
	}
	l.loadPolicy(m)
}

// readMCP reads and parses a .mcp.json-format file.
func (l *loader) readMCP(p string, sc serverCtx) {
	data, err := safefile.ReadFile(p, MaxJSONSize)
	if err != nil {
		l.fail(relTo(l.r.Dir, p), 0, 0, err)
		return
	}
	servers, serverErrs, err := parseMCPJSON(data, p, sc)
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	l.r.Servers, l.r.ServerErrors = servers, serverErrs
}

// loadPolicy checks and hashes the declared policy (or the default policy.wasm).
func (l *loader) loadPolicy(m *manifest) {
	r := l.r
	decl, file := "", ""
	if m != nil && m.policy != "" {
		decl, file = m.policy, relTo(r.Dir, r.ManifestPath)
	} else if lexists(filepath.Join(r.Dir, DefaultPolicyFile)) {
		decl = DefaultPolicyFile
	} else {
		return
	}
	_, resolved, err := insideRoot(r.Dir, decl, "policy")
	if err != nil {
		l.fail(file, 0, 0, err)
		return
	}
	l.watchDir(filepath.Dir(resolved))
	fi, err := os.Lstat(resolved)
	switch {
	case isNotExist(err):
		l.fail(file, 0, 0, fmt.Errorf("%w: policy %q does not exist", ErrPolicy, decl))
		return
	case err != nil:
		l.fail(file, 0, 0, fmt.Errorf("%w: policy %q: %w", ErrPolicy, decl, err))
		return
	case !fi.Mode().IsRegular():
		l.fail(file, 0, 0, fmt.Errorf("%w: policy %q is not a regular file", ErrPolicy, decl))
		return
	case fi.Size() > l.opts.MaxPolicySize:
		l.fail(file, 0, 0, fmt.Errorf("%w: policy %q is %d bytes, over the %d-byte limit", ErrPolicy, decl, fi.Size(), l.opts.MaxPolicySize))
		return
	}
	// safefile: the Lstat above cannot stop a file swapped for a FIFO or a device before it
	// is opened; the descriptor read is checked again, and the read capped.
	data, err := safefile.ReadFile(resolved, l.opts.MaxPolicySize)
	if err != nil {
		l.fail(file, 0, 0, fmt.Errorf("%w: policy %q: %w", ErrPolicy, decl, err))
		return
	}
	sum, n := sha256.Sum256(data), int64(len(data))
	r.Policy = &PolicyFile{Path: resolved, SHA256: hex.EncodeToString(sum[:]), Size: n}
}

// watchDir records an existing directory of the root (other than the root and its manifest
// directories) holding a file the load depends on, for the Watcher.
func (l *loader) watchDir(dir string) {
	if dir == l.r.Dir {
		return
	}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		l.r.watchDirs = append(l.r.watchDirs, dir)
	}
}

// finish sets Status, Err and Fingerprint from what was collected.
func (l *loader) finish() {
	r := l.r
	if len(l.errs) == 0 && len(r.Servers) == 0 && len(r.ServerErrors) > 0 {
		l.errs = append(l.errs, &Error{PluginID: r.ID, Dir: r.Dir,
			Err: fmt.Errorf("none of its %d server declarations is usable", countServers(r.ServerErrors))})
	}
	r.Err = errors.Join(l.errs...)
	setStatus(r)
	r.Fingerprint = fingerprint(r)
}

// setStatus derives Status from Err and ServerErrors (and drops Servers of an unusable root).
func setStatus(r *Root) {
	switch {
	case r.Err != nil:
		r.Status = StatusError
		r.Servers = nil
		r.Policy = nil
	case len(r.ServerErrors) > 0:
		r.Status = StatusPartial
	default:
		r.Status = StatusOK
	}
}

// countServers counts the distinct servers named by per-server errors.
func countServers(errs []error) int {
	seen := map[string]bool{}
	for _, err := range errs {
		var e *Error
		if errors.As(err, &e) {
			seen[e.Server] = true
		}
	}
	return len(seen)
}

// fingerprint hashes a root's load result (everything but LoadedAt).
func fingerprint(r *Root) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	for _, s := range []string{r.ID, r.Name, r.Version, r.Description, r.Dir, r.ManifestPath, string(r.Status)} {
		field(s)
	}
	if r.Policy != nil {
		field(r.Policy.Path)
		field(r.Policy.SHA256)
		field(fmt.Sprint(r.Policy.Size))
	} else {
		field("-")
	}
	if r.Err != nil {
		field(r.Err.Error())
	} else {
		field("-")
	}
	field(fmt.Sprint(len(r.ServerErrors)))
	for _, err := range r.ServerErrors {
		field(err.Error())
	}
	field(fmt.Sprint(len(r.Servers)))
	for i := range r.Servers {
		// %#v prints maps with sorted keys, so equal declarations render equally; the OAuth
		// pointer is rendered by value.
		d := r.Servers[i]
		oauth := d.OAuth
		d.OAuth = nil
		field(fmt.Sprintf("%#v", d))
		if oauth != nil {
			field(fmt.Sprintf("%#v", *oauth))
		} else {
			field("-")
		}
	}
	dirs := append([]string(nil), r.watchDirs...)
	sort.Strings(dirs)
	field(strings.Join(dirs, "\x00"))
	return hex.EncodeToString(h.Sum(nil))
}
