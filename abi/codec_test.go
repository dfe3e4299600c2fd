package abi_test

import (
	"bytes"
	"encoding/binary"
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

// inputCases returns one populated value and one fresh zero value of each
// input message (flat layout).
func inputCases() []struct {
	name      string
	in, empty message
} {
	long := strings.Repeat("x", 300)
	odd := &abi.ServersInput{
		Thread: abi.Thread{ID: "t", Roots: []abi.Root{{ID: "r", Location: "environment", EnvironmentID: "exec-1", Path: long}}},
		Servers: []abi.Server{
			{Name: "s", Args: []string{"", "a", ""}, EnabledTools: []string{""}, Transport: "websocket"},
			{Name: "é", URL: "http://[::1]:80/x", Transport: "http", Credentials: []abi.Credential{{}, {Kind: "oauth"}}},
		},
		Environments: []abi.Environment{{}, {ID: "x", Processes: true}},
		Requirements: []abi.Requirement{{Name: "n", URL: "https://x", Command: "npx"}},
	}
	return []struct {
		name      string
		in, empty message
	}{
		{"ServersInput20", abitest.ServersInput20(), &abi.ServersInput{}},
		{"ServersInputEmpty", &abi.ServersInput{}, &abi.ServersInput{}},
		{"ServersInputOdd", odd, &abi.ServersInput{}},
		{"CredentialsInput", abitest.CredentialsInput(), &abi.CredentialsInput{}},
		{"CredentialsInputEmpty", &abi.CredentialsInput{}, &abi.CredentialsInput{}},
		{"ToolCallInput", abitest.ToolCallInput("read_file", `{"path":"/etc/hosts"}`), &abi.ToolCallInput{}},
		{"ToolCallInputEmpty", &abi.ToolCallInput{}, &abi.ToolCallInput{}},
		{"ResourceReadInput", abitest.ResourceReadInput("file:///etc/hosts"), &abi.ResourceReadInput{}},
		{"ResourceReadInputEmpty", &abi.ResourceReadInput{}, &abi.ResourceReadInput{}},
		{"PromptGetInput", abitest.PromptGetInput("greet", `{"name":"ada"}`), &abi.PromptGetInput{}},
		{"PromptGetInputEmpty", &abi.PromptGetInput{}, &abi.PromptGetInput{}},
		{"ToolResultInput", abitest.ToolResultInput("read_file", `{"path":"/x"}`, `{"content":[{"type":"text","text":"hi"}]}`, true), &abi.ToolResultInput{}},
		{"ToolResultInputEmpty", &abi.ToolResultInput{}, &abi.ToolResultInput{}},
	}
}

// roundTripCases returns the inputs and one value of every output message
// (protobuf wire).
func roundTripCases() []struct {
	name      string
	in, empty message
} {
	long := strings.Repeat("x", 300)
	return append(inputCases(), []struct {
		name      string
		in, empty message
	}{
		{"ServerDecision", &abi.ServerDecision{Name: "s", Action: abi.ServerHide, Reason: long, AllowTools: []string{"a"}, DenyTools: []string{"b", "c"}}, &abi.ServerDecision{}},
		{"ServersOutput", &abi.ServersOutput{Decisions: []abi.ServerDecision{{Name: "a", Action: abi.ServerDisable, Reason: "r"}, {Name: "b"}}, Error: "boom"}, &abi.ServersOutput{}},
		{"CredentialDecision", &abi.CredentialDecision{Index: 1 << 31, Action: abi.CredentialDeny, Reason: "no"}, &abi.CredentialDecision{}},
		{"CredentialsOutput", &abi.CredentialsOutput{Decisions: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialExecutor}, {Index: 1, Action: abi.CredentialDeny, Reason: "no"}}}, &abi.CredentialsOutput{}},
		{"ToolCallOutput", &abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "no", Rewrite: true, Arguments: []byte(`{}`), Error: "e"}, &abi.ToolCallOutput{}},
		{"ToolCallOutputAsk", &abi.ToolCallOutput{Action: abi.ToolCallAsk, Reason: "sure?"}, &abi.ToolCallOutput{}},
		{"ServerDecisionV2", &abi.ServerDecision{Name: "s", AllowPrompts: []string{"p"}, DenyPrompts: []string{"q", "r"}, AllowResources: []string{"file:///a/*"}, DenyResources: []string{"file:///a/secret"}}, &abi.ServerDecision{}},
		{"ResourceReadOutput", &abi.ResourceReadOutput{Action: abi.ToolCallDeny, Reason: "no", Error: "e"}, &abi.ResourceReadOutput{}},
		{"PromptGetOutput", &abi.PromptGetOutput{Action: abi.ToolCallDeny, Reason: "no", Rewrite: true, Arguments: []byte(`{"a":"b"}`), Error: "e"}, &abi.PromptGetOutput{}},
		{"ToolResultOutput", &abi.ToolResultOutput{Action: abi.ToolResultRewrite, Reason: "redacted", Result: []byte(`{"content":[]}`), Error: "e"}, &abi.ToolResultOutput{}},
	}...)
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
			// Appending keeps the existing prefix (offsets in a flat input
			// are relative to its own start).
			pre := []byte("prefix")
			if got := tc.in.AppendTo(pre); !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], b) {
				t.Fatalf("AppendTo with prefix = %x", got)
			}
		})
	}
}

