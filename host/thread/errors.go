package thread

import (
	"errors"
	"fmt"
)

// Sentinel errors; classify with errors.Is.
var (
	// ErrClosed: the Manager or the Thread is closed.
	ErrClosed = errors.New("closed")
	// ErrOAuthUnavailable: the Manager has no OAuth (Options.OAuth is nil).
	ErrOAuthUnavailable = errors.New("OAuth login is not available")
	// ErrNotOAuth: the server cannot log in with OAuth (stdio, or it sends its own
	// Authorization header).
	ErrNotOAuth = errors.New("does not use OAuth")
	// ErrNoSuchServer: the thread (or a default thread) lists no server of that name.
	ErrNoSuchServer = errors.New("no such MCP server")
	// ErrNotFound: no thread has the given id.
	ErrNotFound = errors.New("thread not found")
	// ErrInvalidParams: StartParams (or a tool call's arguments) are malformed.
	ErrInvalidParams = errors.New("invalid parameters")
	// ErrNeedsExecutor: something needs an executor connection, which this host does not have
	// yet (executors arrive with the executor client): a root located in an environment, a
	// server routed to an executor.
	ErrNeedsExecutor = errors.New("needs an executor (not yet supported)")
	// ErrRootNotFound: a selected capability root is not in the watched plugins dirs.
	ErrRootNotFound = errors.New("capability root not found")
	// ErrToolNotAvailable: the tool, prompt or resource cannot be used in this thread (see
	// UnavailableError).
	ErrToolNotAvailable = errors.New("not available")
	// ErrToolCallDenied: a policy or the user denied the call, get or read (see DeniedError).
	ErrToolCallDenied = errors.New("denied")
	// ErrThreadLimit: thread/start would open more threads than [limits] max_threads allows.
	ErrThreadLimit = errors.New("too many threads")
)

// RootError is a selected capability root that cannot be used: not found, broken, or in an
// environment the host cannot reach. Its text names the selection, e.g.
//
//	capability root "demo@1" (/srv/plugins/demo): plugin "demo@1": .mcp.json:3:1: ...
type RootError struct {
	// Selection is the root as the thread selected it.
	Selection SelectedRoot
	// Err is the cause.
	Err error
}

func (e *RootError) Error() string {
	s := e.Selection
	switch {
	case s.ID != "" && s.Location.Path != "":
		return fmt.Sprintf("capability root %q (%s): %v", s.ID, s.Location.Path, e.Err)
	case s.ID != "":
		return fmt.Sprintf("capability root %q: %v", s.ID, e.Err)
	}
	return fmt.Sprintf("capability root %s: %v", s.Location.Path, e.Err)
}

// Unwrap returns the cause.
func (e *RootError) Unwrap() error { return e.Err }

// RequiredServerError is a `required = true` server that did not start, which fails
// thread/start.
type RequiredServerError struct {
	ThreadID string
	Server   string
	Err      error
}

func (e *RequiredServerError) Error() string {
	return fmt.Sprintf("thread %s: required MCP server %q failed to start: %v", e.ThreadID, e.Server, e.Err)
}

// Unwrap returns the cause.
func (e *RequiredServerError) Unwrap() error { return e.Err }

// Kinds of items a thread serves, for UnavailableError and DeniedError.
const (
	KindTool     = "tool"
	KindPrompt   = "prompt"
	KindResource = "resource"
)

// UnavailableError is a request for a tool, prompt or resource the thread cannot use:
// unknown or hidden server (no reason is given, so a hidden server is indistinguishable
// from an unknown one), disabled or failed server, an item removed by the server's lists,
// or one the server does not have. Its text is Codex's: "MCP tool `server/tool` is not
// available", followed by the reason when there is one.
type UnavailableError struct {
	// Kind is KindTool, KindPrompt or KindResource.
	Kind string
	// Server is the server's name; Name the tool, the prompt, or the resource's URI.
	Server, Name string
	// Reason is why, or "" (unknown or hidden server).
	Reason string
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("MCP %s `%s/%s` is not available", e.Kind, e.Server, e.Name)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is matches ErrToolNotAvailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrToolNotAvailable }

// DeniedError is a tool call, prompt or resource read a policy (or the server's lists)
// refused, or a tool call the user did not approve.
type DeniedError struct {
	// Kind is KindTool, KindPrompt or KindResource.
	Kind string
	// Server is the server's name; Name the tool, the prompt, or the resource's URI.
	Server, Name string
	// Reason is the policy's reason, returned to the caller.
	Reason string
	// DecidedBy names who decided: "baseline", "operator:<id>", "plugin:<id>", or "user"
	// (an approval the user declined) and "config" (approval needed, nobody to ask).
	DecidedBy string
}

func (e *DeniedError) Error() string {
	verb := "call"
	switch e.Kind {
	case KindPrompt:
		verb = "get"
	case KindResource:
		verb = "read"
	}
	return fmt.Sprintf("MCP %s `%s/%s` %s denied: %s", e.Kind, e.Server, e.Name, verb, e.Reason)
}

// Is matches ErrToolCallDenied.
func (e *DeniedError) Is(target error) bool { return target == ErrToolCallDenied }

// ReloadError is a thread whose configuration failed to load during Manager.Reload (or a
// roots change).
type ReloadError struct {
	ThreadID string
	Err      error
}

func (e *ReloadError) Error() string {
	return fmt.Sprintf("thread %s: %v", e.ThreadID, e.Err)
}

// Unwrap returns the cause.
func (e *ReloadError) Unwrap() error { return e.Err }
