// Command allow-hosts is a policy plugin that exposes an HTTP server only if
// its URL host is on an allow list; other HTTP servers are disabled with a
// reason naming the host. Stdio servers are left alone. The policy is in
// ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/examples/plugins/allow-hosts/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() { sdk.Servers(policy.Servers) }
