package protocol

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Error codes. These numbers are part of the wire contract: they never change meaning,
// and a code once published is never reused. The JSON-RPC 2.0 codes are answered by the
// api package itself; the warden codes (-32001 …) come from the backend.
//
//	code    name                    meaning                                              data
//	------  ----------------------  ---------------------------------------------------  -----------------------
//	-32700  CodeParseError          the message is not valid JSON (the id is null)       —
//	-32600  CodeInvalidRequest      not a valid JSON-RPC request object, an empty batch, —
//	                                a message over the size limit, or initialize sent
//	                                twice
//	-32601  CodeMethodNotFound      no such method                                       —
//	-32602  CodeInvalidParams       params do not decode: unknown, duplicate, missing or —
//	                                mistyped field (the message names the field, never
//	                                a value)
//	-32603  CodeInternalError       any other failure; the message is the error text     —
//	-32001  CodeThreadNotFound      no thread with that id                               {threadId}
//	-32002  CodeServerNotAvailable  the thread has no such server or tool: it is hidden, {threadId, server}
//	                                disabled, failed, not reachable now, or the tool is
//	                                filtered out by the server's tool allow/deny lists
//	                                (Codex: "MCP tool `server/tool` is not available")
//	-32003  CodeToolDenied          a tool_call policy denied the call; the message     {threadId, server, tool}
//	                                holds the policy's reason
//	-32004  CodeToolCallFailed      the MCP server failed the call at the protocol level {threadId, server, tool}
//	                                (timeout, connection lost, JSON-RPC error); a tool
//	                                that ran and failed returns a result with isError
//	-32005  CodeReloadFailed        a strict reload failed; the message names the thread {threadId}
//	-32006  CodeNotInitialized      a request other than initialize before initialize    —
//	-32007  CodeNotSupported        the host does not implement this (e.g. OAuth login)  —
//	-32008  CodeOAuthLoginFailed    an OAuth login could not start (no route, a busy     —
//	                                callback port, discovery or registration failed)
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeThreadNotFound     = -32001
	CodeServerNotAvailable = -32002
	CodeToolDenied         = -32003
	CodeToolCallFailed     = -32004
	CodeReloadFailed       = -32005
	CodeNotInitialized     = -32006
	CodeNotSupported       = -32007
	CodeOAuthLoginFailed   = -32008
)

// Error is a JSON-RPC error object. A backend returns one (possibly wrapped) to choose
// the code the client sees; the api package passes it through unchanged. Its Message
// and Data go to the client, so they must never contain a credential or a param value;
// the constructors below only format names (thread ids, server and tool names) and the
// reason or cause they are given.
//
// An Error made by Errorf or a constructor that takes a cause wraps that cause for
// errors.Is and errors.As on the Go side; the cause is never sent except as part of
// Message.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	cause error
}

// Error returns the message and the code.
func (e *Error) Error() string {
	return e.Message + " (code " + strconv.FormatInt(e.Code, 10) + ")"
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code and, if target has a
// message, the same message: errors.Is(err, &protocol.Error{Code: protocol.CodeToolDenied}).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t == nil {
		return false
	}
	return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// NewError returns an Error with the code and message and no data.
func NewError(code int64, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an Error whose message is fmt.Sprintf(format, args...). With %w the
// Error wraps the argument for errors.Is and errors.As.
func Errorf(code int64, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: err.Error()}
	switch err.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.cause = err
	}
	return e
}

// WithData returns a copy of e whose Data is the JSON encoding of v. If v does not
// encode, the copy has no data.
func (e *Error) WithData(v any) *Error {
	c := *e
	c.Data = nil
	if b, err := json.Marshal(v); err == nil {
		c.Data = b
	}
	return &c
}

// ParseError is CodeParseError for a message that is not JSON. The cause is not sent:
// the JSON decoder's error can quote input.
func ParseError() *Error {
	return NewError(CodeParseError, "parse error: invalid JSON")
}

// InvalidRequest is CodeInvalidRequest with "invalid request: " + reason.
func InvalidRequest(reason string) *Error {
	return NewError(CodeInvalidRequest, "invalid request: "+reason)
}

// MethodNotFound is CodeMethodNotFound naming the method (shortened if long).
func MethodNotFound(method string) *Error {
	return NewError(CodeMethodNotFound, "method not found: "+quote(method))
}

// InvalidParams is CodeInvalidParams with "invalid params: " + reason. The reason must
// name fields, never quote values.
func InvalidParams(reason string) *Error {
	return NewError(CodeInvalidParams, "invalid params: "+reason)
}

// Internal is CodeInternalError carrying err's text, wrapping err.
func Internal(err error) *Error {
	return &Error{Code: CodeInternalError, Message: err.Error(), cause: err}
}

// ThreadNotFound is CodeThreadNotFound for the thread id, with data {threadId}.
func ThreadNotFound(threadID string) *Error {
	return NewError(CodeThreadNotFound, "thread "+quote(threadID)+" not found").
		WithData(map[string]string{"threadId": threadID})
}

// ServerNotAvailable is CodeServerNotAvailable for a thread's server, with the reason
// (e.g. "not found", "disabled by policy", "executor disconnected") and data
// {threadId, server}.
func ServerNotAvailable(threadID, server, reason string) *Error {
	return NewError(CodeServerNotAvailable, "MCP server "+quote(server)+" not available in thread "+quote(threadID)+": "+reason).
		WithData(map[string]string{"threadId": threadID, "server": server})
}

// ToolDenied is CodeToolDenied for a denied tool call, with the policy's reason and
// data {threadId, server, tool}.
func ToolDenied(threadID, server, tool, reason string) *Error {
	return NewError(CodeToolDenied, "tool "+quote(tool)+" of MCP server "+quote(server)+" denied by policy: "+reason).
		WithData(map[string]string{"threadId": threadID, "server": server, "tool": tool})
}

// ToolCallFailed is CodeToolCallFailed for a call the server failed at the protocol
// level, wrapping cause, with data {threadId, server, tool}. cause's text is sent, so it
// must be free of credentials (mcpconn's errors are scrubbed).
func ToolCallFailed(threadID, server, tool string, cause error) *Error {
	e := NewError(CodeToolCallFailed, "tool "+quote(tool)+" of MCP server "+quote(server)+" failed: "+cause.Error()).
		WithData(map[string]string{"threadId": threadID, "server": server, "tool": tool})
	e.cause = cause
	return e
}

// ReloadFailed is CodeReloadFailed naming the thread whose configuration failed,
// wrapping cause, with data {threadId}.
func ReloadFailed(threadID string, cause error) *Error {
	e := NewError(CodeReloadFailed, "reload failed for thread "+quote(threadID)+": "+cause.Error()).
		WithData(map[string]string{"threadId": threadID})
	e.cause = cause
	return e
}

// NotInitialized is CodeNotInitialized.
func NotInitialized() *Error {
	return NewError(CodeNotInitialized, "not initialized: send initialize first")
}

// NotSupported is CodeNotSupported naming what is not supported.
func NotSupported(what string) *Error {
	return NewError(CodeNotSupported, what+" is not supported by this host")
}

// quote quotes s for a message, shortened to 128 bytes: names only, never values.
func quote(s string) string {
	const max = 128
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
