package sdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

// withGuest runs fn with a fresh guest state and restores the previous one.
func withGuest(t *testing.T, fn func()) {
	t.Helper()
	saved := guest
	guest = guestState{}
	defer func() { guest = saved }()
	fn()
}

func TestInvokeServers(t *testing.T) {
	tests := []struct {
		name    string
		handler ServersFunc
		input   *ServersInput
		want    []abi.ServerDecision
		wantErr string
	}{
		{
			name: "reviewer hides stdio",
			handler: func(in *ServersInput, out *ServersOutput) {
				for i := range in.Servers {
					if s := &in.Servers[i]; in.Thread.Kind == "reviewer" && s.Transport == "stdio" {
						out.Hide(s.Name, "no stdio")
					}
				}
			},
			input: &ServersInput{Thread: Thread{Kind: "reviewer"}, Servers: []Server{{Name: "a", Transport: "stdio"}, {Name: "b", Transport: "http"}}},
			want:  []abi.ServerDecision{{Name: "a", Action: abi.ServerHide, Reason: "no stdio"}},
		},
		{
			name: "every builder method",
			handler: func(in *ServersInput, out *ServersOutput) {
				out.Expose("a", "fine")
				out.Disable("b", "off")
				out.AllowTools("a", "read", "list")
				out.DenyTools("b", "write")
			},
			input: &ServersInput{},
			want: []abi.ServerDecision{
				{Name: "a", Action: abi.ServerExpose, Reason: "fine"},
				{Name: "b", Action: abi.ServerDisable, Reason: "off"},
				{Name: "a", AllowTools: []string{"read", "list"}},
				{Name: "b", DenyTools: []string{"write"}},
			},
		},
		{
			name:    "fail",
			handler: func(in *ServersInput, out *ServersOutput) { out.Hide("a", ""); out.Fail("cannot decide") },
			input:   &ServersInput{},
			want:    []abi.ServerDecision{{Name: "a", Action: abi.ServerHide}},
		},
		{
			name:    "panic is reported",
			handler: func(in *ServersInput, out *ServersOutput) { _ = in.Servers[5] },
			input:   &ServersInput{},
			wantErr: "sdk: policy panicked: runtime error: index out of range",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				Servers(tc.handler)
				out, err := EvalServers(tc.input)
				if tc.wantErr != "" {
					if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !strings.HasPrefix(out.Error, tc.wantErr) {
						t.Fatalf("err = %v, out.Error = %q, want prefix %q", err, out.Error, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Decisions) != len(tc.want) {
					t.Fatalf("decisions = %+v, want %+v", out.Decisions, tc.want)
				}
				for i, d := range out.Decisions {
					w := tc.want[i]
					if d.Name != w.Name || d.Action != w.Action || d.Reason != w.Reason ||
						strings.Join(d.AllowTools, ",") != strings.Join(w.AllowTools, ",") ||
						strings.Join(d.DenyTools, ",") != strings.Join(w.DenyTools, ",") {
						t.Fatalf("decision %d = %+v, want %+v", i, d, w)
					}
				}
				if tc.name == "fail" && out.Error != "cannot decide" {
					t.Fatalf("Error = %q", out.Error)
				}
			})
		})
	}
}

func TestInvokeCredentials(t *testing.T) {
	tests := []struct {
		name    string
		handler CredentialsFunc
		want    []abi.CredentialDecision
		wantErr string
	}{
		{
			name: "deny forwarded",
			handler: func(in *CredentialsInput, out *CredentialsOutput) {
				for i, c := range in.Server.Credentials {
					if c.ResolvesAt != "local" {
						out.Deny(i, "no forwarding")
					}
				}
			},
			want: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialDeny, Reason: "no forwarding"}, {Index: 1, Action: abi.CredentialDeny, Reason: "no forwarding"}},
		},
		{
			name: "local and executor",
			handler: func(in *CredentialsInput, out *CredentialsOutput) {
				out.Local(0, "")
				out.Executor(1, "by name")
			},
			want: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialLocal}, {Index: 1, Action: abi.CredentialExecutor, Reason: "by name"}},
		},
		{
			name:    "negative index fails",
			handler: func(in *CredentialsInput, out *CredentialsOutput) { out.Deny(-1, "") },
			wantErr: "sdk: credential index -1 out of range",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				Credentials(tc.handler)
				out, err := EvalCredentials(abitest.CredentialsInput())
				if err != nil {
					t.Fatal(err)
				}
				if out.Error != tc.wantErr {
					t.Fatalf("Error = %q, want %q", out.Error, tc.wantErr)
				}
				if len(out.Decisions) != len(tc.want) {
					t.Fatalf("decisions = %+v, want %+v", out.Decisions, tc.want)
				}
				for i := range tc.want {
					if out.Decisions[i] != tc.want[i] {
						t.Fatalf("decision %d = %+v, want %+v", i, out.Decisions[i], tc.want[i])
					}
				}
			})
		})
	}
}

