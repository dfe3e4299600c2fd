package decision

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/policy"
)

// redactSecrets loads the first-party plugins/redact-secrets policy in a real runtime.
func redactSecrets(tb testing.TB, memo bool) Policy {
	tb.Helper()
	ctx := context.Background()
	rt, err := policy.NewRuntime(ctx, policy.Config{PoolSize: 1, CompilationCacheDir: testbuild.WazeroCache(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rt.Close(ctx) })
	memoEntries := -1
	if memo {
		memoEntries = 0
	}
	m, err := rt.Load(ctx, policy.LoadOptions{ID: "redact-secrets@1", Wasm: testbuild.GoGuest(tb, "../../plugins/redact-secrets"), MemoEntries: memoEntries})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// plantedKey is a fake AWS access key id, built at run time.
var plantedKey = "AKIA" + "IOSFODNN7EXAMPLE"

// TestRedactSecretsPolicy: with the first-party redaction policy as an operator policy, a
// secret planted in a tool's result never reaches the client, a secret in a call's arguments
// never reaches the server, and the decision log says what was redacted without the value.
func TestRedactSecretsPolicy(t *testing.T) {
	var log bytes.Buffer
	e := NewEngine(Options{Log: NewLog(&log)})
	e.SetPolicies([]Policy{redactSecrets(t, false)}, nil)
	ctx := context.Background()

	res := e.ToolResult(ctx, &abi.ToolResultInput{Thread: abi.Thread{ID: "t1"}, Server: "fs", Tool: "read_file",
		Arguments: abi.RawJSON(`{"path":"/home/u/.aws/credentials"}`),
		Result:    abi.RawJSON(`{"content":[{"type":"text","text":"[default]\naws_access_key_id = ` + plantedKey + `\n"}]}`)})
	if res.Action != abi.ToolResultRewrite || res.DecidedBy != "operator:redact-secrets@1" ||
		string(res.Result) != `{"content":[{"type":"text","text":"[default]\naws_access_key_id = [REDACTED:aws_access_key_id]\n"}]}` {
		t.Fatalf("result verdict %v by %s: %s", res.Action, res.DecidedBy, res.Result)
	}
	if want := "redact-secrets: redacted 1 secret (aws_access_key_id×1) from the result of read_file"; res.Reason != want {
		t.Fatalf("reason %q, want %q", res.Reason, want)
	}

	call := e.ToolCall(ctx, &abi.ToolCallInput{Thread: abi.Thread{ID: "t1"}, Server: "shell", Tool: "run",
		Arguments: abi.RawJSON(`{"cmd":"export AWS_ACCESS_KEY_ID=` + plantedKey + `"}`)}, ToolFilter{})
	if call.Action != abi.ToolCallAllow || string(call.Arguments) != `{"cmd":"export AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]"}` {
		t.Fatalf("call verdict %v: %s", call.Action, call.Arguments)
	}

	if strings.Contains(log.String(), plantedKey) {
		t.Fatalf("the decision log holds the secret:\n%s", log.String())
	}
	var sawResult, sawCall bool
	for _, l := range logLines(t, &log) {
		reasons, _ := l["reasons"].(map[string]any)
		switch {
		case l["hook"] == "tool_result" && l["plugin"] == "redact-secrets@1":
			sawResult = reasons["result"] == res.Reason && l["outcome"].(map[string]any)["result"] == "rewrite"
		case l["hook"] == "tool_call" && l["plugin"] == "redact-secrets@1":
			sawCall = reasons["call"] == "arguments rewritten by operator:redact-secrets@1"
		}
	}
	if !sawResult || !sawCall {
		t.Fatalf("log lacks the redactions (result %v, call %v):\n%s", sawResult, sawCall, log.String())
	}
}

// BenchmarkToolResult measures deciding one tool result: with no policy implementing the
// hook (the cost every call pays), and through the redaction policy in wazero on a 12 KiB
// result without and with secrets (memo off: every result is new).
func BenchmarkToolResult(b *testing.B) {
	result := func(secrets bool) abi.RawJSON {
		var sb strings.Builder
		sb.WriteString(`{"content":[`)
		for i := range 100 {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`{"type":"text","text":"a line of ordinary tool output /usr/share/doc 12345 \"quoted\"`)
			if secrets && i%25 == 0 {
				sb.WriteString(" " + plantedKey)
			}
			sb.WriteString(`"}`)
		}
		sb.WriteString(`]}`)
		return abi.RawJSON(sb.String())
	}
	ctx := context.Background()
	b.Run("no-hook", func(b *testing.B) {
		e := NewEngine(Options{})
		in := &abi.ToolResultInput{Thread: abi.Thread{ID: "t1"}, Server: "fs", Tool: "read_file", Result: result(false)}
		b.ReportAllocs()
		for b.Loop() {
			e.ToolResult(ctx, in)
		}
	})
	p := redactSecrets(b, false)
	for _, bc := range []struct {
		name    string
		secrets bool
	}{{"redact-secrets/clean", false}, {"redact-secrets/4-secrets", true}} {
		b.Run(bc.name, func(b *testing.B) {
			e := NewEngine(Options{})
			e.SetPolicies([]Policy{p}, nil)
			in := &abi.ToolResultInput{Thread: abi.Thread{ID: "t1"}, Server: "fs", Tool: "read_file", Result: result(bc.secrets)}
			b.SetBytes(int64(len(in.Result)))
			b.ReportAllocs()
			for b.Loop() {
				if v := e.ToolResult(ctx, in); (v.Action == abi.ToolResultRewrite) != bc.secrets {
					b.Fatalf("verdict %v %s", v.Action, v.Reason)
				}
			}
		})
	}
}
