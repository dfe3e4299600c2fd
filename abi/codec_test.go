package abi_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

// message is what every ABI message implements.
type message interface {
	AppendTo(b []byte) []byte
	Unmarshal(b []byte) error
}

// roundTripCases returns one populated value and one fresh zero value of
// every message type.
func roundTripCases() []struct {
	name      string
	in, empty message
} {
	long := strings.Repeat("x", 300) // forces multi-byte lengths
	return []struct {
		name      string
		in, empty message
	}{
		{"Thread", &abi.Thread{ID: "t1", Kind: "reviewer", Roots: []abi.Root{{ID: "r", Location: "local", Path: "/p"}}}, &abi.Thread{}},
		{"Root", &abi.Root{ID: "r", Location: "environment", EnvironmentID: "exec-1", Path: long}, &abi.Root{}},
		{"Environment", &abi.Environment{ID: "exec-1", Local: true, Connected: true, HTTPHeaderEnvVars: true, Processes: true}, &abi.Environment{}},
		{"Credential", &abi.Credential{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: "local", ResolvesAt: "exec-1"}, &abi.Credential{}},
		{"Server", &abitest.ServersInput20().Servers[1], &abi.Server{}},
		{"ServerWithEmptyRepeated", &abi.Server{Name: "s", Args: []string{"", "a", ""}, EnabledTools: []string{""}}, &abi.Server{}},
		{"Requirement", &abi.Requirement{Name: "n", URL: "https://x", Command: "npx"}, &abi.Requirement{}},
		{"ServersInput20", abitest.ServersInput20(), &abi.ServersInput{}},
		{"ServersInputEmpty", &abi.ServersInput{}, &abi.ServersInput{}},
		{"ServerDecision", &abi.ServerDecision{Name: "s", Action: abi.ServerHide, Reason: long, AllowTools: []string{"a"}, DenyTools: []string{"b", "c"}}, &abi.ServerDecision{}},
		{"ServersOutput", &abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "a", Action: abi.ServerDisable, Reason: "r"}, {Name: "b"}}, Error: "boom"}, &abi.ServersOutput{}},
		{"CredentialsInput", abitest.CredentialsInput(), &abi.CredentialsInput{}},
		{"CredentialDecision", &abi.CredentialDecision{Index: 1 << 31, Action: abi.CredentialDeny, Reason: "no"}, &abi.CredentialDecision{}},
		{"CredentialsOutput", &abi.CredentialsOutput{Decisions: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialExecutor}, {Index: 1, Action: abi.CredentialDeny, Reason: "no"}}}, &abi.CredentialsOutput{}},
		{"ToolCallInput", abitest.ToolCallInput("read_file", `{"path":"/etc/hosts"}`), &abi.ToolCallInput{}},
		{"ToolCallOutput", &abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "no", Rewrite: true, Arguments: []byte(`{}`), Error: "e"}, &abi.ToolCallOutput{}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.in.AppendTo(nil)
			if err := tc.empty.Unmarshal(b); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(normalize(tc.in), normalize(tc.empty)) {
				t.Fatalf("round trip mismatch:\n in: %+v\nout: %+v", tc.in, tc.empty)
			}
			// Re-encoding the decoded value is byte-identical.
			if b2 := tc.empty.AppendTo(nil); !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding differs:\n%x\n%x", b, b2)
			}
			// Appending keeps the existing prefix.
			pre := []byte("prefix")
			if got := tc.in.AppendTo(pre); !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], b) {
				t.Fatalf("AppendTo with prefix = %x", got)
			}
		})
	}
}

// normalize maps empty slices to nil, so that a value built with []T{} and
// its decoded form compare equal; it returns the value pointed to.
func normalize(m message) any {
	v := reflect.ValueOf(m).Elem()
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	normValue(c)
	return c.Interface()
}

func normValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			reflect.Copy(n, v)
			for i := 0; i < n.Len(); i++ {
				normValue(n.Index(i))
			}
			v.Set(n)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			normValue(v.Field(i))
		}
	}
}

