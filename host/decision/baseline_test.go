package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/abi"
)

// thread selects the plugin "demo@1".
func thread(kind string) abi.Thread {
	return abi.Thread{ID: "t1", Kind: kind, Roots: []abi.Root{{ID: "demo@1", Location: "local", Path: "/plugins/demo"}}}
}

func localEnv() abi.Environment {
	return abi.Environment{ID: "local", Local: true, Connected: true, Processes: true}
}

func execEnv(id string, headerEnvVars bool) abi.Environment {
	return abi.Environment{ID: id, Connected: true, HTTPHeaderEnvVars: headerEnvVars, Processes: true}
}

// TestBaselineServers has one case per §5 rule the servers baseline decides, each with
// no policy loaded.
func TestBaselineServers(t *testing.T) {
	httpServer := func(name, origin string) abi.Server {
		return abi.Server{Name: name, Origin: origin, Transport: "http", URL: "http://127.0.0.1:1/mcp", Environment: "local", Enabled: true}
	}
	tests := []struct {
		name       string
		in         abi.ServersInput
		wantAction abi.ServerAction
		wantReason string // substring
	}{
		{
			name:       "rule 7: executor-config stdio server is not offered",
			in:         abi.ServersInput{Thread: thread(""), Servers: []abi.Server{{Name: "ignored_stdio", Origin: "executor-config:exec-1", Transport: "stdio", Command: "x", Environment: "exec-1", Enabled: true}}},
			wantAction: abi.ServerHide, wantReason: ReasonExecutorStdio,
		},
		{
			name:       "rule 7: executor-config http server is offered",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{execEnv("exec-1", true)}, Servers: []abi.Server{{Name: "node_repl", Origin: "executor-config:exec-1", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true}}},
			wantAction: abi.ServerExpose,
		},
		{
			name:       "rule 5: reviewer thread discovers no executor-config server",
			in:         abi.ServersInput{Thread: thread("reviewer"), Environments: []abi.Environment{execEnv("exec-1", true)}, Servers: []abi.Server{{Name: "node_repl", Origin: "executor-config:exec-1", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true}}},
			wantAction: abi.ServerHide, wantReason: ReasonReviewerExecutor,
		},
		{
			name:       "rule 5: reviewer thread keeps host-config servers",
			in:         abi.ServersInput{Thread: thread("reviewer"), Environments: []abi.Environment{localEnv()}, Servers: []abi.Server{httpServer("docs", "host-config")}},
			wantAction: abi.ServerExpose,
		},
		{
			name:       "rule 6: plugin server of an unselected plugin is hidden",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, Servers: []abi.Server{func() abi.Server { s := httpServer("p", "plugin:other@1"); s.PluginID = "other@1"; return s }()}},
			wantAction: abi.ServerHide, wantReason: `plugin "other@1": ` + ReasonPluginNotSelected,
		},
		{
			name:       "rule 6: plugin server of a selected plugin is exposed",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, Servers: []abi.Server{func() abi.Server { s := httpServer("p", "plugin:demo@1"); s.PluginID = "demo@1"; return s }()}},
			wantAction: abi.ServerExpose,
		},
		{
			name:       "rule 8: server not on the allow list is disabled",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, HasRequirements: true, Requirements: []abi.Requirement{{Name: "node_repl", URL: "http://x/mcp"}}, Servers: []abi.Server{httpServer("policy_unlisted", "host-config")}},
			wantAction: abi.ServerDisable, wantReason: ReasonBlockedByReqs,
		},
		{
			name:       "rule 8: listed name with another identity is disabled",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, HasRequirements: true, Requirements: []abi.Requirement{{Name: "docs", URL: "http://elsewhere/mcp"}}, Servers: []abi.Server{httpServer("docs", "host-config")}},
			wantAction: abi.ServerDisable, wantReason: ReasonBlockedByReqs + `: identity of "docs" does not match`,
		},
		{
			name:       "rule 8: name and identity match",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, HasRequirements: true, Requirements: []abi.Requirement{{Name: "docs", URL: "http://127.0.0.1:1/mcp"}}, Servers: []abi.Server{httpServer("docs", "host-config")}},
			wantAction: abi.ServerExpose,
		},
		{
			name:       "rule 8: an empty requirements file denies all",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, HasRequirements: true, Servers: []abi.Server{httpServer("docs", "host-config")}},
			wantAction: abi.ServerDisable, wantReason: ReasonBlockedByReqs,
		},
		{
			name:       "enabled = false is listed without tools",
			in:         abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv()}, Servers: []abi.Server{func() abi.Server { s := httpServer("off", "host-config"); s.Enabled = false; return s }()}},
			wantAction: abi.ServerDisable, wantReason: ReasonDisabledInConfig,
		},
		{
			name: "rule 2: plugin server in a legacy executor needing executor env credentials is disabled",
			in: abi.ServersInput{Thread: abi.Thread{ID: "t1", Roots: []abi.Root{{ID: "legacy-plugin@1", Location: "environment", EnvironmentID: "exec-1"}}}, Environments: []abi.Environment{execEnv("exec-1", false)},
				Servers: []abi.Server{{Name: "plugin_sensitive", Origin: "plugin:legacy-plugin@1", PluginID: "legacy-plugin@1", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true,
					Credentials: []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: "exec-1"}}}}},
			wantAction: abi.ServerDisable, wantReason: ReasonNeedsExecutorCreds,
		},
		{
			name: "rule 2: the same server on an executor that resolves env credentials is exposed",
			in: abi.ServersInput{Thread: abi.Thread{ID: "t1", Roots: []abi.Root{{ID: "legacy-plugin@1", Location: "environment", EnvironmentID: "exec-1"}}}, Environments: []abi.Environment{execEnv("exec-1", true)},
				Servers: []abi.Server{{Name: "plugin_sensitive", Origin: "plugin:legacy-plugin@1", PluginID: "legacy-plugin@1", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true,
					Credentials: []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: "exec-1"}}}}},
			wantAction: abi.ServerExpose,
		},
		{
			name: "rule 1: a local plugin may not send a host credential to an executor",
			in: abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv(), execEnv("exec-1", true)},
				Servers: []abi.Server{{Name: "p", Origin: "plugin:demo@1", PluginID: "demo@1", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true,
					Credentials: []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "HOST_TOKEN", Owner: "local"}}}}},
			wantAction: abi.ServerDisable, wantReason: "owned by the host and may not cross to executor",
		},
		{
			name: "rule 1: a host-config server routed to an executor by the operator keeps its host credential",
			in: abi.ServersInput{Thread: thread(""), Environments: []abi.Environment{localEnv(), execEnv("exec-1", false)},
				Servers: []abi.Server{{Name: "host_remote", Origin: "host-config", Transport: "http", URL: "http://x/mcp", Environment: "exec-1", Enabled: true,
					Credentials: []abi.Credential{{Kind: "bearer_env", Name: "Authorization", EnvVar: "HOST_MCP_TEST_TOKEN", Owner: "local"}}}}},
			wantAction: abi.ServerExpose,
		},
		{
			name:       "most restrictive rule wins: disabled and blocked executor stdio is hidden",
			in:         abi.ServersInput{Thread: thread(""), HasRequirements: true, Servers: []abi.Server{{Name: "s", Origin: "executor-config:exec-1", Transport: "stdio", Command: "x", Environment: "exec-1"}}},
			wantAction: abi.ServerHide, wantReason: ReasonExecutorStdio,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			e := NewEngine(Options{Log: NewLog(&log)})
			got := e.Servers(context.Background(), &tt.in)
			if len(got) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(got))
			}
			v := got[0]
			if v.Action != tt.wantAction {
				t.Errorf("action = %v (%q), want %v", v.Action, v.Reason, tt.wantAction)
			}
			if !strings.Contains(v.Reason, tt.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", v.Reason, tt.wantReason)
			}
			if tt.wantAction != abi.ServerExpose && v.DecidedBy != BaselineID {
				t.Errorf("decided by %q, want %q", v.DecidedBy, BaselineID)
			}
			checkLogLines(t, log.Bytes(), 1)
		})
	}
}

