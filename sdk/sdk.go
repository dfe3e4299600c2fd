package sdk

import (
	"bytes"
	"strconv"

	"github.com/warden-mcp/warden/abi"
)

// Input types: aliases of the abi messages. Strings in an input are views
// into the hook's input buffer: they are valid during the handler call (and
// may be stored in the output, which is encoded before the handler returns
// control to the host), but must be copied with strings.Clone to outlive it.
type (
	ServersInput     = abi.ServersInput
	CredentialsInput = abi.CredentialsInput
	ToolCallInput    = abi.ToolCallInput
	Thread           = abi.Thread
	Root             = abi.Root
	Environment      = abi.Environment
	Server           = abi.Server
	Credential       = abi.Credential
	Requirement      = abi.Requirement
)

// LogLevel is the level of a [Log] message.
type LogLevel = abi.LogLevel

// Log levels.
const (
	LogTrace = abi.LogTrace
	LogDebug = abi.LogDebug
	LogInfo  = abi.LogInfo
	LogWarn  = abi.LogWarn
	LogError = abi.LogError
)

// ServersFunc handles the servers hook: it reads in and records decisions
// in out. out arrives empty (no opinion on any server).
type ServersFunc func(in *ServersInput, out *ServersOutput)

// CredentialsFunc handles the credentials hook: it reads in and records
// decisions in out. out arrives empty (no opinion on any credential).
type CredentialsFunc func(in *CredentialsInput, out *CredentialsOutput)

// ToolCallFunc handles the tool_call hook: it reads in and records the
// decision in out. out arrives as "allow, arguments unchanged".
type ToolCallFunc func(in *ToolCallInput, out *ToolCallOutput)

// guestState is everything a policy module keeps between hook calls.
//
// It lives in one package-level variable, guest, because a wasm guest has
// nowhere else to keep it: the host calls bare exported functions
// (warden_alloc, warden_servers, ...) with no context argument, the handler
// table is filled by init functions before any export is called, and the
// decoded input, the output builder and the encoded output buffer are reused
// across calls so that the hot path allocates nothing. A wasm instance is
// single-threaded and the host calls it one hook at a time; natively,
// Invoke is likewise not safe for concurrent use.
type guestState struct {
	hooks abi.Hook // registered hooks (the warden_hooks mask)

	servers     ServersFunc
	credentials CredentialsFunc
	toolCall    ToolCallFunc

	serversIn     abi.ServersInput
	serversOut    ServersOutput
	credentialsIn abi.CredentialsInput
	credentialOut CredentialsOutput
	toolCallIn    abi.ToolCallInput
	toolCallOut   ToolCallOutput

	out []byte // encoded output of the last call (returned to the host)
	in  []byte // input buffer handed out by warden_alloc (wasm only)
}

var guest guestState

func (g *guestState) register(h abi.Hook, isNil bool) {
	if isNil {
		panic("sdk: nil " + h.String() + " handler")
	}
	if g.hooks.Has(h) {
		panic("sdk: " + h.String() + " handler registered twice")
	}
	g.hooks |= h
}

// Servers registers fn as the module's servers hook. Call it from an init
// function, at most once per module.
func Servers(fn ServersFunc) {
	guest.register(abi.HookServers, fn == nil)
	guest.servers = fn
}

// Credentials registers fn as the module's credentials hook. Call it from an
// init function, at most once per module.
func Credentials(fn CredentialsFunc) {
	guest.register(abi.HookCredentials, fn == nil)
	guest.credentials = fn
}

// ToolCall registers fn as the module's tool_call hook. Call it from an init
// function, at most once per module.
func ToolCall(fn ToolCallFunc) {
	guest.register(abi.HookToolCall, fn == nil)
	guest.toolCall = fn
}

// Hooks returns the mask of registered hooks (what warden_hooks returns).
func Hooks() abi.Hook { return guest.hooks }

// Invoke runs the registered handler for hook on an encoded input exactly as
// the module's wasm export does (decode into the reused input, reset and fill
// the reused output, encode into the reused output buffer), and returns the
// encoded output. It exists for native tests and benchmarks of a policy; the
// wasm exports call the same code.
//
// The returned bytes are valid until the next Invoke and are always a valid
// encoded output: when err is non-nil (the hook is not registered, the input
// is malformed, or the handler panicked) it carries err's text in its error
// field, which is what the host would see. A failure reported by the handler
// through Fail is not an error here: it is in the output's error field.
//
// Invoke is not safe for concurrent use, like a wasm instance.
func Invoke(hook abi.Hook, input []byte) ([]byte, error) {
	return guest.invoke(hook, input)
}

