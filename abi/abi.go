package abi

import "strconv"

// Version is the newest ABI version implemented by this package, the one a
// guest built with it returns from its warden_abi_version export. The host
// accepts every version from [MinVersion] to Version and holds each guest
// to the version it declared (docs/abi.md §13): a version 1 guest gets the
// hooks, fields and enum values of version 1 only.
const Version = 2

// MinVersion is the oldest ABI version the host still accepts.
const MinVersion = 1

// FeatureGatheredOutput, a bit of [ExportHostFeatures]: the host reads
// gathered outputs (docs/abi.md §7.1), whose first byte is
// [GatheredOutputMark].
const FeatureGatheredOutput = 1

// GatheredOutputMark is the first byte of a gathered output: 0x00, which
// no protobuf message starts with (field number 0 is invalid). Three zero
// bytes follow it, then the chunks.
const GatheredOutputMark = 0x00

// GatheredLiteral is the bit of a gathered output's chunk word that makes
// the chunk a literal (the bytes follow); without it the chunk is a
// reference (an address follows). The other bits are the length.
const GatheredLiteral = 1 << 31

// Names of the exports a guest module provides. See docs/abi.md for the exact
// WebAssembly signatures.
const (
	// ExportMemory is the guest's linear memory (required).
	ExportMemory = "memory"
	// ExportInitialize is the WASI reactor initializer, () -> (). Optional;
	// when present the host calls it once right after instantiation.
	ExportInitialize = "_initialize"
	// ExportStart is the WASI command entry point. A module exporting it is
	// rejected: policies must be reactors.
	ExportStart = "_start"
	// ExportABIVersion is () -> i32 and must return [Version].
	ExportABIVersion = "warden_abi_version"
	// ExportAlloc is (size i32) -> i32: a guest buffer of at least size
	// bytes for the next hook input; 0 means out of memory.
	ExportAlloc = "warden_alloc"
	// ExportHooks is () -> i32 (optional): the bitmask of implemented hooks,
	// see [Hook].
	ExportHooks = "warden_hooks"
	// ExportLogLevel is (level i32) -> () (optional): the host calls it with
	// the lowest [LogLevel] it records for the plugin (6: none) after
	// warden_hooks and again whenever that changes, so that the guest can
	// skip warden.log calls the host would drop.
	ExportLogLevel = "warden_log_level"
	// ExportHostFeatures is (features i32) -> () (optional): the host calls
	// it once, after warden_hooks, with the bits of the optional ABI
	// features it implements ([FeatureGatheredOutput]).
	ExportHostFeatures = "warden_host_features"
	// ExportServers is the servers hook, (ptr i32, len i32) -> i64.
	ExportServers = "warden_servers"
	// ExportCredentials is the credentials hook, (ptr i32, len i32) -> i64.
	ExportCredentials = "warden_credentials"
	// ExportToolCall is the tool_call hook, (ptr i32, len i32) -> i64.
	ExportToolCall = "warden_tool_call"
	// ExportResourceRead is the resource_read hook (version 2),
	// (ptr i32, len i32) -> i64.
	ExportResourceRead = "warden_resource_read"
	// ExportPromptGet is the prompt_get hook (version 2),
	// (ptr i32, len i32) -> i64.
	ExportPromptGet = "warden_prompt_get"
	// ExportToolResult is the tool_result hook (version 2),
	// (ptr i32, len i32) -> i64.
	ExportToolResult = "warden_tool_result"
)

// Names of the host functions offered to a guest.
const (
	// ImportModule is the host module holding warden's own functions.
	ImportModule = "warden"
	// ImportLog is warden.log(level i32, ptr i32, len i32) -> (): a UTF-8
	// message at [ptr, ptr+len) at the given [LogLevel].
	ImportLog = "log"
	// WASIModule is the only other module a guest may import from; it is
	// backed by a sandbox with no preopens, env, args, real clock or real
	// randomness.
	WASIModule = "wasi_snapshot_preview1"
)

// Hook identifies a policy hook. Hook values are distinct bits so that a set
// of hooks (as returned by warden_hooks) is a Hook bitmask too.
type Hook uint32

