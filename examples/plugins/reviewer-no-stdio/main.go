// Command reviewer-no-stdio is a policy plugin that hides every stdio server
// in reviewer threads: a reviewer reads, it does not run local processes.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import "github.com/warden-mcp/warden/sdk"

func main() {}

func init() {
	sdk.Servers(func(in *sdk.ServersInput, out *sdk.ServersOutput) {
		if in.Thread.Kind != "reviewer" {
			return
		}
		for i := range in.Servers {
			if s := &in.Servers[i]; s.Transport == "stdio" {
				out.Hide(s.Name, "stdio servers are hidden in reviewer threads")
			}
		}
	})
}