func (g *guestState) invoke(h abi.Hook, in []byte) ([]byte, error) {
	var err error
	switch h {
	case abi.HookServers:
		out := &g.serversOut
		out.reset()
		if g.servers == nil {
			err = notRegistered(h)
		} else if err = g.serversIn.Unmarshal(in); err == nil {
			err = callServers(g.servers, &g.serversIn, out)
		}
		if err != nil {
			out.reset()
			out.Error = err.Error()
		}
		g.out = out.AppendTo(g.out[:0])
	case abi.HookCredentials:
		out := &g.credentialOut
		out.reset()
		if g.credentials == nil {
			err = notRegistered(h)
		} else if err = g.credentialsIn.Unmarshal(in); err == nil {
			err = callCredentials(g.credentials, &g.credentialsIn, out)
		}
		if err != nil {
			out.reset()
			out.Error = err.Error()
		}
		g.out = out.AppendTo(g.out[:0])
	case abi.HookToolCall:
		out := &g.toolCallOut
		out.reset()
		if g.toolCall == nil {
			err = notRegistered(h)
		} else if err = g.toolCallIn.Unmarshal(in); err == nil {
			err = callToolCall(g.toolCall, &g.toolCallIn, out)
		}
		if err != nil {
			out.reset()
			out.Error = err.Error()
		}
		g.out = out.AppendTo(g.out[:0])
	default:
		// Field 15 is the error field of every output message.
		err = &Error{Msg: "unknown hook " + h.String()}
		g.out = (&abi.ServersOutput{Error: err.Error()}).AppendTo(g.out[:0])
	}
	return g.out, err
}

// The handler calls are separate functions so that a panic in the policy
// becomes an error output (the host fails closed with its text) instead of
// killing the instance.

func callServers(fn ServersFunc, in *ServersInput, out *ServersOutput) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicErr(r)
		}
	}()
	fn(in, out)
	return nil
}

func callCredentials(fn CredentialsFunc, in *CredentialsInput, out *CredentialsOutput) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicErr(r)
		}
	}()
	fn(in, out)
	return nil
}

func callToolCall(fn ToolCallFunc, in *ToolCallInput, out *ToolCallOutput) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicErr(r)
		}
	}()
	fn(in, out)
	return nil
}

// Error is an error raised by the SDK itself (not by input decoding, which
// returns *abi.DecodeError).
type Error struct {
	Msg string // what went wrong
	Err error  // the underlying error, if any (e.g. a recovered panic value)
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return "sdk: " + e.Msg + ": " + e.Err.Error()
	}
	return "sdk: " + e.Msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func notRegistered(h abi.Hook) error {
	return &Error{Msg: h.String() + " hook is not registered"}
}

func panicErr(r any) error {
	switch v := r.(type) {
	case error:
		return &Error{Msg: "policy panicked", Err: v}
	case string:
		return &Error{Msg: "policy panicked: " + v}
	}
	return &Error{Msg: "policy panicked"}
}

// ServersOutput builds the output of the servers hook. Each call adds one
// decision; several decisions for the same server compose like decisions of
// different policies (the most restrictive action wins, allow lists
// intersect, deny lists add up), so a handler never needs to look back.
// Names, reasons and tool names may be input strings or constants; they
// are encoded after the handler returns.
type ServersOutput struct {
	abi.ServersOutput
}

func (o *ServersOutput) reset() {
	o.Decisions = o.Decisions[:0]
	o.Error = ""
}

// add appends a decision, reusing a previous call's element and its slices.
func (o *ServersOutput) add(name string, a abi.ServerAction, reason string) *abi.ServerDecision {
	n := len(o.Decisions)
	if n < cap(o.Decisions) {
		o.Decisions = o.Decisions[:n+1]
	} else {
		o.Decisions = append(o.Decisions, abi.ServerDecision{})
	}
	d := &o.Decisions[n]
	d.Name, d.Action, d.Reason = name, a, reason
	d.AllowTools, d.DenyTools = d.AllowTools[:0], d.DenyTools[:0]
	return d
}

// Expose records an explicit "expose" for server name (the default; useful
// to put a reason in the decision log).
func (o *ServersOutput) Expose(name, reason string) { o.add(name, abi.ServerExpose, reason) }

// Disable lists server name without tools, with reason as its toolsError.
func (o *ServersOutput) Disable(name, reason string) { o.add(name, abi.ServerDisable, reason) }

// Hide removes server name from the thread.
func (o *ServersOutput) Hide(name, reason string) { o.add(name, abi.ServerHide, reason) }

// AllowTools restricts server name to the listed tools (an allow list; it
// can only narrow what other decisions allow).
func (o *ServersOutput) AllowTools(name string, tools ...string) {
	d := o.add(name, abi.ServerExpose, "")
	d.AllowTools = append(d.AllowTools, tools...)
}

