// Package policy is the allow-hosts policy, separate from the plugin's main
// package so that native benchmarks can link it (see ../main.go).
package policy

import "github.com/warden-mcp/warden/sdk"

// Allowed are the permitted hosts; "*.example.com" matches any subdomain.
var Allowed = sdk.NewHostSet("*.example.com", "127.0.0.1", "localhost")

// Servers disables every HTTP server whose URL host is not in Allowed.
func Servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		if s := servers.At(i); s.IsHTTP() {
			if host := s.URLHost(); !Allowed.Match(host) {
				out.Disable(s.Name(), "host ", host, " is not in the allow list")
				sdk.Log(sdk.LogDebug, "allow-hosts: disabled ", s.Name())
			}
		}
	}
}
