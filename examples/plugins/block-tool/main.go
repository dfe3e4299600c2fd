// Command block-tool is a policy plugin that blocks destructive tools: it
// removes the "fail" tool and any tool named delete_* from calls (tool_call
// hook), and also takes "fail" off every server's tool list (servers hook).
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(func(in *sdk.ServersInput, out *sdk.ServersOutput) {
		for i := range in.Servers {
			out.DenyTools(in.Servers[i].Name, "fail")
		}
	})
	sdk.ToolCall(func(in *sdk.ToolCallInput, out *sdk.ToolCallOutput) {
		if in.Tool == "fail" || strings.HasPrefix(in.Tool, "delete_") {
			out.Deny("tool " + in.Tool + " is blocked by policy")
		}
	})
}