// normalize maps empty slices to nil, so that a value built with []T{} and
// its decoded form compare equal; it returns the value pointed to.
func normalize(m any) any {
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

func hookOf(m message) abi.Hook {
	switch m.(type) {
	case *abi.CredentialsInput:
		return abi.HookCredentials
	case *abi.ToolCallInput:
		return abi.HookToolCall
	case *abi.ResourceReadInput:
		return abi.HookResourceRead
	case *abi.PromptGetInput:
		return abi.HookPromptGet
	case *abi.ToolResultInput:
		return abi.HookToolResult
	}
	return abi.HookServers
}

// readViews parses b as the input of hook h and reads every field through
// the views.
func readViews(h abi.Hook, b []byte) (any, error) {
	var f abi.Flat
	switch h {
	case abi.HookServers:
		v, err := f.Servers(b)
		if err != nil {
			return nil, err
		}
		return abitest.ServersFromView(v), nil
	case abi.HookCredentials:
		v, err := f.Credentials(b)
		if err != nil {
			return nil, err
		}
		return abitest.CredentialsFromView(v), nil
	case abi.HookResourceRead:
		v, err := f.ResourceRead(b)
		if err != nil {
			return nil, err
		}
		return abitest.ResourceReadFromView(v), nil
	case abi.HookPromptGet:
		v, err := f.PromptGet(b)
		if err != nil {
			return nil, err
		}
		return abitest.PromptGetFromView(v), nil
	case abi.HookToolResult:
		v, err := f.ToolResult(b)
		if err != nil {
			return nil, err
		}
		return abitest.ToolResultFromView(v), nil
	}
	v, err := f.ToolCall(b)
	if err != nil {
		return nil, err
	}
	return abitest.ToolCallFromView(v), nil
}

// TestViews reads every field of each input through the views and compares
// the result with the encoded value.
func TestViews(t *testing.T) {
	for _, tc := range inputCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readViews(hookOf(tc.in), tc.in.AppendTo(nil))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(got), normalize(tc.in)) {
				t.Fatalf("views read\n%+v\nwant\n%+v", got, tc.in)
			}
		})
	}
}

