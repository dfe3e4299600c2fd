// Package policy is the reviewer-no-stdio policy, separate from the
// plugin's main package so that native benchmarks can link it (see
// ../main.go).
package policy

import "github.com/warden-mcp/warden/sdk"

// Servers hides every stdio server in reviewer threads.
func Servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	if in.Thread().Kind() != "reviewer" {
		return
	}
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		if s := servers.At(i); s.IsStdio() {
			out.Hide(s.Name(), "stdio servers are hidden in reviewer threads")
		}
	}
}
