// Command no-forwarding is a policy plugin that denies forwarding credentials
// to an executor, except for the servers named in forwardable.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"slices"

	"github.com/warden-mcp/warden/sdk"
)

// forwardable are the servers whose credentials may resolve in an executor.
var forwardable = []string{"node_repl", "browser"}

func main() {}

func init() {
	sdk.Credentials(func(in *sdk.CredentialsInput, out *sdk.CredentialsOutput) {
		if slices.Contains(forwardable, in.Server.Name) {
			return
		}
		for i, c := range in.Server.Credentials {
			if c.ResolvesAt != "" && c.ResolvesAt != "local" {
				out.Deny(i, "credential forwarding to an executor is not allowed for this server")
			}
		}
	})
}
