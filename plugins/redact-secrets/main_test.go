package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/sdk"
)

// A fake GitHub token, built at run time.
var token = "ghp_" + strings.Repeat("Zx81", 9)

func TestToolCall(t *testing.T) {
	tests := []struct {
		name, args string
		rewrite    string // "" for no rewrite
		fails      bool
	}{
		{"secret redacted", `{"cmd":"git push https://` + token + `@github.com/x"}`, `{"cmd":"git push https://[REDACTED:github_token]@github.com/x"}`, false},
		{"clean arguments", `{"path":"/tmp/x"}`, "", false},
		{"unscannable arguments fail closed", `{"a":"open`, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := sdk.EvalToolCall(&abi.ToolCallInput{Server: "git", Tool: "run", Arguments: abi.RawJSON(tc.args)})
			if tc.fails {
				if err == nil && out.Error == "" {
					t.Fatalf("out = %+v, want a guest error", out)
				}
				return
			}
			if err != nil || out.Error != "" {
				t.Fatalf("err = %v, out.Error = %q", err, out.Error)
			}
			if out.Action != abi.ToolCallAllow || out.Rewrite != (tc.rewrite != "") || (out.Rewrite && string(out.Arguments) != tc.rewrite) {
				t.Fatalf("out = %v rewrite %v %s, want allow with rewrite %q", out.Action, out.Rewrite, out.Arguments, tc.rewrite)
			}
		})
	}
}

func TestToolResult(t *testing.T) {
	planted := `{"content":[{"type":"text","text":"token: ` + token + `"}]}`
	out, err := sdk.EvalToolResult(&abi.ToolResultInput{Server: "fs", Tool: "read_file", Result: abi.RawJSON(planted)})
	if err != nil || out.Error != "" {
		t.Fatalf("err = %v, out.Error = %q", err, out.Error)
	}
	if out.Action != abi.ToolResultRewrite || !json.Valid(out.Result) || strings.Contains(string(out.Result), token) {
		t.Fatalf("out = %v %s", out.Action, out.Result)
	}
	if want := "redact-secrets: redacted 1 secret (github_token×1) from the result of read_file"; out.Reason != want {
		t.Fatalf("reason %q, want %q", out.Reason, want)
	}
	clean, err := sdk.EvalToolResult(&abi.ToolResultInput{Tool: "t", Result: abi.RawJSON(`{"content":[]}`)})
	if err != nil || clean.Action != abi.ToolResultPass || clean.Reason != "" {
		t.Fatalf("clean result: %+v, %v", clean, err)
	}
}

// TestWarmCallsAllocateLittle: a result without secrets passes without an allocation; a
// redaction costs at most the reason's string.
func TestWarmCallsAllocateLittle(t *testing.T) {
	enc := func(result string) []byte {
		return (&abi.ToolResultInput{Tool: "read_file", Result: abi.RawJSON(result)}).AppendTo(nil)
	}
	for _, tc := range []struct {
		name   string
		input  []byte
		allocs float64
	}{
		{"pass", enc(`{"content":[{"type":"text","text":"` + strings.Repeat("nothing to see here ", 100) + `"}]}`), 0},
		{"rewrite", enc(`{"content":[{"type":"text","text":"` + token + `"}]}`), 1},
	} {
		if n := testing.AllocsPerRun(100, func() { _, _ = sdk.Invoke(abi.HookToolResult, tc.input) }); n > tc.allocs {
			t.Errorf("%s: %v allocations per call, want at most %v", tc.name, n, tc.allocs)
		}
	}
}