// TestViewExtras checks the derived fields: the transport kind and the URL
// host.
func TestViewExtras(t *testing.T) {
	in := &abi.ServersInput{Servers: []abi.Server{
		{Name: "a", Transport: "stdio"},
		{Name: "b", Transport: "http", URL: "https://user@API.Example.com:8443/mcp"},
		{Name: "c", Transport: "websocket", URL: "http://[::1]:7777/mcp"},
		{Name: "d", URL: "no host here"},
	}}
	var f abi.Flat
	v, err := f.Servers(in.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind  abi.TransportKind
		stdio bool
		http  bool
		host  string
	}{
		{abi.TransportStdio, true, false, ""},
		{abi.TransportHTTP, false, true, "API.Example.com"},
		{abi.TransportOther, false, false, "::1"},
		{abi.TransportOther, false, false, "no host here"},
	}
	for i, tc := range tests {
		s := v.Servers().At(i)
		if s.TransportKind() != tc.kind || s.IsStdio() != tc.stdio || s.IsHTTP() != tc.http || s.URLHost() != tc.host {
			t.Errorf("server %d: kind %v stdio %v http %v host %q, want %v %v %v %q", i, s.TransportKind(), s.IsStdio(), s.IsHTTP(), s.URLHost(), tc.kind, tc.stdio, tc.http, tc.host)
		}
		if s.URLHost() != abi.URLHost(s.URL()) {
			t.Errorf("server %d: URLHost() %q != URLHost(URL()) %q", i, s.URLHost(), abi.URLHost(s.URL()))
		}
	}
}

func TestURLHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://api.example.com/mcp", "api.example.com"},
		{"https://API.Example.com:8443/mcp?x=1", "API.Example.com"},
		{"http://user:pw@host.example.com:80/", "host.example.com"},
		{"http://good.com@evil.com/", "evil.com"},
		{"http://evil.com\\@good.com/", "evil.com"},
		{"http://evil.com#@good.com/", "evil.com"},
		{"http://[::1]:7777/mcp", "::1"},
		{"http://[::1/mcp", ""},
		{"http://127.0.0.1:7777", "127.0.0.1"},
		{"//cdn.example.com/x", "cdn.example.com"},
		{"localhost:8080/mcp", "localhost"},
		{"", ""},
		{"https://", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := abi.URLHost(tc.in); got != tc.want {
				t.Fatalf("URLHost(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestLayouts re-encodes inputs with other valid layouts (abitest.Relayout,
// written from docs/abi.md): newer writers (larger strides, more record
// types), shared strings, strings before records. Unmarshal and the views
// must read the same message. An older writer (smaller strides) drops
// fields, which must read as zero.
func TestLayouts(t *testing.T) {
	var bigger, smaller [abitest.NumTypes]uint32
	for ty, slots := range abitest.Schema {
		bigger[ty] = uint32(8*len(slots) + 24)
		smaller[ty] = uint32(8 * (len(slots) - 1))
	}
	layouts := []struct {
		name string
		l    abitest.Layout
		old  bool
	}{
		{"as written", abitest.Layout{}, false},
		{"newer writer", abitest.Layout{Strides: bigger, ExtraTypes: 3, Fill: 0xa5}, false},
		{"shared strings, strings first", abitest.Layout{Dedup: true, StringsFirst: true}, false},
		{"older writer", abitest.Layout{Strides: smaller}, true},
	}
	for _, tc := range inputCases() {
		for _, l := range layouts {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				h := hookOf(tc.in)
				b, err := abitest.Relayout(tc.in.AppendTo(nil), h, l.l)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.in
				if l.old {
					want = dropLast(tc.in)
				}
				got := reflect.New(reflect.TypeOf(tc.in).Elem()).Interface().(message)
				if err := got.Unmarshal(b); err != nil {
					t.Fatalf("Unmarshal: %v", err)
				}
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					t.Fatalf("Unmarshal read\n%+v\nwant\n%+v", got, want)
				}
				view, err := readViews(h, b)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(normalize(view), normalize(want)) {
					t.Fatalf("views read\n%+v\nwant\n%+v", view, want)
				}
			})
		}
	}
}

// dropLast returns a copy of input m without the last slot of every record
// type: what an older writer, whose records have one slot less, sends.
func dropLast(m message) message {
	thread := func(t abi.Thread) abi.Thread { return abi.Thread{ID: t.ID, Kind: t.Kind} } // roots
	server := func(s abi.Server) abi.Server {
		s.Credentials = append([]abi.Credential(nil), s.Credentials...)
		for i := range s.Credentials {
			s.Credentials[i].ResolvesAt = ""
		}
		return s // url_host, the last slot, is derived from url: nothing to drop
	}
	switch m := m.(type) {
	case *abi.ServersInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Environments = nil
		for _, e := range m.Environments {
			c.Environments = append(c.Environments, abi.Environment{ID: e.ID}) // flags
		}
		c.Servers = nil
		for _, s := range m.Servers {
			c.Servers = append(c.Servers, server(s))
		}
		c.Requirements = nil // requirements
		return &c
	case *abi.CredentialsInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Server = server(c.Server)
		c.Environment = abi.Environment{} // environment
		return &c
	case *abi.ToolCallInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Caller = "" // caller
		return &c
	case *abi.ResourceReadInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Caller = ""
		return &c
	case *abi.PromptGetInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Caller = ""
		return &c
	case *abi.ToolResultInput:
		c := *m
		c.Thread = thread(c.Thread)
		c.Caller = ""
		return &c
	}
	return m
}

