package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/warden-mcp/warden/abi"
)

// maxGuestErrorText caps the guest-reported error text kept in a *Error.
const maxGuestErrorText = 1 << 10

// Call runs hook with an already-encoded input and returns the encoded
// output: a copy owned by the caller (nil for an empty output, which means
// "no opinion"). It is the bottom of the typed wrappers, for callers that
// encode and decode themselves.
//
// Per call: the memo is consulted (when on); an instance is taken from the
// pool (waiting, bounded by ctx, when all are busy); the input is written
// into the instance's warden_alloc buffer (growing it only when too small);
// the hook runs under a Limits.Timeout deadline; the output is bounds- and
// size-checked and copied out (a gathered output, docs/abi.md §7.1, is
// resolved into the bytes it describes). An instance that trapped, timed
// out, hit the memory limit, exited or returned a bad output is closed and
// replaced in the background, never reused.
//
// Errors are *Error. Call does not look inside the output, so it never
// reports CauseGuestError or a decoding CauseMalformedOutput; the typed
// wrappers do.
func (m *Module) Call(ctx context.Context, hook abi.Hook, input []byte) ([]byte, error) {
	return m.AppendCall(ctx, hook, input, nil)
}

// AppendCall is Call appending the output to dst: it returns the extended
// slice (dst itself for an empty output), so that a caller reusing its
// buffer copies the output out without an allocation. On error it returns
// nil.
func (m *Module) AppendCall(ctx context.Context, hook abi.Hook, input, dst []byte) ([]byte, error) {
	out, err := m.call(ctx, hook, input, dst, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// check inspects a successful output while the instance is still held:
// it returns a non-nil *Error for a malformed output (the instance is then
// discarded) or a guest-reported error (the instance is kept). Neither is
// memoised.
type check func(out []byte) *Error

// call runs a call for Call (chk nil: the output is appended to dst, and
// the caller owns it) or for a typed wrapper (chk non-nil, dst nil: the
// output may be the memo's own bytes, which are immutable).
func (m *Module) call(ctx context.Context, hook abi.Hook, input, dst []byte, chk check) ([]byte, error) {
	if hook == 0 || hook&(hook-1) != 0 || !m.hooks.Has(hook) {
		return nil, &Error{PluginID: m.id, Hook: hook, Cause: CauseMissingHook,
			Err: detail(nil, "hook not implemented (the module implements %s)", m.hooks)}
	}
	if len(input) > m.limits.MaxInputBytes {
		return nil, &Error{PluginID: m.id, Hook: hook, Cause: CauseInputTooLarge,
			Err: detail(nil, "input of %d bytes exceeds the %d-byte cap", len(input), m.limits.MaxInputBytes)}
	}
	var key uint64
	if m.memo != nil {
		key = m.memo.key(hook, input)
		if out, ok := m.memo.get(key, hook, input); ok {
			if chk == nil {
				return append(dst, out...), nil
			}
			if err := chk(out); err != nil {
				return nil, err
			}
			return out, nil
		}
	}

	in, err := m.acquire(ctx)
	if err != nil {
		return nil, m.acquireError(hook, err)
	}
	out, perr := in.invoke(ctx, hook, input, dst)
	if perr == nil && chk != nil {
		perr = chk(out)
	}
	if perr != nil {
		if perr.Cause == CauseGuestError {
			m.release(in)
		} else {
			m.discard(in)
			m.logger.Warn("policy instance discarded", "hook", hook.String(), "cause", perr.Cause.String(), "error", perr.Err.Error())
		}
		return nil, perr
	}
	m.release(in)
	if m.memo != nil {
		res := out[len(dst):]
		if chk == nil && len(res) > 0 {
			res = bytes.Clone(res) // the caller owns out
		}
		m.memo.put(key, hook, input, res)
	}
	return out, nil
}

func (m *Module) acquireError(hook abi.Hook, err error) error {
	var pe *Error
	switch {
	case errors.As(err, &pe):
		// A background instantiation failed: report it for this hook.
		return &Error{PluginID: m.id, Hook: hook, Cause: pe.Cause, Err: detail(pe, "no instance available: %v", pe.Err)}
	case errors.Is(err, ErrClosed):
		return &Error{PluginID: m.id, Hook: hook, Cause: CauseClosed, Err: detail(err, "module closed")}
	default:
		return &Error{PluginID: m.id, Hook: hook, Cause: CauseCanceled, Err: detail(err, "canceled while waiting for an instance: %v", err)}
	}
}

// malformed builds the *Error for an output that does not decode.
func (m *Module) malformed(hook abi.Hook, err error) *Error {
	return &Error{PluginID: m.id, Hook: hook, Cause: CauseMalformedOutput, Err: detail(err, "malformed output: %v", err)}
}

// guestError builds the *Error for an output whose error field is set.
func (m *Module) guestError(hook abi.Hook, text string) *Error {
	if len(text) > maxGuestErrorText {
		text = text[:maxGuestErrorText]
		for !utf8.ValidString(text) && len(text) > 0 {
			text = text[:len(text)-1]
		}
		text += "…"
	}
	return &Error{PluginID: m.id, Hook: hook, Cause: CauseGuestError, Err: detail(nil, "guest reported error: %s", text)}
}

// encode appends msg's encoding to a pooled buffer; the caller returns it
// with putBuf once the call is done (the input is never retained).
func (m *Module) encode(appendTo func([]byte) []byte) *[]byte {
	bp, _ := m.rt.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, 4<<10)
		bp = &b
	}
	*bp = appendTo((*bp)[:0])
	return bp
}