// DenyTools removes the listed tools from server name.
func (o *ServersOutput) DenyTools(name string, tools ...string) {
	d := o.add(name, abi.ServerExpose, "")
	d.DenyTools = append(d.DenyTools, tools...)
}

// Fail reports that the policy could not decide; the host fails closed
// (disables every server the policy governs) with msg in the reason.
func (o *ServersOutput) Fail(msg string) { o.Error = failMsg(msg) }

func failMsg(msg string) string {
	if msg == "" {
		return "policy failed (no message)"
	}
	return msg
}

// CredentialsOutput builds the output of the credentials hook: decisions by
// index into in.Server.Credentials. Several decisions for one index compose
// (the most restrictive wins).
type CredentialsOutput struct {
	abi.CredentialsOutput
}

func (o *CredentialsOutput) reset() {
	o.Decisions = o.Decisions[:0]
	o.Error = ""
}

func (o *CredentialsOutput) add(index int, a abi.CredentialAction, reason string) {
	if index < 0 || uint64(index) > 1<<32-1 {
		o.Fail("sdk: credential index " + strconv.Itoa(index) + " out of range")
		return
	}
	o.Decisions = append(o.Decisions, abi.CredentialDecision{Index: uint32(index), Action: a, Reason: reason})
}

// Local resolves credential index on the host (allowed only for a server
// that runs locally or a host-config declaration the operator routed; the
// baseline enforces that whatever the policy says).
func (o *CredentialsOutput) Local(index int, reason string) {
	o.add(index, abi.CredentialLocal, reason)
}

// Executor resolves credential index by name inside the executor.
func (o *CredentialsOutput) Executor(index int, reason string) {
	o.add(index, abi.CredentialExecutor, reason)
}

// Deny refuses credential index.
func (o *CredentialsOutput) Deny(index int, reason string) {
	o.add(index, abi.CredentialDeny, reason)
}

// Fail reports that the policy could not decide; the host fails closed.
func (o *CredentialsOutput) Fail(msg string) { o.Error = failMsg(msg) }

// ToolCallOutput builds the output of the tool_call hook. It starts as
// "allow, arguments unchanged". (Its Rewrite method shadows the embedded
// Rewrite flag; read the flag as out.ToolCallOutput.Rewrite.)
type ToolCallOutput struct {
	abi.ToolCallOutput
}

func (o *ToolCallOutput) reset() {
	o.Action, o.Reason, o.Error = abi.ToolCallAllow, "", ""
	o.ToolCallOutput.Rewrite = false
	o.Arguments = o.Arguments[:0]
}

// Allow records an explicit allow. It does not undo an earlier Deny in the
// same call: the most restrictive decision wins.
func (o *ToolCallOutput) Allow() {}

// Deny refuses the call; reason is returned to the caller.
func (o *ToolCallOutput) Deny(reason string) {
	if o.Action != abi.ToolCallDeny {
		o.Action, o.Reason = abi.ToolCallDeny, reason
	}
}

// Rewrite replaces the call's arguments with argsJSON, which must be a JSON
// object (the host fails closed otherwise). argsJSON is copied into a reused
// buffer, so the caller may reuse it.
func (o *ToolCallOutput) Rewrite(argsJSON []byte) {
	o.ToolCallOutput.Rewrite = true
	o.Arguments = append(o.Arguments[:0], argsJSON...)
}

// Fail reports that the policy could not decide; the host fails closed
// (denies the call) with msg in the reason.
func (o *ToolCallOutput) Fail(msg string) { o.Error = failMsg(msg) }

// EvalServers is a test helper: it encodes in, runs the registered servers
// handler through Invoke and returns a decoded copy of the output (safe to
// keep across calls). err is Invoke's error.
func EvalServers(in *ServersInput) (abi.ServersOutput, error) {
	var out abi.ServersOutput
	b, err := Invoke(abi.HookServers, in.AppendTo(nil))
	if derr := out.Unmarshal(bytes.Clone(b)); derr != nil && err == nil {
		err = derr
	}
	return out, err
}

// EvalCredentials is EvalServers for the credentials hook.
func EvalCredentials(in *CredentialsInput) (abi.CredentialsOutput, error) {
	var out abi.CredentialsOutput
	b, err := Invoke(abi.HookCredentials, in.AppendTo(nil))
	if derr := out.Unmarshal(bytes.Clone(b)); derr != nil && err == nil {
		err = derr
	}
	return out, err
}

// EvalToolCall is EvalServers for the tool_call hook.
func EvalToolCall(in *ToolCallInput) (abi.ToolCallOutput, error) {
	var out abi.ToolCallOutput
	b, err := Invoke(abi.HookToolCall, in.AppendTo(nil))
	if derr := out.Unmarshal(bytes.Clone(b)); derr != nil && err == nil {
		err = derr
	}
	return out, err
}
