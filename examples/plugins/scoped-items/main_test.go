package main

import (
	"slices"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

func TestServers(t *testing.T) {
	out, err := sdk.EvalServers(&abi.ServersInput{Servers: []abi.Server{{Name: "a"}, {Name: "b"}}})
	if err != nil || out.Error != "" {
		t.Fatalf("err = %v, out.Error = %q", err, out.Error)
	}
	lists := map[string][]string{}
	for _, d := range out.Decisions {
		if d.Action != abi.ServerExpose {
			t.Fatalf("decision %+v, want expose", d)
		}
		lists[d.Name+" allowResources"] = append(lists[d.Name+" allowResources"], d.AllowResources...)
		lists[d.Name+" denyResources"] = append(lists[d.Name+" denyResources"], d.DenyResources...)
		lists[d.Name+" denyPrompts"] = append(lists[d.Name+" denyPrompts"], d.DenyPrompts...)
	}
	for _, name := range []string{"a", "b"} {
		if got := lists[name+" allowResources"]; !slices.Equal(got, []string{"docs://*", "file:///docs/*"}) {
			t.Errorf("%s: allowResources %q", name, got)
		}
		if got := lists[name+" denyResources"]; !slices.Equal(got, []string{"file:///docs/drafts/*"}) {
			t.Errorf("%s: denyResources %q", name, got)
		}
		if got := lists[name+" denyPrompts"]; !slices.Equal(got, []string{"debug"}) {
			t.Errorf("%s: denyPrompts %q", name, got)
		}
	}
}

func TestResourceRead(t *testing.T) {
	tests := []struct {
		uri  string
		deny bool
	}{
		{"file:///docs/a.md", false},
		{"file:///docs/../etc/passwd", true},
		{"file:///docs/..", true},
		{"file:///docs/%2e%2E/x", true},
		{"file:///docs/.%2e/x", true},
		{"docs://a..b", false},
		{"docs://.../x", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			out, err := sdk.EvalResourceRead(&abi.ResourceReadInput{Server: "s", URI: tc.uri})
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if got := out.Action == abi.ToolCallDeny; got != tc.deny {
				t.Fatalf("%q: deny = %v (%q), want %v", tc.uri, got, out.Reason, tc.deny)
			}
		})
	}
}
