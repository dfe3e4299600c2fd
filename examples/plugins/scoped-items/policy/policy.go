// Package policy is the scoped-items policy, separate from the plugin's main package so
// that native tests and benchmarks can link it (see ../main.go).
package policy

import (
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

// Servers scopes every server's resources to docs:// and file:///docs/ (resource templates
// are matched by their URI template), never drafts, and takes the "debug" prompt away.
func Servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		name := servers.At(i).Name()
		out.AllowResources(name, "docs://*", "file:///docs/*")
		out.DenyResources(name, "file:///docs/drafts/*")
		out.DenyPrompts(name, "debug")
	}
}

// ResourceRead denies a URI with a ".." segment: the lists match by prefix, and
// file:///docs/../etc/passwd starts with file:///docs/.
func ResourceRead(in sdk.ResourceReadInput, out *sdk.ResourceReadOutput) {
	if uri := in.URI(); climbs(uri) {
		out.Deny("resource ", uri, " climbs out of its directory")
	}
}

// climbs reports whether uri has a ".." path segment, literally or percent-encoded.
func climbs(uri string) bool {
	for len(uri) > 0 {
		seg, rest, _ := strings.Cut(uri, "/")
		switch strings.ToLower(seg) {
		case "..", "%2e%2e", ".%2e", "%2e.":
			return true
		}
		uri = rest
	}
	return false
}
