package main

import (
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func TestToolCall(t *testing.T) {
	tests := []struct {
		tool string
		want abi.ToolCallAction
	}{
		{"fail", abi.ToolCallDeny},
		{"delete_file", abi.ToolCallDeny},
		{"delete_", abi.ToolCallDeny},
		{"read_file", abi.ToolCallAllow},
		{"undelete_file", abi.ToolCallAllow},
		{"failsafe", abi.ToolCallAllow},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			out, err := sdk.EvalToolCall(&abi.ToolCallInput{Server: "fs", Tool: tc.tool, Arguments: []byte(`{"path":"/tmp/x"}`)})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if out.Action != tc.want || out.Rewrite {
				t.Fatalf("out = %+v, want %v without rewrite", out, tc.want)
			}
			if tc.want == abi.ToolCallDeny && out.Reason != "tool "+tc.tool+" is blocked by policy" {
				t.Fatalf("reason = %q", out.Reason)
			}
		})
	}
}

func TestServers(t *testing.T) {
	tests := []struct {
		name    string
		servers []abi.Server
	}{
		{"two servers", []abi.Server{{Name: "fs", Transport: "stdio"}, {Name: "docs", Transport: "http"}}},
		{"none", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sdk.EvalServers(&abi.ServersInput{Servers: tc.servers})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if len(out.Decisions) != len(tc.servers) {
				t.Fatalf("decisions = %+v", out.Decisions)
			}
			for i, d := range out.Decisions {
				if d.Name != tc.servers[i].Name || d.Action != abi.ServerExpose || len(d.DenyTools) != 1 || d.DenyTools[0] != "fail" {
					t.Fatalf("decision %d = %+v, want deny_tools [fail] for %s", i, d, tc.servers[i].Name)
				}
			}
		})
	}
}
