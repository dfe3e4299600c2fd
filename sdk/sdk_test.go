package sdk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
)

func TestInvokeServers(t *testing.T) {
	long := strings.Repeat("r", 200)
	tests := []struct {
		name    string
		handler ServersFunc
		input   *abi.ServersInput
		want    []abi.ServerDecision
		wantErr string // Invoke's error (and the output's error field)
		fail    string // the output's error field set by Fail
	}{
		{
			name: "reviewer hides stdio",
			handler: func(in ServersInput, out *ServersOutput) {
				for i := 0; i < in.Servers().Len(); i++ {
					if s := in.Servers().At(i); in.Thread().Kind() == "reviewer" && s.IsStdio() {
						out.Hide(s.Name(), "no stdio")
					}
				}
			},
			input: &abi.ServersInput{Thread: abi.Thread{Kind: "reviewer"}, Servers: []abi.Server{{Name: "a", Transport: "stdio"}, {Name: "b", Transport: "http"}}},
			want:  []abi.ServerDecision{{Name: "a", Action: abi.ServerHide, Reason: "no stdio"}},
		},
		{
			name: "every builder method",
			handler: func(in ServersInput, out *ServersOutput) {
				out.Expose("a", "fine")
				out.Disable("b", "off")
				out.AllowTools("a", "read", "list")
				out.DenyTools("b", "write")
				out.Hide("c")
				out.Add(abi.ServerDecision{Name: "d", Action: abi.ServerDisable, Reason: "both", AllowTools: []string{"x"}, DenyTools: []string{"y"}})
			},
			input: &abi.ServersInput{},
			want: []abi.ServerDecision{
				{Name: "a", Action: abi.ServerExpose, Reason: "fine"},
				{Name: "b", Action: abi.ServerDisable, Reason: "off"},
				{Name: "a", AllowTools: []string{"read", "list"}},
				{Name: "b", DenyTools: []string{"write"}},
				{Name: "c", Action: abi.ServerHide},
				{Name: "d", Action: abi.ServerDisable, Reason: "both", AllowTools: []string{"x"}, DenyTools: []string{"y"}},
			},
		},
		{
			name: "reasons in parts, long names and reasons",
			handler: func(in ServersInput, out *ServersOutput) {
				out.Disable("a", "host ", "h", " is not allowed")
				out.Disable("b", "x", "y")
				out.Disable("c", "1", "2", "3", "4", "5")
				out.Hide(long, "r")
				out.Hide("d", long)
				out.Hide("e", long[:100], long[:100])
				out.Hide("f", []string{}...)
			},
			input: &abi.ServersInput{},
			want: []abi.ServerDecision{
				{Name: "a", Action: abi.ServerDisable, Reason: "host h is not allowed"},
				{Name: "b", Action: abi.ServerDisable, Reason: "xy"},
				{Name: "c", Action: abi.ServerDisable, Reason: "12345"},
				{Name: long, Action: abi.ServerHide, Reason: "r"},
				{Name: "d", Action: abi.ServerHide, Reason: long},
				{Name: "e", Action: abi.ServerHide, Reason: long},
				{Name: "f", Action: abi.ServerHide},
			},
		},
		{
			name: "fail keeps the decisions",
			handler: func(in ServersInput, out *ServersOutput) {
				out.Hide("a", "")
				out.Fail("first")
				out.Fail("cannot decide")
			},
			input: &abi.ServersInput{},
			want:  []abi.ServerDecision{{Name: "a", Action: abi.ServerHide}},
			fail:  "cannot decide",
		},
		{
			name:    "panic is reported",
			handler: func(in ServersInput, out *ServersOutput) { out.Hide("a", "x"); _ = in.Servers().At(5) },
			input:   &abi.ServersInput{},
			wantErr: "sdk: policy panicked: runtime error: index out of range [5] with length 0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			p.Servers(tc.handler)
			for range 3 { // the output is reused from call to call
				out, err := p.EvalServers(tc.input)
				if tc.wantErr != "" {
					if err == nil || err.Error() != tc.wantErr || out.Error != tc.wantErr || len(out.Decisions) != 0 {
						t.Fatalf("err = %v, out = %+v, want only the error %q", err, out, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if out.Error != tc.fail {
					t.Fatalf("Error = %q, want %q", out.Error, tc.fail)
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
			}
		})
	}
}

// TestOutputGrows fills the output past its buffer from a single call.
func TestOutputGrows(t *testing.T) {
	var p Policy
	p.Servers(func(in ServersInput, out *ServersOutput) {
		for i := range 1000 {
			out.Hide(strings.Repeat("n", i%50), "reason")
		}
	})
	out, err := p.EvalServers(&abi.ServersInput{})
	if err != nil || len(out.Decisions) != 1000 || out.Decisions[999].Name != strings.Repeat("n", 49) {
		t.Fatalf("%d decisions, %v", len(out.Decisions), err)
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
			handler: func(in CredentialsInput, out *CredentialsOutput) {
				creds := in.Server().Credentials()
				for i := 0; i < creds.Len(); i++ {
					if creds.At(i).ResolvesAt() != "local" {
						out.Deny(i, "no ", "forwarding")
					}
				}
			},
			want: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialDeny, Reason: "no forwarding"}, {Index: 1, Action: abi.CredentialDeny, Reason: "no forwarding"}},
		},
		{
			name: "local and executor",
			handler: func(in CredentialsInput, out *CredentialsOutput) {
				out.Local(0)
				out.Executor(1, "by name")
				out.Executor(300, strings.Repeat("x", 200))
			},
			want: []abi.CredentialDecision{{Index: 0, Action: abi.CredentialLocal}, {Index: 1, Action: abi.CredentialExecutor, Reason: "by name"}, {Index: 300, Action: abi.CredentialExecutor, Reason: strings.Repeat("x", 200)}},
		},
		{
			name:    "negative index fails",
			handler: func(in CredentialsInput, out *CredentialsOutput) { out.Deny(-1, "") },
			wantErr: "sdk: credential index -1 out of range",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			p.Credentials(tc.handler)
			out, err := p.EvalCredentials(abitest.CredentialsInput())
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
	}
}

func TestInvokeToolCall(t *testing.T) {
	tests := []struct {
		name    string
		handler ToolCallFunc
		want    abi.ToolCallOutput
	}{
		{"no opinion", func(in ToolCallInput, out *ToolCallOutput) {}, abi.ToolCallOutput{}},
		{"allow", func(in ToolCallInput, out *ToolCallOutput) { out.Allow() }, abi.ToolCallOutput{}},
		{"deny", func(in ToolCallInput, out *ToolCallOutput) { out.Deny("no ", in.Tool()) }, abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "no delete_file"}},
		{"allow after deny stays denied", func(in ToolCallInput, out *ToolCallOutput) { out.Deny("first"); out.Deny("second"); out.Allow() }, abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "first"}},
		{"rewrite", func(in ToolCallInput, out *ToolCallOutput) {
			if p, ok := JSONStringField(in.Arguments(), "path"); ok && strings.HasPrefix(p, "/etc") {
				out.Rewrite([]byte(`{"path":"/tmp/sandbox"}`))
			}
		}, abi.ToolCallOutput{Rewrite: true, Arguments: []byte(`{"path":"/tmp/sandbox"}`)}},
		{"fail", func(in ToolCallInput, out *ToolCallOutput) { out.Fail("") }, abi.ToolCallOutput{Error: "policy failed (no message)"}},
		{"ask", func(in ToolCallInput, out *ToolCallOutput) { out.Ask("delete ", in.Tool(), "?") }, abi.ToolCallOutput{Action: abi.ToolCallAsk, Reason: "delete delete_file?"}},
		{"ask then deny: deny wins", func(in ToolCallInput, out *ToolCallOutput) { out.Ask("a"); out.Deny("d"); out.Ask("b") }, abi.ToolCallOutput{Action: abi.ToolCallDeny, Reason: "d"}},
		{"first ask's reason is kept", func(in ToolCallInput, out *ToolCallOutput) { out.Ask("a"); out.Ask("b") }, abi.ToolCallOutput{Action: abi.ToolCallAsk, Reason: "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			p.ToolCall(tc.handler)
			for range 2 {
				out, err := p.EvalToolCall(abitest.ToolCallInput("delete_file", `{"path":"/etc/passwd"}`))
				if err != nil {
					t.Fatal(err)
				}
				if out.Action != tc.want.Action || out.Reason != tc.want.Reason || out.Rewrite != tc.want.Rewrite ||
					string(out.Arguments) != string(tc.want.Arguments) || out.Error != tc.want.Error {
					t.Fatalf("out = %+v, want %+v", out, tc.want)
				}
			}
		})
	}
}

