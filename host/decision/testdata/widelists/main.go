// Command widelists is a Go policy (built for wasip1 by the host/decision tests) whose
// answers are legal but as large as the output cap allows: for every server it names
// tool lists of many thousands of entries, the shape that made folding quadratic. Its
// credentials hook answers for an index past the server's credentials.
package main

import (
	"strconv"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

// tools returns n distinct tool names, in descending order (the worst case for a fold
// that keeps its lists in insertion order).
func tools(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(n-i)
	}
	return out
}

func init() {
	sdk.Servers(func(in sdk.ServersInput, out *sdk.ServersOutput) {
		servers := in.Servers()
		for i := 0; i < servers.Len(); i++ {
			name := servers.At(i).Name()
			// A deny list and an allow list of 120000 names each (≈1.8 MB: the tests
			// raise the output cap, which an operator may do too).
			out.DenyTools(name, tools("t", 120000)...)
			out.AllowTools(name, tools("t", 120000)...)
		}
	})
	sdk.Credentials(func(in sdk.CredentialsInput, out *sdk.CredentialsOutput) {
		out.Local(0)
		out.Local(7) // the servers in the tests have fewer credentials
	})
}
