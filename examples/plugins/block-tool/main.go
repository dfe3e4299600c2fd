// Command block-tool is a policy plugin that blocks destructive tools: it
// removes the "fail" tool and any tool named delete_* from calls (tool_call
// hook), and also takes "fail" off every server's tool list (servers hook).
// The policy is in ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/examples/plugins/block-tool/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(policy.Servers)
	sdk.ToolCall(policy.ToolCall)
}
