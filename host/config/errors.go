package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem found in one file. Loaders never stop at the first problem: they
// return every Error they found, as Errors.
//
// Error() renders "FILE:LINE: TABLE: MSG", e.g.
//
//	/home/op/.warden/config.toml:12: mcp_servers.docs: key `cwd` is only valid for stdio servers, but this server has `url`
//
// where the line (and, for TOML syntax errors, ":COLUMN") is left out when unknown and the
// table is left out for file-level problems.
type Error struct {
	// File is the path of the file, as the caller gave it to the loader.
	File string
	// Line is 1-based; 0 when unknown.
	Line int
	// Column is 1-based and set only for TOML syntax errors; 0 otherwise.
	Column int
	// Table names where in the file the problem is, as a human reads it: "mcp_servers.docs",
	// "plugins", "policies[2]", "environments[1] (id \"exec-1\")". Empty for file-level problems.
	Table string
	// Server is the server name for a problem inside `[mcp_servers.NAME]`; empty otherwise.
	Server string
	// Environment is the environment id for a problem inside an `[[environments]]` entry;
	// empty otherwise.
	Environment string
	// Key is the offending key within Table (e.g. "url", "env_vars[1].source"); empty when the
	// problem is about the table as a whole.
	Key string
	// Msg is the problem, without position.
	Msg string
	// Err is the underlying cause, if any (an *os.PathError, a toml.ParseError); Unwrap returns it.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": ")
	if e.Table != "" {
		b.WriteString(e.Table)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem a loader found, in file order (and in file order within each file).
// It implements error; errors.As(err, &target) with target of type *Error finds the first one,
// and errors.Is sees through to each Error's cause (e.g. fs.ErrNotExist).
type Errors []*Error

// Error joins the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns each problem, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// asError returns es as an error, or a nil error when es is empty (never a typed nil).
func (es Errors) asError() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// sorted returns es in file order: by line (file-level problems first), keeping the order in
// which problems of one line were found.
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}

// maxProblems bounds the problems reported per file; the rest are counted in one last line.
const maxProblems = 100

// collector accumulates the Errors of one file.
type collector struct {
	file    string
	errs    Errors
	dropped int // problems past maxProblems
}

// full reports whether further problems are only counted.
func (c *collector) full() bool { return len(c.errs) >= maxProblems }

// add records a problem. table may be empty; msg is a fmt format.
func (c *collector) add(e Error, format string, args ...any) {
	if c.full() {
		c.dropped++
		return
	}
	e.File = c.file
	e.Msg = fmt.Sprintf(format, args...)
	c.errs = append(c.errs, &e)
}

// result returns the problems in file order, plus a count of those left out, as an error
// (nil when there are none).
func (c *collector) result() error {
	es := c.errs.sorted()
	if c.dropped > 0 {
		es = append(es, &Error{File: c.file, Msg: fmt.Sprintf("... and %d more problems", c.dropped)})
	}
	return es.asError()
}
