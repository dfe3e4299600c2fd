// Package policy is the redact-secrets policy, separate from the plugin's main package so
// that native tests and benchmarks link the same code the wasm module runs.
package policy

import (
	"github.com/warden-mcp/warden/plugins/redact-secrets/redact"
	"github.com/warden-mcp/warden/sdk"
)

// Policy redacts well-known secret shapes from tool-call arguments and tool results. Its
// buffers are reused from call to call, so that a warm call allocates nothing. The zero
// value is ready. A Policy is not safe for concurrent use, like the wasm instance it lives in.
type Policy struct {
	r      redact.Redactor
	buf    []byte // the rewritten arguments or result
	reason []byte
}

// ToolCall rewrites the call's arguments with every secret redacted, so that a secret the
// model pasted into a call never reaches the server. Arguments that do not scan (a string
// left open: never from the host, which validates them) fail closed.
func (p *Policy) ToolCall(in sdk.ToolCallInput, out *sdk.ToolCallOutput) {
	p.r.Reset()
	b, changed, err := p.r.JSON(p.buf[:0], in.Arguments())
	if err != nil {
		out.Fail("redact-secrets: arguments of " + in.Tool() + ": " + err.Error())
		return
	}
	if !changed {
		return
	}
	p.buf = b
	out.Rewrite(b)
	p.reason = p.appendReason(p.reason[:0], "the arguments of ", in.Tool())
	sdk.Log(sdk.LogInfo, string(p.reason))
}

// ToolResult rewrites the result with every secret redacted, before the client sees it. The
// reason, which goes into the decision log, names the kinds and counts, never a value.
func (p *Policy) ToolResult(in sdk.ToolResultInput, out *sdk.ToolResultOutput) {
	p.r.Reset()
	b, changed, err := p.r.JSON(p.buf[:0], in.Result())
	if err != nil {
		out.Fail("redact-secrets: result of " + in.Tool() + ": " + err.Error())
		return
	}
	if !changed {
		return
	}
	p.buf = b
	p.reason = p.appendReason(p.reason[:0], "the result of ", in.Tool())
	out.Rewrite(b, string(p.reason))
}

// appendReason appends "redact-secrets: redacted 2 secrets (github_token×1, jwt×1) from
// <what><tool>".
func (p *Policy) appendReason(b []byte, what, tool string) []byte {
	b = append(b, "redact-secrets: redacted "...)
	b = p.r.Counts.AppendReport(b)
	b = append(b, " from "...)
	b = append(b, what...)
	return append(b, tool...)
}
