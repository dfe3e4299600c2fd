package frontdoor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DrainTimeout bounds how long ServeIO waits, once its input has ended, for the responses to
// the requests it already read.
const DrainTimeout = time.Minute

// ServeStdio serves a thread as an MCP server over the process's stdin and stdout (one JSON
// message per line) until stdin closes or ctx is done; see ServeIO.
func (f *FrontDoor) ServeStdio(ctx context.Context, threadID string) error {
	return f.ServeIO(ctx, threadID, os.Stdin, os.Stdout)
}

// ServeIO serves a thread as an MCP server over a byte stream pair in the MCP stdio framing
// (one JSON-RPC message per line) until r ends or ctx is done. When r ends, the requests
// already read are still answered (for up to DrainTimeout) before the session closes, so
// `warden mcp < requests.jsonl` gets every response. r and w are closed at the end if
// they are io.Closers.
func (f *FrontDoor) ServeIO(ctx context.Context, threadID string, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &pending{ids: map[string]bool{}, changed: make(chan struct{}, 1)}
	t := &mcp.IOTransport{
		Reader: &drainingReader{ctx: ctx, r: r, br: bufio.NewReader(r), p: p},
		Writer: &trackingWriter{w: w, p: p},
	}
	return f.Serve(ctx, threadID, t)
}

// pending is the set of request ids read and not yet answered.
type pending struct {
	mu      sync.Mutex
	ids     map[string]bool
	changed chan struct{}
}

func (p *pending) update(fn func(ids map[string]bool)) {
	p.mu.Lock()
	fn(p.ids)
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *pending) empty() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ids) == 0
}

// envelope is what framing needs of a JSON-RPC message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// key normalizes a request id, so that the response's re-encoded id matches it.
func (e envelope) key() string {
	var v any
	if json.Unmarshal(e.ID, &v) != nil {
		return string(e.ID)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// envelopes decodes a line: one message or a batch.
func envelopes(line []byte) []envelope {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []envelope
		_ = json.Unmarshal(line, &batch)
		return batch
	}
	var e envelope
	if json.Unmarshal(line, &e) != nil {
		return nil
	}
	return []envelope{e}
}

// drainingReader passes the input through line by line, recording the ids of the requests
// it reads; at the end of the input it waits until they are answered (or ctx ends, or
// DrainTimeout passes) before reporting EOF.
type drainingReader struct {
	ctx  context.Context
	r    io.Reader
	br   *bufio.Reader
	p    *pending
	rest []byte // the part of the current line not yet returned
}

func (d *drainingReader) Read(b []byte) (int, error) {
	if len(d.rest) == 0 {
		line, err := d.br.ReadBytes('\n')
		if len(line) > 0 {
			d.p.update(func(ids map[string]bool) {
				for _, e := range envelopes(line) {
					if e.Method != "" && len(e.ID) > 0 && string(e.ID) != "null" {
						ids[e.key()] = true
					}
				}
			})
			d.rest = line
		} else if err != nil {
			if errors.Is(err, io.EOF) {
				d.drain()
			}
			return 0, err
		}
	}
	n := copy(b, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

func (d *drainingReader) drain() {
	timer := time.NewTimer(DrainTimeout)
	defer timer.Stop()
	for !d.p.empty() {
		select {
		case <-d.p.changed:
		case <-d.ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

func (d *drainingReader) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// trackingWriter passes the output through, marking the requests whose responses it writes
// as answered.
type trackingWriter struct {
	w   io.Writer
	p   *pending
	mu  sync.Mutex
	buf []byte // a partial line
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	t.mu.Lock()
	t.buf = append(t.buf, b[:n]...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(t.buf[:i]))
		t.buf = t.buf[i+1:]
	}
	t.mu.Unlock()
	if len(lines) > 0 {
		t.p.update(func(ids map[string]bool) {
			for _, l := range lines {
				for _, e := range envelopes(l) {
					if e.Method == "" && len(e.ID) > 0 {
						delete(ids, e.key())
					}
				}
			}
		})
	}
	return n, err
}

func (t *trackingWriter) Close() error {
	if c, ok := t.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
