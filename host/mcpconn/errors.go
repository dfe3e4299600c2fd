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
	// ErrNotGranted: a credential reference names a variable that BuildOptions.Grant
	// refused (a plugin naming a host variable the operator did not grant it); nothing was
	// read.
	ErrNotGranted = errors.New("credential not granted")
	// ErrInvalidDecl: the declaration cannot be turned into a Spec (no command or url, a
	// relative cwd without a base directory, a reserved header name, ...).
	ErrInvalidDecl = errors.New("invalid server declaration")
	// ErrStartupTimeout: connect, handshake and reading the catalogs did not finish within
	// the spec's StartupTimeout.
	ErrStartupTimeout = errors.New("startup timeout")
	// ErrToolTimeout: a request to the server (tools/call, resources/read, prompts/get,
	// completion/complete, ...) did not finish within the spec's ToolTimeout.
	ErrToolTimeout = errors.New("tool call timeout")
	// ErrNotSupported: the request needs a capability the server did not advertise
	// (resources, resources.subscribe, prompts, completions, logging), or one the
	// connection's own client did not declare (roots); nothing was sent.
	ErrNotSupported = errors.New("not supported by the server")
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
	return RedactURLs(redact(b.String(), e.redact))
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

// Summary is Error without the stderr tails: for a peer that should learn what failed but
// not read the server's own output (an MCP client of the front door).
func (e *Error) Summary() string { return withoutStderr(e).Error() }

func withoutStderr(e *Error) *Error {
	c := *e
	c.Stderr = ""
	if inner, ok := c.Err.(*Error); ok {
		c.Err = withoutStderr(inner)
	}
	return &c
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

// RedactURL returns raw with the parts that commonly carry secrets replaced: userinfo
// ("user:password@") and the query and fragment, so "https://u:p@h/mcp?key=v" becomes
// "https://REDACTED@h/mcp?REDACTED". Scheme, host and path stay: they say which server is
// meant. It works on text, without parsing, so a malformed URL is redacted too.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		scheme, rest = "", raw
	}
	authEnd := strings.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	auth, tail := rest[:authEnd], rest[authEnd:]
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = "REDACTED@" + auth[at+1:]
	}
	path, after := tail, ""
	if i := strings.IndexAny(tail, "?#"); i >= 0 {
		path, after = tail[:i], tail[i:]
	}
	var b strings.Builder
	if ok {
		b.WriteString(scheme)
		b.WriteString("://")
	}
	b.WriteString(auth)
	b.WriteString(path)
	if q, _, _ := strings.Cut(after, "#"); len(q) > 1 {
		b.WriteString("?REDACTED")
	}
	if _, f, hasFrag := strings.Cut(after, "#"); hasFrag && f != "" {
		b.WriteString("#REDACTED")
	}
	return b.String()
}

// RedactURLs applies RedactURL to every URL ("scheme://…" up to a space, quote or
// bracket) in s: error text from the SDK and net/http quotes the request URL in full.
func RedactURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isURLEnd(s[end]) {
			end++
		}
		// Trailing punctuation belongs to the sentence, not the URL.
		for end > i+3 && strings.IndexByte(":,;.)", s[end-1]) >= 0 {
			end--
		}
		b.WriteString(s[:start])
		b.WriteString(RedactURL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLEnd(c byte) bool {
	return c <= ' ' || strings.IndexByte("\"'<>`", c) >= 0
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
