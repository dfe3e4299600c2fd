// Package policy is the block-tool policy, separate from the plugin's main
// package so that native benchmarks can link it (see ../main.go).
package policy

import (
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

// Servers takes the "fail" tool off every server.
func Servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		out.DenyTools(servers.At(i).Name(), "fail")
	}
}

// ToolCall denies "fail" and any tool named delete_*.
func ToolCall(in sdk.ToolCallInput, out *sdk.ToolCallOutput) {
	if tool := in.Tool(); tool == "fail" || strings.HasPrefix(tool, "delete_") {
		out.Deny("tool ", tool, " is blocked by policy")
	}
}
