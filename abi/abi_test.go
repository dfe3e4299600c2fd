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
		{abi.ToolCallAction(2), abi.ToolCallAllow, abi.ToolCallDeny},
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
		{abi.AllHooks | 8, "servers|credentials|tool_call|Hook(0x8)", ""},
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
