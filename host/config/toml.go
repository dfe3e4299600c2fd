package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// Input bounds. warden's files are a few kilobytes and a few levels deep; the bounds keep
// loading fast on any input, since BurntSushi/toml's time grows faster than linearly with key
// depth (a 16000-deep dotted key takes seconds) and each key position costs a pass over the
// file.
const (
	maxFileSize = 256 << 10 // bytes
	maxNesting  = 10        // nested inline tables and arrays
	maxDotted   = 10        // dots in one dotted key or table header
)

// orderDepth is the deepest key path whose file order sortedKeys needs
// (mcp_servers.NAME.oauth.KEY).
const orderDepth = 4

// tomlDoc is one parsed TOML file: its metadata (which knows every key's position), its
// top-level keys as undecoded primitives, the order in which keys appear, and a line index.
type tomlDoc struct {
	file  string
	src   string
	md    toml.MetaData
	top   map[string]toml.Primitive
	order map[string]int // toml.Key.String() -> index in md.Keys()
	lines lineIndex
}

// parseTOML parses data. A syntax error is returned as an *Error with line and column.
func parseTOML(file string, data []byte) (*tomlDoc, *Error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("file is %d bytes; the limit is %d", len(data), maxFileSize)}
	}
	if !utf8.Valid(data) {
		// BurntSushi/toml reports invalid UTF-8 too, but without a useful position.
		line := 1 + strings.Count(string(data[:firstInvalidUTF8(data)]), "\n")
		return nil, &Error{File: file, Line: line, Msg: "syntax error: invalid UTF-8"}
	}
	d := &tomlDoc{file: file, src: string(data)}
	if line, msg := depthProblem(d.src); msg != "" {
		return nil, &Error{File: file, Line: line, Msg: msg}
	}
	md, err := toml.Decode(d.src, &d.top)
	if err != nil {
		e := &Error{File: file, Msg: "syntax error: " + err.Error(), Err: err}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e.Line, e.Column = pe.Position.Line, pe.Position.Col
			if start := pe.Position.Start; start >= 0 && start <= len(d.src) {
				// The library's Line can run one ahead of Start when the error is at a
				// newline; derive both from the byte offset.
				e.Line = 1 + strings.Count(d.src[:start], "\n")
				e.Column = start - strings.LastIndexByte(d.src[:start], '\n')
			}
			e.Msg = "syntax error: " + pe.Message
			if pe.Usage != "" {
				e.Msg += " (" + strings.TrimSpace(pe.Usage) + ")"
			}
		}
		return nil, e
	}
	d.md = md
	d.lines = indexLines(d.src)
	keys := md.Keys()
	d.order = make(map[string]int, len(keys))
	for i, k := range keys {
		// Register prefixes too: an implicit table ([a.b] without [a]) is not in Keys(). The
		// loaders order tables at most orderDepth deep; deeper prefixes would make deeply
		// nested input cubic.
		for n := 1; n <= min(len(k), orderDepth); n++ {
			s := k[:n].String()
			if _, seen := d.order[s]; !seen {
				d.order[s] = i
			}
		}
	}
	return d, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// lineProbe is decoded into to learn a key's line: BurntSushi/toml wraps an UnmarshalTOML
// error in a ParseError positioned at the key being decoded. This is the only way its public
// API exposes per-key positions.
type lineProbe struct{}

// UnmarshalTOML always fails, so that the library reports the position.
func (lineProbe) UnmarshalTOML(any) error { return lineProbeError{} }

type lineProbeError struct{}

func (lineProbeError) Error() string { return "line probe" }

// lineAt returns the line where the key at path (whose value is p) is defined: its
// `[table]` header or its `key =` line, or for an implicit table (only `[a.b.c]`, no `[a.b]`)
// the first line under it. It is 0 when unknown.
//
// The line index answers for every header and `key =` line in one pass over the source; keys
// inside inline tables, and anything the index did not follow, are asked of the library
// through probe, which costs a pass over the file each.
func (d *tomlDoc) lineAt(path []string, p toml.Primitive) int {
	k := toml.Key(path).String()
	if l, ok := d.lines.exact[k]; ok {
		return l
	}
	if l := d.probe(p); l > 0 {
		return l
	}
	return d.lines.prefix[k]
}

// probe returns the line BurntSushi/toml recorded for p's key, or 0 when it has none (an
// implicit table; an element of an array of tables, whose positions it does not keep apart,
// gets the last element's).
func (d *tomlDoc) probe(p toml.Primitive) int {
	err := d.md.PrimitiveDecode(p, lineProbe{})
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Position.Line
	}
	return 0
}

// value decodes p into its plain Go value: string, int64, float64, bool, time values, []any,
// map[string]any or []map[string]any.
func (d *tomlDoc) value(p toml.Primitive) any {
	var v any
	if err := d.md.PrimitiveDecode(p, &v); err != nil {
		return nil
	}
	return v
}

