package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// initPeer is a loopback WebSocket JSON-RPC peer that speaks only initialize, as
// docs/executor-protocol.md §3 describes it: each connection's initialize requests are
// recorded and answered by answer (by the index of the connection and of the request on
// it). It exercises the handshake paths a real executor cannot be made to take on demand
// (a foreign protocol version, a retired session, a missing sessionId).
type initPeer struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(conn, n int, p protocol.InitializeParams) (any, *protocol.Error)

	mu     sync.Mutex
	auth   []string
	params []protocol.InitializeParams
	conns  []*websocket.Conn
}

func newInitPeer(t *testing.T, answer func(conn, n int, p protocol.InitializeParams) (any, *protocol.Error)) *initPeer {
	p := &initPeer{t: t, answer: answer}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *initPeer) url() string { return "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/" }

func (p *initPeer) serve(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.auth = append(p.auth, r.Header.Get("Authorization"))
	idx := len(p.conns)
	p.conns = append(p.conns, ws)
	p.mu.Unlock()
	defer ws.CloseNow()
	for n := 0; ; n++ {
		_, b, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var m protocol.Message
		if err := json.Unmarshal(b, &m); err != nil || m.Method != protocol.MethodInitialize {
			p.t.Errorf("peer got %s, want initialize", b)
			return
		}
		var ip protocol.InitializeParams
		if err := json.Unmarshal(m.Params, &ip); err != nil {
			p.t.Errorf("initialize params %s: %v", m.Params, err)
			return
		}
		p.mu.Lock()
		p.params = append(p.params, ip)
		p.mu.Unlock()
		res, rpcErr := p.answer(idx, n, ip)
		out := protocol.Message{JSONRPC: "2.0", ID: m.ID, Error: rpcErr}
		if rpcErr == nil {
			out.Result, _ = json.Marshal(res)
		}
		b, _ = json.Marshal(out)
		if err := ws.Write(r.Context(), websocket.MessageText, b); err != nil {
			return
		}
	}
}

// drop closes every connection the peer holds (the executor "went away").
func (p *initPeer) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.CloseNow()
	}
}

func (p *initPeer) recorded() ([]string, []protocol.InitializeParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auth...), append([]protocol.InitializeParams(nil), p.params...)
}

func okResult(session string, resumed bool, caps protocol.Capabilities) protocol.InitializeResult {
	return protocol.InitializeResult{ProtocolVersion: 1, SessionID: session, Resumed: resumed, Capabilities: caps,
		MCPServers: map[string]json.RawMessage{"node_repl": json.RawMessage(`{"url":"https://x.invalid/mcp","bearer_token_env_var":"NODE_TOKEN"}`)}}
}

func TestHandshakeLoopback(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(conn, n int, p protocol.InitializeParams) (any, *protocol.Error)
		wantErr error
		wantMsg string
	}{
		{
			name: "ok",
			answer: func(_, _ int, _ protocol.InitializeParams) (any, *protocol.Error) {
				return okResult("ses_1", false, protocol.Capabilities{Processes: true, FSRead: true}), nil
			},
		},
		{
			name: "foreign protocol version",
			answer: func(_, _ int, _ protocol.InitializeParams) (any, *protocol.Error) {
				r := okResult("ses_1", false, protocol.Capabilities{})
				r.ProtocolVersion = 2
				return r, nil
			},
			wantErr: ErrProtocol, wantMsg: "protocolVersion 2",
		},
		{
			name: "no session id",
			answer: func(_, _ int, _ protocol.InitializeParams) (any, *protocol.Error) {
				return okResult("", false, protocol.Capabilities{}), nil
			},
			wantErr: ErrProtocol, wantMsg: "no sessionId",
		},
		{
			name: "refused",
			answer: func(_, _ int, _ protocol.InitializeParams) (any, *protocol.Error) {
				return nil, &protocol.Error{Code: protocol.CodeInvalidParams, Message: "protocolVersion: none supported"}
			},
			wantMsg: "protocolVersion: none supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peer := newInitPeer(t, tt.answer)
			log, _ := testLogger(t)
			c, err := Dial(testCtx(t), Config{Name: "loop", URL: peer.url(), Token: execToken, Logger: log,
				ClientInfo: protocol.Info{Name: "warden", Version: "test"}})
			auth, params := peer.recorded()
			if len(auth) != 1 || auth[0] != "Bearer "+execToken {
				t.Errorf("upgrade Authorization = %q, want one bearer", auth)
			}
			if len(params) != 1 || params[0] != (protocol.InitializeParams{ProtocolVersion: 1, ClientInfo: protocol.Info{Name: "warden", Version: "test"}}) {
				t.Errorf("initialize params = %+v", params)
			}
			if tt.wantMsg != "" || tt.wantErr != nil {
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded, want an error")
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("Dial: %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), `"loop"`) {
					t.Errorf("Dial: %q, want it to name the environment and say %q", err, tt.wantMsg)
				}
				if strings.Contains(err.Error(), execToken) {
					t.Errorf("Dial error carries the token: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.Capabilities(); got != (protocol.Capabilities{Processes: true, FSRead: true}) {
				t.Errorf("Capabilities = %+v", got)
			}
			if got := string(c.Servers()["node_repl"]); !strings.Contains(got, "NODE_TOKEN") {
				t.Errorf("Servers[node_repl] = %s", got)
			}
			if c.State() != StateConnected {
				t.Errorf("State = %s", c.State())
			}
		})
	}
}

