package leaktest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const initReq = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"warden"}}}`

// fullInitResult is what the test upstream answers to initialize, decoded.
const fullInitResult = `{"protocolVersion":1,"sessionId":"ses_test",
	"capabilities":{"httpHeaderEnvVars":true,"processes":true,"fsRead":true},
	"environmentInfo":{"os":"linux","arch":"amd64","version":"0.0.0"},
	"mcpServers":{"node_repl":{"url":"http://127.0.0.1:9/mcp","bearer_token_env_var":"NODE_TOKEN"}}}`

func TestProxyForwardsAndRecords(t *testing.T) {
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{})
	c := dial(t, p.URL())

	got := call(t, c, initReq)
	if diff := cmp.Diff(decode(t, fullInitResult), got["result"]); diff != "" {
		t.Errorf("initialize result through the proxy (-want +got):\n%s", diff)
	}
	// An id and a number beyond float64's precision survive the trip unchanged.
	echo := `{"jsonrpc":"2.0","id":12345678901234567890,"method":"test/echo","params":{"n":98765432109876543210,"s":"<&>"}}`
	got = call(t, c, echo)
	if diff := cmp.Diff(map[string]any{"received": decode(t, echo)}, got["result"]); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}

	frames := p.Frames()
	wantDirs := []Direction{Upstream, Downstream, Upstream, Downstream}
	if len(frames) != len(wantDirs) {
		t.Fatalf("recorded %d frames, want %d: %+v", len(frames), len(wantDirs), frames)
	}
	for i, f := range frames {
		if f.Dir != wantDirs[i] || f.Conn != 1 || f.Text != f.Forwarded || f.Dropped || f.Injected || f.Time.IsZero() {
			t.Errorf("frame %d = %+v, want %v on conn 1, forwarded as received", i, f, wantDirs[i])
		}
	}
	if frames[0].Text != initReq || frames[2].Text != echo {
		t.Errorf("recorded requests %q, %q; want them byte for byte", frames[0].Text, frames[2].Text)
	}
	if rec := up.Received(); len(rec) != 2 || rec[1] != echo {
		t.Errorf("upstream received %q, want the echo request byte for byte", rec)
	}
	if diff := cmp.Diff([]string{"Bearer " + testToken}, up.Auths()); diff != "" {
		t.Errorf("Authorization at the upstream (-want +got):\n%s", diff)
	}
	if n := p.Connections(); n != 1 {
		t.Errorf("Connections = %d, want 1", n)
	}
	if n := p.Initializes(); n != 1 {
		t.Errorf("Initializes = %d, want 1", n)
	}
}

// The upstream's token check still decides: a wrong or missing token gets the
// upstream's 401 through the proxy, and no pair is made.
func TestProxyForwardsRefusal(t *testing.T) {
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{})
	for _, tc := range []struct {
		name string
		hdr  http.Header
	}{
		{"wrong token", http.Header{"Authorization": {"Bearer not-the-token-0123456789"}}},
		{"no token", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, resp, err := websocket.Dial(testCtx(t), p.URL(), &websocket.DialOptions{HTTPHeader: tc.hdr})
			if err == nil {
				_ = c.CloseNow()
				t.Fatal("dial succeeded, want the upstream's refusal")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("dial: %v (response %+v), want 401", err, resp)
			}
		})
	}
	if n := p.Connections(); n != 0 {
		t.Errorf("Connections = %d, want 0", n)
	}
	if a := up.Auths(); len(a) != 0 {
		t.Errorf("upstream accepted %q", a)
	}
}

func TestProxyRewrites(t *testing.T) {
	httpReq := `{"jsonrpc":"2.0","id":7,"method":"http/request","params":{"requestId":"r7","method":"POST","url":"http://127.0.0.1:9/mcp",
		"headers":[{"name":"Content-Type","value":"application/json"},{"name":"Authorization","valueEnvVar":"NODE_TOKEN","valuePrefix":"Bearer "}],"body":"e30="}}`
	strippedReq := `{"jsonrpc":"2.0","id":7,"method":"http/request","params":{"requestId":"r7","method":"POST","url":"http://127.0.0.1:9/mcp",
		"headers":[{"name":"Content-Type","value":"application/json"},{"name":"Authorization","valuePrefix":"Bearer "}],"body":"e30="}}`
	procReq := `{"jsonrpc":"2.0","id":8,"method":"process/start","params":{"processId":"p1","argv":["node"],"envVars":["NODE_TOKEN"],"headers":[{"valueEnvVar":"X"}]}}`
	downgraded := `{"protocolVersion":1,"sessionId":"ses_test",
		"capabilities":{"processes":true,"fsRead":true},
		"mcpServers":{"node_repl":{"url":"http://127.0.0.1:9/mcp","bearer_token_env_var":"NODE_TOKEN"}}}`
	// A result that is not an initialize result keeps the fields Downgrade removes.
	otherResult := `{"environmentInfo":{"os":"x"},"capabilities":{"httpHeaderEnvVars":true},"protocolVersion":1}`
	otherReq := `{"jsonrpc":"2.0","id":9,"method":"test/result","params":` + otherResult + `}`

	for _, tc := range []struct {
		name     string
		opts     ProxyOptions
		send     string
		wantUp   string // what the upstream received
		wantDown string // the result the client got ("" to skip)
	}{
		{"strip header env vars", ProxyOptions{ToUpstream: StripHeaderEnvVars}, httpReq, strippedReq, ""},
		{"strip leaves other methods", ProxyOptions{ToUpstream: StripHeaderEnvVars}, procReq, procReq, ""},
		{"no rewrite", ProxyOptions{}, httpReq, httpReq, ""},
		{"downgrade initialize", ProxyOptions{ToDownstream: Downgrade}, initReq, initReq, downgraded},
		{"downgrade leaves other results", ProxyOptions{ToDownstream: Downgrade}, otherReq, otherReq, otherResult},
		{"chain", ProxyOptions{ToUpstream: Chain(nil, StripHeaderEnvVars), ToDownstream: Chain(Downgrade)}, httpReq, strippedReq, `{"received":` + strippedReq + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t)
			p := NewProxy(t, up.url, tc.opts)
			c := dial(t, p.URL())
			got := call(t, c, tc.send)
			rec := up.Received()
			if len(rec) != 1 {
				t.Fatalf("upstream received %q, want one message", rec)
			}
			if diff := cmp.Diff(decode(t, tc.wantUp), decode(t, rec[0])); diff != "" {
				t.Errorf("at the upstream (-want +got):\n%s", diff)
			}
			if tc.wantDown != "" {
				if diff := cmp.Diff(decode(t, tc.wantDown), got["result"]); diff != "" {
					t.Errorf("at the client (-want +got):\n%s", diff)
				}
			}
			// The recording keeps both: what arrived and what was sent on.
			f := p.Frames()
			if len(f) != 2 {
				t.Fatalf("recorded %d frames, want 2", len(f))
			}
			if f[0].Text != tc.send {
				t.Errorf("recorded request %q, want it as sent", f[0].Text)
			}
			if diff := cmp.Diff(decode(t, tc.wantUp), decode(t, f[0].Forwarded)); diff != "" {
				t.Errorf("recorded forwarded request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProxyDropHook(t *testing.T) {
	up := newUpstream(t)
	dropPing := func(m map[string]any) (map[string]any, bool) { return m, m["method"] != "test/drop" }
	p := NewProxy(t, up.url, ProxyOptions{ToUpstream: dropPing})
	c := dial(t, p.URL())
	ctx := testCtx(t)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"test/drop"}`)); err != nil {
		t.Fatal(err)
	}
	// The next request is answered first: the dropped one never reached the upstream.
	got := call(t, c, `{"jsonrpc":"2.0","id":2,"method":"test/keep"}`)
	if got["id"] != float64(2) {
		t.Errorf("answer %v, want the answer to id 2", got)
	}
	if rec := up.Received(); len(rec) != 1 {
		t.Errorf("upstream received %q, want only test/keep", rec)
	}
	if f := p.Frames(); len(f) != 3 || !f[0].Dropped || f[0].Forwarded != "" {
		t.Errorf("frames %+v, want the first one recorded as dropped", f)
	}
}