// table decodes p as a table of primitives; ok is false when p is not a table.
func (d *tomlDoc) table(p toml.Primitive) (map[string]toml.Primitive, bool) {
	if _, isMap := d.value(p).(map[string]any); !isMap {
		return nil, false
	}
	var m map[string]toml.Primitive
	if err := d.md.PrimitiveDecode(p, &m); err != nil {
		return nil, false
	}
	return m, true
}

// tableArray decodes p as an array of tables (`[[name]]`, or an inline array of inline
// tables); ok is false otherwise.
func (d *tomlDoc) tableArray(p toml.Primitive) ([]map[string]toml.Primitive, bool) {
	switch v := d.value(p).(type) {
	case []map[string]any:
	case []any:
		for _, e := range v {
			if _, isMap := e.(map[string]any); !isMap {
				return nil, false
			}
		}
	default:
		return nil, false
	}
	var m []map[string]toml.Primitive
	if err := d.md.PrimitiveDecode(p, &m); err != nil {
		return nil, false
	}
	return m, true
}

// sortedKeys returns m's keys in file order; path is m's own key path.
func (d *tomlDoc) sortedKeys(path []string, m map[string]toml.Primitive) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	idx := func(k string) int {
		full := make(toml.Key, 0, len(path)+1)
		full = append(append(full, path...), k)
		if i, ok := d.order[full.String()]; ok {
			return i
		}
		return math.MaxInt
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := idx(keys[i]), idx(keys[j])
		if a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// typeName names v's TOML type for error messages.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case time.Time:
		return "datetime"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

// quoteKey renders one key segment the way TOML would (bare when possible).
func quoteKey(k string) string { return toml.Key{k}.String() }

// lineIndex maps key paths (toml.Key.String()) to lines, from a scan of the source.
type lineIndex struct {
	// exact holds each `[table]` / `[[table]]` header and each `key =` line outside inline
	// tables and arrays, at its first occurrence.
	exact map[string]int
	// prefix holds every proper prefix of those paths, at the first line under it.
	prefix map[string]int
	// arrays holds the elements of each top-level array of tables (`[[name]]`), whose keys'
	// positions the library does not keep apart.
	arrays map[string][]aotElem
}

// aotElem is one `[[name]]` element: its header line and the line of each key in it (first
// segment; a sub-table header `[name.sub]` records "sub").
type aotElem struct {
	line int
	keys map[string]int
}

// indexLines scans valid TOML source (the library has parsed it) for the lines of table
// headers and `key =` lines. On anything it does not understand it stops and returns what it
// has; lookups it cannot answer fall back to the library.
func indexLines(src string) lineIndex {
	ix := lineIndex{exact: map[string]int{}, prefix: map[string]int{}, arrays: map[string][]aotElem{}}
	record := func(path []string, line int) {
		for n := 1; n <= len(path); n++ {
			m := ix.prefix
			if n == len(path) {
				m = ix.exact
			}
			k := toml.Key(path[:n]).String()
			if _, seen := m[k]; !seen {
				m[k] = line
			}
		}
	}
	s := scanner{src: src, line: 1}
	var table []string
	var elem *aotElem // the top-level [[array]] element being read, if any
	var elemName string
	for {
		s.skipBlank(true)
		if s.eof() {
			return ix
		}
		startLine := s.line
		if s.peek() == '[' {
			aot := strings.HasPrefix(s.src[s.i:], "[[")
			closer := "]"
			if aot {
				closer = "]]"
			}
			s.i += len(closer)
			path, ok := s.keyPath()
			if !ok {
				return ix
			}
			s.skipBlank(false)
			if !strings.HasPrefix(s.src[s.i:], closer) {
				return ix
			}
			s.i += len(closer)
			record(path, startLine)
			table = path
			switch {
			case aot && len(path) == 1:
				ix.arrays[path[0]] = append(ix.arrays[path[0]], aotElem{line: startLine, keys: map[string]int{}})
				elems := ix.arrays[path[0]]
				elem, elemName = &elems[len(elems)-1], path[0]
			case elem != nil && len(path) > 1 && path[0] == elemName:
				if _, seen := elem.keys[path[1]]; !seen {
					elem.keys[path[1]] = startLine
				}
			default:
				elem = nil
			}
			continue
		}
		path, ok := s.keyPath()
		if !ok {
			return ix
		}
		s.skipBlank(false)
		if s.eof() || s.peek() != '=' {
			return ix
		}
		s.i++
		record(append(append([]string(nil), table...), path...), startLine)
		if elem != nil && len(table) == 1 {
			if _, seen := elem.keys[path[0]]; !seen {
				elem.keys[path[0]] = startLine
			}
		}
		if !s.skipValue() {
			return ix
		}
	}
}

type scanner struct {
	src  string
	i    int
	line int
}

func (s *scanner) eof() bool  { return s.i >= len(s.src) }
func (s *scanner) peek() byte { return s.src[s.i] }

// skipBlank skips spaces, tabs and comments, and newlines too when newlines is set.
func (s *scanner) skipBlank(newlines bool) {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && newlines:
			s.i++
			s.line++
		case c == '#':
			for !s.eof() && s.peek() != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

// keyPath reads a dotted key (bare, "basic" or 'literal' segments).
func (s *scanner) keyPath() ([]string, bool) {
	var path []string
	for {
		s.skipBlank(false)
		if s.eof() {
			return nil, false
		}
		var seg string
		switch c := s.peek(); {
		case c == '"':
			start := s.i
			s.i++
			for !s.eof() && s.peek() != '"' && s.peek() != '\n' {
				if s.peek() == '\\' {
					s.i++
				}
				s.i++
			}
			if s.eof() || s.peek() != '"' {
				return nil, false
			}
			s.i++
			u, err := strconv.Unquote(s.src[start:s.i])
			if err != nil {
				u = s.src[start+1 : s.i-1]
			}
			seg = u
		case c == '\'':
			end := strings.IndexAny(s.src[s.i+1:], "'\n")
			if end < 0 || s.src[s.i+1+end] != '\'' {
				return nil, false
			}
			seg = s.src[s.i+1 : s.i+1+end]
			s.i += end + 2
		default:
			start := s.i
			for !s.eof() && isBareKeyByte(s.peek()) {
				s.i++
			}
			if s.i == start {
				return nil, false
			}
			seg = s.src[start:s.i]
		}
		path = append(path, seg)
		s.skipBlank(false)
		if s.eof() || s.peek() != '.' {
			return path, true
		}
		s.i++
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// skipValue skips one value (up to the end of its line at nesting depth 0), counting lines.
func (s *scanner) skipValue() bool {
	depth := 0
	for !s.eof() {
		c := s.peek()
		switch {
		case c == '\n':
			if depth == 0 {
				return true
			}
			s.i++
			s.line++
		case c == '#':
			if depth == 0 {
				return true
			}
			s.skipBlank(false)
		case c == '[' || c == '{':
			depth++
			s.i++
		case c == ']' || c == '}':
			depth--
			s.i++
			if depth < 0 {
				return false
			}
		case strings.HasPrefix(s.src[s.i:], `"""`) || strings.HasPrefix(s.src[s.i:], `'''`):
			delim := s.src[s.i : s.i+3]
			s.i += 3
			for {
				if s.eof() {
					return false
				}
				if strings.HasPrefix(s.src[s.i:], delim) {
					s.i += 3
					break
				}
				switch s.peek() {
				case '\\':
					if delim == `"""` {
						s.i++
						if !s.eof() && s.peek() == '\n' {
							s.line++
						}
					}
				case '\n':
					s.line++
				}
				s.i++
			}
		case c == '"' || c == '\'':
			s.i++
			for !s.eof() && s.peek() != c && s.peek() != '\n' {
				if c == '"' && s.peek() == '\\' {
					s.i++
				}
				s.i++
			}
			if s.eof() || s.peek() != c {
				return false
			}
			s.i++
		default:
			s.i++
		}
	}
	return depth == 0
}

// depthProblem bounds nesting before the library parses: inline tables and arrays nested
// more than maxNesting deep, or a key or table header with more than maxDotted dots. It
// follows strings and comments; it does not validate, so on invalid TOML it may find nothing
// (the parser then reports the syntax error).
func depthProblem(src string) (line int, msg string) {
	line = 1
	depth, dots := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
			dots = 0
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			delim := src[i : i+1]
			if strings.HasPrefix(src[i:], strings.Repeat(delim, 3)) {
				delim = strings.Repeat(delim, 3)
			}
			j := i + len(delim)
			for j < len(src) && !strings.HasPrefix(src[j:], delim) {
				switch {
				case src[j] == '\\' && c == '"':
					j++
				case src[j] == '\n' && len(delim) == 1:
					// An unterminated one-line string: let the parser say so.
					return 0, ""
				}
				if j < len(src) && src[j] == '\n' {
					line++
				}
				j++
			}
			i = j + len(delim) - 1
		case '[', '{':
			depth++
			dots = 0
			if depth > maxNesting {
				return line, fmt.Sprintf("tables and arrays are nested more than %d deep", maxNesting)
			}
		case ']', '}':
			depth = max(depth-1, 0)
			dots = 0
		case '=', ',':
			dots = 0
		case '.':
			dots++
			if dots > maxDotted {
				return line, fmt.Sprintf("a key has more than %d dotted parts", maxDotted+1)
			}
		}
	}
	return 0, ""
}
