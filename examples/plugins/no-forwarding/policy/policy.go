// Package policy is the no-forwarding policy, separate from the plugin's
// main package so that native benchmarks can link it (see ../main.go).
package policy

import (
	"slices"

	"github.com/warden-mcp/warden/sdk"
)

// Forwardable are the servers whose credentials may resolve in an executor.
var Forwardable = []string{"node_repl", "browser"}

// Credentials denies every credential that would resolve in an executor,
// except for the servers in Forwardable.
func Credentials(in sdk.CredentialsInput, out *sdk.CredentialsOutput) {
	if slices.Contains(Forwardable, in.Server().Name()) {
		return
	}
	creds := in.Server().Credentials()
	for i := 0; i < creds.Len(); i++ {
		if at := creds.At(i).ResolvesAt(); at != "" && at != "local" {
			out.Deny(i, "credential forwarding to an executor is not allowed for this server")
		}
	}
}
