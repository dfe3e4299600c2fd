// Command v2policy is a Go policy (built for wasip1 by the host/decision tests) that uses
// every hook of ABI version 2, each behaviour keyed by a name in the input so that one
// module drives every case of the engine's tests.
package main

import (
	"bytes"
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
		servers := in.Servers()
		for i := 0; i < servers.Len(); i++ {
			name := servers.At(i).Name()
			if name != "lists" {
				continue
			}
			out.AllowPrompts(name, "summarise", "greet", "greet")
			out.DenyPrompts(name, "secret-prompt")
			out.AllowResources(name, "mem://note", "file:///docs/*")
			out.DenyResources(name, "file:///docs/private/*")
		}
	})
	sdk.ToolCall(func(in sdk.ToolCallInput, out *sdk.ToolCallOutput) {
		tool := in.Tool()
		switch {
		case strings.Contains(tool, "ask"):
			out.Ask("run ", tool, "?")
			if strings.Contains(tool, "rewrite") {
				out.Rewrite([]byte(`{"rewritten":true}`))
			}
		case tool == "deny":
			out.Deny("v2 denies ", tool)
		}
	})
	sdk.ResourceRead(func(in sdk.ResourceReadInput, out *sdk.ResourceReadOutput) {
		switch uri := in.URI(); {
		case strings.HasPrefix(uri, "file:///docs/locked"):
			out.Deny("locked by v2: ", uri)
		case uri == "fail://":
			out.Fail("asked to fail")
		}
	})
	sdk.PromptGet(func(in sdk.PromptGetInput, out *sdk.PromptGetOutput) {
		switch in.Name() {
		case "rewrite":
			out.Rewrite([]byte(`{"topic":"policy"}`))
		case "bad-rewrite":
			out.Rewrite([]byte(`{"topic":1}`))
		case "deny":
			out.Deny("no prompt for you")
		}
	})
	sdk.ToolResult(func(in sdk.ToolResultInput, out *sdk.ToolResultOutput) {
		switch in.Tool() {
		case "redact":
			if r := in.Result(); bytes.Contains(r, []byte("SECRET")) {
				out.Rewrite(bytes.ReplaceAll(r, []byte("SECRET"), []byte("[gone]")), "removed 1 marker")
			}
		case "refuse":
			out.Error("v2 refuses the result of ", in.Tool())
		case "fail":
			out.Fail("asked to fail")
		case "bad-rewrite":
			out.Rewrite([]byte(`[1]`))
		case "spin":
			// Runs into the host's per-call deadline: a timeout.
			for {
			}
		}
	})
}