func TestInvokeErrors(t *testing.T) {
	// An input whose first server's name runs past the end: the header,
	// root and thread are fine, so the handler runs and the view panics when
	// it reads the name.
	badName := (&abi.ServersInput{Servers: []abi.Server{{Name: "a"}}}).AppendTo(nil)
	slot := int(badName[56+16]) | int(badName[56+17])<<8 // the name slot: first of the Server record
	badName[slot+4] = 200
	tests := []struct {
		name  string
		hook  abi.Hook
		input []byte
		want  error
		text  string
	}{
		{"not registered", abi.HookCredentials, abitest.CredentialsInput().AppendTo(nil), nil, "sdk: credentials hook is not registered"},
		{"unknown hook", abi.Hook(64), nil, nil, "sdk: unknown hook Hook(0x40)"},
		{"v2 hook not registered", abi.HookToolResult, abitest.ToolResultInput("t", "{}", "{}", false).AppendTo(nil), nil, "sdk: tool_result hook is not registered"},
		{"v2 hook, malformed header", abi.HookResourceRead, []byte("WDNF"), abi.ErrTruncated, "abi: malformed ResourceReadInput: header (at byte 4): unexpected end of input"},
		{"malformed header", abi.HookServers, []byte("WDNF"), abi.ErrTruncated, "abi: malformed ServersInput: header (at byte 4): unexpected end of input"},
		{"malformed field, read by the policy", abi.HookServers, badName, abi.ErrBounds, fmt.Sprintf("abi: malformed ServersInput: servers[0].name (at byte %d): reference past end of input", slot)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			p.Servers(func(in ServersInput, out *ServersOutput) {
				for i := 0; i < in.Servers().Len(); i++ {
					out.Hide(in.Servers().At(i).Name())
				}
			})
			b, err := p.Invoke(tc.hook, tc.input)
			if err == nil || err.Error() != tc.text {
				t.Fatalf("err = %v, want %q", err, tc.text)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var out abi.ServersOutput // field 15 is every output's error
			if derr := out.Unmarshal(b); derr != nil || out.Error != tc.text || len(out.Decisions) != 0 {
				t.Fatalf("output = %+v (%v), want only the error %q", out, derr, tc.text)
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	tests := []struct {
		name      string
		register  func(p *Policy)
		wantHooks abi.Hook
		wantPanic string
	}{
		{"servers", func(p *Policy) { p.Servers(func(ServersInput, *ServersOutput) {}) }, abi.HookServers, ""},
		{"all", func(p *Policy) {
			p.Servers(func(ServersInput, *ServersOutput) {})
			p.Credentials(func(CredentialsInput, *CredentialsOutput) {})
			p.ToolCall(func(ToolCallInput, *ToolCallOutput) {})
		}, abi.V1Hooks, ""},
		{"all of version 2", func(p *Policy) {
			p.Servers(func(ServersInput, *ServersOutput) {})
			p.Credentials(func(CredentialsInput, *CredentialsOutput) {})
			p.ToolCall(func(ToolCallInput, *ToolCallOutput) {})
			p.ResourceRead(func(ResourceReadInput, *ResourceReadOutput) {})
			p.PromptGet(func(PromptGetInput, *PromptGetOutput) {})
			p.ToolResult(func(ToolResultInput, *ToolResultOutput) {})
		}, abi.AllHooks, ""},
		{"v2 twice", func(p *Policy) {
			p.ToolResult(func(ToolResultInput, *ToolResultOutput) {})
			p.ToolResult(func(ToolResultInput, *ToolResultOutput) {})
		}, 0, "sdk: tool_result handler registered twice"},
		{"twice", func(p *Policy) {
			p.ToolCall(func(ToolCallInput, *ToolCallOutput) {})
			p.ToolCall(func(ToolCallInput, *ToolCallOutput) {})
		}, 0, "sdk: tool_call handler registered twice"},
		{"nil", func(p *Policy) { p.Credentials(nil) }, 0, "sdk: nil credentials handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			defer func() {
				r := recover()
				if tc.wantPanic == "" && r != nil || tc.wantPanic != "" && r != tc.wantPanic {
					t.Fatalf("panic = %v, want %q", r, tc.wantPanic)
				}
			}()
			tc.register(&p)
			if p.Hooks() != tc.wantHooks {
				t.Fatalf("Hooks() = %v, want %v", p.Hooks(), tc.wantHooks)
			}
		})
	}
}

// TestModuleFunctions: the package-level functions use the module's Policy.
func TestModuleFunctions(t *testing.T) {
	saved := module
	module = Policy{}
	defer func() { module = saved }()
	Servers(func(in ServersInput, out *ServersOutput) { out.Hide("x", "y") })
	Credentials(func(in CredentialsInput, out *CredentialsOutput) { out.Deny(0) })
	ToolCall(func(in ToolCallInput, out *ToolCallOutput) { out.Deny("z") })
	ResourceRead(func(in ResourceReadInput, out *ResourceReadOutput) { out.Deny("r") })
	PromptGet(func(in PromptGetInput, out *PromptGetOutput) { out.Deny("p") })
	ToolResult(func(in ToolResultInput, out *ToolResultOutput) { out.Error("e") })
	rr, err4 := EvalResourceRead(abitest.ResourceReadInput("file:///x"))
	pg, err5 := EvalPromptGet(abitest.PromptGetInput("p", "{}"))
	tr, err6 := EvalToolResult(abitest.ToolResultInput("t", "{}", "{}", false))
	if err4 != nil || err5 != nil || err6 != nil || rr.Reason != "r" || pg.Reason != "p" || tr.Reason != "e" || tr.Action != abi.ToolResultError {
		t.Fatalf("%+v %+v %+v %v %v %v", rr, pg, tr, err4, err5, err6)
	}
	if Hooks() != abi.AllHooks {
		t.Fatalf("Hooks() = %v", Hooks())
	}
	s, err := EvalServers(&abi.ServersInput{})
	c, err2 := EvalCredentials(abitest.CredentialsInput())
	tc, err3 := EvalToolCall(abitest.ToolCallInput("t", "{}"))
	if err != nil || err2 != nil || err3 != nil || len(s.Decisions) != 1 || len(c.Decisions) != 1 || tc.Reason != "z" {
		t.Fatalf("%+v %+v %+v %v %v %v", s, c, tc, err, err2, err3)
	}
}

// TestHotPathAllocs: after warm-up, a servers call on a 20-server input with
// a policy that compares strings and records decisions allocates nothing.
func TestHotPathAllocs(t *testing.T) {
	defer swapLog(discard{})()
	allowed := []string{"*.example.com", "127.0.0.1", "localhost"}
	tests := []struct {
		name    string
		handler ServersFunc
	}{
		{"hide stdio", func(in ServersInput, out *ServersOutput) {
			for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
				if s := servers.At(i); in.Thread().Kind() == "reviewer" && s.IsStdio() {
					out.Hide(s.Name(), "stdio servers are hidden in reviewer threads")
				}
			}
		}},
		{"allow hosts, log and deny tools", func(in ServersInput, out *ServersOutput) {
			for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
				s := servers.At(i)
				if host := URLHost(s.URL()); s.IsHTTP() && !HostIn(host, allowed...) {
					out.Disable(s.Name(), "host ", host, " is not allowed")
					Log(LogDebug, "disabled ", s.Name())
				}
				out.DenyTools(s.Name(), "fail", "delete_file")
			}
		}},
		{"prompt and resource lists", func(in ServersInput, out *ServersOutput) {
			for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
				s := servers.At(i)
				out.AllowPrompts(s.Name(), "greet")
				out.DenyResources(s.Name(), "file:///etc/*")
			}
		}},
	}
	input := abitest.ServersInput20().AppendTo(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Policy
			p.Servers(tc.handler)
			if _, err := p.Invoke(abi.HookServers, input); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := p.Invoke(abi.HookServers, input); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocs per Invoke, want 0", allocs)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestViewsInlineThroughSDK builds a policy that imports only sdk (not abi)
// for wasm and checks that the compiler inlines every view accessor it
// calls: see inline.go. Without the inline bodies each accessor would be a
// call (in a wasm guest, an interrupt check each).
func TestViewsInlineThroughSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("builds for wasm")
	}
	dir := t.TempDir()
	src := `package policy

import "github.com/warden-mcp/warden/sdk"

func Servers(in sdk.ServersInput, out *sdk.ServersOutput) {
	servers := in.Servers()
	for i := 0; i < servers.Len(); i++ {
		s := servers.At(i)
		if in.Thread().Kind() != "" && s.IsStdio() && s.Args().Len() > 0 && s.Credentials().At(0).EnvVar() != "" {
			out.Hide(s.Name(), s.URLHost())
		}
	}
}
`
	// A module of its own outside the repository (a package inside it would
	// show up in concurrent go commands), using this one by a replace.
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	goMod := "module inlinecheck\n\ngo 1.26\n\nrequire github.com/warden-mcp/warden v0.0.0\n\nreplace github.com/warden-mcp/warden => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "policy.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-gcflags=-m", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, call := range []string{"abi.ServersView.Servers", "abi.ServerList.Len", "abi.ServerList.At", "abi.ServersView.Thread",
		"abi.ThreadView.Kind", "abi.ServerView.IsStdio", "abi.ServerView.Args", "abi.StringList.Len", "abi.ServerView.Credentials",
		"abi.CredentialList.At", "abi.CredentialView.EnvVar", "abi.ServerView.Name", "abi.ServerView.URLHost", "sdk.(*ServersOutput).Hide"} {
		if !strings.Contains(string(out), "inlining call to "+call) {
			t.Errorf("%s is not inlined into a policy that imports only sdk; -m output:\n%s", call, out)
		}
	}
}

