// Package protocol is the contract between warden's host and a warden executor: the
// JSON-RPC methods, their params and results, the capabilities and the error codes of
// docs/executor-protocol.md, shared by both sides so that they cannot drift.
//
//	init := protocol.InitializeParams{ProtocolVersion: protocol.Version, ClientInfo: protocol.Info{Name: "warden"}}
//	// → protocol.InitializeResult{SessionID: "ses_…", Capabilities: protocol.Capabilities{Processes: true}}
//
// Binary payloads ([]byte fields) are base64 in JSON, as encoding/json encodes []byte.
package protocol

import "encoding/json"

// Version is the protocol version this package describes.
const Version = 1

// MaxMessageBytes caps one JSON-RPC message, either way.
const MaxMessageBytes = 16 << 20

// MaxReadBytes caps one fs/read: 12 MiB less 64 KiB, so that the base64 result, with
// its envelope, fits one MaxMessageBytes message.
const MaxReadBytes = 12<<20 - 64<<10

// Methods.
const (
	MethodInitialize = "initialize"

	MethodHTTPRequest = "http/request"
	MethodHTTPCancel  = "http/cancel"
	// NotifyHTTPBody and NotifyHTTPEnd stream a response body (executor → host).
	NotifyHTTPBody = "http/body"
	NotifyHTTPEnd  = "http/end"

	MethodProcessStart      = "process/start"
	MethodProcessWrite      = "process/write"
	MethodProcessCloseStdin = "process/closeStdin"
	MethodProcessTerminate  = "process/terminate"
	// NotifyProcessOutput and NotifyProcessExited report a process (executor → host).
	NotifyProcessOutput = "process/output"
	NotifyProcessExited = "process/exited"

	MethodFSRead = "fs/read"
)

// Error codes (JSON-RPC's and the protocol's own).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeNotInitialized = -32002
	CodeNotFound       = -32010
	CodeForbidden      = -32011
	CodeFailed         = -32012
	CodeSessionRetired = -32013
)

// Message is any JSON-RPC 2.0 message: a request (ID and Method), a notification
// (Method only) or a response (ID and Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *ErrorData `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// ErrorData classifies an error.
type ErrorData struct {
	Kind string `json:"kind,omitempty"` // "notFound", "forbidden", "failed", …
}

// Info names a program and its version.
type Info struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ProtocolVersion int    `json:"protocolVersion"`
	ClientInfo      Info   `json:"clientInfo"`
	ResumeSessionID string `json:"resumeSessionId,omitempty"`
}

// Capabilities are what an executor does; an absent one is false.
type Capabilities struct {
	// HTTPHeaderEnvVars: http/request resolves valueEnvVar headers from the executor's env.
	HTTPHeaderEnvVars bool `json:"httpHeaderEnvVars,omitempty"`
	// Processes: process/* is offered.
	Processes bool `json:"processes,omitempty"`
	// FSRead: fs/read is offered.
	FSRead bool `json:"fsRead,omitempty"`
}

// EnvironmentInfo describes the executor's environment (informational).
type EnvironmentInfo struct {
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
	Version  string `json:"version,omitempty"`
	Hostname string `json:"hostname,omitempty"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion int             `json:"protocolVersion"`
	SessionID       string          `json:"sessionId"`
	Resumed         bool            `json:"resumed,omitempty"`
	Capabilities    Capabilities    `json:"capabilities"`
	EnvironmentInfo EnvironmentInfo `json:"environmentInfo,omitempty"`
	// MCPServers is the executor's own declarations as a .mcp.json mcpServers map
	// (snake_case keys; credentials by reference only).
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`
}

// Header is one request header: exactly one of Value and ValueEnvVar.
type Header struct {
	Name        string `json:"name"`
	Value       string `json:"value,omitempty"`
	ValueEnvVar string `json:"valueEnvVar,omitempty"`
	// ValuePrefix is prepended to the variable's value ("Bearer ").
	ValuePrefix string `json:"valuePrefix,omitempty"`
}

// HTTPRequestParams are the params of http/request.
type HTTPRequestParams struct {
	RequestID string   `json:"requestId"`
	Method    string   `json:"method"`
	URL       string   `json:"url"`
	Headers   []Header `json:"headers,omitempty"`
	Body      []byte   `json:"body,omitempty"`
}

// HTTPRequestResult is the result of http/request: the response's status and headers
// (the body follows as http/body notifications and one http/end).
type HTTPRequestResult struct {
	Status  int      `json:"status"`
	Headers []Header `json:"headers,omitempty"`
}

// HTTPBody is the http/body notification.
type HTTPBody struct {
	RequestID string `json:"requestId"`
	Data      []byte `json:"data"`
}

// HTTPEnd is the http/end notification; Error is "" for a complete body.
type HTTPEnd struct {
	RequestID string `json:"requestId"`
	Error     string `json:"error,omitempty"`
}

// HTTPCancelParams are the params of http/cancel.
type HTTPCancelParams struct {
	RequestID string `json:"requestId"`
}

// ProcessStartParams are the params of process/start.
type ProcessStartParams struct {
	ProcessID string            `json:"processId"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env,omitempty"`
	EnvVars   []string          `json:"envVars,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
}

// ProcessStartResult is the result of process/start.
type ProcessStartResult struct {
	PID int `json:"pid"`
}

// ProcessWriteParams are the params of process/write.
type ProcessWriteParams struct {
	ProcessID string `json:"processId"`
	Data      []byte `json:"data"`
}

// ProcessRef names a process (process/closeStdin, process/terminate).
type ProcessRef struct {
	ProcessID string `json:"processId"`
}

// Streams of process/output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// ProcessOutput is the process/output notification.
type ProcessOutput struct {
	ProcessID string `json:"processId"`
	Stream    string `json:"stream"`
	Data      []byte `json:"data"`
}

// ProcessExited is the process/exited notification.
type ProcessExited struct {
	ProcessID     string `json:"processId"`
	ExitCode      int    `json:"exitCode"`
	Signal        string `json:"signal,omitempty"`
	OutputDropped int64  `json:"outputDropped,omitempty"`
}

// FSReadParams are the params of fs/read.
type FSReadParams struct {
	Root     string `json:"root"`
	Path     string `json:"path"`
	MaxBytes int64  `json:"maxBytes,omitempty"`
}

// FSReadResult is the result of fs/read.
type FSReadResult struct {
	Data []byte `json:"data"`
	Size int64  `json:"size"`
}
