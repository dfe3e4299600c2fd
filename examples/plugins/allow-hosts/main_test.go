package main

import (
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func TestPolicy(t *testing.T) {
	tests := []struct {
		name   string
		server abi.Server
		want   abi.ServerAction
		reason string
	}{
		{"subdomain allowed", abi.Server{Name: "docs", Transport: "http", URL: "https://docs.example.com/mcp"}, abi.ServerExpose, ""},
		{"deep subdomain, port, case", abi.Server{Name: "api", Transport: "http", URL: "https://A.B.Example.COM:8443/v1"}, abi.ServerExpose, ""},
		{"loopback allowed", abi.Server{Name: "repl", Transport: "http", URL: "http://127.0.0.1:7777/mcp"}, abi.ServerExpose, ""},
		{"localhost allowed", abi.Server{Name: "local", Transport: "http", URL: "http://localhost:3000/"}, abi.ServerExpose, ""},
		{"apex not allowed", abi.Server{Name: "apex", Transport: "http", URL: "https://example.com/mcp"}, abi.ServerDisable, "host example.com is not in the allow list"},
		{"other host disabled", abi.Server{Name: "evil", Transport: "http", URL: "https://mcp.evil.org/mcp"}, abi.ServerDisable, "host mcp.evil.org is not in the allow list"},
		{"userinfo trick disabled", abi.Server{Name: "trick", Transport: "http", URL: "https://docs.example.com@evil.org/"}, abi.ServerDisable, "host evil.org is not in the allow list"},
		{"stdio untouched", abi.Server{Name: "fs", Transport: "stdio", Command: "npx"}, abi.ServerExpose, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sdk.EvalServers(&abi.ServersInput{Servers: []abi.Server{tc.server}})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			got, reason := abi.ServerExpose, ""
			for _, d := range out.Decisions {
				if d.Name != tc.server.Name {
					t.Fatalf("decision for unknown server %q", d.Name)
				}
				got, reason = got.Max(d.Action), d.Reason
			}
			if got != tc.want || reason != tc.reason {
				t.Fatalf("got %v %q, want %v %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}
