// Command conformance is the Go half of the ABI conformance pair: the same
// policy as ../c/policy.c, written with the sdk. host/policytest's
// conformance tests build both guests and check that they answer every
// fixture in ../tests identically. See ../README.md for the rules.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"strings"

	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(servers)
	sdk.Credentials(credentials)
	sdk.ToolCall(toolCall)
}

func servers(in *sdk.ServersInput, out *sdk.ServersOutput) {
	sdk.Log(sdk.LogDebug, "conformance: servers hook (Go guest)")
	if in.Thread.ID == "error" {
		out.Fail("conformance: asked to fail")
		return
	}
	for i := range in.Servers {
		decideServer(in.Thread.Kind, &in.Servers[i], out)
	}
}

// decideServer applies the first matching rule to s (or none).
func decideServer(kind string, s *sdk.Server, out *sdk.ServersOutput) {
	// a) reviewer threads hide stdio servers
	if kind == "reviewer" && s.Transport == "stdio" {
		out.Hide(s.Name, "reviewer: stdio hidden")
		return
	}
	// b) deny-* names are disabled
	if strings.HasPrefix(s.Name, "deny-") {
		out.Disable(s.Name, "denied by name: "+s.Name)
		return
	}
	// c) a credential read from a SECRET_* variable disables the server
	for _, c := range s.Credentials {
		if strings.HasPrefix(c.EnvVar, "SECRET_") {
			out.Disable(s.Name, "secret credential "+c.EnvVar)
			return
		}
	}
	// d) "limited" is exposed with only echo and add, and then add denied.
	// One decision carrying the reason and both tool lists: Expose adds it,
	// and its lists (reused by the sdk from call to call) are filled in.
	if s.Name == "limited" {
		out.Expose(s.Name, "limited")
		d := &out.Decisions[len(out.Decisions)-1]
		d.AllowTools = append(d.AllowTools, "echo", "add")
		d.DenyTools = append(d.DenyTools, "add")
		return
	}
	// e) --unsafe in the arguments disables the server
	for _, a := range s.Args {
		if a == "--unsafe" {
			out.Disable(s.Name, "unsafe args")
			return
		}
	}
	// f) no opinion
}

func credentials(in *sdk.CredentialsInput, out *sdk.CredentialsOutput) {
	for i, c := range in.Server.Credentials {
		switch {
		case strings.HasPrefix(c.EnvVar, "SECRET_"):
			out.Deny(i, "secret")
		case in.Route != "local":
			out.Executor(i, "route "+in.Route)
		default:
			out.Local(i, "")
		}
	}
}

var rewritten = []byte(`{"text":"rewritten"}`)

func toolCall(in *sdk.ToolCallInput, out *sdk.ToolCallOutput) {
	switch {
	case in.Tool == "fail":
		out.Deny("tool fail is blocked")
	case in.Tool == "echo" && in.Server == "rewrite":
		out.Rewrite(rewritten)
	}
}
