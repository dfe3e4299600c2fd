package thread

import (
	"errors"
	"fmt"
)

// Sentinel errors; classify with errors.Is.
var (
	// ErrClosed: the Manager or the Thread is closed.
	ErrClosed = errors.New("closed")
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
	// ErrToolNotAvailable: the tool cannot be called in this thread (see ToolUnavailableError).
	ErrToolNotAvailable = errors.New("tool not available")
	// ErrToolCallDenied: a policy denied the call (see ToolCallDeniedError).
	ErrToolCallDenied = errors.New("tool call denied")
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

// ToolUnavailableError is a tool call on a server or tool the thread cannot use: unknown or
// hidden server (no reason is given, so a hidden server is indistinguishable from an
// unknown one), disabled or failed server, a tool removed by the tool filter, or a tool the
// server does not have. Its text is Codex's: "MCP tool `server/tool` is not available",
// followed by the reason when there is one.
type ToolUnavailableError struct {
	Server, Tool string
	// Reason is why, or "" (unknown or hidden server).
	Reason string
}

func (e *ToolUnavailableError) Error() string {
	msg := fmt.Sprintf("MCP tool `%s/%s` is not available", e.Server, e.Tool)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Is matches ErrToolNotAvailable.
func (e *ToolUnavailableError) Is(target error) bool { return target == ErrToolNotAvailable }

// ToolCallDeniedError is a tool call a policy (or the tool filter) refused.
type ToolCallDeniedError struct {
	Server, Tool string
	// Reason is the policy's reason, returned to the caller.
	Reason string
	// DecidedBy names the deciding policy ("baseline", "operator:<id>", "plugin:<id>").
	DecidedBy string
}

func (e *ToolCallDeniedError) Error() string {
	return fmt.Sprintf("MCP tool `%s/%s` call denied: %s", e.Server, e.Tool, e.Reason)
}

// Is matches ErrToolCallDenied.
func (e *ToolCallDeniedError) Is(target error) bool { return target == ErrToolCallDenied }

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
