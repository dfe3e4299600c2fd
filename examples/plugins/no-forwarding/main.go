// Command no-forwarding is a policy plugin that denies forwarding credentials
// to an executor, except for the servers named in policy.Forwardable. The
// policy is in ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/examples/plugins/no-forwarding/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() { sdk.Credentials(policy.Credentials) }
