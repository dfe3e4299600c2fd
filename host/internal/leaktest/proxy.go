package leaktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// Limits of the proxy. A frame the proxy cannot read would end the connection before the
// executor saw it, so the read limit sits well above the protocol's own: the executor's
// oversize handling stays testable through the proxy.
const (
	proxyReadLimit    = 4 * protocol.MaxMessageBytes
	proxyWriteTimeout = 30 * time.Second
	proxyDialTimeout  = 10 * time.Second
)

// Direction is the way a frame travelled through a Proxy.
type Direction int

const (
	// Upstream: from the downstream client (the host) to the upstream (the executor).
	Upstream Direction = iota
	// Downstream: from the upstream (the executor) to the downstream client (the host).
	Downstream
)

func (d Direction) String() string {
	if d == Upstream {
		return "host→executor"
	}
	return "executor→host"
}

// Frame is one WebSocket message the proxy received. Text is the message as it arrived;
// Forwarded is what the proxy sent on ("" when a rewrite dropped it), which differs from
// Text only when a rewrite changed it. An Injected frame was written by the proxy itself
// (the answer of RetireResume) and never reached the upstream.
type Frame struct {
	Conn      int // 1 for the first downstream connection, 2 for the next, …
	Dir       Direction
	Time      time.Time
	Text      string
	Forwarded string
	Binary    bool
	Dropped   bool
	Injected  bool
}

// Rewrite is a hook on one JSON-RPC message (a JSON object, numbers kept as json.Number).
// It returns the message to forward — the same map modified, or a new one — and false to
// drop it. Messages that are not JSON objects are forwarded unchanged without a hook.
//
// Hooks are called from every connection's goroutines, possibly at the same time: a hook
// that keeps state must synchronise it.
type Rewrite func(msg map[string]any) (map[string]any, bool)

// ProxyOptions are the rewrites of a Proxy; the zero value forwards every frame as is.
type ProxyOptions struct {
	// ToUpstream rewrites host→executor messages.
	ToUpstream Rewrite
	// ToDownstream rewrites executor→host messages.
	ToDownstream Rewrite
	// RetireResume answers every initialize that carries a resumeSessionId with error
	// -32013 (session retired) without forwarding it, then closes the connection: the
	// host must start a fresh session.
	RetireResume bool
}

// Proxy is a recording WebSocket proxy between a host (downstream) and an executor
// (upstream). Every downstream connection is paired with its own upstream connection,
// dialled with the Authorization and Origin headers the downstream presented, so that
// the executor still makes its own access checks: an upstream that refuses the handshake
// gets the downstream refused with the same status.
//
// A Proxy's methods are safe for concurrent use. It is closed by t.Cleanup.
type Proxy struct {
	upstream string
	url      string
	srv      *http.Server
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu          sync.Mutex
	opts        ProxyOptions
	closed      bool
	frames      []Frame
	live        map[int]*pair
	connections int
	initializes int
	changed     changes
}

// pair is one downstream connection and its upstream.
type pair struct {
	id       int
	down, up *websocket.Conn
	done     chan struct{}
}

// NewProxy starts a proxy on 127.0.0.1:0 in front of upstreamURL (a ws:// URL; every
// connection dials exactly it, whatever path the downstream asked for).
func NewProxy(t testing.TB, upstreamURL string, opts ProxyOptions) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("leaktest: proxy listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		upstream: upstreamURL,
		url:      "ws://" + ln.Addr().String() + "/",
		ctx:      ctx,
		cancel:   cancel,
		opts:     opts,
		live:     map[int]*pair{},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = p.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		p.close()
		<-served
	})
	return p
}

// URL is the proxy's endpoint, ws://127.0.0.1:PORT/.
func (p *Proxy) URL() string { return p.url }

// SetOptions replaces the rewrites; messages read after it returns use the new ones.
func (p *Proxy) SetOptions(opts ProxyOptions) {
	p.mu.Lock()
	p.opts = opts
	p.mu.Unlock()
}

