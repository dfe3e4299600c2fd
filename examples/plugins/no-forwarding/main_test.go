package main

import (
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func TestPolicy(t *testing.T) {
	creds := []abi.Credential{
		{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: "local", ResolvesAt: "exec-1"},
		{Kind: "env_var", Name: "HOME_KEY", EnvVar: "HOME_KEY", Owner: "local", ResolvesAt: "local"},
		{Kind: "header_env", Name: "X-Key", EnvVar: "KEY", Owner: "exec-1", ResolvesAt: "exec-1"},
	}
	tests := []struct {
		name   string
		server string
		route  string
		denied []uint32
	}{
		{"executor route denied", "github", "exec-1", []uint32{0, 2}},
		{"named server may forward", "node_repl", "exec-1", nil},
		{"second named server may forward", "browser", "exec-1", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sdk.EvalCredentials(&abi.CredentialsInput{
				Server: abi.Server{Name: tc.server, Transport: "http", Credentials: creds},
				Route:  tc.route,
			})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if len(out.Decisions) != len(tc.denied) {
				t.Fatalf("decisions = %+v, want deny %v", out.Decisions, tc.denied)
			}
			for i, d := range out.Decisions {
				if d.Index != tc.denied[i] || d.Action != abi.CredentialDeny {
					t.Fatalf("decision %d = %+v, want deny %d", i, d, tc.denied[i])
				}
			}
		})
	}
}
