package abi_test

import (
	"errors"
	"testing"

	"github.com/warden-mcp/warden/abi"
)

func TestServerActionMax(t *testing.T) {
	tests := []struct {
		a, b, want abi.ServerAction
		more       bool // a.MoreRestrictive(b)
	}{
		{abi.ServerExpose, abi.ServerExpose, abi.ServerExpose, false},
		{abi.ServerExpose, abi.ServerDisable, abi.ServerDisable, false},
		{abi.ServerHide, abi.ServerDisable, abi.ServerHide, true},
		{abi.ServerDisable, abi.ServerHide, abi.ServerHide, false},
		{abi.ServerDisable, abi.ServerExpose, abi.ServerDisable, true},
		{abi.ServerAction(9), abi.ServerDisable, abi.ServerHide, true},
		{abi.ServerExpose, abi.ServerAction(-1), abi.ServerHide, false},
	}
	for _, tc := range tests {
		t.Run(tc.a.String()+"/"+tc.b.String(), func(t *testing.T) {
			if got := tc.a.Max(tc.b); got != tc.want {
				t.Fatalf("Max = %v, want %v", got, tc.want)
			}
			if got := tc.a.MoreRestrictive(tc.b); got != tc.more {
				t.Fatalf("MoreRestrictive = %v, want %v", got, tc.more)
			}
		})
	}
}

func TestCredentialActionMax(t *testing.T) {
	tests := []struct {
		a, b, want abi.CredentialAction
	}{
		{abi.CredentialUnspecified, abi.CredentialLocal, abi.CredentialLocal},
		{abi.CredentialExecutor, abi.CredentialLocal, abi.CredentialExecutor},
		{abi.CredentialExecutor, abi.CredentialDeny, abi.CredentialDeny},
		{abi.CredentialAction(4), abi.CredentialLocal, abi.CredentialDeny},
	}
	for _, tc := range tests {
		t.Run(tc.a.String()+"/"+tc.b.String(), func(t *testing.T) {
			if got := tc.a.Max(tc.b); got != tc.want {
				t.Fatalf("Max = %v, want %v", got, tc.want)
			}
			if tc.want == tc.a && tc.a != tc.b && tc.a.Valid() && !tc.a.MoreRestrictive(tc.b) {
				t.Fatal("MoreRestrictive = false")
			}
		})
	}
}

