package protocol

import "encoding/json"

// Version is the JSON-RPC version warden speaks. Every message warden sends carries
// "jsonrpc": "2.0"; a message warden receives may carry it or (as Codex app-server
// clients do) leave it out, but any other value is an invalid request.
const Version = "2.0"

// Request is a JSON-RPC 2.0 request or, without an ID, a notification sent by a client.
//
// ID is the raw JSON of the request id (a string or a number; null is tolerated) and is
// echoed byte for byte in the Response. A nil ID means the member is absent: the message
// is a notification and gets no response. Params is the raw params object (nil when
// absent); decode it with DecodeParams.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// IsNotification reports whether r has no id member.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error is set. ID is the
// request's id, or JSON null when the request's id could not be read (parse errors and
// invalid requests); a nil ID encodes as null.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Notification is a JSON-RPC 2.0 notification sent by warden (a server-to-client
// message without an id), for example NotifyMcpServerStartupStatusUpdated.
type Notification struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}