// TestMalformedInput checks the errors of Unmarshal for malformed flat
// inputs, built by corrupting a valid one.
func TestMalformedInput(t *testing.T) {
	good := abitest.ServersInput20().AppendTo(nil)
	set := func(at int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	const root = 56          // the root record follows the 56-byte header
	serversSlot := root + 16 // ServersInput.servers
	firstServer := int(binary.LittleEndian.Uint32(good[serversSlot:]))
	tests := []struct {
		name string
		b    []byte
		want error
		text string
	}{
		{"empty", nil, abi.ErrTruncated, "abi: malformed ServersInput: header (at byte 0): unexpected end of input"},
		{"short", good[:19], abi.ErrTruncated, ""},
		{"magic", set(0, 0x12345678), abi.ErrMagic, ""},
		{"version", set(4, 2), abi.ErrVersion, "abi: malformed ServersInput: header (at byte 4): unsupported flat layout version"},
		{"kind", set(8, uint32(abi.HookToolCall)), abi.ErrKind, ""},
		{"stride not a multiple of 8", set(20+4*6, 100), abi.ErrStride, ""},
		{"stride table past the end", set(16, 1<<30), abi.ErrTruncated, ""},
		{"root past the end", set(12, uint32(len(good))), abi.ErrBounds, ""},
		{"thread count 2", set(root+4, 2), abi.ErrCount, "abi: malformed ServersInput: thread (at byte 56): message count is not 0 or 1"},
		{"servers past the end", set(serversSlot+4, 1000), abi.ErrBounds, "abi: malformed ServersInput: servers (at byte 72): reference past end of input"},
		{"server name past the end", set(firstServer+4, 1<<20), abi.ErrBounds, "abi: malformed ServersInput: servers[0].name"},
		{"server name offset huge", set(firstServer, 1<<31), abi.ErrBounds, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m abi.ServersInput
			err := m.Unmarshal(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Unmarshal = %v, want %v", err, tc.want)
			}
			var ie *abi.InputError
			if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), tc.text) {
				t.Fatalf("error %q (%T), want prefix %q", err, err, tc.text)
			}
			if err := abi.ValidateInput(abi.HookServers, tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("ValidateInput = %v", err)
			}
		})
	}
}

// TestViewsCheckReads: parsing checks the header, the root and its thread;
// a view then checks each reference when it is read, panicking with an
// *abi.InputError for one outside the input.
func TestViewsCheckReads(t *testing.T) {
	in := &abi.ServersInput{Servers: []abi.Server{{Name: "a", URL: "u", Args: []string{"x"}}}}
	b := in.AppendTo(nil)
	var f abi.Flat
	v, err := f.Servers(b)
	if err != nil {
		t.Fatal(err)
	}
	server := v.Servers().At(0)
	nameSlot := int(binary.LittleEndian.Uint32(b[56+16:])) // the first slot of the only Server record
	binary.LittleEndian.PutUint32(b[nameSlot+4:], 200)     // the name now runs past the end
	panics := func(f func()) (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}
	if r := panics(func() { _ = server.Name() }); r == nil {
		t.Fatal("reading a string past the end did not panic")
	} else if _, ok := r.(*abi.InputError); !ok {
		t.Fatalf("panic %T %v, want *abi.InputError", r, r)
	}
	if server.URL() != "u" || server.Args().At(0) != "x" {
		t.Fatal("other fields changed")
	}
	r := panics(func() { _ = v.Servers().At(1) })
	if err, ok := r.(error); !ok || !strings.Contains(err.Error(), "index out of range [1] with length 1") {
		t.Fatalf("At(1) panic = %v", r)
	}
}