// Frames returns a copy of every frame recorded so far, in the order the proxy read them.
// The recording lives in memory for the proxy's lifetime: it is meant for test traffic.
func (p *Proxy) Frames() []Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Frame(nil), p.frames...)
}

// Connections is how many downstream connections the proxy has accepted (and paired).
func (p *Proxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connections
}

// Live is how many connection pairs are open now.
func (p *Proxy) Live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// Initializes is how many initialize requests the downstream has sent, retired ones
// included.
func (p *Proxy) Initializes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.initializes
}

// Wait blocks until cond reports true or ctx ends. cond is evaluated now and after every
// recorded frame and every connection opened or closed; it may call the Proxy's methods.
func (p *Proxy) Wait(ctx context.Context, cond func() bool) error {
	return p.changed.wait(ctx, &p.mu, cond, "proxy")
}

// WaitFrame waits for the first recorded frame (from the start of the recording) that
// match reports true for and returns it.
func (p *Proxy) WaitFrame(ctx context.Context, match func(Frame) bool) (Frame, error) {
	var found Frame
	err := p.Wait(ctx, func() bool {
		for _, f := range p.Frames() {
			if match(f) {
				found = f
				return true
			}
		}
		return false
	})
	return found, err
}

// DropAll closes every connection pair open when it is called, at once, without a close handshake, as a
// network failure would, and returns when their goroutines are done. The listener stays
// open: a host that reconnects gets a fresh pair.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	pairs := make([]*pair, 0, len(p.live))
	for _, c := range p.live {
		pairs = append(pairs, c)
	}
	p.mu.Unlock()
	for _, c := range pairs {
		_ = c.down.CloseNow()
		_ = c.up.CloseNow()
	}
	for _, c := range pairs {
		<-c.done
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	_ = p.srv.Close() // the listener; hijacked connections are ours to end
	p.DropAll()
	p.wg.Wait()
}

// notifyLocked wakes Wait; p.mu is held.
func (p *Proxy) notifyLocked() { p.changed.notifyLocked() }

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "leaktest proxy closed", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()

	hdr := http.Header{}
	for _, k := range []string{"Authorization", "Origin"} {
		if v := r.Header.Values(k); len(v) > 0 {
			hdr[k] = v
		}
	}
	dctx, dcancel := context.WithTimeout(p.ctx, proxyDialTimeout)
	up, resp, err := websocket.Dial(dctx, p.upstream, &websocket.DialOptions{HTTPHeader: hdr})
	dcancel()
	if err != nil {
		// Mirror the executor's refusal so that the host sees what it would have seen.
		status, body := http.StatusBadGateway, "leaktest proxy: upstream dial failed\n"
		if resp != nil && resp.StatusCode >= 400 {
			status = resp.StatusCode
			if b, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); rerr == nil {
				body = string(b)
			}
		}
		if resp != nil {
			if v := resp.Header.Get("WWW-Authenticate"); v != "" {
				w.Header().Set("WWW-Authenticate", v)
			}
			if resp.Body != nil {
				_ = resp.Body.Close()
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
		return
	}
	up.SetReadLimit(proxyReadLimit)
	// The executor judges the Origin (forwarded above); the proxy must not refuse first.
	down, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		_ = up.CloseNow()
		return
	}
	down.SetReadLimit(proxyReadLimit)

	p.mu.Lock()
	p.connections++
	c := &pair{id: p.connections, down: down, up: up, done: make(chan struct{})}
	p.live[c.id] = c
	p.notifyLocked()
	p.mu.Unlock()

	var pumps sync.WaitGroup
	pumps.Add(2)
	go func() { defer pumps.Done(); p.pump(c, Upstream) }()
	go func() { defer pumps.Done(); p.pump(c, Downstream) }()
	pumps.Wait()

	p.mu.Lock()
	delete(p.live, c.id)
	p.notifyLocked()
	p.mu.Unlock()
	close(c.done)
}

