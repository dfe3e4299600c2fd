package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/config"
)

// recordingTransport stands in for an executor tunnel: it records the environment of each
// request and carries it over loopback.
type recordingTransport struct {
	base *http.Transport
	mu   sync.Mutex
	envs []string
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.envs = append(rt.envs, RequestEnvironment(r.Context()))
	rt.mu.Unlock()
	return rt.base.RoundTrip(r)
}

func TestEnvironmentRouting(t *testing.T) {
	p := mcpservertest.StartHTTP(t, exampleBin, nil)
	remote := mustSpec(t, &config.ServerDecl{Name: "routed", URL: p.URL, EnvironmentID: "exec-1"}, nil)
	stdio := mustSpec(t, &config.ServerDecl{Name: "far", Command: exampleBin, EnvironmentID: "exec-1"}, nil)

	// Without a routing RoundTripper, a non-local server is refused rather than reached
	// from the host.
	plain, _ := newManager(t, Options{})
	for _, spec := range []Spec{remote, stdio} {
		if _, err := plain.Acquire(context.Background(), spec); !errors.Is(err, ErrUnroutable) {
			t.Errorf("%s: err = %v, want ErrUnroutable", spec.Name, err)
		}
	}

	rt := &recordingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(rt.base.CloseIdleConnections)
	routed, _ := newManager(t, Options{RoundTripper: rt})
	if _, err := routed.Acquire(context.Background(), stdio); !errors.Is(err, ErrUnroutable) {
		t.Errorf("stdio in an executor: err = %v, want ErrUnroutable", err)
	}
	c := mustAcquire(t, routed, remote)
	// Arguments may be raw JSON.
	callTool(t, c, "echo", json.RawMessage(`{"text":"via exec-1"}`))
	rt.mu.Lock()
	envs := slices.Compact(slices.Clone(rt.envs))
	rt.mu.Unlock()
	if !slices.Equal(envs, []string{"exec-1"}) {
		t.Errorf("RoundTripper saw environments %q, want only exec-1", envs)
	}
}

func TestListToolsPaginates(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "paged"}, &mcp.ServerOptions{PageSize: 2})
	for i := range 5 {
		mcp.AddTool(server, &mcp.Tool{Name: fmt.Sprintf("t%d", i)},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var pages int
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				pages++
			}
			return next(ctx, method, req)
		}
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := listTools(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(tools); !slices.Equal(got, []string{"t0", "t1", "t2", "t3", "t4"}) || pages != 3 {
		t.Errorf("tools %v in %d pages, want t0..t4 in 3", got, pages)
	}
}