func TestInvokeToolCall(t *testing.T) {
	tests := []struct {
		name    string
		handler ToolCallFunc
		want    abi.ToolCallOutput
	}{
		{"no opinion", func(in *ToolCallInput, out *ToolCallOutput) {}, abi.ToolCallOutput{}},
		{"allow", func(in *ToolCallInput, out *ToolCallOutput) { out.Allow() }, abi.ToolCallOutput{}},
		{"deny", func(in *ToolCallInput, out *ToolCallOutput) { out.Deny("no " + in.Tool) }, abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "no delete_file"}},
		{"allow after deny stays denied", func(in *ToolCallInput, out *ToolCallOutput) { out.Deny("first"); out.Deny("second"); out.Allow() }, abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "first"}},
		{"rewrite", func(in *ToolCallInput, out *ToolCallOutput) {
			if p, ok := JSONStringField(in.Arguments, "path"); ok && strings.HasPrefix(p, "/etc") {
				out.Rewrite([]byte(`{"path":"/tmp/sandbox"}`))
			}
		}, abi.ToolCallOutput{Rewrite: true, Arguments: []byte(`{"path":"/tmp/sandbox"}`)}},
		{"fail", func(in *ToolCallInput, out *ToolCallOutput) { out.Fail("") }, abi.ToolCallOutput{Error: "policy failed (no message)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				ToolCall(tc.handler)
				out, err := EvalToolCall(abitest.ToolCallInput("delete_file", `{"path":"/etc/passwd"}`))
				if err != nil {
					t.Fatal(err)
				}
				if out.Action != tc.want.Action || out.Reason != tc.want.Reason || out.Rewrite != tc.want.Rewrite ||
					string(out.Arguments) != string(tc.want.Arguments) || out.Error != tc.want.Error {
					t.Fatalf("out = %+v, want %+v", out, tc.want)
				}
			})
		})
	}
}

func TestInvokeErrors(t *testing.T) {
	tests := []struct {
		name  string
		hook  abi.Hook
		input []byte
		want  error
		text  string
	}{
		{"not registered", abi.HookCredentials, nil, nil, "sdk: credentials hook is not registered"},
		{"unknown hook", abi.Hook(8), nil, nil, "sdk: unknown hook Hook(0x8)"},
		{"malformed input", abi.HookServers, []byte{0x1a, 0x05}, abi.ErrLength, "abi: ServersInput field 3 at byte 0: length past end of input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				Servers(func(in *ServersInput, out *ServersOutput) {})
				b, err := Invoke(tc.hook, tc.input)
				if err == nil || err.Error() != tc.text {
					t.Fatalf("err = %v, want %q", err, tc.text)
				}
				if tc.want != nil && !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				var out abi.ServersOutput // field 15 is every output's error
				if derr := out.Unmarshal(b); derr != nil || out.Error != tc.text {
					t.Fatalf("output error = %q (%v), want %q", out.Error, derr, tc.text)
				}
			})
		})
	}
}

func TestRegistration(t *testing.T) {
	tests := []struct {
		name      string
		register  func()
		wantHooks abi.Hook
		wantPanic string
	}{
		{"servers", func() { Servers(func(*ServersInput, *ServersOutput) {}) }, abi.HookServers, ""},
		{"all", func() {
			Servers(func(*ServersInput, *ServersOutput) {})
			Credentials(func(*CredentialsInput, *CredentialsOutput) {})
			ToolCall(func(*ToolCallInput, *ToolCallOutput) {})
		}, abi.AllHooks, ""},
		{"twice", func() {
			ToolCall(func(*ToolCallInput, *ToolCallOutput) {})
			ToolCall(func(*ToolCallInput, *ToolCallOutput) {})
		}, 0, "sdk: tool_call handler registered twice"},
		{"nil", func() { Credentials(nil) }, 0, "sdk: nil credentials handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				defer func() {
					r := recover()
					if tc.wantPanic == "" && r != nil || tc.wantPanic != "" && r != tc.wantPanic {
						t.Fatalf("panic = %v, want %q", r, tc.wantPanic)
					}
				}()
				tc.register()
				if Hooks() != tc.wantHooks {
					t.Fatalf("Hooks() = %v, want %v", Hooks(), tc.wantHooks)
				}
			})
		})
	}
}

// TestHotPathAllocs: after warm-up, a servers call on a 20-server input with
// a policy that compares strings and records decisions allocates nothing.
func TestHotPathAllocs(t *testing.T) {
	tests := []struct {
		name    string
		handler ServersFunc
	}{
		{"hide stdio", func(in *ServersInput, out *ServersOutput) {
			for i := range in.Servers {
				if s := &in.Servers[i]; in.Thread.Kind == "reviewer" && s.Transport == "stdio" {
					out.Hide(s.Name, "stdio servers are hidden in reviewer threads")
				}
			}
		}},
		{"allow hosts and deny tools", func(in *ServersInput, out *ServersOutput) {
			for i := range in.Servers {
				s := &in.Servers[i]
				if s.Transport == "http" && !HostIn(URLHost(s.URL), "*.example.com", "127.0.0.1", "localhost") {
					out.Disable(s.Name, "host not allowed")
				}
				out.DenyTools(s.Name, "fail", "delete_file")
			}
		}},
	}
	input := abitest.ServersInput20().AppendTo(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withGuest(t, func() {
				Servers(tc.handler)
				if _, err := Invoke(abi.HookServers, input); err != nil {
					t.Fatal(err)
				}
				allocs := testing.AllocsPerRun(200, func() {
					if _, err := Invoke(abi.HookServers, input); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Fatalf("%v allocs per Invoke, want 0", allocs)
				}
			})
		})
	}
}

func BenchmarkInvokeServers20(b *testing.B) {
	saved := guest
	guest = guestState{}
	defer func() { guest = saved }()
	Servers(func(in *ServersInput, out *ServersOutput) {
		for i := range in.Servers {
			if s := &in.Servers[i]; in.Thread.Kind == "reviewer" && s.Transport == "stdio" {
				out.Hide(s.Name, "stdio servers are hidden in reviewer threads")
			}
		}
	})
	input := abitest.ServersInput20().AppendTo(nil)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Invoke(abi.HookServers, input); err != nil {
			b.Fatal(err)
		}
	}
}
