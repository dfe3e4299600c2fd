package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// MaxRequestBody caps an HTTP request body sent through the executor: base64 and the
// envelope must still fit in one protocol message.
const MaxRequestBody = protocol.MaxMessageBytes/4*3 - 64<<10

// RoundTripper returns an http.RoundTripper that makes every request from the executor's
// network with http/request. The request's own headers travel as literal values; headers
// are added to every request (replacing a request header of the same name) — typically
// {Name: "Authorization", ValueEnvVar: "NODE_TOKEN", ValuePrefix: "Bearer "}, so that the
// executor resolves the credential and the host never holds it.
//
// The response body streams from http/body notifications and ends at http/end (an error
// there is a read error). Cancelling the request's context or closing the body sends
// http/cancel. A request body is read fully, up to MaxRequestBody. A response body that
// is not read while the executor keeps sending fails with ErrStreamOverflow once
// Config.StreamBuffer bytes are unread. The RoundTripper is safe for concurrent use.
func (c *Client) RoundTripper(headers []protocol.Header) http.RoundTripper {
	return &roundTripper{c: c, extra: append([]protocol.Header(nil), headers...)}
}

type roundTripper struct {
	c     *Client
	extra []protocol.Header
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := rt.c
	method := protocol.MethodHTTPRequest
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxRequestBody+1))
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("executor %q: %s: reading the request body: %w", c.cfg.Name, method, err)
		}
		if len(b) > MaxRequestBody {
			return nil, fmt.Errorf("executor %q: %s: %w: a request body over %d bytes", c.cfg.Name, method, ErrTooLarge, MaxRequestBody)
		}
		body = b
	}
	override := map[string]bool{}
	for _, h := range rt.extra {
		override[http.CanonicalHeaderKey(h.Name)] = true
	}
	var hs []protocol.Header
	for name, vs := range req.Header {
		if override[http.CanonicalHeaderKey(name)] {
			continue
		}
		for _, v := range vs {
			hs = append(hs, protocol.Header{Name: name, Value: v})
		}
	}
	hs = append(hs, rt.extra...)
	if err := c.reserveStream(method); err != nil {
		return nil, err
	}
	cn, err := c.current(method)
	if err != nil {
		c.releaseStream()
		return nil, err
	}
	id := "r" + strconv.FormatUint(c.nextReq.Add(1), 10)
	s := newStream(fmt.Sprintf("executor %q: http/body of %s %s", c.cfg.Name, req.Method, redactURL(req)), c.cfg.StreamBuffer)
	if !cn.addBody(id, s) {
		c.releaseStream()
		return nil, cn.failedErr(method)
	}
	ctx := req.Context()
	params := protocol.HTTPRequestParams{RequestID: id, Method: req.Method, URL: req.URL.String(), Headers: hs, Body: body}
	var res protocol.HTTPRequestResult
	if err := cn.call(ctx, method, params, &res); err != nil {
		cn.removeBody(id)
		c.releaseStream()
		if ctx.Err() != nil {
			c.cleanup(cn, protocol.MethodHTTPCancel, protocol.HTTPCancelParams{RequestID: id})
		}
		return nil, err
	}
	rb := &responseBody{c: c, cn: cn, id: id, s: s}
	// The callback never reads rb.stop (it is set after AfterFunc returns); the body's own
	// Read and Close, which do, run after RoundTrip has returned.
	rb.stop = context.AfterFunc(ctx, func() {
		rb.s.fail(fmt.Errorf("executor %q: http/body: %w", c.cfg.Name, ctx.Err()))
		rb.release(true, false)
	})
	resp := &http.Response{
		Status:        strconv.Itoa(res.Status) + " " + http.StatusText(res.Status),
		StatusCode:    res.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{},
		Body:          rb,
		ContentLength: -1,
		Request:       req,
	}
	for _, h := range res.Headers {
		resp.Header.Add(h.Name, h.Value)
	}
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			resp.ContentLength = n
		}
	}
	return resp, nil
}

// redactURL is the request's URL without userinfo or query, for errors.
func redactURL(req *http.Request) string {
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery = nil, "", false
	return strings.TrimSuffix(u.String(), "?")
}

// responseBody is a response body fed by http/body and ended by http/end.
type responseBody struct {
	c    *Client
	cn   *conn
	id   string
	s    *stream
	stop func() bool

	once sync.Once
}

func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.s.read(context.Background(), p)
	if err != nil && err != io.EOF {
		b.end(err)
	} else if err == io.EOF {
		b.release(false, true)
	}
	return n, err
}

// end stops the stream with err (the request's ctx ended, the body was closed): the
// executor is told to cancel unless the body had already ended.
func (b *responseBody) end(err error) {
	b.s.fail(err)
	b.release(true, true)
}

func (b *responseBody) release(cancel, stop bool) {
	b.once.Do(func() {
		if stop {
			b.stop()
		}
		b.cn.mu.Lock()
		_, live := b.cn.bodies[b.id]
		delete(b.cn.bodies, b.id)
		b.cn.mu.Unlock()
		b.c.releaseStream()
		if cancel && live {
			b.c.cleanup(b.cn, protocol.MethodHTTPCancel, protocol.HTTPCancelParams{RequestID: b.id})
		}
	})
}

func (b *responseBody) Close() error {
	b.end(fmt.Errorf("executor %q: http/body read after Close: %w", b.c.cfg.Name, http.ErrBodyReadAfterClose))
	return nil
}
