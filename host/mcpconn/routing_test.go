package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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

// A Spec whose credential values were resolved on the host is refused for an executor
// route unless its declaration is host-config (the operator routed it): the transport
// checks provenance itself, whatever decided the route. A RefResolver Spec of the same
// declaration carries names only and is routed.
func TestHostValuesCrossOnlyForHostConfig(t *testing.T) {
	p := mcpservertest.StartHTTP(t, exampleBin, nil)
	host := MapResolver("local", map[string]string{"TOKEN": secretToken})
	plugin := config.ServerDecl{Name: "plugin_srv", URL: p.URL, EnvironmentID: "exec-1", BearerTokenEnvVar: "TOKEN",
		Origin: config.Origin{Kind: config.OriginPlugin, Environment: "exec-1", PluginID: "p@1"}}
	operator := plugin
	operator.Name, operator.Origin = "operator_srv", config.Origin{Kind: config.OriginHostConfig}

	rt := &recordingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(rt.base.CloseIdleConnections)
	m, _ := newManager(t, Options{RoundTripper: rt})

	_, err := m.Acquire(context.Background(), mustSpec(t, &plugin, host))
	if !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), "plugin:p@1") {
		t.Fatalf("plugin Spec with a host value to exec-1: %v, want ErrUnroutable naming the origin", err)
	}
	if err != nil && strings.Contains(err.Error(), secretToken) {
		t.Fatal("the refusal carries the value")
	}
	rt.mu.Lock()
	sent := len(rt.envs)
	rt.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d requests left the host for the refused Spec", sent)
	}
	byName, err := BuildSpec(&plugin, RefResolver{Environment: "exec-1"}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName.HeaderRefs) != 1 || byName.HeaderRefs[0] != (HeaderRef{Name: "Authorization", EnvVar: "TOKEN", Prefix: "Bearer "}) || len(byName.Headers) != 0 {
		t.Fatalf("RefResolver Spec: refs %+v, headers %v", byName.HeaderRefs, byName.Headers)
	}
	// The operator's own routed server may carry the host's value (and reaches the server).
	mustAcquire(t, m, mustSpec(t, &operator, host))
}
