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
	sdk.Servers(func(in *sdk.ServersInput, out *sdk.ServersOutput) {
		for i := range in.Servers {
			s := &in.Servers[i]
			switch s.Name {
			case "hidden_by_guard":
				out.Hide(s.Name, "hidden by guard")
			case "disabled_by_guard":
				out.Disable(s.Name, "disabled by guard")
			}
			out.DenyTools(s.Name, "fail")
		}
	})
	sdk.Credentials(func(in *sdk.CredentialsInput, out *sdk.CredentialsOutput) {
		if in.Server.Name == "cred_denied" {
			for i := range in.Server.Credentials {
				out.Deny(i, "guard denies the credentials of cred_denied")
			}
		}
	})
	sdk.ToolCall(func(in *sdk.ToolCallInput, out *sdk.ToolCallOutput) {
		switch in.Tool {
		case "add":
			out.Deny("guard blocks add")
		case "echo":
			out.Rewrite([]byte(`{"text":"rewritten by guard"}`))
		}
	})
}
