package abi

import "strconv"

// Version is the ABI version implemented by this package. A guest returns it
// from its warden_abi_version export; the host rejects any other value.
const Version = 1

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
	HookServers     Hook = 1 // servers: which servers a thread sees
	HookCredentials Hook = 2 // credentials: where each credential resolves
	HookToolCall    Hook = 4 // tool_call: allow, deny or rewrite a tools/call

	// AllHooks is the mask of every hook defined by this ABI version.
	AllHooks = HookServers | HookCredentials | HookToolCall
)

// Hooks lists the single hooks in bit order, for iterating over a mask.
//
//	for _, h := range abi.Hooks() { if mask.Has(h) { ... } }
func Hooks() [3]Hook { return [3]Hook{HookServers, HookCredentials, HookToolCall} }

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
	}
	return ""
}

// String returns the hook's name ("servers", "credentials", "tool_call"), a
// "|"-joined list for a mask of several hooks, "none" for 0, and
// "Hook(0x..)" for unknown bits.
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

// ParseHook returns the single hook named s ("servers", "credentials",
// "tool_call").
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

// ToolCallAction is a tool_call-hook decision: DENY > ALLOW.
type ToolCallAction int32

// The tool call actions (wire values of enum ToolCallAction).
const (
	// ToolCallAllow lets the call through (possibly with rewritten arguments).
	ToolCallAllow ToolCallAction = 0
	// ToolCallDeny refuses the call; the reason is returned to the caller.
	ToolCallDeny ToolCallAction = 1
)

// Valid reports whether a is a defined ToolCallAction.
func (a ToolCallAction) Valid() bool { return a == ToolCallAllow || a == ToolCallDeny }

func (a ToolCallAction) rank() ToolCallAction {
	if !a.Valid() {
		return ToolCallDeny
	}
	return a
}

// MoreRestrictive reports whether a is strictly more restrictive than b.
// Undefined values count as ToolCallDeny.
func (a ToolCallAction) MoreRestrictive(b ToolCallAction) bool { return a.rank() > b.rank() }

// Max returns the more restrictive of a and b (DENY > ALLOW). Undefined values
// count as, and are returned as, ToolCallDeny.
func (a ToolCallAction) Max(b ToolCallAction) ToolCallAction {
	a, b = a.rank(), b.rank()
	if a > b {
		return a
	}
	return b
}

// String returns "allow", "deny" or "ToolCallAction(N)".
func (a ToolCallAction) String() string {
	switch a {
	case ToolCallAllow:
		return "allow"
	case ToolCallDeny:
		return "deny"
	}
	return "ToolCallAction(" + strconv.Itoa(int(a)) + ")"
}

// ParseToolCallAction parses the String form of a ToolCallAction.
func ParseToolCallAction(s string) (ToolCallAction, error) {
	for a := ToolCallAllow; a <= ToolCallDeny; a++ {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, &ParseError{Type: "ToolCallAction", Value: s}
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