func BenchmarkInvokeServers20(b *testing.B) {
	var p Policy
	p.Servers(func(in ServersInput, out *ServersOutput) {
		if in.Thread().Kind() != "reviewer" {
			return
		}
		for i, servers := 0, in.Servers(); i < servers.Len(); i++ {
			if s := servers.At(i); s.IsStdio() {
				out.Hide(s.Name(), "stdio servers are hidden in reviewer threads")
			}
		}
	})
	input := abitest.ServersInput20().AppendTo(nil)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Invoke(abi.HookServers, input); err != nil {
			b.Fatal(err)
		}
	}
}

func TestInvokeV2Hooks(t *testing.T) {
	var p Policy
	p.ResourceRead(func(in ResourceReadInput, out *ResourceReadOutput) {
		if strings.HasPrefix(in.URI(), "file:///etc/") {
			out.Deny("no ", in.URI())
			out.Deny("second")
		}
	})
	p.PromptGet(func(in PromptGetInput, out *PromptGetOutput) {
		switch in.Name() {
		case "deny":
			out.Deny("prompt ", in.Name(), " denied")
		case "rewrite":
			out.Rewrite([]byte(`{"who":"world"}`))
		}
	})
	p.ToolResult(func(in ToolResultInput, out *ToolResultOutput) {
		switch {
		case in.IsError():
			out.Error("upstream error hidden")
		case strings.Contains(string(in.Result()), "SECRET"):
			out.Rewrite([]byte(`{"content":[{"type":"text","text":"[redacted]"}]}`), "redacted")
		}
	})
	for range 2 {
		rr, err := p.EvalResourceRead(abitest.ResourceReadInput("file:///etc/passwd"))
		if err != nil || rr.Action != abi.ToolCallDeny || rr.Reason != "no file:///etc/passwd" {
			t.Fatalf("resource_read = %+v, %v", rr, err)
		}
		rr, err = p.EvalResourceRead(abitest.ResourceReadInput("file:///tmp/x"))
		if err != nil || rr.Action != abi.ToolCallAllow || rr.Reason != "" {
			t.Fatalf("resource_read = %+v, %v", rr, err)
		}
		pg, err := p.EvalPromptGet(abitest.PromptGetInput("deny", "{}"))
		if err != nil || pg.Action != abi.ToolCallDeny || pg.Reason != "prompt deny denied" {
			t.Fatalf("prompt_get = %+v, %v", pg, err)
		}
		pg, err = p.EvalPromptGet(abitest.PromptGetInput("rewrite", `{"who":"me"}`))
		if err != nil || pg.Action != abi.ToolCallAllow || !pg.Rewrite || string(pg.Arguments) != `{"who":"world"}` {
			t.Fatalf("prompt_get = %+v, %v", pg, err)
		}
		tr, err := p.EvalToolResult(abitest.ToolResultInput("t", "{}", `{"content":[{"type":"text","text":"SECRET"}]}`, false))
		if err != nil || tr.Action != abi.ToolResultRewrite || tr.Reason != "redacted" || !strings.Contains(string(tr.Result), "[redacted]") {
			t.Fatalf("tool_result = %+v, %v", tr, err)
		}
		tr, err = p.EvalToolResult(abitest.ToolResultInput("t", "{}", `{"content":[]}`, true))
		if err != nil || tr.Action != abi.ToolResultError || tr.Reason != "upstream error hidden" || tr.Result != nil {
			t.Fatalf("tool_result = %+v, %v", tr, err)
		}
		tr, err = p.EvalToolResult(abitest.ToolResultInput("t", "{}", `{"content":[]}`, false))
		if err != nil || tr.Action != abi.ToolResultPass || tr.Result != nil || tr.Reason != "" {
			t.Fatalf("tool_result = %+v, %v", tr, err)
		}
	}
	// A panicking handler: an error-only output, and the policy stays usable.
	var q Policy
	q.ToolResult(func(in ToolResultInput, out *ToolResultOutput) {
		out.Rewrite([]byte(`{}`))
		panic("boom")
	})
	b, err := q.Invoke(abi.HookToolResult, abitest.ToolResultInput("t", "{}", "{}", false).AppendTo(nil))
	var out abi.ToolResultOutput
	if err == nil || out.Unmarshal(b) != nil || out.Error != "sdk: policy panicked: boom" || out.Action != abi.ToolResultPass {
		t.Fatalf("panic: %+v, %v", out, err)
	}
}