func TestProxyRetireResume(t *testing.T) {
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{RetireResume: true})

	c := dial(t, p.URL())
	resume := `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"warden"},"resumeSessionId":"ses_old"}}`
	got := call(t, c, resume)
	want := map[string]any{"jsonrpc": "2.0", "id": float64(3), "error": map[string]any{
		"code": float64(protocol.CodeSessionRetired), "message": "session retired (leaktest proxy)",
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer to a resume (-want +got):\n%s", diff)
	}
	_, _, err := c.Read(testCtx(t))
	if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
		t.Errorf("after the answer: %v, want a normal close", err)
	}
	if rec := up.Received(); len(rec) != 0 {
		t.Errorf("upstream received %q, want nothing", rec)
	}
	f := p.Frames()
	if len(f) != 2 || !f[1].Injected || f[1].Dir != Downstream {
		t.Errorf("frames %+v, want the resume and the injected answer", f)
	}

	// A fresh initialize is forwarded.
	c2 := dial(t, p.URL())
	got = call(t, c2, initReq)
	if got["result"] == nil {
		t.Errorf("fresh initialize: %v, want a result", got)
	}
	if n := p.Initializes(); n != 2 {
		t.Errorf("Initializes = %d, want 2", n)
	}
}

// SetOptions takes effect on the next messages; DropAll cuts the host off and a new
// connection is served afresh — the downgrade-on-reconnect scenario.
func TestProxyDropAllAndSetOptions(t *testing.T) {
	up := newUpstream(t)
	p := NewProxy(t, up.url, ProxyOptions{})
	c := dial(t, p.URL())
	got := call(t, c, initReq)
	caps, _ := got["result"].(map[string]any)["capabilities"].(map[string]any)
	if caps["httpHeaderEnvVars"] != true {
		t.Fatalf("first initialize: capabilities %v, want httpHeaderEnvVars", caps)
	}

	p.SetOptions(ProxyOptions{ToDownstream: Downgrade})
	p.DropAll()
	if n := p.Live(); n != 0 {
		t.Errorf("Live = %d after DropAll, want 0", n)
	}
	if _, _, err := c.Read(testCtx(t)); err == nil {
		t.Fatal("read after DropAll succeeded, want the connection closed")
	}

	c2 := dial(t, p.URL())
	got = call(t, c2, initReq)
	result, _ := got["result"].(map[string]any)
	if diff := cmp.Diff(decode(t, `{"protocolVersion":1,"sessionId":"ses_test","capabilities":{"processes":true,"fsRead":true},
		"mcpServers":{"node_repl":{"url":"http://127.0.0.1:9/mcp","bearer_token_env_var":"NODE_TOKEN"}}}`), result); diff != "" {
		t.Errorf("initialize after reconnect (-want +got):\n%s", diff)
	}
	if n := p.Connections(); n != 2 {
		t.Errorf("Connections = %d, want 2", n)
	}
	if a := up.Auths(); len(a) != 2 {
		t.Errorf("upstream saw %d upgrades, want 2", len(a))
	}
	if err := p.Wait(testCtx(t), func() bool { return p.Live() == 1 }); err != nil {
		t.Error(err)
	}
	// Wait ends with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ctx, func() bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context = %v, want context.Canceled", err)
	}
}