// TestResumeRetired: after a drop the client reconnects asking to resume; a peer that has
// retired the session answers -32013 and the client starts a fresh one on the same
// connection, reporting the capabilities of the new handshake.
func TestResumeRetired(t *testing.T) {
	peer := newInitPeer(t, func(conn, n int, p protocol.InitializeParams) (any, *protocol.Error) {
		switch {
		case conn == 0:
			return okResult("ses_1", false, protocol.Capabilities{HTTPHeaderEnvVars: true, Processes: true}), nil
		case p.ResumeSessionID != "":
			return nil, &protocol.Error{Code: protocol.CodeSessionRetired, Message: "session retired"}
		default:
			return okResult("ses_2", false, protocol.Capabilities{Processes: true}), nil
		}
	})
	log, _ := testLogger(t)
	c, err := Dial(testCtx(t), Config{Name: "loop", URL: peer.url(), Token: execToken, Logger: log, Backoff: fastBackoff})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch := events(t, c)
	if ev := waitEvent(t, ch, StateConnected); ev.SessionID != "ses_1" || !ev.Capabilities.HTTPHeaderEnvVars {
		t.Fatalf("first event = %+v", ev)
	}
	peer.drop()
	if ev := waitEvent(t, ch, StateDisconnected); ev.Err == nil {
		t.Errorf("disconnected event without a cause: %+v", ev)
	}
	ev := waitEvent(t, ch, StateConnected)
	if ev.SessionID != "ses_2" || ev.Resumed || ev.Capabilities != (protocol.Capabilities{Processes: true}) {
		t.Errorf("reconnect event = %+v, want a fresh ses_2 with processes only", ev)
	}
	if got := c.Capabilities(); got.HTTPHeaderEnvVars {
		t.Errorf("Capabilities after reconnect = %+v: the old httpHeaderEnvVars survived", got)
	}
	_, params := peer.recorded()
	var resumed []string
	for _, p := range params {
		resumed = append(resumed, p.ResumeSessionID)
	}
	// The first connection, then maybe failed attempts, then the resume and the fresh one.
	if n := len(resumed); n < 3 || resumed[0] != "" || resumed[n-2] != "ses_1" || resumed[n-1] != "" {
		t.Errorf("resumeSessionIds = %q, want \"\", …, ses_1, \"\"", resumed)
	}
}

func TestDialConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"neither", Config{Name: "x"}},
		{"both", Config{Name: "x", URL: "ws://127.0.0.1:1/", Program: "warden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Dial(context.Background(), tt.cfg); !errors.Is(err, ErrConfig) {
				t.Errorf("Dial: %v, want ErrConfig", err)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	full := func(d time.Duration) time.Duration { return d }
	tests := []struct {
		b       Backoff
		attempt int
		want    time.Duration
	}{
		{Backoff{Jitter: full}, 0, DefaultInitialBackoff},
		{Backoff{Jitter: full}, 3, 8 * DefaultInitialBackoff},
		{Backoff{Jitter: full}, 30, DefaultMaxBackoff},
		{Backoff{Jitter: full}, 1000, DefaultMaxBackoff},
		{Backoff{Initial: time.Second, Max: 3 * time.Second, Jitter: full}, 1, 2 * time.Second},
		{Backoff{Initial: time.Second, Max: 3 * time.Second, Jitter: full}, 2, 3 * time.Second},
		{Backoff{Jitter: func(time.Duration) time.Duration { return -1 }}, 2, 0},
	}
	for _, tt := range tests {
		if got := tt.b.Delay(tt.attempt); got != tt.want {
			t.Errorf("%+v.Delay(%d) = %s, want %s", tt.b, tt.attempt, got, tt.want)
		}
	}
	for i := range 100 {
		if d := (Backoff{}).Delay(i % 10); d < 0 || d > DefaultMaxBackoff {
			t.Fatalf("random delay %s out of range", d)
		}
	}
}