// pump copies one direction of a pair until either side ends; it then ends the other
// side with the same close status (or abruptly, for an abrupt end), which stops the
// opposite pump.
func (p *Proxy) pump(c *pair, dir Direction) {
	src, dst := c.down, c.up
	if dir == Downstream {
		src, dst = c.up, c.down
	}
	for {
		typ, data, err := src.Read(p.ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != -1 {
				// Close is bounded by the library (a close handshake of at most 10 s).
				_ = dst.Close(st, "")
			} else {
				_ = dst.CloseNow()
			}
			return
		}
		f := Frame{Conn: c.id, Dir: dir, Time: time.Now(), Text: string(data), Binary: typ == websocket.MessageBinary}
		out, retire := p.handle(&f, dir, typ, data)
		if retire != nil {
			p.record(f)
			inj := Frame{Conn: c.id, Dir: Downstream, Time: time.Now(), Text: string(retire), Forwarded: string(retire), Injected: true}
			p.record(inj)
			if werr := write(p.ctx, c.down, websocket.MessageText, retire); werr != nil {
				_ = c.down.CloseNow()
			} else {
				_ = c.down.Close(websocket.StatusNormalClosure, "session retired")
			}
			_ = c.up.CloseNow()
			return
		}
		p.record(f)
		if f.Dropped {
			continue
		}
		if werr := write(p.ctx, dst, typ, out); werr != nil {
			_ = src.CloseNow()
			_ = dst.CloseNow()
			return
		}
	}
}

// handle applies the options to one message: it fills f.Forwarded/f.Dropped and returns
// the bytes to forward, or the answer to inject when RetireResume refuses the message.
func (p *Proxy) handle(f *Frame, dir Direction, typ websocket.MessageType, data []byte) (out, retire []byte) {
	p.mu.Lock()
	opts := p.opts
	p.mu.Unlock()
	msg, isObj := decodeObject(data)
	if typ != websocket.MessageText || !isObj {
		f.Forwarded = f.Text
		return data, nil
	}
	if dir == Upstream && msg["method"] == protocol.MethodInitialize {
		p.mu.Lock()
		p.initializes++
		p.mu.Unlock()
		if opts.RetireResume && hasResume(msg) {
			return nil, retireAnswer(msg)
		}
	}
	hook := opts.ToUpstream
	if dir == Downstream {
		hook = opts.ToDownstream
	}
	if hook == nil {
		f.Forwarded = f.Text
		return data, nil
	}
	msg, keep := hook(msg)
	if !keep {
		f.Dropped = true
		return nil, nil
	}
	out, err := encodeObject(msg)
	if err != nil {
		// A hook that builds an unencodable message is a test bug; forward nothing rather
		// than something the test did not mean.
		f.Dropped = true
		return nil, nil
	}
	f.Forwarded = string(out)
	return out, nil
}

func (p *Proxy) record(f Frame) {
	p.mu.Lock()
	p.frames = append(p.frames, f)
	p.notifyLocked()
	p.mu.Unlock()
}

func hasResume(msg map[string]any) bool {
	params, _ := msg["params"].(map[string]any)
	id, _ := params["resumeSessionId"].(string)
	return id != ""
}

func retireAnswer(req map[string]any) []byte {
	b, err := encodeObject(map[string]any{
		"jsonrpc": "2.0",
		"id":      req["id"],
		"error": map[string]any{
			"code":    protocol.CodeSessionRetired,
			"message": "session retired (leaktest proxy)",
		},
	})
	if err != nil {
		// The id came out of a JSON decode, so it encodes; keep the answer well-formed anyway.
		b = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"session retired (leaktest proxy)"}}`, protocol.CodeSessionRetired))
	}
	return b
}

// decodeObject parses a JSON object, keeping numbers exact (ids and sizes survive a
// rewrite unchanged).
func decodeObject(data []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return m, true
}

func encodeObject(m map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("leaktest: encode rewritten message: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func write(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, proxyWriteTimeout)
	defer cancel()
	return c.Write(ctx, typ, data)
}
