package sdk

import (
	"bytes"

	"github.com/warden-mcp/warden/abi"
)

// Inputs are read-only, zero-copy views of the hook's input buffer (see
// package abi, "Views"): an accessor reads one field where it lies, nothing
// is decoded or copied ahead. Strings read from a view are valid during the
// handler call (and may be passed to the output methods, which copy them),
// but must be copied with strings.Clone to outlive it.
type (
	ServersInput     = abi.ServersView
	CredentialsInput = abi.CredentialsView
	ToolCallInput    = abi.ToolCallView
	// The inputs of the hooks of ABI version 2.
	ResourceReadInput = abi.ResourceReadView
	PromptGetInput    = abi.PromptGetView
	ToolResultInput   = abi.ToolResultView

	ThreadView      = abi.ThreadView
	RootView        = abi.RootView
	EnvironmentView = abi.EnvironmentView
	ServerView      = abi.ServerView
	CredentialView  = abi.CredentialView
	RequirementView = abi.RequirementView

	ServerList      = abi.ServerList
	CredentialList  = abi.CredentialList
	EnvironmentList = abi.EnvironmentList
	RootList        = abi.RootList
	RequirementList = abi.RequirementList
	StringList      = abi.StringList
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
type ServersFunc func(in ServersInput, out *ServersOutput)

// CredentialsFunc handles the credentials hook: it reads in and records
// decisions in out. out arrives empty (no opinion on any credential).
type CredentialsFunc func(in CredentialsInput, out *CredentialsOutput)

// ToolCallFunc handles the tool_call hook: it reads in and records the
// decision in out. out arrives as "allow, arguments unchanged".
type ToolCallFunc func(in ToolCallInput, out *ToolCallOutput)

// ResourceReadFunc handles the resource_read hook (ABI version 2): it reads
// in and records the decision in out. out arrives as "allow".
type ResourceReadFunc func(in ResourceReadInput, out *ResourceReadOutput)

// PromptGetFunc handles the prompt_get hook (ABI version 2): it reads in
// and records the decision in out. out arrives as "allow, arguments
// unchanged".
type PromptGetFunc func(in PromptGetInput, out *PromptGetOutput)

// ToolResultFunc handles the tool_result hook (ABI version 2): it reads
// in (the call and the upstream result) and records the decision in out.
// out arrives as "pass".
type ToolResultFunc func(in ToolResultInput, out *ToolResultOutput)

// Policy is a set of hook handlers and the state that runs them: the parsed
// input, the outputs and their encoded bytes, all reused from call to call
// so that a warm hook call allocates nothing.
//
// A module has one Policy, the one the package-level functions (Servers,
// Credentials, ToolCall, Invoke) use and the wasm exports run: a wasm guest
// has nowhere else to keep state, since the host calls bare exported
// functions with no context argument. Other Policy values are for native
// tests and benchmarks that need several policies in one process; they run
// exactly the same code as the module's. The zero value is an empty policy.
// A Policy is not safe for concurrent use, like a wasm instance.
type Policy struct {
	hooks abi.Hook // registered hooks (the warden_hooks mask)

	servers     ServersFunc
	credentials CredentialsFunc
	toolCall    ToolCallFunc
	resource    ResourceReadFunc
	prompt      PromptGetFunc
	toolResult  ToolResultFunc

	flat           abi.Flat
	serversOut     ServersOutput
	credentialsOut CredentialsOutput
	toolCallOut    ToolCallOutput
	resourceOut    ResourceReadOutput
	promptOut      PromptGetOutput
	toolResultOut  ToolResultOutput
	other          []byte // output of an unknown hook

	in []byte // input buffer handed out by warden_alloc (wasm only)

	// minLog is the lowest level the host records (warden_log_level; wasm
	// only): Log does not call the host below it. Zero until the host says.
	minLog LogLevel
}

// module is the module's policy.
var module Policy

func (p *Policy) register(h abi.Hook, isNil bool) {
	if isNil {
		panic("sdk: nil " + h.String() + " handler")
	}
	if p.hooks.Has(h) {
		panic("sdk: " + h.String() + " handler registered twice")
	}
	p.hooks |= h
}

// Servers registers fn as p's servers hook, at most once.
func (p *Policy) Servers(fn ServersFunc) {
	p.register(abi.HookServers, fn == nil)
	p.servers = fn
}

// Credentials registers fn as p's credentials hook, at most once.
func (p *Policy) Credentials(fn CredentialsFunc) {
	p.register(abi.HookCredentials, fn == nil)
	p.credentials = fn
}

// ToolCall registers fn as p's tool_call hook, at most once.
func (p *Policy) ToolCall(fn ToolCallFunc) {
	p.register(abi.HookToolCall, fn == nil)
	p.toolCall = fn
}

// ResourceRead registers fn as p's resource_read hook, at most once.
func (p *Policy) ResourceRead(fn ResourceReadFunc) {
	p.register(abi.HookResourceRead, fn == nil)
	p.resource = fn
}

// PromptGet registers fn as p's prompt_get hook, at most once.
func (p *Policy) PromptGet(fn PromptGetFunc) {
	p.register(abi.HookPromptGet, fn == nil)
	p.prompt = fn
}

// ToolResult registers fn as p's tool_result hook, at most once.
func (p *Policy) ToolResult(fn ToolResultFunc) {
	p.register(abi.HookToolResult, fn == nil)
	p.toolResult = fn
}

// Hooks returns the mask of p's registered hooks.
func (p *Policy) Hooks() abi.Hook { return p.hooks }

// Servers registers fn as the module's servers hook. Call it from an init
// function, at most once per module.
func Servers(fn ServersFunc) { module.Servers(fn) }

// Credentials registers fn as the module's credentials hook. Call it from an
// init function, at most once per module.
func Credentials(fn CredentialsFunc) { module.Credentials(fn) }

// ToolCall registers fn as the module's tool_call hook. Call it from an init
// function, at most once per module.
func ToolCall(fn ToolCallFunc) { module.ToolCall(fn) }

// ResourceRead registers fn as the module's resource_read hook (ABI version
// 2). Call it from an init function, at most once per module.
func ResourceRead(fn ResourceReadFunc) { module.ResourceRead(fn) }

// PromptGet registers fn as the module's prompt_get hook (ABI version 2).
// Call it from an init function, at most once per module.
func PromptGet(fn PromptGetFunc) { module.PromptGet(fn) }

// ToolResult registers fn as the module's tool_result hook (ABI version 2).
// Call it from an init function, at most once per module.
func ToolResult(fn ToolResultFunc) { module.ToolResult(fn) }

// Hooks returns the mask of registered hooks (what warden_hooks returns).
func Hooks() abi.Hook { return module.hooks }

// Invoke runs the module's handler for hook on an encoded (flat) input
// exactly as the module's wasm export does, and returns the encoded output.
// It exists for native tests and benchmarks of a policy; the wasm exports
// call the same code. See Policy.Invoke.
func Invoke(hook abi.Hook, input []byte) ([]byte, error) { return module.Invoke(hook, input) }

// Invoke runs p's handler for hook on an encoded (flat) input: it parses the
// input into the reused views, resets the reused output, runs the handler
// and returns the encoded output.
//
// The returned bytes are valid until the next Invoke and are always a valid
// encoded output: when err is non-nil (the hook is not registered, the input
// is malformed, or the handler panicked) it carries err's text in its error
// field, which is what the host would see. A failure reported by the handler
// through Fail is not an error here: it is in the output's error field.
func (p *Policy) Invoke(hook abi.Hook, input []byte) ([]byte, error) {
	switch hook {
	case abi.HookServers:
		return p.runServers(input)
	case abi.HookCredentials:
		return p.runCredentials(input)
	case abi.HookToolCall:
		return p.runToolCall(input)
	case abi.HookResourceRead:
		return p.runResourceRead(input)
	case abi.HookPromptGet:
		return p.runPromptGet(input)
	case abi.HookToolResult:
		return p.runToolResult(input)
	}
	err := &Error{Msg: "unknown hook " + hook.String()}
	p.other = appendError(p.other[:0], err.Error())
	return p.other, err
}

// The run functions are the whole of a hook call, shared by the wasm
// exports and Invoke. Each one recovers a panic of the handler with a single
// deferred call (the output then carries only the error: the host fails
// closed with its text, and the instance stays usable). See "Performance"
// in doc.go for why they are shaped this way.

func (p *Policy) runServers(input []byte) (out []byte, err error) {
	o := &p.serversOut
	o.reset()
	in, perr := p.flat.Servers(input)
	if perr != nil {
		return o.fail(perr)
	}
	done := false
	defer func() {
		if !done {
			r := recover()
			if p.servers == nil {
				r = notRegistered(abi.HookServers)
			}
			out, err = o.fail(panicErr(r, abi.HookServers, input))
		}
	}()
	p.servers(in, o) // a nil handler panics: reported as not registered
	done = true
	return o.finish(), nil
}

func (p *Policy) runCredentials(input []byte) (out []byte, err error) {
	o := &p.credentialsOut
	o.reset()
	in, perr := p.flat.Credentials(input)
	if perr != nil {
		return o.fail(perr)
	}
	done := false
	defer func() {
		if !done {
			r := recover()
			if p.credentials == nil {
				r = notRegistered(abi.HookCredentials)
			}
			out, err = o.fail(panicErr(r, abi.HookCredentials, input))
		}
	}()
	p.credentials(in, o) // a nil handler panics: reported as not registered
	done = true
	return o.finish(), nil
}

func (p *Policy) runToolCall(input []byte) (out []byte, err error) {
	o := &p.toolCallOut
	o.reset()
	in, perr := p.flat.ToolCall(input)
	if perr != nil {
		return o.fail(perr)
	}
	done := false
	defer func() {
		if !done {
			r := recover()
			if p.toolCall == nil {
				r = notRegistered(abi.HookToolCall)
			}
			out, err = o.fail(panicErr(r, abi.HookToolCall, input))
		}
	}()
	p.toolCall(in, o) // a nil handler panics: reported as not registered
	done = true
	return o.finish(), nil
}

// The hooks of version 2 share one run function: output is what each of
// their outputs provides, and run the parse and the handler call.

type output interface {
	reset()
	finish() []byte
	fail(error) ([]byte, error)
}

// runHook is the run function of hook h: o is its reset output, and run
// parses input and calls the handler (registered says whether there is
// one: a nil handler is reported as not registered).
func runHook(h abi.Hook, input []byte, o output, registered bool, run func() error) (out []byte, err error) {
	o.reset()
	done := false
	defer func() {
		if !done {
			r := recover()
			if !registered {
				r = notRegistered(h)
			}
			out, err = o.fail(panicErr(r, h, input))
		}
	}()
	if perr := run(); perr != nil {
		done = true
		return o.fail(perr)
	}
	done = true
	return o.finish(), nil
}

func (p *Policy) runResourceRead(input []byte) ([]byte, error) {
	return runHook(abi.HookResourceRead, input, &p.resourceOut, p.resource != nil, func() error {
		in, err := p.flat.ResourceRead(input)
		if err == nil {
			p.resource(in, &p.resourceOut)
		}
		return err
	})
}

func (p *Policy) runPromptGet(input []byte) ([]byte, error) {
	return runHook(abi.HookPromptGet, input, &p.promptOut, p.prompt != nil, func() error {
		in, err := p.flat.PromptGet(input)
		if err == nil {
			p.prompt(in, &p.promptOut)
		}
		return err
	})
}

func (p *Policy) runToolResult(input []byte) ([]byte, error) {
	return runHook(abi.HookToolResult, input, &p.toolResultOut, p.toolResult != nil, func() error {
		in, err := p.flat.ToolResult(input)
		if err == nil {
			p.toolResult(in, &p.toolResultOut)
		}
		return err
	})
}

// Error is an error raised by the SDK itself (not by input parsing, which
// returns *abi.InputError).
type Error struct {
	Msg string // what went wrong
	Err error  // the underlying error, if any (e.g. a recovered panic value)

	unregistered bool // the hook is not registered (reported as is, not as a panic)
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
	return &Error{Msg: h.String() + " hook is not registered", unregistered: true}
}

// panicErr turns a recovered panic value into the call's error. A view
// that read a reference outside the input panics with an *abi.InputError:
// the input is malformed, and a full check of it gives the precise error.
func panicErr(r any, h abi.Hook, input []byte) error {
	if e, ok := r.(*Error); ok && e.unregistered {
		return e
	}
	if ie, ok := r.(*abi.InputError); ok {
		if err := abi.ValidateInput(h, input); err != nil {
			return err
		}
		return ie
	}
	switch v := r.(type) {
	case error:
		return &Error{Msg: "policy panicked", Err: v}
	case string:
		return &Error{Msg: "policy panicked: " + v}
	}
	return &Error{Msg: "policy panicked"}
}

// EvalServers is a test helper: it encodes in, runs the module's servers
// handler through Invoke and returns a decoded copy of the output (safe to
// keep across calls). err is Invoke's error.
func EvalServers(in *abi.ServersInput) (abi.ServersOutput, error) {
	return module.EvalServers(in)
}

// EvalCredentials is EvalServers for the credentials hook.
func EvalCredentials(in *abi.CredentialsInput) (abi.CredentialsOutput, error) {
	return module.EvalCredentials(in)
}

// EvalToolCall is EvalServers for the tool_call hook.
func EvalToolCall(in *abi.ToolCallInput) (abi.ToolCallOutput, error) {
	return module.EvalToolCall(in)
}

// EvalResourceRead is EvalServers for the resource_read hook.
func EvalResourceRead(in *abi.ResourceReadInput) (abi.ResourceReadOutput, error) {
	return module.EvalResourceRead(in)
}

// EvalPromptGet is EvalServers for the prompt_get hook.
func EvalPromptGet(in *abi.PromptGetInput) (abi.PromptGetOutput, error) {
	return module.EvalPromptGet(in)
}

// EvalToolResult is EvalServers for the tool_result hook.
func EvalToolResult(in *abi.ToolResultInput) (abi.ToolResultOutput, error) {
	return module.EvalToolResult(in)
}

// EvalServers is the package-level EvalServers for policy p.
func (p *Policy) EvalServers(in *abi.ServersInput) (abi.ServersOutput, error) {
	return eval[abi.ServersOutput](p, abi.HookServers, in)
}

// EvalCredentials is the package-level EvalCredentials for policy p.
func (p *Policy) EvalCredentials(in *abi.CredentialsInput) (abi.CredentialsOutput, error) {
	return eval[abi.CredentialsOutput](p, abi.HookCredentials, in)
}

// EvalResourceRead is the package-level EvalResourceRead for policy p.
func (p *Policy) EvalResourceRead(in *abi.ResourceReadInput) (abi.ResourceReadOutput, error) {
	return eval[abi.ResourceReadOutput](p, abi.HookResourceRead, in)
}

// EvalPromptGet is the package-level EvalPromptGet for policy p.
func (p *Policy) EvalPromptGet(in *abi.PromptGetInput) (abi.PromptGetOutput, error) {
	return eval[abi.PromptGetOutput](p, abi.HookPromptGet, in)
}

// EvalToolResult is the package-level EvalToolResult for policy p.
func (p *Policy) EvalToolResult(in *abi.ToolResultInput) (abi.ToolResultOutput, error) {
	return eval[abi.ToolResultOutput](p, abi.HookToolResult, in)
}

// EvalToolCall is the package-level EvalToolCall for policy p.
func (p *Policy) EvalToolCall(in *abi.ToolCallInput) (abi.ToolCallOutput, error) {
	return eval[abi.ToolCallOutput](p, abi.HookToolCall, in)
}

// eval encodes in, runs p's handler for h through Invoke and returns a
// decoded copy of the output (safe to keep across calls); err is Invoke's
// error, or the output's decoding error.
func eval[O any, P interface {
	*O
	Unmarshal([]byte) error
}](p *Policy, h abi.Hook, in interface{ AppendTo([]byte) []byte }) (O, error) {
	var out O
	b, err := p.Invoke(h, in.AppendTo(nil))
	if derr := P(&out).Unmarshal(bytes.Clone(b)); derr != nil && err == nil {
		err = derr
	}
	return out, err
}