func TestToolResultOutputOrder(t *testing.T) {
	var p Policy
	p.ToolResult(func(in ToolResultInput, out *ToolResultOutput) {
		out.Error("first")
		out.Rewrite([]byte(`{"content":[]}`), "ignored")
		out.Error("second")
	})
	tr, err := p.EvalToolResult(abitest.ToolResultInput("t", "{}", "{}", false))
	if err != nil || tr.Action != abi.ToolResultError || tr.Reason != "first" || tr.Result != nil {
		t.Fatalf("tool_result = %+v, %v", tr, err)
	}
}

func TestServersOutputV2Lists(t *testing.T) {
	var p Policy
	p.Servers(func(in ServersInput, out *ServersOutput) {
		out.AllowPrompts("a", "p1", "p2")
		out.DenyPrompts("a", "p2")
		out.AllowResources("a", "file:///pub/*")
		out.DenyResources("a", "file:///pub/secret")
		out.Add(abi.ServerDecision{Name: "b", Action: abi.ServerDisable, Reason: "r", DenyPrompts: []string{"x"}})
	})
	out, err := p.EvalServers(abitest.ServersInput20())
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.ServerDecision{
		{Name: "a", AllowPrompts: []string{"p1", "p2"}},
		{Name: "a", DenyPrompts: []string{"p2"}},
		{Name: "a", AllowResources: []string{"file:///pub/*"}},
		{Name: "a", DenyResources: []string{"file:///pub/secret"}},
		{Name: "b", Action: abi.ServerDisable, Reason: "r", DenyPrompts: []string{"x"}},
	}
	if fmt.Sprint(out.Decisions) != fmt.Sprint(want) {
		t.Fatalf("decisions = %+v\nwant %+v", out.Decisions, want)
	}
}
