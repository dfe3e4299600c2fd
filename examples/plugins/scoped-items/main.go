// Command scoped-items is a policy plugin over prompts and resources (ABI version 2): its
// servers hook gives every server resource and prompt lists, and its resource_read hook
// refuses URIs that climb out of the allowed directories. The policy is in ./policy.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"github.com/warden-mcp/warden/examples/plugins/scoped-items/policy"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(policy.Servers)
	sdk.ResourceRead(policy.ResourceRead)
}
