package config

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/BurntSushi/toml"
)

// Requirements is requirements.toml: the operator's allow list of servers by name and
// identity. A server whose name is not listed, or whose identity (URL for streamable HTTP,
// command for stdio) does not match, is listed but disabled with a reason starting with
// "blocked by requirements". A nil *Requirements (no file) allows everything; an empty one
// denies everything.
type Requirements struct {
	// File is the path the requirements were read from.
	File string
	// Servers maps each allowed server name to its required identity.
	Servers map[string]Identity
	// Ignored lists top-level keys warden does not use (requirements.toml is shared with Codex,
	// which keeps other requirements there), in file order.
	Ignored []string
}

// Identity is one `[mcp_servers.NAME.identity]` table: exactly one of URL and Command is set.
type Identity struct {
	// URL is the required URL of a streamable HTTP server.
	URL string
	// Command is the required command of a stdio server.
	Command string
	// Pos is where the identity table is.
	Pos Position
}

// BlockedByRequirements starts every reason Requirements.Check gives for a denial.
const BlockedByRequirements = "blocked by requirements"

// LoadRequirements reads requirements.toml. A missing file returns nil, nil: no requirements,
// everything allowed.
//
// On any other error the returned *Requirements is not nil and fails closed: it holds only the
// entries that are valid (a file that does not parse holds none, so it denies everything), and
// the error, of type Errors, lists every problem.
func LoadRequirements(path string) (*Requirements, error) {
	data, rerr := readFile(path)
	if rerr != nil {
		if errors.Is(rerr.Err, fs.ErrNotExist) {
			return nil, nil
		}
		return &Requirements{File: path, Servers: map[string]Identity{}}, Errors{rerr}
	}
	return ParseRequirements(path, data)
}

// ParseRequirements is LoadRequirements on data already read; name is used in errors. Empty
// data is a valid file that denies everything.
func ParseRequirements(name string, data []byte) (*Requirements, error) {
	req := &Requirements{File: name, Servers: map[string]Identity{}}
	d, perr := parseTOML(name, data)
	if perr != nil {
		return req, Errors{perr}
	}
	c := &collector{file: name}
	for _, k := range d.sortedKeys(nil, d.top) {
		if k != "mcp_servers" {
			req.Ignored = append(req.Ignored, quoteKey(k))
			continue
		}
		prim := d.top[k]
		line := d.lineAt([]string{k}, prim)
		servers, ok := d.table(prim)
		if !ok {
			c.add(Error{Line: line, Key: k}, "`mcp_servers` must be a table, got %s", typeName(d.value(prim)))
			continue
		}
		for _, name := range d.sortedKeys([]string{k}, servers) {
			if id, ok := requirement(d, c, name, servers[name], line); ok {
				req.Servers[name] = id
			}
		}
	}
	return req, c.result()
}

// requirement reads one `[mcp_servers.NAME]` of requirements.toml.
func requirement(d *tomlDoc, c *collector, name string, prim toml.Primitive, sectionLine int) (Identity, bool) {
	base := Error{Line: d.lineAt([]string{"mcp_servers", name}, prim), Table: "mcp_servers." + quoteKey(name), Server: name}
	m, isTable := d.table(prim)
	if base.Line == 0 {
		if id, ok := m["identity"]; ok {
			base.Line = d.lineAt([]string{"mcp_servers", name, "identity"}, id)
		}
		if base.Line == 0 {
			base.Line = sectionLine
		}
	}
	if !isTable {
		c.add(base, "must be a table with an `identity`, got %s", typeName(d.value(prim)))
		return Identity{}, false
	}
	r := &tableReader{d: d, c: c, path: []string{"mcp_servers", name}, base: base, m: m}
	if !validServerName(name) {
		r.errf("", "invalid server name %q: must match %s", name, serverNamePattern)
	}
	r.checkKeys([]string{"identity"}, []string{"identity"}, nil)
	idPrim, ok := m["identity"]
	if !ok {
		r.errf("", "missing `identity`: add `[%s.identity]` with `url = \"...\"` or `command = \"...\"`", base.Table)
		return Identity{}, false
	}
	idm, isTable := d.table(idPrim)
	if !isTable {
		r.errf("identity", "`identity` must be a table with `url` or `command`, got %s", typeName(d.value(idPrim)))
		return Identity{}, false
	}
	ir := &tableReader{d: d, c: c, path: []string{"mcp_servers", name, "identity"}, base: base, m: idm}
	ir.base.Line = r.keyLine("identity")
	ir.base.Table = base.Table + ".identity"
	ir.checkKeys([]string{"url", "command"}, []string{"url", "command"}, nil)
	id := Identity{Pos: Position{File: c.file, Line: ir.base.Line}}
	id.URL, _ = ir.nonEmpty("url")
	id.Command, _ = ir.nonEmpty("command")
	switch {
	case ir.has("url") && ir.has("command"):
		ir.errf("command", "set exactly one of `url` and `command`, not both")
	case !ir.has("url") && !ir.has("command"):
		ir.errf("", "set exactly one of `url` (streamable HTTP) and `command` (stdio)")
	}
	return id, r.nerr == 0 && ir.nerr == 0
}

// Check reports whether requirements allow declaration d, and if not why: a reason starting
// with BlockedByRequirements, e.g. `blocked by requirements: "docs" is not listed` or
// `blocked by requirements: identity url "https://a/mcp" does not match the required "https://b/mcp"`.
// A nil *Requirements allows everything.
func (r *Requirements) Check(d *ServerDecl) (allowed bool, reason string) {
	if r == nil {
		return true, ""
	}
	want, ok := r.Servers[d.Name]
	if !ok {
		return false, fmt.Sprintf("%s: %q is not listed", BlockedByRequirements, d.Name)
	}
	haveKind, have := "command", d.Command
	if d.Transport() == TransportHTTP {
		haveKind, have = "url", d.URL
	}
	wantKind, wantVal := "command", want.Command
	if want.URL != "" {
		wantKind, wantVal = "url", want.URL
	}
	switch {
	case haveKind != wantKind:
		return false, fmt.Sprintf("%s: identity %s %q does not match the required %s %q", BlockedByRequirements, haveKind, have, wantKind, wantVal)
	case have != wantVal || have == "":
		return false, fmt.Sprintf("%s: identity %s %q does not match the required %q", BlockedByRequirements, haveKind, have, wantVal)
	}
	return true, ""
}
