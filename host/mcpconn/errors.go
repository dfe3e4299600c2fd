package mcpconn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every failure this package reports about a server is an *Error whose Err
// wraps the cause; classify it with errors.Is against these.
var (
	// ErrMissingCredential: a credential reference (env_vars, bearer_token_env_var,
	// env_http_headers) names a variable that is not set in the environment that resolves it.
	ErrMissingCredential = errors.New("missing credential")
	// ErrInvalidDecl: the declaration cannot be turned into a Spec (no command or url, a
	// relative cwd without a base directory, a reserved header name, ...).
	ErrInvalidDecl = errors.New("invalid server declaration")
	// ErrStartupTimeout: connect, handshake and the first tools/list did not finish within
	// the spec's StartupTimeout.
	ErrStartupTimeout = errors.New("startup timeout")
	// ErrToolTimeout: a tools/call did not finish within the spec's ToolTimeout.
	ErrToolTimeout = errors.New("tool call timeout")
	// ErrServerExited: the server process exited or its connection broke while in use.
	ErrServerExited = errors.New("server connection lost")
	// ErrBackoff: the server failed recently and its restart is being held back; the Error
	// also wraps the failure that caused it.
	ErrBackoff = errors.New("restart delayed after failure")
	// ErrUnroutable: the Spec's Environment is not local and the Manager has no way to
	// reach it (a stdio server in an executor, or an HTTP server routed through one without
	// a routing Options.RoundTripper).
	ErrUnroutable = errors.New("environment not reachable")
	// ErrClosed: the Manager was closed, or the Conn handle was released.
	ErrClosed = errors.New("connection closed")
)

// Error is a failure concerning one MCP server. It is not modified after it is returned, so
// it may be shared between goroutines. Its text has the form
//
//	MCP server "NAME" MESSAGE[: CAUSE][; stderr: TAIL]
//
// It never contains a resolved credential or environment value: the text is scrubbed of
// every value the Spec resolved from a credential reference (including inside Cause and
// Stderr, which come from the server or the SDK), and the package never formats a header or
// environment value into a message itself. errors.Is reports the package sentinel that
// classifies it (ErrStartupTimeout, ErrServerExited, ...) as well as anything Err wraps.
type Error struct {
	// Server is the server's name.
	Server string
	// Msg says what went wrong ("did not start within 10s", "failed to start", ...).
	Msg string
	// Err is the cause; it may be nil.
	Err error
	// Stderr is the tail of the server's stderr (stdio servers), one line, truncated at the
	// front; "" if none.
	Stderr string

	// kind is the sentinel classifying the failure (matched by Is, not rendered).
	kind error
	// redact lists the values to scrub from the text; it comes from the Spec.
	redact []string
}

// Error renders the failure (see the type's documentation for the format).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("MCP server ")
	b.WriteString(strconv.Quote(e.Server))
	e.body(&b)
	return redact(b.String(), e.redact)
}

// body renders everything after the server name: " MSG", ": CAUSE", "; stderr: TAIL". A
// cause that is itself an *Error about the same server is rendered without repeating the
// server's name.
func (e *Error) body(b *strings.Builder) {
	if e.Msg != "" {
		b.WriteByte(' ')
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		if inner, ok := e.Err.(*Error); ok && inner.Server == e.Server {
			if inner.Msg != "" {
				b.WriteByte(':')
			}
			inner.body(b)
		} else {
			b.WriteString(": ")
			b.WriteString(e.Err.Error())
		}
	}
	if e.Stderr != "" {
		b.WriteString("; stderr: ")
		b.WriteString(e.Stderr)
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel that classifies e.
func (e *Error) Is(target error) bool { return e.kind != nil && target == e.kind }

// newError builds an *Error about the server of spec s.
func newError(s *Spec, kind error, msg string, err error) *Error {
	return &Error{Server: s.Name, Msg: msg, Err: err, kind: kind, redact: s.secrets}
}

// redacted is what a scrubbed value is replaced with.
const redacted = "[REDACTED]"

// redact replaces every occurrence of each secret in s. Secrets come longest first, so that
// a value containing another is scrubbed whole.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}

// missingVar is the error for an unresolvable credential reference. It names the server,
// the declaration key, the variable and the environment; never a value.
func missingVar(server, key, name, env string) error {
	return &Error{Server: server, kind: ErrMissingCredential,
		Msg: fmt.Sprintf("%s references variable %q, which is not set in environment %q", key, name, env)}
}

// invalidDecl is the error for a declaration BuildSpec cannot use.
func invalidDecl(server, format string, args ...any) error {
	return &Error{Server: server, kind: ErrInvalidDecl, Msg: fmt.Sprintf(format, args...)}
}