// The hooks, with their bit values in the warden_hooks mask.
const (
	HookServers      Hook = 1  // servers: which servers a thread sees
	HookCredentials  Hook = 2  // credentials: where each credential resolves
	HookToolCall     Hook = 4  // tool_call: allow, deny, ask or rewrite a tools/call
	HookResourceRead Hook = 8  // resource_read (v2): allow or deny a resources/read
	HookPromptGet    Hook = 16 // prompt_get (v2): allow, deny or rewrite a prompts/get
	HookToolResult   Hook = 32 // tool_result (v2): pass, rewrite or replace a tool's result

	// V1Hooks is the mask of the hooks of ABI version 1.
	V1Hooks = HookServers | HookCredentials | HookToolCall
	// AllHooks is the mask of every hook defined by this ABI version.
	AllHooks = V1Hooks | HookResourceRead | HookPromptGet | HookToolResult
)

// NumHooks is the number of hooks of this version.
const NumHooks = 6

// Hooks lists the single hooks in bit order, for iterating over a mask.
//
//	for _, h := range abi.Hooks() { if mask.Has(h) { ... } }
func Hooks() [NumHooks]Hook {
	return [NumHooks]Hook{HookServers, HookCredentials, HookToolCall, HookResourceRead, HookPromptGet, HookToolResult}
}

// HooksOf returns the mask of the hooks a guest of ABI version v may
// implement: V1Hooks for version 1, AllHooks for version 2, 0 for a
// version this package does not implement.
func HooksOf(v int) Hook {
	switch v {
	case 1:
		return V1Hooks
	case 2:
		return AllHooks
	}
	return 0
}

// Since returns the ABI version that introduced the single hook h (0 for
// anything else).
func (h Hook) Since() int {
	switch {
	case h == 0 || h&(h-1) != 0 || h&^AllHooks != 0:
		return 0
	case V1Hooks.Has(h):
		return 1
	}
	return 2
}

// Has reports whether every bit of x is set in h.
func (h Hook) Has(x Hook) bool { return h&x == x }

// Export returns the name of the guest export implementing a single hook, or
// "" if h is not exactly one known hook.
func (h Hook) Export() string {
	switch h {
	case HookServers:
		return ExportServers
	case HookCredentials:
		return ExportCredentials
	case HookToolCall:
		return ExportToolCall
	case HookResourceRead:
		return ExportResourceRead
	case HookPromptGet:
		return ExportPromptGet
	case HookToolResult:
		return ExportToolResult
	}
	return ""
}

// String returns the hook's name ("servers", "credentials", "tool_call",
// "resource_read", "prompt_get", "tool_result"), a "|"-joined list for a
// mask of several hooks, "none" for 0, and "Hook(0x..)" for unknown bits.
func (h Hook) String() string {
	switch h {
	case 0:
		return "none"
	case HookServers:
		return "servers"
	case HookCredentials:
		return "credentials"
	case HookToolCall:
		return "tool_call"
	case HookResourceRead:
		return "resource_read"
	case HookPromptGet:
		return "prompt_get"
	case HookToolResult:
		return "tool_result"
	}
	var s string
	for _, x := range Hooks() {
		if h.Has(x) {
			if s != "" {
				s += "|"
			}
			s += x.String()
		}
	}
	if rest := h &^ AllHooks; rest != 0 {
		if s != "" {
			s += "|"
		}
		s += "Hook(0x" + strconv.FormatUint(uint64(rest), 16) + ")"
	}
	return s
}

// ParseHook returns the single hook named s (see Hook.String).
func ParseHook(s string) (Hook, error) {
	for _, h := range Hooks() {
		if h.String() == s {
			return h, nil
		}
	}
	return 0, &ParseError{Type: "Hook", Value: s}
}

// ServerAction is a servers-hook decision. Ordered by restrictiveness:
// HIDE > DISABLE > EXPOSE; when decisions compose, the most restrictive wins.
type ServerAction int32

// The server actions (wire values of enum ServerAction).
const (
	// ServerExpose lists the server with its tools (no opinion).
	ServerExpose ServerAction = 0
	// ServerDisable lists the server without tools, with the reason as its
	// toolsError.
	ServerDisable ServerAction = 1
	// ServerHide removes the server from the thread entirely.
	ServerHide ServerAction = 2
)

// Valid reports whether a is a defined ServerAction.
func (a ServerAction) Valid() bool { return a >= ServerExpose && a <= ServerHide }

