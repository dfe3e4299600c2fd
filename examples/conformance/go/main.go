// Command conformance is the Go half of the ABI conformance pair: the same
// policy as ../c/policy.c, written with the sdk. host/policytest's
// conformance tests build both guests and check that they answer every
// fixture in ../tests identically. See ../README.md for the rules.
//
// Both guests read the same fields in the same cases: a guest notices a
// reference outside the input only when it reads it.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o policy.wasm .
package main

import (
	"bytes"
	"strings"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func main() {}

func init() {
	sdk.Servers(servers)
	sdk.Credentials(credentials)
	sdk.ToolCall(toolCall)
	sdk.ResourceRead(resourceRead)
	sdk.PromptGet(promptGet)
	sdk.ToolResult(toolResult)
}

func servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	sdk.Log(sdk.LogDebug, "conformance: servers hook (Go guest)")
	id, kind := in.Thread().ID(), in.Thread().Kind()
	if id == "error" {
		out.Fail("conformance: asked to fail")
		return
	}
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		decideServer(kind, servers.At(i), out)
	}
}

// decideServer applies the first matching rule to s (or none).
func decideServer(kind string, s sdk.ServerView, out *sdk.ServersOutput) {
	// a) reviewer threads hide stdio servers (the transport kind: no string
	// comparison)
	if kind == "reviewer" && s.IsStdio() {
		out.Hide(s.Name(), "reviewer: stdio hidden")
		return
	}
	// b) deny-* names are disabled
	name := s.Name()
	if strings.HasPrefix(name, "deny-") {
		out.Disable(name, "denied by name: ", name)
		return
	}
	// c) a credential read from a SECRET_* variable disables the server
	creds := s.Credentials()
	for i := 0; i < creds.Len(); i++ {
		if env := creds.At(i).EnvVar(); strings.HasPrefix(env, "SECRET_") {
			out.Disable(name, "secret credential ", env)
			return
		}
	}
	// d) "limited" is exposed with only echo and add, and then add denied:
	// one decision carrying the reason and both tool lists.
	if name == "limited" {
		out.Add(abi.ServerDecision{Name: name, Reason: "limited", AllowTools: []string{"echo", "add"}, DenyTools: []string{"add"}})
		return
	}
	// d2) "items" gets prompt and resource lists (ABI version 2), in one
	// decision
	if name == "items" {
		out.Add(abi.ServerDecision{Name: name, Reason: "items",
			AllowPrompts: []string{"greet", "blocked"}, DenyPrompts: []string{"blocked"},
			AllowResources: []string{"file:///pub/*"}, DenyResources: []string{"file:///pub/secret"}})
		return
	}
	// e) --unsafe in the arguments disables the server
	if s.Args().Contains("--unsafe") {
		out.Disable(name, "unsafe args")
		return
	}
	// f) no opinion
}

func credentials(in sdk.CredentialsInput, out *sdk.CredentialsOutput) {
	route := in.Route()
	creds := in.Server().Credentials()
	for i := 0; i < creds.Len(); i++ {
		switch env := creds.At(i).EnvVar(); {
		case strings.HasPrefix(env, "SECRET_"):
			out.Deny(i, "secret")
		case route != "local":
			out.Executor(i, "route ", route)
		default:
			out.Local(i)
		}
	}
}

var rewritten = []byte(`{"text":"rewritten"}`)

func toolCall(in sdk.ToolCallInput, out *sdk.ToolCallOutput) {
	tool, server := in.Tool(), in.Server()
	switch {
	case tool == "fail":
		out.Deny("tool fail is blocked")
	case tool == "ask":
		out.Ask("confirm ask on ", server)
	case tool == "echo" && server == "rewrite":
		out.Rewrite(rewritten)
	}
}

func resourceRead(in sdk.ResourceReadInput, out *sdk.ResourceReadOutput) {
	if uri := in.URI(); strings.HasPrefix(uri, "file:///etc/") {
		out.Deny("resource under /etc: ", uri)
	}
}

var greeting = []byte(`{"name":"conformance"}`)

func promptGet(in sdk.PromptGetInput, out *sdk.PromptGetOutput) {
	switch in.Name() {
	case "blocked":
		out.Deny("prompt blocked on ", in.Server())
	case "greet":
		out.Rewrite(greeting)
	}
}

// marker is the string the tool_result hook redacts.
var marker = []byte("CONFORMANCE-SECRET")

var redacted = []byte(`{"content":[{"type":"text","text":"[redacted]"}]}`)

func toolResult(in sdk.ToolResultInput, out *sdk.ToolResultOutput) {
	switch {
	case bytes.Contains(in.Result(), marker):
		out.Rewrite(redacted, "marker redacted from ", in.Tool())
	case in.IsError():
		out.Error("upstream error from ", in.Tool())
	}
}
