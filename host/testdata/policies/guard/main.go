// Command guard is a test policy for package host's tests. It exercises every hook:
//
//   - servers: hides "hidden_by_guard", disables "disabled_by_guard", denies the tool
//     "fail" on every server;
//   - credentials: denies every credential of "cred_denied";
//   - tool_call: denies "add", rewrites the arguments of "echo".
package main

import "github.com/warden-mcp/warden/sdk"

func main() {}

func init() {
	sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
		servers := in.Servers()
		for i := 0; i < servers.Len(); i++ {
			switch name := servers.At(i).Name(); name {
			case "hidden_by_guard":
				out.Hide(name, "hidden by guard")
			case "disabled_by_guard":
				out.Disable(name, "disabled by guard")
			}
			out.DenyTools(servers.At(i).Name(), "fail")
		}
	})
	sdk.Credentials(func(in sdk.CredentialsInput, out *sdk.CredentialsOutput) {
		if in.Server().Name() == "cred_denied" {
			for i := 0; i < in.Server().Credentials().Len(); i++ {
				out.Deny(i, "guard denies the credentials of cred_denied")
			}
		}
	})
	sdk.ToolCall(func(in sdk.ToolCallInput, out *sdk.ToolCallOutput) {
		switch in.Tool() {
		case "add":
			out.Deny("guard blocks add")
		case "echo":
			out.Rewrite([]byte(`{"text":"rewritten by guard"}`))
		}
	})
}
