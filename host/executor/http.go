package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/warden-mcp/warden/host/executor/protocol"
)

// errCanceled is the cause of an http/cancel.
var errCanceled = errors.New("canceled")

func (c *conn) httpRequest(ctx context.Context, raw json.RawMessage) (any, func(), *protocol.Error) {
	var p protocol.HTTPRequestParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, nil, e
	}
	if p.RequestID == "" {
		return nil, nil, invalidParams("params.requestId: missing")
	}
	if p.Method == "" {
		p.Method = http.MethodGet
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, invalidParams("params.url: want an absolute http:// or https:// URL, got %q", redactURL(p.URL))
	}
	where := p.Method + " " + redactURL(p.URL)
	hdr := http.Header{}
	host := ""
	for i, h := range p.Headers {
		if h.Name == "" || !validHeaderName(h.Name) {
			return nil, nil, invalidParams("params.headers[%d].name: invalid header name %q", i, h.Name)
		}
		v := h.Value
		if h.ValueEnvVar != "" {
			if h.Value != "" {
				return nil, nil, invalidParams("params.headers[%d]: set one of value and valueEnvVar", i)
			}
			if !c.s.opts.Capabilities.HTTPHeaderEnvVars {
				return nil, nil, forbidden("http/request %s: header %s names variable %s, but this executor does not offer the httpHeaderEnvVars capability", where, h.Name, h.ValueEnvVar)
			}
			ev, ok := c.s.getenv(h.ValueEnvVar)
			if !ok || ev == "" {
				return nil, nil, failed("http/request %s: header %s: environment variable %s is unset or empty in the executor", where, h.Name, h.ValueEnvVar)
			}
			v = h.ValuePrefix + ev
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			// The value may be a credential: name the header, never the value.
			return nil, nil, invalidParams("params.headers[%d]: header %s has an invalid value", i, h.Name)
		}
		if strings.EqualFold(h.Name, "Host") {
			host = v
			continue
		}
		hdr.Add(h.Name, v)
	}

	c.mu.Lock()
	switch {
	case c.reqs[p.RequestID] != nil:
		c.mu.Unlock()
		return nil, nil, invalidParams("params.requestId: %q is already in use", p.RequestID)
	case len(c.reqs) >= c.s.opts.MaxHTTPStreams:
		c.mu.Unlock()
		return nil, nil, failed("http/request %s: %d requests are already open on this connection", where, c.s.opts.MaxHTTPStreams)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	c.reqs[p.RequestID] = cancel
	c.mu.Unlock()
	done := func() {
		cancel(context.Canceled)
		c.mu.Lock()
		delete(c.reqs, p.RequestID)
		c.mu.Unlock()
	}

	var body io.Reader
	if p.Body != nil {
		body = bytes.NewReader(p.Body)
	}
	req, err := http.NewRequestWithContext(rctx, p.Method, u.String(), body)
	if err != nil {
		done()
		return nil, nil, invalidParams("params.method: %q: %v", p.Method, errors.Unwrap(err))
	}
	req.Header = hdr
	if host != "" {
		req.Host = host
	}
	resp, err := c.s.client.Do(req)
	if err != nil {
		cause := context.Cause(rctx)
		done()
		if errors.Is(cause, errCanceled) {
			return nil, nil, failed("http/request %s: canceled", where)
		}
		return nil, nil, failed("http/request %s: %v", where, transportError(err))
	}
	res := protocol.HTTPRequestResult{Status: resp.StatusCode}
	for _, name := range sortedHeaderNames(resp.Header) {
		for _, v := range resp.Header[name] {
			res.Headers = append(res.Headers, protocol.Header{Name: name, Value: v})
		}
	}
	after := func() {
		defer done()
		defer resp.Body.Close()
		end := protocol.HTTPEnd{RequestID: p.RequestID}
		buf := make([]byte, httpChunk)
		for {
			// Each read is sent as it arrives, so an SSE stream's events reach the host
			// as the server flushes them.
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if c.notify(protocol.NotifyHTTPBody, protocol.HTTPBody{RequestID: p.RequestID, Data: buf[:n]}) != nil {
					return // the connection is gone; so is the request
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				if errors.Is(context.Cause(rctx), errCanceled) {
					end.Error = "canceled"
				} else {
					end.Error = fmt.Sprintf("reading the response body of %s: %v", where, transportError(err))
				}
				break
			}
		}
		// The request is over before the host hears so: a cancel that follows http/end
		// must find no request (not found), not a finished one.
		done()
		_ = c.notify(protocol.NotifyHTTPEnd, end)
	}
	return res, after, nil
}

