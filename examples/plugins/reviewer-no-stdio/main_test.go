package main

import (
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func TestPolicy(t *testing.T) {
	servers := []abi.Server{
		{Name: "fs", Transport: "stdio", Command: "npx"},
		{Name: "docs", Transport: "http", URL: "https://docs.example.com/mcp"},
		{Name: "browser", Transport: "stdio", Command: "browser-mcp", Origin: "plugin:browser"},
	}
	tests := []struct {
		name   string
		kind   string
		hidden []string
	}{
		{"reviewer hides stdio", "reviewer", []string{"fs", "browser"}},
		{"default thread untouched", "", nil},
		{"other kind untouched", "coder", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sdk.EvalServers(&abi.ServersInput{Thread: abi.Thread{ID: "t1", Kind: tc.kind}, Servers: servers})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if len(out.Decisions) != len(tc.hidden) {
				t.Fatalf("decisions = %+v, want hide %v", out.Decisions, tc.hidden)
			}
			for i, d := range out.Decisions {
				if d.Name != tc.hidden[i] || d.Action != abi.ServerHide || d.Reason == "" {
					t.Fatalf("decision %d = %+v, want hide %s", i, d, tc.hidden[i])
				}
			}
		})
	}
}
