package roots

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every problem of a root is an *Error whose Err wraps the underlying
// cause; use errors.Is with these to classify it.
var (
	// ErrNotRoot: the directory holds neither manifest nor .mcp.json.
	ErrNotRoot = errors.New("not a capability root: no .codex-plugin/plugin.json, .claude-plugin/plugin.json or .mcp.json")
	// ErrEscapesRoot: a cwd, command, policy or mcpServers path leaves the root, lexically
	// (".." after cleaning, or an absolute path elsewhere) or through a symbolic link.
	ErrEscapesRoot = errors.New("escapes the plugin root")
	// ErrUnknownKey: a server entry (or one of its nested objects) has a key this package does
	// not know; the server is rejected rather than silently half-understood.
	ErrUnknownKey = errors.New("unknown key")
	// ErrDuplicateID: two roots in a Set have the same id; both are unusable.
	ErrDuplicateID = errors.New("duplicate plugin id")
	// ErrLegacySSE: a server declares `"type": "sse"`.
	ErrLegacySSE = errors.New("legacy SSE transport is not supported; use streamable HTTP")
	// ErrLiteralBearerToken: a server inlines `bearer_token`; credentials are referenced by
	// variable name only.
	ErrLiteralBearerToken = errors.New("a literal `bearer_token` is not allowed; use `bearer_token_env_var`")
	// ErrPolicy: the root's policy module is missing, not a regular file or too large.
	ErrPolicy = errors.New("invalid policy module")
)

// Error is one problem with a capability root, a file inside it, or one server of it.
// Its text has the form
//
//	plugin "ID": FILE[:LINE[:COL]]: server "NAME": CAUSE
//
// where the file, position and server parts appear only when known.
type Error struct {
	// PluginID is the root's id ("name@version", or the fallback; see Root.ID).
	PluginID string
	// Dir is the root's directory.
	Dir string
	// File is the file the problem is in, relative to Dir (slash separated), or "" for a
	// problem with the root itself.
	File string
	// Line and Column are 1-based; 0 when unknown.
	Line, Column int
	// Server is the server name, or "" for a file- or root-level problem.
	Server string
	// Err is the cause; it may wrap one of the package's sentinel errors.
	Err error
}

// Error renders the problem (see the type's documentation for the format).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("plugin ")
	b.WriteString(strconv.Quote(e.PluginID))
	b.WriteString(": ")
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	if e.Server != "" {
		b.WriteString("server ")
		b.WriteString(strconv.Quote(e.Server))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("unknown error")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// lineCol converts a byte offset in data into a 1-based line and column (the column counts
// runes). An encoding/json error offset is "after reading Offset bytes", so the offending
// byte is the one before it.
func lineCol(data []byte, offset int64) (line, col int) {
	off := int(offset)
	if off > 0 {
		off-- // point at the offending byte, not past it
	}
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line = 1
	start := 0
	for i := 0; i < off; i++ {
		if data[i] == '\n' {
			line++
			start = i + 1
		}
	}
	return line, utf8.RuneCount(data[start:off]) + 1
}

// lineCounter maps increasing byte offsets of data to 1-based lines in linear total time.
type lineCounter struct {
	data []byte
	pos  int
	line int
}

// at returns the line of the byte at offset; offsets must not decrease between calls.
func (c *lineCounter) at(offset int64) int {
	if c.line == 0 {
		c.line = 1
	}
	for ; c.pos < int(offset) && c.pos < len(c.data); c.pos++ {
		if c.data[c.pos] == '\n' {
			c.line++
		}
	}
	return c.line
}