// transportError strips the *url.Error wrapper, whose text repeats the full URL (query
// string and userinfo included).
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return name != ""
}

func sortedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (c *conn) httpCancel(_ context.Context, raw json.RawMessage) (any, func(), *protocol.Error) {
	var p protocol.HTTPCancelParams
	if e := decodeParams(raw, &p); e != nil {
		return nil, nil, e
	}
	c.mu.Lock()
	cancel := c.reqs[p.RequestID]
	c.mu.Unlock()
	if cancel == nil {
		return nil, nil, notFound("http/cancel: no request %q", p.RequestID)
	}
	cancel(errCanceled)
	return struct{}{}, nil, nil
}

// ProxyFunc returns an http.Transport Proxy function that reads HTTP_PROXY, HTTPS_PROXY
// and NO_PROXY (or their lower-case forms) through getenv, with the semantics of
// net/http.ProxyFromEnvironment: the scheme of the request picks the proxy; NO_PROXY is a
// comma-separated list of host names (matching the name and its subdomains; a leading "."
// or "*." matches subdomains only), IP addresses, CIDR ranges, each optionally with a
// port, or "*"; requests to localhost and loopback addresses are never proxied. The
// variables are read once, when ProxyFunc is called.
func ProxyFunc(getenv func(string) (string, bool)) func(*http.Request) (*url.URL, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := getenv(n); ok && v != "" {
				return v
			}
		}
		return ""
	}
	httpProxy := get("HTTP_PROXY", "http_proxy")
	httpsProxy := get("HTTPS_PROXY", "https_proxy")
	noProxy := get("NO_PROXY", "no_proxy")
	if _, cgi := getenv("REQUEST_METHOD"); cgi {
		// As net/http: under CGI, HTTP_PROXY may be a request header (httpoxy).
		httpProxy = ""
	}
	return func(req *http.Request) (*url.URL, error) {
		var raw string
		switch req.URL.Scheme {
		case "https":
			raw = httpsProxy
		case "http":
			raw = httpProxy
		}
		if raw == "" || !useProxy(noProxy, req.URL) {
			return nil, nil
		}
		return parseProxy(raw)
	}
}

func parseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !strings.Contains(raw, "://") {
		// "host:port" without a scheme means an http:// proxy.
		if u2, err2 := url.Parse("http://" + raw); err2 == nil && u2.Host != "" {
			return u2, nil
		}
		return nil, fmt.Errorf("invalid proxy address %q", redactURL(raw))
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
		return u, nil
	}
	return nil, fmt.Errorf("invalid proxy address %q: unsupported scheme %q", redactURL(raw), u.Scheme)
}

// useProxy reports whether a request to u goes through the proxy under noProxy.
func useProxy(noProxy string, u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return false
	}
	for _, entry := range strings.Split(noProxy, ",") {
		entry = strings.ToLower(strings.TrimSpace(entry))
		if entry == "" {
			continue
		}
		if entry == "*" {
			return false
		}
		if _, cidr, err := net.ParseCIDR(entry); err == nil {
			if ip != nil && cidr.Contains(ip) {
				return false
			}
			continue
		}
		ePort := ""
		if h, p, err := net.SplitHostPort(entry); err == nil {
			entry, ePort = h, p
		}
		if ePort != "" && ePort != port {
			continue
		}
		if eip := net.ParseIP(entry); eip != nil {
			if ip != nil && eip.Equal(ip) {
				return false
			}
			continue
		}
		entry = strings.TrimPrefix(entry, "*")
		if strings.HasPrefix(entry, ".") {
			if strings.HasSuffix(host, entry) {
				return false
			}
			continue
		}
		if host == entry || strings.HasSuffix(host, "."+entry) {
			return false
		}
	}
	return true
}
