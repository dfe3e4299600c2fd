// Command redact-secrets is warden's first-party secret-redaction policy: its tool_call hook
// rewrites a call's arguments and its tool_result hook rewrites a tool's result so that
// well-known secret shapes (cloud keys, tokens, private keys) are replaced by
// "[REDACTED:<kind>]". The redaction is in ./redact, the hooks in ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/plugins/redact-secrets/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	p := &policy.Policy{}
	sdk.ToolCall(p.ToolCall)
	sdk.ToolResult(p.ToolResult)
}
