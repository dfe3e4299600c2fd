package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// TestReconnectDowngraded: killing the executor fails the call in flight and every later
// call with ErrDisconnected and says so in an event; a new executor on the same address,
// started without httpHeaderEnvVars, is reconnected to by the client itself, and the event
// reports the capabilities it now announces.
func TestReconnectDowngraded(t *testing.T) {
	env := baseEnv(t, "NODE_TOKEN="+execValue)
	first := startExecutor(t, "ws://127.0.0.1:0", env)
	log, _ := testLogger(t)
	c, err := Dial(testCtx(t), Config{Name: "devbox", URL: first.URL, Token: execToken, Logger: log, Backoff: fastBackoff})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch := events(t, c)
	if ev := waitEvent(t, ch, StateConnected); !ev.Capabilities.HTTPHeaderEnvVars || ev.SessionID == "" {
		t.Fatalf("initial event = %+v", ev)
	}

	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // until the executor's connection goes away
	}))
	defer srv.Close()
	hc := &http.Client{Transport: c.RoundTripper(nil)}
	inFlight := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, srv.URL, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		inFlight <- err
	}()
	<-started

	first.kill()
	ev := waitEvent(t, ch, StateDisconnected)
	if ev.Err == nil || ev.Environment != "devbox" {
		t.Errorf("disconnected event = %+v, want a cause and the environment", ev)
	}
	if err := <-inFlight; !errors.Is(err, ErrDisconnected) {
		t.Errorf("request in flight: %v, want ErrDisconnected", err)
	}
	if c.State() != StateDisconnected {
		t.Errorf("State = %s, want disconnected", c.State())
	}
	if caps := c.Capabilities(); caps != (protocol.Capabilities{}) {
		t.Errorf("Capabilities while disconnected = %+v, want none", caps)
	}
	_, err = c.ReadFile(testCtx(t), "/", "etc/hostname", 0)
	if !errors.Is(err, ErrDisconnected) || !strings.Contains(err.Error(), `"devbox"`) {
		t.Errorf("ReadFile while disconnected: %v, want ErrDisconnected naming devbox", err)
	}
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodGet, srv.URL, nil)
	if _, err := hc.Do(req); !errors.Is(err, ErrDisconnected) {
		t.Errorf("request while disconnected: %v, want ErrDisconnected", err)
	}

	u, err := url.Parse(first.URL)
	if err != nil {
		t.Fatal(err)
	}
	startExecutor(t, "ws://"+u.Host, env, "--no-http-header-env-vars")
	ev = waitEvent(t, ch, StateConnected)
	if ev.Resumed || ev.Capabilities.HTTPHeaderEnvVars || !ev.Capabilities.Processes {
		t.Errorf("reconnect event = %+v, want a fresh session without httpHeaderEnvVars", ev)
	}
	if caps := c.Capabilities(); caps.HTTPHeaderEnvVars {
		t.Errorf("Capabilities after the downgrade = %+v", caps)
	}
}

// TestResumeKeepsProcess: when the connection drops but the executor lives on, the client
// resumes the session and a stdio server started before the drop keeps serving.
func TestResumeKeepsProcess(t *testing.T) {
	c := dialKinds(t, "NODE_TOKEN="+execValue)["websocket"]
	ch := events(t, c)
	before := waitEvent(t, ch, StateConnected)
	ctx := testCtx(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		c.CommandTransport(protocol.ProcessStartParams{Argv: []string{exampleBin}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	cn.fail(errors.New("test: network dropped")) // the executor is untouched

	waitEvent(t, ch, StateDisconnected)
	after := waitEvent(t, ch, StateConnected)
	if !after.Resumed || after.SessionID != before.SessionID {
		t.Fatalf("reconnect event = %+v, want session %s resumed", after, before.SessionID)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || res.IsError {
		t.Fatalf("CallTool after resume = %+v, %v", res, err)
	}
}

// TestProgramRespawn: a stdio executor that dies is spawned again; the session cannot be
// resumed, so a stdio server of the old session fails instead of hanging.
func TestProgramRespawn(t *testing.T) {
	c := dialKinds(t)["stdio"]
	ch := events(t, c)
	before := waitEvent(t, ch, StateConnected)
	ctx := testCtx(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		c.CommandTransport(protocol.ProcessStartParams{Argv: []string{exampleBin}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	c.mu.Lock()
	w := c.cur.w.(*stdioWire)
	c.mu.Unlock()
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, StateDisconnected)
	after := waitEvent(t, ch, StateConnected)
	if after.Resumed || after.SessionID == before.SessionID || !after.Capabilities.Processes {
		t.Errorf("respawn event = %+v, want a fresh session", after)
	}
	waitCtx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case <-done:
	case <-waitCtx.Done():
		t.Fatal("the old session's stdio server connection did not end")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("CallTool on a server of the lost session succeeded")
	}
}
