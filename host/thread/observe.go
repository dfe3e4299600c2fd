package thread

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
)

// View is a thread as an observer (the status page) sees it: ids, names, states, reasons
// and counts, read without applying a pending refresh and without waiting for a server.
type View struct {
	ID      string
	Kind    Kind
	Created time.Time
	// RefreshPending: a refresh is queued (applied by the next status read or tool call);
	// Servers are those of the plan applied so far.
	RefreshPending bool
	// Roots are the capability roots of the applied plan.
	Roots []RootView
	// Servers are the listed servers (hidden ones are not), sorted by name.
	Servers []ServerView
}

// RootView is one selected capability root.
type RootView struct {
	// ID is the plugin id its servers report.
	ID string
	// Environment is where the root is: "local", or the executor holding it.
	Environment string
}

// ServerView is one listed server of a thread.
type ServerView struct {
	Name string
	// PluginID is the plugin id clients see ("" for host-config and executor-config).
	PluginID string
	Status   StartupState
	// Reason says why a disabled or failed server has no tools (its toolsError).
	Reason string
	// DecidedBy names who disabled it ("baseline", "operator:<id>", "plugin:<id>"); "" when
	// policy exposed it.
	DecidedBy string
	// Tools counts the tools the thread sees (after its filter); 0 unless ready.
	Tools      int
	AuthStatus AuthStatus
	// Owner is the environment whose env/secret store holds the server's credentials;
	// Environment is where it runs (or is routed): "local" or an executor id.
	Owner, Environment string
	// SessionKey is the sharing key of its connection (mcpconn.SessionInfo.Key), "" when it
	// has none.
	SessionKey string
}

// View reports the thread as it is now. It neither applies a pending refresh nor waits:
// servers still starting are StateStarting. A closed thread has no servers.
func (t *Thread) View() View {
	t.mu.Lock()
	v := View{ID: t.id, Kind: t.kind, Created: t.created, RefreshPending: t.pending != nil}
	es := make([]*entry, 0, len(t.servers))
	for _, e := range t.servers {
		es = append(es, e)
	}
	if t.current != nil {
		for _, r := range t.current.roots {
			v.Roots = append(v.Roots, RootView{ID: r.reported, Environment: cmp.Or(r.env, config.LocalEnvironment)})
		}
	}
	t.mu.Unlock()
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.name(), b.name()) })
	for _, e := range es {
		st := e.status(t.m)
		sv := ServerView{Name: st.Name, PluginID: st.PluginID, Status: st.Status, Reason: st.ToolsError,
			Tools: len(st.Tools), AuthStatus: st.AuthStatus, DecidedBy: e.verdict.DecidedBy,
			Owner: cmp.Or(e.cand.owner, config.LocalEnvironment), Environment: cmp.Or(e.cand.route, config.LocalEnvironment)}
		if e.sess != nil {
			sv.SessionKey = e.sess.spec.Key
		}
		v.Servers = append(v.Servers, sv)
	}
	return v
}

// ToolCallOutcome classifies a finished tool call for Options.OnToolCall.
type ToolCallOutcome string

// Tool call outcomes.
const (
	// ToolCallOK: the server answered with a result.
	ToolCallOK ToolCallOutcome = "ok"
	// ToolCallToolError: the server (or a tool_result policy) answered with isError.
	ToolCallToolError ToolCallOutcome = "tool_error"
	// ToolCallDenied: policy, the user or the configuration refused the call.
	ToolCallDenied ToolCallOutcome = "denied"
	// ToolCallFailed: no result (the server is unavailable, failed, timed out; invalid
	// arguments).
	ToolCallFailed ToolCallOutcome = "failed"
)

// CallToolWith is CallTool with options: the request's _meta and progress, and the
// approval of a call that needs one (the server's approval_mode is "prompt", or a policy
// answered ask: o.Approve is asked; declined, cancelled or nobody to ask is a *DeniedError
// and each answer is in the decision log). The result passes the tool_result hook, which may
// rewrite it or replace it with a tool error.
func (t *Thread) CallToolWith(ctx context.Context, server, tool string, args json.RawMessage, caller string, o CallOptions) (*mcp.CallToolResult, error) {
	res, err := t.callToolWith(ctx, server, tool, args, caller, o)
	if fn := t.m.onToolCall; fn != nil {
		t.mu.Lock()
		_, listed := t.servers[server]
		t.mu.Unlock()
		name := server
		if !listed {
			name = "" // the caller's word only: never a metric label
		}
		outcome := ToolCallOK
		var denied *DeniedError
		switch {
		case errors.As(err, &denied):
			outcome = ToolCallDenied
		case err != nil:
			outcome = ToolCallFailed
		case res.IsError:
			outcome = ToolCallToolError
		}
		fn(name, outcome)
	}
	return res, err
}