// TestPrefixesNeverPanic decodes every prefix of valid encodings: each one
// either decodes or returns an error; the views' parse likewise, and reading
// every field of a parsed prefix panics only with an *abi.InputError.
func TestPrefixesNeverPanic(t *testing.T) {
	for _, tc := range roundTripCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.in.AppendTo(nil)
			input := false
			switch tc.in.(type) {
			case *abi.ServersInput, *abi.CredentialsInput, *abi.ToolCallInput:
				input = true
			}
			for n := 0; n <= len(b); n++ {
				_ = tc.empty.Unmarshal(b[:n:n])
				if input {
					readAllNoPanic(t, hookOf(tc.in), b[:n:n])
				}
			}
		})
	}
}

// readAllNoPanic parses b and reads every field through the views, failing
// the test on any panic but an *abi.InputError.
func readAllNoPanic(t *testing.T, h abi.Hook, b []byte) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*abi.InputError); !ok {
				t.Fatalf("input %x: views panicked with %T %v", b, r, r)
			}
		}
	}()
	_, _ = readViews(h, b)
}

func TestMalformedOutput(t *testing.T) {
	tests := []struct {
		name string
		m    message
		b    []byte
		want error
	}{
		{"truncated tag varint", &abi.ServerDecision{}, []byte{0x80}, abi.ErrTruncated},
		{"truncated value varint", &abi.ServerDecision{}, []byte{0x10, 0x80}, abi.ErrTruncated},
		{"tag without value", &abi.ServerDecision{}, []byte{0x10}, abi.ErrTruncated},
		{"length past end", &abi.ServerDecision{}, []byte{0x0a, 0x05, 'a'}, abi.ErrLength},
		{"huge length", &abi.ServerDecision{}, []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrLength},
		{"unknown field length past end", &abi.ServerDecision{}, []byte{0x72, 0x05, 'a'}, abi.ErrLength},
		{"unknown fixed64 truncated", &abi.ServerDecision{}, []byte{0x71, 1, 2, 3}, abi.ErrTruncated},
		{"unknown fixed32 truncated", &abi.ServerDecision{}, []byte{0x75, 1, 2, 3}, abi.ErrTruncated},
		{"wire type mismatch string as varint", &abi.ServerDecision{}, []byte{0x08, 0x01}, abi.ErrWireType},
		{"wire type mismatch enum as bytes", &abi.ServerDecision{}, []byte{0x12, 0x00}, abi.ErrWireType},
		{"wire type mismatch fixed32", &abi.ToolCallOutput{}, []byte{0x1d, 0, 0, 0, 0}, abi.ErrWireType},
		{"group wire type", &abi.ServerDecision{}, []byte{0x73}, abi.ErrWireType},
		{"wire type 7", &abi.ServerDecision{}, []byte{0x77}, abi.ErrWireType},
		{"field number 0", &abi.ServerDecision{}, []byte{0x00, 0x00}, abi.ErrFieldNumber},
		{"field number 0 bytes", &abi.ServerDecision{}, []byte{0x02, 0x00}, abi.ErrFieldNumber},
		{"field number too big", &abi.ServerDecision{}, []byte{0x80, 0x80, 0x80, 0x80, 0x20, 0x00}, abi.ErrFieldNumber},
		{"overlong varint 11 bytes", &abi.ServerDecision{}, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrOverflow},
		{"overlong varint 10th byte", &abi.ServerDecision{}, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, abi.ErrOverflow},
		{"nested truncated", &abi.ServersOutput{}, []byte{0x0a, 0x02, 0x10, 0x80}, abi.ErrTruncated},
		{"nested length past end", &abi.ServersOutput{}, []byte{0x0a, 0x04, 0x0a, 0x05}, abi.ErrLength},
		{"undefined server action", &abi.ServersOutput{}, []byte{0x0a, 0x02, 0x10, 0x03}, abi.ErrEnum},
		{"negative server action", &abi.ServerDecision{}, []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, abi.ErrEnum},
		{"undefined credential action", &abi.CredentialDecision{}, []byte{0x10, 0x04}, abi.ErrEnum},
		{"credential index overflow", &abi.CredentialDecision{}, []byte{0x08, 0x80, 0x80, 0x80, 0x80, 0x10}, abi.ErrRange},
		{"undefined tool call action", &abi.ToolCallOutput{}, []byte{0x08, 0x03}, abi.ErrEnum},
		{"ask is undefined for resource_read", &abi.ResourceReadOutput{}, []byte{0x08, 0x02}, abi.ErrEnum},
		{"ask is undefined for prompt_get", &abi.PromptGetOutput{}, []byte{0x08, 0x02}, abi.ErrEnum},
		{"undefined tool result action", &abi.ToolResultOutput{}, []byte{0x08, 0x03}, abi.ErrEnum},
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
	// ServersOutput{decisions: ServerDecision{name: <len 127> "k"}}
	b := []byte{0x0a, 0x03, 0x0a, 0x7f, 'k'}
	want := "abi: ServersOutput field 1 at byte 0: ServerDecision field 1 at byte 0: length past end of input"
	if err := new(abi.ServersOutput).Unmarshal(b); err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
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

// TestZeroCopy checks that decoded and viewed strings are views into the
// input.
func TestZeroCopy(t *testing.T) {
	b := (&abi.ToolCallInput{Tool: "bearer_env"}).AppendTo(nil)
	var m abi.ToolCallInput
	if err := m.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	var f abi.Flat
	v, err := f.ToolCall(b)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte("bearer"))] = 'B'
	if m.Tool != "Bearer_env" || v.Tool() != "Bearer_env" {
		t.Fatalf("Unmarshal %q, view %q: want both to see the change", m.Tool, v.Tool())
	}
}