// TestBaselineCredentials covers §5 rule 1 (provenance) and rule 2 (legacy executor) for
// the credentials hook.
func TestBaselineCredentials(t *testing.T) {
	bearer := func(owner string) abi.Credential {
		return abi.Credential{Kind: "bearer_env", Name: "Authorization", EnvVar: "TOKEN", Owner: owner}
	}
	tests := []struct {
		name   string
		in     abi.CredentialsInput
		want   abi.CredentialAction
		reason string
	}{
		{"host-config on the host resolves locally",
			abi.CredentialsInput{Server: abi.Server{Name: "docs", Origin: "host-config", Credentials: []abi.Credential{bearer("local")}}, Route: "local", Environment: localEnv()},
			abi.CredentialLocal, "owned by the host"},
		{"host-config routed to an executor by the operator resolves on the host",
			abi.CredentialsInput{Server: abi.Server{Name: "host_remote", Origin: "host-config", Credentials: []abi.Credential{bearer("local")}}, Route: "exec-1", Environment: execEnv("exec-1", false)},
			abi.CredentialLocal, "routed to \"exec-1\" by the operator"},
		{"executor-config resolves in the executor by name",
			abi.CredentialsInput{Server: abi.Server{Name: "node_repl", Origin: "executor-config:exec-1", Credentials: []abi.Credential{bearer("exec-1")}}, Route: "exec-1", Environment: execEnv("exec-1", true)},
			abi.CredentialExecutor, "resolved there by name"},
		{"executor-config on a legacy executor is denied, never resolved on the host",
			abi.CredentialsInput{Server: abi.Server{Name: "node_repl", Origin: "executor-config:exec-1", Credentials: []abi.Credential{bearer("exec-1")}}, Route: "exec-1", Environment: execEnv("exec-1", false)},
			abi.CredentialDeny, ReasonNeedsExecutorCreds},
		{"executor-located plugin resolves in its executor",
			abi.CredentialsInput{Server: abi.Server{Name: "executor_http", Origin: "plugin:executor-demo", PluginID: "executor-demo", Credentials: []abi.Credential{bearer("exec-1")}}, Route: "exec-1", Environment: execEnv("exec-1", true)},
			abi.CredentialExecutor, "owned by executor"},
		{"a local plugin's host credential never crosses to an executor",
			abi.CredentialsInput{Server: abi.Server{Name: "p", Origin: "plugin:demo@1", PluginID: "demo@1", Credentials: []abi.Credential{bearer("local")}}, Route: "exec-1", Environment: execEnv("exec-1", true)},
			abi.CredentialDeny, "may not cross"},
		{"an executor-owned credential cannot resolve on the host",
			abi.CredentialsInput{Server: abi.Server{Name: "p", Origin: "plugin:x", PluginID: "x", Credentials: []abi.Credential{bearer("exec-1")}}, Route: "local", Environment: localEnv()},
			abi.CredentialDeny, "cannot resolve in \"local\""},
		{"a stdio env_var in an executor without processes is denied",
			abi.CredentialsInput{Server: abi.Server{Name: "s", Origin: "plugin:x", PluginID: "x", Credentials: []abi.Credential{{Kind: "env_var", Name: "MARKER", EnvVar: "MARKER", Owner: "exec-1"}}}, Route: "exec-1", Environment: abi.Environment{ID: "exec-1", HTTPHeaderEnvVars: true}},
			abi.CredentialDeny, "pass env_var"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			e := NewEngine(Options{Log: NewLog(&log)})
			got := e.Credentials(context.Background(), &tt.in)
			if len(got) != 1 || got[0].Action != tt.want || !strings.Contains(got[0].Reason, tt.reason) {
				t.Fatalf("got %+v, want %v containing %q", got, tt.want, tt.reason)
			}
			checkLogLines(t, log.Bytes(), 1)
		})
	}
}

