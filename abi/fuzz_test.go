package abi_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

// fuzzInput checks, for arbitrary bytes as the flat input of hook h: that
// Unmarshal never panics; that whatever decodes re-encodes to a stable form
// that decodes to the same value; that the views read the same value
// (without panicking) when Unmarshal succeeds, and otherwise fail to parse
// or panic only with an *abi.InputError. Seeds live in
// testdata/fuzz/<FuzzName> and are added here.
func fuzzInput(f *testing.F, h abi.Hook, newMsg func() message, seeds ...message) {
	for _, s := range seeds {
		b := s.AppendTo(nil)
		f.Add(b)
		f.Add(b[:len(b)/2])
		if r, err := abitest.Relayout(b, h, abitest.Layout{Dedup: true, StringsFirst: true}); err == nil {
			f.Add(r)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m1 := newMsg()
		err := m1.Unmarshal(data)
		if err != nil {
			readAllNoPanic(t, h, data)
			return
		}
		view, verr := readViews(h, data)
		if verr != nil {
			t.Fatalf("Unmarshal succeeded, the views' parse failed: %v\ninput %x", verr, data)
		}
		if !reflect.DeepEqual(normalize(view), normalize(m1)) {
			t.Fatalf("views read\n%+v\nUnmarshal\n%+v\ninput %x", view, m1, data)
		}
		enc1 := m1.AppendTo(nil)
		m2 := newMsg()
		if err := m2.Unmarshal(enc1); err != nil {
			t.Fatalf("re-decoding our own encoding failed: %v\ninput %x\nencoded %x", err, data, enc1)
		}
		if !reflect.DeepEqual(normalize(m1), normalize(m2)) {
			t.Fatalf("decode(encode(decode(x))) != decode(x)\ninput %x\n%+v\n%+v", data, m1, m2)
		}
		if enc2 := m2.AppendTo(nil); !bytes.Equal(enc1, enc2) {
			t.Fatalf("encoding not stable\n%x\n%x", enc1, enc2)
		}
	})
}

func FuzzUnmarshalServersInput(f *testing.F) {
	fuzzInput(f, abi.HookServers, func() message { return new(abi.ServersInput) },
		abitest.ServersInput20(), &abi.ServersInput{Servers: []abi.Server{{Name: "a"}}})
}

func FuzzUnmarshalCredentialsInput(f *testing.F) {
	fuzzInput(f, abi.HookCredentials, func() message { return new(abi.CredentialsInput) }, abitest.CredentialsInput())
}

func FuzzUnmarshalToolCallInput(f *testing.F) {
	fuzzInput(f, abi.HookToolCall, func() message { return new(abi.ToolCallInput) },
		abitest.ToolCallInput("delete_file", `{"path":"/tmp/x"}`))
}

// fuzzOutput checks, for arbitrary input, that Unmarshal never panics and
// that whatever decodes re-encodes to a stable form that decodes to the
// same value.
func fuzzOutput(f *testing.F, newMsg func() message, seeds ...message) {
	for _, s := range seeds {
		b := s.AppendTo(nil)
		f.Add(b)
		if len(b) > 3 {
			f.Add(b[:len(b)/2])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m1 := newMsg()
		if err := m1.Unmarshal(data); err != nil {
			return
		}
		enc1 := m1.AppendTo(nil)
		m2 := newMsg()
		if err := m2.Unmarshal(enc1); err != nil {
			t.Fatalf("re-decoding our own encoding failed: %v\ninput %x\nencoded %x", err, data, enc1)
		}
		if !reflect.DeepEqual(normalize(m1), normalize(m2)) {
			t.Fatalf("decode(encode(decode(x))) != decode(x)\ninput %x\n%+v\n%+v", data, m1, m2)
		}
		if enc2 := m2.AppendTo(nil); !bytes.Equal(enc1, enc2) {
			t.Fatalf("encoding not stable\n%x\n%x", enc1, enc2)
		}
		// Decoding into a warm value gives the same result as into a fresh one.
		m3 := newMsg()
		_ = m3.Unmarshal((&abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "warm", AllowTools: []string{"x"}}}}).AppendTo(nil))
		if err := m3.Unmarshal(data); err != nil {
			t.Fatalf("warm decode failed: %v", err)
		}
		if !reflect.DeepEqual(normalize(m1), normalize(m3)) {
			t.Fatalf("warm decode differs\ninput %x\n%+v\n%+v", data, m1, m3)
		}
	})
}

func FuzzUnmarshalServersOutput(f *testing.F) {
	fuzzOutput(f, func() message { return new(abi.ServersOutput) },
		&abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "a", Action: abi.ServerHide, Reason: "r", AllowTools: []string{"x"}, DenyTools: []string{"y"}}}},
		&abi.ServersOutput{Error: "boom"})
}

func FuzzUnmarshalCredentialsOutput(f *testing.F) {
	fuzzOutput(f, func() message { return new(abi.CredentialsOutput) },
		&abi.CredentialsOutput{Decisions: []abi.CredentialDecision{{Index: 3, Action: abi.CredentialDeny, Reason: "no"}}})
}

func FuzzUnmarshalToolCallOutput(f *testing.F) {
	fuzzOutput(f, func() message { return new(abi.ToolCallOutput) },
		&abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "no"},
		&abi.ToolCallOutput{Rewrite: true, Arguments: []byte(`{"a":1}`)})
}

func FuzzUnmarshalToolResultInput(f *testing.F) {
	fuzzInput(f, abi.HookToolResult, func() message { return new(abi.ToolResultInput) },
		abitest.ToolResultInput("read_file", `{"path":"/x"}`, `{"content":[{"type":"text","text":"hi"}]}`, true))
}

func FuzzUnmarshalResourceReadInput(f *testing.F) {
	fuzzInput(f, abi.HookResourceRead, func() message { return new(abi.ResourceReadInput) }, abitest.ResourceReadInput("file:///x"))
}

func FuzzUnmarshalPromptGetInput(f *testing.F) {
	fuzzInput(f, abi.HookPromptGet, func() message { return new(abi.PromptGetInput) }, abitest.PromptGetInput("p", `{"a":"b"}`))
}

func FuzzUnmarshalToolResultOutput(f *testing.F) {
	fuzzOutput(f, func() message { return new(abi.ToolResultOutput) },
		&abi.ToolResultOutput{Action: abi.ToolResultRewrite, Result: []byte(`{"content":[]}`)},
		&abi.ToolResultOutput{Action: abi.ToolResultError, Reason: "no"})
}

func FuzzUnmarshalPromptGetOutput(f *testing.F) {
	fuzzOutput(f, func() message { return new(abi.PromptGetOutput) },
		&abi.PromptGetOutput{Action: abi.ToolCallDeny, Reason: "no"},
		&abi.PromptGetOutput{Rewrite: true, Arguments: []byte(`{"a":"b"}`)})
}