func TestToolCallActionMax(t *testing.T) {
	tests := []struct {
		a, b, want abi.ToolCallAction
	}{
		{abi.ToolCallAllow, abi.ToolCallAllow, abi.ToolCallAllow},
		{abi.ToolCallAllow, abi.ToolCallDeny, abi.ToolCallDeny},
		{abi.ToolCallDeny, abi.ToolCallAllow, abi.ToolCallDeny},
		{abi.ToolCallAsk, abi.ToolCallAllow, abi.ToolCallAsk},
		{abi.ToolCallAllow, abi.ToolCallAsk, abi.ToolCallAsk},
		{abi.ToolCallAsk, abi.ToolCallDeny, abi.ToolCallDeny},
		{abi.ToolCallDeny, abi.ToolCallAsk, abi.ToolCallDeny},
		{abi.ToolCallAction(3), abi.ToolCallAllow, abi.ToolCallDeny},
		{abi.ToolCallAllow, abi.ToolCallAction(-1), abi.ToolCallDeny},
	}
	for _, tc := range tests {
		t.Run(tc.a.String()+"/"+tc.b.String(), func(t *testing.T) {
			if got := tc.a.Max(tc.b); got != tc.want {
				t.Fatalf("Max = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStringsAndParse(t *testing.T) {
	tests := []struct {
		name  string
		str   string
		parse func(string) (string, error)
	}{
		{"expose", abi.ServerExpose.String(), func(s string) (string, error) { a, err := abi.ParseServerAction(s); return a.String(), err }},
		{"disable", abi.ServerDisable.String(), func(s string) (string, error) { a, err := abi.ParseServerAction(s); return a.String(), err }},
		{"hide", abi.ServerHide.String(), func(s string) (string, error) { a, err := abi.ParseServerAction(s); return a.String(), err }},
		{"unspecified", abi.CredentialUnspecified.String(), func(s string) (string, error) { a, err := abi.ParseCredentialAction(s); return a.String(), err }},
		{"local", abi.CredentialLocal.String(), func(s string) (string, error) { a, err := abi.ParseCredentialAction(s); return a.String(), err }},
		{"executor", abi.CredentialExecutor.String(), func(s string) (string, error) { a, err := abi.ParseCredentialAction(s); return a.String(), err }},
		{"deny", abi.CredentialDeny.String(), func(s string) (string, error) { a, err := abi.ParseCredentialAction(s); return a.String(), err }},
		{"allow", abi.ToolCallAllow.String(), func(s string) (string, error) { a, err := abi.ParseToolCallAction(s); return a.String(), err }},
		{"deny", abi.ToolCallDeny.String(), func(s string) (string, error) { a, err := abi.ParseToolCallAction(s); return a.String(), err }},
		{"servers", abi.HookServers.String(), func(s string) (string, error) { h, err := abi.ParseHook(s); return h.String(), err }},
		{"credentials", abi.HookCredentials.String(), func(s string) (string, error) { h, err := abi.ParseHook(s); return h.String(), err }},
		{"tool_call", abi.HookToolCall.String(), func(s string) (string, error) { h, err := abi.ParseHook(s); return h.String(), err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.str != tc.name {
				t.Fatalf("String() = %q, want %q", tc.str, tc.name)
			}
			got, err := tc.parse(tc.str)
			if err != nil || got != tc.name {
				t.Fatalf("parse = %q, %v", got, err)
			}
			var pe *abi.ParseError
			if _, err := tc.parse("bogus"); !errors.As(err, &pe) {
				t.Fatalf("parse(bogus) error = %v", err)
			}
		})
	}
}

func TestHookMask(t *testing.T) {
	tests := []struct {
		h      abi.Hook
		str    string
		export string
	}{
		{0, "none", ""},
		{abi.HookServers, "servers", abi.ExportServers},
		{abi.HookCredentials, "credentials", abi.ExportCredentials},
		{abi.HookToolCall, "tool_call", abi.ExportToolCall},
		{abi.HookServers | abi.HookToolCall, "servers|tool_call", ""},
		{abi.HookResourceRead, "resource_read", abi.ExportResourceRead},
		{abi.HookPromptGet, "prompt_get", abi.ExportPromptGet},
		{abi.HookToolResult, "tool_result", abi.ExportToolResult},
		{abi.V1Hooks | 64, "servers|credentials|tool_call|Hook(0x40)", ""},
		{abi.AllHooks | 64, "servers|credentials|tool_call|resource_read|prompt_get|tool_result|Hook(0x40)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.str, func(t *testing.T) {
			if got := tc.h.String(); got != tc.str {
				t.Fatalf("String = %q", got)
			}
			if got := tc.h.Export(); got != tc.export {
				t.Fatalf("Export = %q", got)
			}
		})
	}
}

func TestLogLevel(t *testing.T) {
	tests := []struct {
		l     abi.LogLevel
		str   string
		valid bool
	}{
		{abi.LogTrace, "trace", true},
		{abi.LogDebug, "debug", true},
		{abi.LogInfo, "info", true},
		{abi.LogWarn, "warn", true},
		{abi.LogError, "error", true},
		{0, "LogLevel(0)", false},
		{6, "LogLevel(6)", false},
	}
	for _, tc := range tests {
		t.Run(tc.str, func(t *testing.T) {
			if tc.l.String() != tc.str || tc.l.Valid() != tc.valid {
				t.Fatalf("%d: %q %v", tc.l, tc.l.String(), tc.l.Valid())
			}
		})
	}
}

func TestToolResultActionMax(t *testing.T) {
	tests := []struct {
		a, b, want abi.ToolResultAction
	}{
		{abi.ToolResultPass, abi.ToolResultPass, abi.ToolResultPass},
		{abi.ToolResultPass, abi.ToolResultRewrite, abi.ToolResultRewrite},
		{abi.ToolResultError, abi.ToolResultRewrite, abi.ToolResultError},
		{abi.ToolResultAction(3), abi.ToolResultPass, abi.ToolResultError},
	}
	for _, tc := range tests {
		t.Run(tc.a.String()+"/"+tc.b.String(), func(t *testing.T) {
			if got := tc.a.Max(tc.b); got != tc.want {
				t.Fatalf("Max = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestVersions: what each ABI version defines.
func TestVersions(t *testing.T) {
	if abi.HooksOf(1) != abi.V1Hooks || abi.HooksOf(2) != abi.AllHooks || abi.HooksOf(0) != 0 || abi.HooksOf(3) != 0 {
		t.Fatalf("HooksOf: %v %v %v %v", abi.HooksOf(1), abi.HooksOf(2), abi.HooksOf(0), abi.HooksOf(3))
	}
	for _, h := range abi.Hooks() {
		want := 2
		if abi.V1Hooks.Has(h) {
			want = 1
		}
		if h.Since() != want {
			t.Errorf("%v.Since() = %d, want %d", h, h.Since(), want)
		}
		if p, err := abi.ParseHook(h.String()); err != nil || p != h {
			t.Errorf("ParseHook(%q) = %v, %v", h.String(), p, err)
		}
	}
	if abi.Hook(3).Since() != 0 || abi.Hook(64).Since() != 0 {
		t.Error("Since of a mask or an unknown bit is not 0")
	}
	if abi.ToolCallAsk.ValidIn(1) || !abi.ToolCallAsk.ValidIn(2) || !abi.ToolCallDeny.ValidIn(1) || abi.ToolCallAction(3).ValidIn(2) {
		t.Error("ValidIn")
	}
	ask := abi.ToolCallOutput{Action: abi.ToolCallAsk}
	if err := ask.HoldTo(1); !errors.Is(err, abi.ErrEnum) {
		t.Fatalf("ASK held to v1: %v, want ErrEnum", err)
	}
	if err := ask.HoldTo(2); err != nil {
		t.Fatal(err)
	}
	out := abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "a", AllowTools: []string{"t"}, AllowPrompts: []string{"p"}, DenyPrompts: []string{"q"}, AllowResources: []string{"r"}, DenyResources: []string{"s"}}}}
	v2 := out
	v2.Decisions = append([]abi.ServerDecision(nil), out.Decisions...)
	v2.HoldTo(2)
	if len(v2.Decisions[0].AllowPrompts) != 1 {
		t.Fatal("HoldTo(2) dropped a v2 field")
	}
	out.HoldTo(1)
	if d := out.Decisions[0]; d.AllowPrompts != nil || d.DenyPrompts != nil || d.AllowResources != nil || d.DenyResources != nil || len(d.AllowTools) != 1 {
		t.Fatalf("HoldTo(1) = %+v", d)
	}
}
