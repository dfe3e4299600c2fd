// Command allow-hosts is a policy plugin that exposes an HTTP server only if
// its URL host is on an allow list; other HTTP servers are disabled with a
// reason naming the host. Stdio servers are left alone.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import "github.com/warden-mcp/warden/sdk"

// allowed are the permitted hosts; "*.example.com" matches any subdomain.
var allowed = []string{"*.example.com", "127.0.0.1", "localhost"}

func main() {}

func init() {
	sdk.Servers(func(in *sdk.ServersInput, out *sdk.ServersOutput) {
		for i := range in.Servers {
			s := &in.Servers[i]
			if s.Transport != "http" {
				continue
			}
			if host := sdk.URLHost(s.URL); !sdk.HostIn(host, allowed...) {
				out.Disable(s.Name, "host "+host+" is not in the allow list")
				sdk.Log(sdk.LogDebug, "allow-hosts: disabled "+s.Name)
			}
		}
	})
}
