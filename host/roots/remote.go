package roots

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"time"

	"github.com/warden-mcp/warden/host/config"
)

// ReadFunc reads the file at rel (slash-separated, relative to a root) of at most max
// bytes. A missing file is an error wrapping fs.ErrNotExist. It is how LoadRemote reads a
// root that lives in another environment (an executor's fs/read, which confines every read
// to the root).
type ReadFunc func(rel string, max int64) ([]byte, error)

// LoadRemote reads the capability root at dir (an absolute path in another environment:
// opts.Environment names it) through read: the manifest, the declared server file and the
// policy module, parsed and checked exactly as Load does except that paths are checked
// lexically (the environment that serves read resolves symbolic links and confines reads
// to the root). The root's servers have Origin.Environment opts.Environment, and its
// PolicyFile carries the module's bytes (Data), since the host cannot read them from its
// own disk. It never fails: problems are in the Root's Status, Err and ServerErrors.
func LoadRemote(dir string, read ReadFunc, opts Options) *Root {
	opts = opts.withDefaults()
	dir = path.Clean(filepath.ToSlash(dir))
	r := &Root{LoadedAt: time.Now(), Dir: dir, Name: path.Base(dir), ID: path.Base(dir)}
	l := &loader{r: r, opts: opts}
	l.loadRemote(read)
	l.finish()
	return r
}

func (l *loader) loadRemote(read ReadFunc) {
	r := l.r
	if !path.IsAbs(r.Dir) {
		l.fail("", 0, 0, fmt.Errorf("%s is not an absolute path", r.Dir))
		return
	}
	// get reads rel; missing reports a missing file (err nil).
	get := func(rel string, max int64) (data []byte, missing bool, err error) {
		data, err = read(rel, max)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, true, nil
		}
		return data, false, err
	}
	sc := serverCtx{dir: r.Dir, pluginID: r.ID, env: l.opts.Environment, remote: true}

	var m *manifest
	var manifestRel string
	for _, rel := range []string{CodexManifest, ClaudeManifest} {
		data, missing, err := get(rel, MaxJSONSize)
		if missing {
			continue
		}
		if err != nil {
			l.fail(rel, 0, 0, err)
			return
		}
		manifestRel, r.ManifestPath = rel, path.Join(r.Dir, rel)
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
		break
	}

	// relInside checks a manifest-declared path and makes it relative to the root.
	relInside := func(decl, what string) (string, bool) {
		abs, err := sc.inside(decl, what)
		if err != nil {
			l.fail(manifestRel, 0, 0, err)
			return "", false
		}
		rel, _ := filepath.Rel(r.Dir, abs)
		return filepath.ToSlash(rel), true
	}
	mcpRel, mustExist := MCPFile, false
	switch {
	case m != nil && m.inline:
		mcpRel = ""
	case m != nil && m.mcpServers != "":
		var ok bool
		if mcpRel, ok = relInside(m.mcpServers, "mcpServers"); !ok {
			return
		}
		mustExist = true
	}
	if mcpRel != "" {
		data, missing, err := get(mcpRel, MaxJSONSize)
		switch {
		case missing && mustExist:
			l.fail(manifestRel, 0, 0, fmt.Errorf("mcpServers file %q does not exist", m.mcpServers))
			return
		case missing && m == nil:
			l.fail("", 0, 0, ErrNotRoot)
			return
		case err != nil:
			l.fail(mcpRel, 0, 0, err)
			return
		case !missing:
			servers, serverErrs, err := parseMCPJSON(data, path.Join(r.Dir, mcpRel), sc)
			if err != nil {
				l.errs = append(l.errs, err)
				return
			}
			r.Servers, r.ServerErrors = servers, serverErrs
		}
	}

	policyRel, declared := DefaultPolicyFile, false
	if m != nil && m.policy != "" {
		var ok bool
		if policyRel, ok = relInside(m.policy, "policy"); !ok {
			return
		}
		declared = true
	}
	data, missing, err := get(policyRel, l.opts.MaxPolicySize)
	switch {
	case missing && declared:
		l.fail(manifestRel, 0, 0, fmt.Errorf("%w: policy %q does not exist", ErrPolicy, m.policy))
	case missing:
	case err != nil:
		l.fail(manifestRel, 0, 0, fmt.Errorf("%w: policy %q: %w", ErrPolicy, policyRel, err))
	default:
		sum := sha256.Sum256(data)
		r.Policy = &PolicyFile{Path: path.Join(r.Dir, policyRel), SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), Data: data}
	}
}