// rank orders actions by restrictiveness; an undefined value ranks as the
// most restrictive so that garbage never widens access.
func (a ServerAction) rank() ServerAction {
	if !a.Valid() {
		return ServerHide
	}
	return a
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Undefined values count as ServerHide.
func (a ServerAction) MoreRestrictive(b ServerAction) bool { return a.rank() > b.rank() }

// Max returns the more restrictive of a and b (HIDE > DISABLE > EXPOSE).
// Undefined values count as, and are returned as, ServerHide.
func (a ServerAction) Max(b ServerAction) ServerAction {
	a, b = a.rank(), b.rank()
	if a > b {
		return a
	}
	return b
}

// String returns "expose", "disable", "hide" or "ServerAction(N)".
func (a ServerAction) String() string {
	switch a {
	case ServerExpose:
		return "expose"
	case ServerDisable:
		return "disable"
	case ServerHide:
		return "hide"
	}
	return "ServerAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseServerAction parses the String form of a ServerAction.
func ParseServerAction(s string) (ServerAction, error) {
	for a := ServerExpose; a <= ServerHide; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, &ParseError{Type: "ServerAction", Value: s}
}

// CredentialAction is a credentials-hook decision. Ordered by
// restrictiveness: DENY > EXECUTOR > LOCAL > UNSPECIFIED.
type CredentialAction int32

// The credential actions (wire values of enum CredentialAction).
const (
	// CredentialUnspecified is no opinion.
	CredentialUnspecified CredentialAction = 0
	// CredentialLocal resolves the value on the host (only for a server that
	// runs locally, or a host-config declaration the operator routed).
	CredentialLocal CredentialAction = 1
	// CredentialExecutor resolves the value by name inside the executor.
	CredentialExecutor CredentialAction = 2
	// CredentialDeny refuses the credential; the server cannot connect with it.
	CredentialDeny CredentialAction = 3
)

// Valid reports whether a is a defined CredentialAction.
func (a CredentialAction) Valid() bool {
	return a >= CredentialUnspecified && a <= CredentialDeny
}

func (a CredentialAction) rank() CredentialAction {
	if !a.Valid() {
		return CredentialDeny
	}
	return a
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Undefined values count as CredentialDeny.
func (a CredentialAction) MoreRestrictive(b CredentialAction) bool { return a.rank() > b.rank() }

// Max returns the more restrictive of a and b
// (DENY > EXECUTOR > LOCAL > UNSPECIFIED). Undefined values count as, and are
// returned as, CredentialDeny.
func (a CredentialAction) Max(b CredentialAction) CredentialAction {
	a, b = a.rank(), b.rank()
	if a > b {
		return a
	}
	return b
}

// String returns "unspecified", "local", "executor", "deny" or
// "CredentialAction(N)".
func (a CredentialAction) String() string {
	switch a {
	case CredentialUnspecified:
		return "unspecified"
	case CredentialLocal:
		return "local"
	case CredentialExecutor:
		return "executor"
	case CredentialDeny:
		return "deny"
	}
	return "CredentialAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseCredentialAction parses the String form of a CredentialAction.
func ParseCredentialAction(s string) (CredentialAction, error) {
	for a := CredentialUnspecified; a <= CredentialDeny; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, &ParseError{Type: "CredentialAction", Value: s}
}

// ToolCallAction is a tool_call-hook decision: DENY > ASK > ALLOW. The
// resource_read and prompt_get hooks answer with ALLOW or DENY only.
type ToolCallAction int32

// The tool call actions (wire values of enum ToolCallAction).
const (
	// ToolCallAllow lets the call through (possibly with rewritten arguments).
	ToolCallAllow ToolCallAction = 0
	// ToolCallDeny refuses the call; the reason is returned to the caller.
	ToolCallDeny ToolCallAction = 1
	// ToolCallAsk (version 2, tool_call only) asks the front-door client's
	// user before the call runs; the reason is the text shown. Undefined
	// for a version 1 guest, and in the resource_read and prompt_get hooks.
	ToolCallAsk ToolCallAction = 2
)

// Valid reports whether a is a defined ToolCallAction (of version 2: see
// ValidIn).
func (a ToolCallAction) Valid() bool { return a >= ToolCallAllow && a <= ToolCallAsk }

// ValidIn reports whether a is a defined tool_call action for a guest of
// ABI version v: ASK is not one for version 1.
func (a ToolCallAction) ValidIn(v int) bool {
	return a == ToolCallAllow || a == ToolCallDeny || a == ToolCallAsk && v >= 2
}

// rank orders the actions ALLOW < ASK < DENY; an undefined value ranks as
// DENY.
func (a ToolCallAction) rank() int {
	switch a {
	case ToolCallAllow:
		return 0
	case ToolCallAsk:
		return 1
	}
	return 2
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Undefined values count as ToolCallDeny.
func (a ToolCallAction) MoreRestrictive(b ToolCallAction) bool { return a.rank() > b.rank() }

// Max returns the more restrictive of a and b (DENY > ASK > ALLOW).
// Undefined values count as, and are returned as, ToolCallDeny.
func (a ToolCallAction) Max(b ToolCallAction) ToolCallAction {
	if !a.Valid() || !b.Valid() {
		return ToolCallDeny
	}
	if a.rank() >= b.rank() {
		return a
	}
	return b
}

// String returns "allow", "deny", "ask" or "ToolCallAction(N)".
func (a ToolCallAction) String() string {
	switch a {
	case ToolCallAllow:
		return "allow"
	case ToolCallDeny:
		return "deny"
	case ToolCallAsk:
		return "ask"
	}
	return "ToolCallAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseToolCallAction parses the String form of a ToolCallAction.
func ParseToolCallAction(s string) (ToolCallAction, error) {
	for a := ToolCallAllow; a <= ToolCallAsk; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, &ParseError{Type: "ToolCallAction", Value: s}
}

// ToolResultAction is a tool_result-hook decision (version 2). Ordered by
// restrictiveness: ERROR > REWRITE > PASS.
type ToolResultAction int32

// The tool result actions (wire values of enum ToolResultAction).
const (
	// ToolResultPass returns the upstream result unchanged (no opinion).
	ToolResultPass ToolResultAction = 0
	// ToolResultRewrite replaces the result with the output's result, a
	// CallToolResult JSON object.
	ToolResultRewrite ToolResultAction = 1
	// ToolResultError replaces the result with a tool error whose text is
	// the reason.
	ToolResultError ToolResultAction = 2
)

// Valid reports whether a is a defined ToolResultAction.
func (a ToolResultAction) Valid() bool { return a >= ToolResultPass && a <= ToolResultError }

func (a ToolResultAction) rank() ToolResultAction {
	if !a.Valid() {
		return ToolResultError
	}
	return a
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Undefined values count as ToolResultError.
func (a ToolResultAction) MoreRestrictive(b ToolResultAction) bool { return a.rank() > b.rank() }

// Max returns the more restrictive of a and b (ERROR > REWRITE > PASS).
// Undefined values count as, and are returned as, ToolResultError.
func (a ToolResultAction) Max(b ToolResultAction) ToolResultAction {
	a, b = a.rank(), b.rank()
	if a > b {
		return a
	}
	return b
}

// String returns "pass", "rewrite", "error" or "ToolResultAction(N)".
func (a ToolResultAction) String() string {
	switch a {
	case ToolResultPass:
		return "pass"
	case ToolResultRewrite:
		return "rewrite"
	case ToolResultError:
		return "error"
	}
	return "ToolResultAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseToolResultAction parses the String form of a ToolResultAction.
func ParseToolResultAction(s string) (ToolResultAction, error) {
	for a := ToolResultPass; a <= ToolResultError; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, &ParseError{Type: "ToolResultAction", Value: s}
}

// LogLevel is the level argument of the warden.log import.
type LogLevel int32

// The log levels.
const (
	LogTrace LogLevel = 1
	LogDebug LogLevel = 2
	LogInfo  LogLevel = 3
	LogWarn  LogLevel = 4
	LogError LogLevel = 5
)

// Valid reports whether l is a defined LogLevel.
func (l LogLevel) Valid() bool { return l >= LogTrace && l <= LogError }

// String returns "trace", "debug", "info", "warn", "error" or "LogLevel(N)".
func (l LogLevel) String() string {
	switch l {
	case LogTrace:
		return "trace"
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	}
	return "LogLevel(" + strconv.Itoa(int(l)) + ")"
}

// ParseError reports a string that names no value of an ABI enum.
type ParseError struct {
	Type  string // "Hook", "ServerAction", ...
	Value string // the string that was parsed
}

// Error implements error.
func (e *ParseError) Error() string {
	return "abi: unknown " + e.Type + " " + strconv.Quote(e.Value)
}
