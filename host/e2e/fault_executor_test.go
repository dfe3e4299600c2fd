package e2e_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/internal/leaktest"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/thread"
)

// TestFaultExecutorDropsRestartsDowngrades: calls in flight through an executor when its
// process is killed — one to an executor-config server, one to a server of a plugin located
// in the executor, both authenticated with the executor's token — end with errors naming
// the server, before their tool timeout. The thread stays and its local server keeps
// answering; the executor's servers report it not connected. An executor restarted on the
// same address brings both back (the host reconnects on its own). Restarted downgraded
// (--no-http-header-env-vars), neither is usable: the executor-config server is gone
// ("not available", §5 rule 3) and the plugin's is listed without tools with the legacy
// executor text (§5 rule 2).
func TestFaultExecutorDropsRestartsDowngrades(t *testing.T) {
	faultLeaks(t)
	ctx := testCtx(t)
	c := leaktest.NewCanaries(t, "FAULT_TOKEN_EXEC")
	calls, methods := methodFIFO(t)
	upstream := mcpservertest.StartHTTP(t, exampleBin, append(os.Environ(), "FAULT_TOKEN="+c.Value("FAULT_TOKEN_EXEC")),
		"--name", "fault-exec-upstream", "--require-bearer-env", "FAULT_TOKEN", "--count-file", calls)
	cfg := fmt.Sprintf("[mcp_servers.exec_srv]\nurl = %q\nbearer_token_env_var = \"FAULT_TOKEN\"\ntool_timeout_sec = 60\n", upstream.URL)
	execEnv := []string{"FAULT_TOKEN=" + c.Value("FAULT_TOKEN_EXEC")}
	ex := startExecutor(t, cfg, execEnv)
	execLogs := []*leaktest.Buffer{ex.Stderr}
	plugin := writePlugin(t, `{"name":"exec-fault","version":"1"}`,
		fmt.Sprintf(`{"mcpServers":{"plugin_srv":{"url":%q,"bearer_token_env_var":"FAULT_TOKEN","tool_timeout_sec":60}}}`, upstream.URL))

	t.Setenv("EXEC_TOKEN", execToken)
	h, logs, _ := executorHost(t, map[string]string{
		"config.toml":       serverTOML("steady", exampleBin, nil, ""),
		"environments.toml": fmt.Sprintf("[[environments]]\nid = \"exec-1\"\nurl = %q\ntoken_env = \"EXEC_TOKEN\"\n", ex.URL),
	})
	th := startSelecting(t, h, []thread.SelectedRoot{{ID: "exec-fault@1",
		Location: thread.Location{Type: thread.LocationEnvironment, EnvironmentID: "exec-1", Path: plugin}}})
	ready := func(m map[string]thread.ServerStatus) bool {
		return m["exec_srv"].Status == thread.StateReady && m["plugin_srv"].Status == thread.StateReady
	}
	statusUntil(t, th, "exec_srv and plugin_srv ready", ready)
	isCall := func(m string) bool { return m == "tools/call" }
	for _, s := range []string{"exec_srv", "plugin_srv"} {
		wantOK(t, call(t, ctx, th, s, "echo", map[string]any{"text": "before"}), s+"/echo", "before")
		waitMethod(t, ctx, methods, "the echo call at the upstream", isCall) // consumed, so the wait below sees only the slow calls
	}
	wantOK(t, call(t, ctx, th, "steady", "echo", map[string]any{"text": "before"}), "steady/echo", "before")

	// Two calls in flight through the executor: the upstream has both.
	slowExec := callAsync(ctx, th, "exec_srv", "slow", map[string]any{"ms": 600000})
	slowPlugin := callAsync(ctx, th, "plugin_srv", "slow", map[string]any{"ms": 600000})
	for range 2 {
		waitMethod(t, ctx, methods, "a slow call at the upstream", isCall)
	}
	ex.kill()
	for server, ch := range map[string]<-chan answer{"exec_srv": slowExec, "plugin_srv": slowPlugin} {
		err := wantErr(t, await(t, ctx, ch, server+"/slow"), server+"/slow when the executor died", fmt.Sprintf(`MCP server %q`, server), `tools/call "slow"`, `executor "exec-1"`, "executor disconnected")
		if errors.Is(err, mcpconn.ErrToolTimeout) {
			t.Errorf("%s/slow: %v: the tool timeout answered, not the executor's loss", server, err)
		}
	}
	st := statusUntil(t, th, "exec_srv and plugin_srv failed", func(m map[string]thread.ServerStatus) bool {
		return m["exec_srv"].Status == thread.StateFailed && m["plugin_srv"].Status == thread.StateFailed
	})
	for _, s := range []string{"exec_srv", "plugin_srv"} {
		if e := st[s].ToolsError; !strings.Contains(e, "exec-1") || !strings.Contains(e, "not connected") {
			t.Errorf("%s toolsError = %q, want it to name the executor and say it is not connected", s, e)
		}
	}
	wantErr(t, call(t, ctx, th, "exec_srv", "echo", map[string]any{"text": "x"}), "exec_srv/echo with the executor down", "MCP tool `exec_srv/echo` is not available", "exec-1")
	alive(t, ctx, h, []*thread.Thread{th}, "steady")

	// Restarted on the same address: the host reconnects, the same thread uses both again.
	addr := strings.TrimSuffix(ex.URL, "/")
	ex = startExecutorAt(t, addr, cfg, execEnv)
	execLogs = append(execLogs, ex.Stderr)
	statusUntil(t, th, "exec_srv and plugin_srv ready again", ready)
	for _, s := range []string{"exec_srv", "plugin_srv"} {
		recovers(t, ctx, th, s)
	}

	// Restarted downgraded: what needs executor-side credentials is unavailable, with the
	// contract's texts; the local server is untouched.
	ex.kill()
	statusUntil(t, th, "exec_srv and plugin_srv failed", func(m map[string]thread.ServerStatus) bool {
		return m["exec_srv"].Status == thread.StateFailed && m["plugin_srv"].Status == thread.StateFailed
	})
	execLogs = append(execLogs, startExecutorAt(t, addr, cfg, execEnv, "--no-http-header-env-vars").Stderr)
	st = statusUntil(t, th, "the downgrade applied", func(m map[string]thread.ServerStatus) bool {
		_, listed := m["exec_srv"]
		return !listed && m["plugin_srv"].Status == thread.StateDisabled
	})
	if e := st["plugin_srv"].ToolsError; !strings.Contains(e, decision.ReasonNeedsExecutorCreds) || len(st["plugin_srv"].Tools) != 0 {
		t.Errorf("plugin_srv after the downgrade = %+v, want listed without tools, %q", st["plugin_srv"], decision.ReasonNeedsExecutorCreds)
	}
	wantErr(t, call(t, ctx, th, "exec_srv", "echo", map[string]any{"text": "x"}), "exec_srv/echo after the downgrade", "MCP tool `exec_srv/echo` is not available")
	wantErr(t, call(t, ctx, th, "plugin_srv", "echo", map[string]any{"text": "x"}), "plugin_srv/echo after the downgrade",
		"MCP tool `plugin_srv/echo` is not available", decision.ReasonNeedsExecutorCreds)
	alive(t, ctx, h, []*thread.Thread{th}, "steady")

	// The executor's token went from the executor to the server, nowhere else — not into
	// an error above, the host's log or the executors' logs.
	sources := []leaktest.Source{leaktest.BufferSource("host log", logs)}
	for i, b := range execLogs {
		sources = append(sources, leaktest.BufferSource(fmt.Sprintf("executor %d log", i+1), b))
	}
	leaktest.AssertNoCanary(t, c, sources...)
}
