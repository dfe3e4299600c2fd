// Command reviewer-no-stdio is a policy plugin that hides every stdio server
// in reviewer threads: a reviewer reads, it does not run local processes.
// The policy is in ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/examples/plugins/reviewer-no-stdio/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() { sdk.Servers(policy.Servers) }
