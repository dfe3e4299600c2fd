package e2e_test

//lint:file-ignore SA1019 roots and sampling are deprecated by protocol 2026-07-28 (SEP-2577), not removed: the front door passes them through, and this test checks that it does

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/thread"
)

// TestGatewayClientFeatures: server-everything and server-filesystem (stdio, from
// testdata/npm) behind one warden thread with bare names, and a go-sdk client over
// streamable HTTP that declares sampling, elicitation and roots. Through the front door
// the client completes a prompt argument, receives the progress notifications of a long
// tool, answers server-everything's sampling and elicitation requests (whose tools it can
// see because it declared those capabilities), and server-filesystem sees the client's
// root in place of the directory it was started with.
func TestGatewayClientFeatures(t *testing.T) {
	npm := gatewayNPM(t)
	everything := npm.file(t, everythingPkg, "dist/index.js")
	filesystem := npm.file(t, filesystemPkg, "dist/index.js")
	// server-filesystem gets a start-up directory (it refuses to run with neither one nor a
	// client's roots); the client's root must replace it.
	startDir, clientRoot := t.TempDir(), t.TempDir()
	extra := "required = true\nstartup_timeout_sec = 120\ntool_timeout_sec = 120"
	h := newHost(t, newHome(t, serverTOML("everything", npm.node, []string{everything, "stdio"}, extra)+
		serverTOML("filesystem", npm.node, []string{filesystem, startDir}, extra)))
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	st, err := th.Status(testCtx(t), "", false)
	if err != nil || len(st) != 2 || st[0].Status != thread.StateReady || st[1].Status != thread.StateReady {
		t.Fatalf("the servers are not ready in the thread: %+v, %v", st, err)
	}
	url := frontDoorListen(t, h, frontdoor.Options{ToolNames: frontdoor.ToolNamesBare}) + frontdoor.ThreadPath(th.ID())

	var (
		mu       sync.Mutex
		progress []*mcp.ProgressNotificationParams
		sampled  []string // the text of each sampling request's messages
		elicited []string // each elicitation request's message
	)
	progressed := make(chan struct{}, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "warden-e2e-features", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var b strings.Builder
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			mu.Lock()
			sampled = append(sampled, b.String())
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled-by-the-front-door-client"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicited = append(elicited, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace-e2e"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
			progressed <- struct{}{}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file://" + clientRoot, Name: "e2e-root"})
	rootsAsked := make(chan struct{}, 64) // the client answered a roots/list request
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "roots/list" {
				rootsAsked <- struct{}{}
			}
			return res, err
		}
	})
	ctx := testCtx(t)
	tr := &http.Transport{}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatalf("connecting to the front door: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		tr.CloseIdleConnections()
	})
	tools := listToolNames(t, ctx, cs)

	t.Run("completion", func(t *testing.T) {
		res, err := cs.Complete(testCtx(t), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
		})
		if err != nil {
			t.Fatalf("completion/complete completable-prompt department=E: %v", err)
		}
		if !slices.Equal(res.Completion.Values, []string{"Engineering"}) {
			t.Errorf("completion/complete completable-prompt department=E = %q, want [Engineering]", res.Completion.Values)
		}
	})
	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.2, "steps": 2}}
		params.SetProgressToken("e2e-progress")
		res, err := cs.CallTool(testCtx(t), params)
		if err != nil || res.IsError {
			t.Fatalf("tools/call trigger-long-running-operation: %+v, %v", res, err)
		}
		// The server sends both notifications before its result; the client may hand them
		// to the handler after the result arrives.
		for range 2 {
			select {
			case <-progressed:
			case <-time.After(30 * time.Second):
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("progress notifications received: %d, want 2 (%+v)", len(progress), progress)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for i, p := range progress {
			if p.ProgressToken != "e2e-progress" || p.Progress != float64(i+1) || p.Total != 2 {
				t.Errorf("progress notification %d = %+v, want token e2e-progress, progress %d of 2", i, p, i+1)
			}
		}
	})
	t.Run("sampling", func(t *testing.T) {
		if !slices.Contains(tools, "trigger-sampling-request") {
			t.Fatalf("tools/list = %q: no trigger-sampling-request, which server-everything offers a client that declares sampling", tools)
		}
		text, res := callText(t, testCtx(t), cs, "trigger-sampling-request", map[string]any{"prompt": "e2e-sampling-prompt", "maxTokens": 5})
		if res.IsError || !strings.Contains(text, "sampled-by-the-front-door-client") {
			t.Errorf("trigger-sampling-request = %q (isError %v), want the client's sampled answer in it", text, res.IsError)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(sampled) != 1 || !strings.Contains(sampled[0], "e2e-sampling-prompt") {
			t.Errorf("sampling requests the client received = %q, want one with the tool's prompt", sampled)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		if !slices.Contains(tools, "trigger-elicitation-request") {
			t.Fatalf("tools/list = %q: no trigger-elicitation-request, which server-everything offers a client that declares elicitation", tools)
		}
		text, res := callText(t, testCtx(t), cs, "trigger-elicitation-request", map[string]any{})
		if res.IsError || !strings.Contains(text, "Ada Lovelace-e2e") {
			t.Errorf("trigger-elicitation-request = %q (isError %v), want the client's answer in it", text, res.IsError)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(elicited) != 1 {
			t.Errorf("elicitation requests the client received = %q, want one", elicited)
		}
	})
	t.Run("roots", func(t *testing.T) {
		root, err := filepath.EvalSymlinks(clientRoot)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(tools, "list_allowed_directories") {
			t.Fatalf("tools/list = %q: no list_allowed_directories (server-filesystem)", tools)
		}
		// server-filesystem asks for the roots after its initialization and on
		// roots/list_changed. Someone must have asked this client (only server-filesystem
		// and server-everything's get-roots-list, not called here, do).
		select {
		case <-rootsAsked:
		case <-time.After(30 * time.Second):
			t.Fatal("no roots/list request reached the client")
		}
		// The server then replaces its directories asynchronously (file system calls) and
		// says so only on its stderr: the tool's answer is polled, bounded, until it names
		// the root.
		deadline := time.Now().Add(30 * time.Second)
		for {
			text, res := callText(t, testCtx(t), cs, "list_allowed_directories", map[string]any{})
			if !res.IsError && slices.Contains(strings.Split(text, "\n"), root) {
				if strings.Contains(text, startDir) {
					t.Errorf("list_allowed_directories = %q: the start-up directory is still allowed next to the client's root", text)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("list_allowed_directories = %q (isError %v), want the client's root %s", text, res.IsError, root)
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	})
	// Nothing of this test may write into the client's root.
	if des, err := os.ReadDir(clientRoot); err != nil || len(des) != 0 {
		t.Errorf("the client's root holds %d entries (%v), want none", len(des), err)
	}
}
