package roots

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"

	"github.com/warden-mcp/warden/host/config"
)

// manifest is what warden reads from plugin.json.
//
// The manifest format is shared with Claude Code and Codex and both keep adding keys
// (author, homepage, skills, commands, hooks, apps, interface, ...). warden reads only the
// keys it acts on (name, version, description, policy, mcpServers) and ignores every other
// key, so a manifest written for either tool loads unchanged. Server entries, by contrast,
// are strict (see parseServer): an unknown key there could be a transport or credential
// setting warden would otherwise silently drop.
type manifest struct {
	name, version, description string
	id                         string
	// policy is the declared policy path, "" when absent.
	policy string
	// mcpServers is a path (relative to the root) to a .mcp.json-format file, "" when the
	// manifest has none or declares its servers inline (inline is then true).
	mcpServers string
	inline     bool
}

// parsePluginJSON parses a plugin.json read from file for the root at the resolved dir.
// Inline `mcpServers` are parsed too and returned as servers and per-server errors. A
// root-level problem (malformed JSON, a known key of the wrong type) is returned as err,
// with m set when the name and version could be read.
// sc.pluginID is the fallback id (the directory name) used until the manifest's own is known.
func parsePluginJSON(data []byte, dir, file string, sc serverCtx) (m *manifest, servers []config.ServerDecl, serverErrs []error, err error) {
	rel := relTo(dir, file)
	fail := func(id string, line, col int, err error) error {
		return &Error{PluginID: id, Dir: dir, File: rel, Line: line, Column: col, Err: err}
	}
	top, line, col, err := decodeObject(data)
	if err != nil {
		return nil, nil, nil, fail(sc.pluginID, line, col, err)
	}
	lines := keyLines(data)

	m = &manifest{name: sc.pluginID}
	str := func(key string, dst *string) error {
		raw, ok := top[key]
		if !ok || isNull(raw) {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fail(sc.pluginID, lines[key], 0, fmt.Errorf("`%s` must be a string", key))
		}
		return nil
	}
	var name, version string
	if err := errors.Join(str("name", &name), str("version", &version)); err != nil {
		return nil, nil, nil, err
	}
	if name != "" {
		if err := checkIDPart(name); err != nil {
			return nil, nil, nil, fail(sc.pluginID, lines["name"], 0, fmt.Errorf("`name` %q %w", name, err))
		}
		m.name = name
	}
	if version != "" {
		if err := checkIDPart(version); err != nil {
			return nil, nil, nil, fail(sc.pluginID, lines["version"], 0, fmt.Errorf("`version` %q %w", version, err))
		}
	}
	m.version = version
	m.id = m.name
	if m.version != "" {
		m.id = m.name + "@" + m.version
	}
	sc.pluginID = m.id

	if err := errors.Join(str("description", &m.description), str("policy", &m.policy)); err != nil {
		return m, nil, nil, err
	}
	if raw, ok := top["mcpServers"]; ok && !isNull(raw) {
		switch trimmed := bytes.TrimSpace(raw); {
		case len(trimmed) > 0 && trimmed[0] == '"':
			if err := json.Unmarshal(raw, &m.mcpServers); err != nil || m.mcpServers == "" {
				return m, nil, nil, fail(m.id, lines["mcpServers"], 0, errors.New("`mcpServers` path is empty"))
			}
		case len(trimmed) > 0 && trimmed[0] == '{':
			var inline map[string]json.RawMessage
			if err := json.Unmarshal(raw, &inline); err != nil {
				return m, nil, nil, fail(m.id, lines["mcpServers"], 0, fmt.Errorf("`mcpServers`: %w", err))
			}
			m.inline = true
			servers, serverErrs = parseServerMap(inline, keyLines(data, "mcpServers"), file, sc)
		default:
			return m, nil, nil, fail(m.id, lines["mcpServers"], 0, errors.New("`mcpServers` must be an object of servers or a path to a .mcp.json-format file"))
		}
	}
	return m, servers, serverErrs, nil
}

// checkIDPart validates a manifest name or version: it becomes part of "name@version", a
// path-like identifier shown everywhere, so it may not contain '@', path separators,
// spaces or control characters.
func checkIDPart(s string) error {
	for _, c := range s {
		if c == '@' || c == '/' || c == '\\' || unicode.IsSpace(c) || unicode.IsControl(c) || c == unicode.ReplacementChar {
			return errors.New("may not contain '@', '/', '\\', spaces or control characters")
		}
	}
	return nil
}

// decodeObject unmarshals a top-level JSON object. On failure it returns the line and
// column of the problem (computed from the json error's byte offset).
func decodeObject(data []byte) (top map[string]json.RawMessage, line, col int, err error) {
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col = lineCol(data, se.Offset)
			return nil, line, col, err
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			line, col = lineCol(data, te.Offset)
			return nil, line, col, fmt.Errorf("the file must hold a JSON object, not %s", te.Value)
		}
		return nil, 0, 0, err
	}
	if top == nil {
		return nil, 0, 0, errors.New("the file must hold a JSON object, not null")
	}
	return top, 0, 0, nil
}

// isNull reports whether a raw JSON value is null (treated as absent).
func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// keyLines walks valid JSON data to the object at path (a chain of object keys; none for
// the top level) and returns the 1-based line of each of its keys. It is best effort: on
// anything unexpected it returns what it has.
func keyLines(data []byte, path ...string) map[string]int {
	lines := map[string]int{}
	lc := lineCounter{data: data}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return lines
	}
	for level := 0; ; level++ {
		found := false
		for dec.More() {
			tok, err := dec.Token()
			key, ok := tok.(string)
			if err != nil || !ok {
				return lines
			}
			if level == len(path) {
				lines[key] = lc.at(dec.InputOffset())
			} else if key == path[level] {
				if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
					return lines
				}
				found = true
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return lines
			}
		}
		if !found {
			return lines
		}
	}
}