func (m *Module) putBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		m.rt.bufs.Put(bp)
	}
}

// decoded is what the typed wrappers decode: every output message.
type decoded interface{ Unmarshal([]byte) error }

// typed runs hook on the encoding of an input (appendTo) and decodes the
// output into out, while the instance is held: an output that does not
// decode, or that check (nil: none) refuses, is malformed; a non-empty
// *guestErr (out's Error field) is the guest's own error.
func (m *Module) typed(ctx context.Context, hook abi.Hook, appendTo func([]byte) []byte, out decoded, guestErr *string, check func() error) error {
	bp := m.encode(appendTo)
	defer m.putBuf(bp)
	_, err := m.call(ctx, hook, *bp, nil, func(b []byte) *Error {
		if err := out.Unmarshal(b); err != nil {
			return m.malformed(hook, err)
		}
		if *guestErr != "" {
			return m.guestError(hook, *guestErr)
		}
		if check != nil {
			if err := check(); err != nil {
				return m.malformed(hook, err)
			}
		}
		return nil
	})
	return err
}

// Servers runs the servers hook. The returned output's strings are views
// into an immutable host-owned buffer (possibly shared with the memo); they
// stay valid for as long as the output is referenced. A non-empty Error field
// in the guest's output is returned as a *Error with CauseGuestError. The
// output is held to the module's ABI version (abi.ServersOutput.HoldTo).
func (m *Module) Servers(ctx context.Context, input *abi.ServersInput) (*abi.ServersOutput, error) {
	out := new(abi.ServersOutput)
	if err := m.typed(ctx, abi.HookServers, input.AppendTo, out, &out.Error, func() error {
		out.HoldTo(m.version)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// Credentials runs the credentials hook. See Servers for the output's
// lifetime and error handling. A decision whose index is outside
// input.Server.Credentials is a malformed output.
func (m *Module) Credentials(ctx context.Context, input *abi.CredentialsInput) (*abi.CredentialsOutput, error) {
	n := len(input.Server.Credentials)
	out := new(abi.CredentialsOutput)
	if err := m.typed(ctx, abi.HookCredentials, input.AppendTo, out, &out.Error, func() error {
		for _, d := range out.Decisions {
			if int64(d.Index) >= int64(n) {
				return fmt.Errorf("decision for credential index %d, but the server has %d credentials", d.Index, n)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// ToolCall runs the tool_call hook. See Servers for the output's lifetime
// and error handling; an action the module's ABI version does not define
// (ASK from a version 1 guest) is a malformed output. out.Arguments is the
// caller's own copy (it may be modified).
func (m *Module) ToolCall(ctx context.Context, input *abi.ToolCallInput) (*abi.ToolCallOutput, error) {
	out := new(abi.ToolCallOutput)
	if err := m.typed(ctx, abi.HookToolCall, input.AppendTo, out, &out.Error, func() error { return out.HoldTo(m.version) }); err != nil {
		return nil, err
	}
	out.Arguments = bytes.Clone(out.Arguments)
	return out, nil
}

// ResourceRead runs the resource_read hook (ABI version 2). See Servers for
// the output's lifetime and error handling.
func (m *Module) ResourceRead(ctx context.Context, input *abi.ResourceReadInput) (*abi.ResourceReadOutput, error) {
	out := new(abi.ResourceReadOutput)
	if err := m.typed(ctx, abi.HookResourceRead, input.AppendTo, out, &out.Error, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// PromptGet runs the prompt_get hook (ABI version 2). See Servers for the
// output's lifetime and error handling. out.Arguments is the caller's own
// copy.
func (m *Module) PromptGet(ctx context.Context, input *abi.PromptGetInput) (*abi.PromptGetOutput, error) {
	out := new(abi.PromptGetOutput)
	if err := m.typed(ctx, abi.HookPromptGet, input.AppendTo, out, &out.Error, nil); err != nil {
		return nil, err
	}
	out.Arguments = bytes.Clone(out.Arguments)
	return out, nil
}

// ToolResult runs the tool_result hook (ABI version 2). See Servers for the
// output's lifetime and error handling. out.Result is the caller's own copy.
func (m *Module) ToolResult(ctx context.Context, input *abi.ToolResultInput) (*abi.ToolResultOutput, error) {
	out := new(abi.ToolResultOutput)
	if err := m.typed(ctx, abi.HookToolResult, input.AppendTo, out, &out.Error, nil); err != nil {
		return nil, err
	}
	out.Result = bytes.Clone(out.Result)
	return out, nil
}