func TestAllocs(t *testing.T) {
	in := abitest.ServersInput20().AppendTo(nil)
	out := &abi.ServersOutput{}
	for i := 0; i < 20; i++ {
		out.Decisions = append(out.Decisions, abi.ServerDecision{Name: "server", Action: abi.ServerDisable, Reason: "not allowed", DenyTools: []string{"x"}})
	}
	var m abi.ServersInput
	if err := m.Unmarshal(in); err != nil {
		t.Fatal(err)
	}
	buf := out.AppendTo(nil)
	var f abi.Flat
	tests := []struct {
		name string
		fn   func()
	}{
		{"views: parse and read", func() {
			v, err := f.Servers(in)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := 0, v.Servers(); i < l.Len(); i++ {
				s := l.At(i)
				_, _, _ = s.Name(), s.URLHost(), s.Args().Contains("-y")
			}
		}},
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

// BenchmarkViewsServersInput20 parses the input and reads every server's
// name and URL host: what a policy does.
func BenchmarkViewsServersInput20(b *testing.B) {
	in := abitest.ServersInput20().AppendTo(nil)
	var f abi.Flat
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		v, err := f.Servers(in)
		if err != nil {
			b.Fatal(err)
		}
		for i, l := 0, v.Servers(); i < l.Len(); i++ {
			s := l.At(i)
			n += len(s.Name()) + len(s.URLHost())
		}
	}
	_ = n
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

// TestHeaders: an input of a version 1 hook has the version 1 stride table
// (9 types, root at 56: the bytes version 1 wrote); an input of a version
// 2 hook has every type's stride, and its root at 72.
func TestHeaders(t *testing.T) {
	for _, tc := range inputCases() {
		h := hookOf(tc.in)
		b := tc.in.AppendTo(nil)
		types, root := binary.LittleEndian.Uint32(b[16:]), binary.LittleEndian.Uint32(b[12:])
		wantTypes, wantRoot := uint32(abitest.NumTypes), uint32(72)
		if abi.V1Hooks.Has(h) {
			wantTypes, wantRoot = 9, 56
		}
		if types != wantTypes || root != wantRoot || binary.LittleEndian.Uint32(b[8:]) != uint32(h) {
			t.Errorf("%s: %d types, root at %d; want %d, %d", tc.name, types, root, wantTypes, wantRoot)
		}
	}
}