// TestReuse decodes a big input then a small one into the same value: the
// small one must not inherit anything from the big one.
func TestReuse(t *testing.T) {
	big := abitest.ServersInput20()
	small := &abi.ServersInput{Servers: []abi.Server{{Name: "only", Transport: "http"}}}
	tests := []struct {
		name  string
		first *abi.ServersInput
		then  *abi.ServersInput
	}{
		{"big then small", big, small},
		{"small then big", small, big},
		{"big then empty", big, &abi.ServersInput{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m abi.ServersInput
			if err := m.Unmarshal(tc.first.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if err := m.Unmarshal(tc.then.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(&m), normalize(tc.then)) {
				t.Fatalf("got %+v\nwant %+v", m, tc.then)
			}
		})
	}
}

func TestUnknownFieldsSkipped(t *testing.T) {
	// Known fields of Credential interleaved with unknown fields of every
	// wire type (field numbers 6..9 and a large one).
	b := []byte{
		0x0a, 0x01, 'k', // kind = "k"
		0x30, 0x96, 0x01, // field 6 varint 150
		0x39, 1, 2, 3, 4, 5, 6, 7, 8, // field 7 fixed64
		0x42, 0x02, 'z', 'z', // field 8 bytes
		0x4d, 1, 2, 3, 4, // field 9 fixed32
		0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00, // field 2^29-1 varint 0
		0x12, 0x01, 'n', // name = "n"
	}
	tests := []struct {
		name string
		b    []byte
		want abi.Credential
	}{
		{"interleaved", b, abi.Credential{Kind: "k", Name: "n"}},
		{"only unknown", b[3:30], abi.Credential{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c abi.Credential
			if err := c.Unmarshal(tc.b); err != nil {
				t.Fatal(err)
			}
			if c != tc.want {
				t.Fatalf("got %+v, want %+v", c, tc.want)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name string
		m    message
		b    []byte
		want error
	}{
		{"truncated tag varint", &abi.Server{}, []byte{0x80}, abi.ErrTruncated},
		{"truncated value varint", &abi.Server{}, []byte{0x50, 0x80}, abi.ErrTruncated},
		{"tag without value", &abi.Server{}, []byte{0x50}, abi.ErrTruncated},
		{"length past end", &abi.Server{}, []byte{0x0a, 0x05, 'a'}, abi.ErrLength},
		{"huge length", &abi.Server{}, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrLength},
		{"unknown field length past end", &abi.Server{}, []byte{0x72, 0x05, 'a'}, abi.ErrLength},
		{"unknown fixed64 truncated", &abi.Server{}, []byte{0x71, 1, 2, 3}, abi.ErrTruncated},
		{"unknown fixed32 truncated", &abi.Server{}, []byte{0x75, 1, 2, 3}, abi.ErrTruncated},
		{"wire type mismatch string as varint", &abi.Server{}, []byte{0x08, 0x01}, abi.ErrWireType},
		{"wire type mismatch bool as bytes", &abi.Server{}, []byte{0x52, 0x00}, abi.ErrWireType},
		{"wire type mismatch fixed32", &abi.Environment{}, []byte{0x15, 0, 0, 0, 0}, abi.ErrWireType},
		{"group wire type", &abi.Server{}, []byte{0x73}, abi.ErrWireType},
		{"wire type 7", &abi.Server{}, []byte{0x77}, abi.ErrWireType},
		{"field number 0", &abi.Server{}, []byte{0x00, 0x00}, abi.ErrFieldNumber},
		{"field number 0 bytes", &abi.Server{}, []byte{0x02, 0x00}, abi.ErrFieldNumber},
		{"field number too big", &abi.Server{}, []byte{0x80, 0x80, 0x80, 0x80, 0x20, 0x00}, abi.ErrFieldNumber},
		{"overlong varint 11 bytes", &abi.Server{}, []byte{0x50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrOverflow},
		{"overlong varint 10th byte", &abi.Server{}, []byte{0x50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, abi.ErrOverflow},
		{"nested truncated", &abi.ServersInput{}, []byte{0x1a, 0x03, 0x4a, 0x01, 0x80}, abi.ErrTruncated},
		{"nested length past end", &abi.ServersInput{}, []byte{0x1a, 0x04, 0x4a, 0x02, 0x0a, 0x05}, abi.ErrLength},
		{"undefined server action", &abi.ServersOutput{}, []byte{0x0a, 0x02, 0x10, 0x03}, abi.ErrEnum},
		{"negative server action", &abi.ServerDecision{}, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrEnum},
		{"undefined credential action", &abi.CredentialDecision{}, []byte{0x10, 0x04}, abi.ErrEnum},
		{"credential index overflow", &abi.CredentialDecision{}, []byte{0x08, 0x80, 0x80, 0x80, 0x80, 0x10}, abi.ErrRange},
		{"undefined tool call action", &abi.ToolCallOutput{}, []byte{0x08, 0x02}, abi.ErrEnum},
		{"credentials input thread bad", &abi.CredentialsInput{}, []byte{0x0a, 0x01, 0x80}, abi.ErrTruncated},
		{"tool call input thread root bad", &abi.ToolCallInput{}, []byte{0x0a, 0x02, 0x1a, 0x00, 0x0a, 0x02, 0x1a, 0x01}, abi.ErrLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Unmarshal(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Unmarshal(%x) = %v, want %v", tc.b, err, tc.want)
			}
			var de *abi.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if !strings.HasPrefix(err.Error(), "abi: ") {
				t.Fatalf("error text %q", err)
			}
		})
	}
}

func TestDecodeErrorPath(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{
			"credential in server in input",
			// ServersInput{servers: Server{name: "a", credentials: Credential{kind: <len 127> "k"}}}
			[]byte{0x1a, 0x08, 0x0a, 0x01, 'a', 0x4a, 0x03, 0x0a, 0x7f, 'k'},
			"abi: ServersInput field 3 at byte 0: Server field 9 at byte 3: Credential field 1 at byte 0: length past end of input",
		},
		{
			"truncated tag",
			[]byte{0x0a, 0x00, 0x80},
			"abi: ServersInput at byte 2: unexpected end of input",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := new(abi.ServersInput).Unmarshal(tc.b)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestPrefixesNeverPanic decodes every prefix of valid encodings: each one
// either decodes or returns an error.
func TestPrefixesNeverPanic(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.in.AppendTo(nil)
			for n := 0; n <= len(b); n++ {
				_ = tc.empty.Unmarshal(b[:n:n])
			}
		})
	}
}

func TestEmptyOutputIsNoOpinion(t *testing.T) {
	tests := []struct {
		name string
		m    message
	}{
		{"ServersOutput", &abi.ServersOutput{}},
		{"CredentialsOutput", &abi.CredentialsOutput{}},
		{"ToolCallOutput", &abi.ToolCallOutput{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if b := tc.m.AppendTo(nil); len(b) != 0 {
				t.Fatalf("zero output encodes to %x, want nothing", b)
			}
			if err := tc.m.Unmarshal(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestZeroCopy checks that decoded strings are views into the input.
func TestZeroCopy(t *testing.T) {
	b := (&abi.Credential{Kind: "bearer_env"}).AppendTo(nil)
	var c abi.Credential
	if err := c.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	b[2] = 'B'
	tests := []struct{ name, got, want string }{
		{"mutation visible", c.Kind, "Bearer_env"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	in := abitest.ServersInput20().AppendTo(nil)
	out := &abi.ServersOutput{}
	for i := 0; i < 20; i++ {
		out.Decisions = append(out.Decisions, abi.ServerDecision{Name: "server", Action: abi.ServerDisable, Reason: "not allowed", DenyTools: []string{"x"}})
	}
	var m abi.ServersInput
	if err := m.Unmarshal(in); err != nil { // warm up
		t.Fatal(err)
	}
	buf := out.AppendTo(nil)
	tests := []struct {
		name string
		fn   func()
	}{
		{"Unmarshal ServersInput20 warm", func() { _ = m.Unmarshal(in) }},
		{"AppendTo ServersOutput reused buffer", func() { buf = out.AppendTo(buf[:0]) }},
		{"AppendTo ServersInput20 reused buffer", func() { in = m.AppendTo(in[:0]) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
				t.Fatalf("%v allocs per run, want 0", n)
			}
		})
	}
}

func BenchmarkUnmarshalServersInput20(b *testing.B) {
	in := abitest.ServersInput20().AppendTo(nil)
	var m abi.ServersInput
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Unmarshal(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendServersInput20(b *testing.B) {
	in := abitest.ServersInput20()
	buf := in.AppendTo(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = in.AppendTo(buf[:0])
	}
}

// BenchmarkAppendServersOutput encodes a decision for each of 20 servers.
func BenchmarkAppendServersOutput(b *testing.B) {
	var out abi.ServersOutput
	for _, s := range abitest.ServersInput20().Servers {
		out.Decisions = append(out.Decisions, abi.ServerDecision{Name: s.Name, Action: abi.ServerDisable, Reason: "host not in allow list"})
	}
	buf := out.AppendTo(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = out.AppendTo(buf[:0])
	}
}