func TestToolFilter(t *testing.T) {
	tests := []struct {
		name   string
		f      ToolFilter
		tool   string
		action abi.ToolCallAction
	}{
		{"no lists", ToolFilter{}, "echo", abi.ToolCallAllow},
		{"allow list admits", ToolFilter{Allow: []string{"echo"}}, "echo", abi.ToolCallAllow},
		{"allow list refuses", ToolFilter{Allow: []string{"echo"}}, "add", abi.ToolCallDeny},
		{"empty allow list refuses all", ToolFilter{Allow: []string{}}, "echo", abi.ToolCallDeny},
		{"deny after allow", ToolFilter{Allow: []string{"echo"}, Deny: []string{"echo"}}, "echo", abi.ToolCallDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEngine(Options{})
			v := e.ToolCall(context.Background(), &abi.ToolCallInput{Server: "s", Tool: tt.tool, Arguments: []byte(`{}`)}, tt.f)
			if v.Action != tt.action {
				t.Fatalf("action = %v (%s), want %v", v.Action, v.Reason, tt.action)
			}
		})
	}
}

func TestFilterMergesVerdictLists(t *testing.T) {
	v := &ServerVerdict{AllowTools: []string{"echo", "add"}, DenyTools: []string{"add"}}
	f := Filter([]string{"echo", "env"}, []string{"env"}, v)
	if strings.Join(f.Allow, ",") != "echo" || strings.Join(f.Deny, ",") != "add,env" {
		t.Fatalf("filter = %+v", f)
	}
}

// checkLogLines asserts the decision log holds n lines of valid JSON with the required keys.
func checkLogLines(t *testing.T, log []byte, n int) []map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("decision log has %d lines, want %d:\n%s", len(lines), n, log)
	}
	var out []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("decision log line is not JSON: %v\n%s", err, l)
		}
		for _, k := range []string{"time", "thread", "plugin", "digest", "hook", "input", "latency_us"} {
			if _, ok := m[k]; !ok {
				t.Errorf("decision log line lacks %q: %s", k, l)
			}
		}
		out = append(out, m)
	}
	return out
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\back`, "ctl\x01\x7f\n\t", "utf8 é ✓", "bad \xff utf8"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); got != want {
			t.Errorf("%q round-trips to %q", s, got)
		}
	}
}
