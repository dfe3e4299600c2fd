package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/warden-mcp/warden/abi"
)

// Cause classifies why a policy call (or load) failed. Every Cause is a
// fail-closed condition: the caller must treat the plugin's decision as the
// most restrictive one for everything it governs.
type Cause uint8

// The causes. The zero value is never used by this package.
const (
	_ Cause = iota
	// CauseTimeout: the per-call deadline expired while the guest ran.
	CauseTimeout
	// CauseTrap: the guest trapped (unreachable, out-of-bounds access,
	// stack overflow, ...).
	CauseTrap
	// CauseMemory: the guest tried to grow its memory past the limit and then
	// failed (trapped or exited), or warden_alloc returned 0.
	CauseMemory
	// CauseExit: the guest called WASI proc_exit (a Go guest does so on panic).
	CauseExit
	// CauseMalformedOutput: the output could not be located in guest memory
	// or could not be decoded.
	CauseMalformedOutput
	// CauseOutputTooLarge: the output length exceeds Limits.MaxOutputBytes.
	CauseOutputTooLarge
	// CauseGuestError: the guest returned an output whose error field is set.
	CauseGuestError
	// CauseMissingHook: the module does not implement the requested hook.
	CauseMissingHook
	// CauseLoad: the module was rejected or could not be loaded/instantiated.
	CauseLoad
	// CauseInputTooLarge: the encoded input exceeds Limits.MaxInputBytes; the
	// guest was not called.
	CauseInputTooLarge
	// CauseCanceled: the caller's context was canceled (or its own deadline
	// passed) before or while the guest ran. Not the guest's fault, but the
	// call has no answer.
	CauseCanceled
	// CauseClosed: the Module or Runtime was closed.
	CauseClosed
)

// String returns the snake_case name of the cause (stable; suitable for
// decision logs and metrics labels).
func (c Cause) String() string {
	switch c {
	case CauseTimeout:
		return "timeout"
	case CauseTrap:
		return "trap"
	case CauseMemory:
		return "memory"
	case CauseExit:
		return "exit"
	case CauseMalformedOutput:
		return "malformed_output"
	case CauseOutputTooLarge:
		return "output_too_large"
	case CauseGuestError:
		return "guest_error"
	case CauseMissingHook:
		return "missing_hook"
	case CauseLoad:
		return "load"
	case CauseInputTooLarge:
		return "input_too_large"
	case CauseCanceled:
		return "canceled"
	case CauseClosed:
		return "closed"
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Sentinel errors. A *Error matches (errors.Is) the sentinel of its Cause;
// load errors additionally wrap one of the Err*-load sentinels below
// (ErrDigestMismatch, ErrForbiddenImport, ...) so callers can tell the
// reasons apart without parsing text.
var (
	ErrTimeout         = errors.New("policy call timed out")
	ErrTrap            = errors.New("policy guest trapped")
	ErrMemoryLimit     = errors.New("policy guest hit its memory limit")
	ErrExit            = errors.New("policy guest exited")
	ErrMalformedOutput = errors.New("policy guest returned malformed output")
	ErrOutputTooLarge  = errors.New("policy guest output exceeds the cap")
	ErrGuestError      = errors.New("policy guest reported an error")
	ErrMissingHook     = errors.New("policy module does not implement the hook")
	ErrLoad            = errors.New("policy module could not be loaded")
	ErrInputTooLarge   = errors.New("policy input exceeds the cap")
	ErrCanceled        = errors.New("policy call canceled")
	ErrClosed          = errors.New("policy module closed")

	// Load-time reasons (wrapped by *Error with Cause CauseLoad).
	ErrDigestMismatch  = errors.New("module sha256 digest does not match the pin")
	ErrForbiddenImport = errors.New("module imports a function the host does not offer")
	ErrBadExport       = errors.New("module export is missing or has the wrong signature")
	ErrCommandModule   = errors.New("module is a WASI command (exports _start), policies must be reactors")
	ErrStartSection    = errors.New("module has a start section, policies must be reactors")
	ErrNoHooks         = errors.New("module implements no hook")
	ErrABIVersion      = errors.New("module targets an unsupported ABI version")
	ErrModuleLimit     = errors.New("module exceeds a complexity or size limit")
	ErrCompileBudget   = errors.New("module compilation exceeded its time budget")
)

// Sentinel returns the sentinel error matching c (nil for an unknown Cause).
func (c Cause) Sentinel() error {
	switch c {
	case CauseTimeout:
		return ErrTimeout
	case CauseTrap:
		return ErrTrap
	case CauseMemory:
		return ErrMemoryLimit
	case CauseExit:
		return ErrExit
	case CauseMalformedOutput:
		return ErrMalformedOutput
	case CauseOutputTooLarge:
		return ErrOutputTooLarge
	case CauseGuestError:
		return ErrGuestError
	case CauseMissingHook:
		return ErrMissingHook
	case CauseLoad:
		return ErrLoad
	case CauseInputTooLarge:
		return ErrInputTooLarge
	case CauseCanceled:
		return ErrCanceled
	case CauseClosed:
		return ErrClosed
	}
	return nil
}

// Error is the error returned by every failing Runtime.Load and Module call.
// Its text names the plugin, the hook (when there is one) and the cause, e.g.
//
//	policy plugin "acme@1" hook servers: timed out after 50.4ms (limit 50ms)
//	policy plugin "acme@1" hook servers: trapped: wasm error: unreachable
//	policy plugin "acme@1" hook servers: guest exited with code 3
//	policy plugin "acme@1": import "env"."now" is not allowed (...)
//
// It never contains input values. errors.Is(err, ErrTimeout) (etc.) matches
// by Cause; errors.Is/As also see through to Err (for instance
// context.DeadlineExceeded for a timeout, *sys.ExitError for an exit).
type Error struct {
	PluginID string
	// Hook is the hook being called; 0 for load errors.
	Hook  abi.Hook
	Cause Cause
	// Err is the detail (its text follows the prefix in Error()).
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("policy plugin ")
	b.WriteString(fmt.Sprintf("%q", e.PluginID))
	if e.Hook != 0 {
		b.WriteString(" hook ")
		b.WriteString(e.Hook.String())
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Cause.String())
	}
	return b.String()
}

// Unwrap returns the detail error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel for e.Cause.
func (e *Error) Is(target error) bool {
	s := e.Cause.Sentinel()
	return s != nil && target == s
}

// detailError is a message with an optional wrapped error: Error() is the
// message alone (the wrapped error is for errors.Is/As, not for the text).
type detailError struct {
	msg string
	err error
}

func (d *detailError) Error() string { return d.msg }
func (d *detailError) Unwrap() error { return d.err }

func detail(wrapped error, format string, args ...any) error {
	return &detailError{msg: fmt.Sprintf(format, args...), err: wrapped}
}

// firstLine returns s up to its first newline (wazero appends a wasm stack
// trace to trap messages; the trace goes to the debug log, not the error).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
