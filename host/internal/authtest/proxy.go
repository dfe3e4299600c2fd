package authtest

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ProxyRecord is one request a ForwardProxy was asked to carry: a plain http request, or
// a CONNECT tunnel (an https connection, whose requests the proxy cannot see). It holds no
// header: the Authorization a request carried is the servers' to record (Resource.Seen).
type ProxyRecord struct {
	// Method is the request's method, CONNECT for a tunnel.
	Method string
	// Host is the host name asked for (without a port), Path the request's path ("" for
	// a tunnel).
	Host string
	Path string
	// Routed reports whether the proxy had a route for Host (else it answered 502).
	Routed bool
}

// ForwardProxy is an HTTP forward proxy on loopback that routes each request by its host
// name to a listener address: a client whose HTTP_PROXY / HTTPS_PROXY (or
// Transport.Proxy) names it reaches servers under public names that resolve nowhere, and
// those servers see the public name — so a Server with Options.Issuer and a Resource
// behind it answer with the public URLs. A plain http request is forwarded with its Host
// header kept; an https connection is a CONNECT tunnel to the route's address, the TLS
// (and the name the certificate must carry) end to end. Its methods are safe for
// concurrent use.
type ForwardProxy struct {
	srv    *httptest.Server
	tr     *http.Transport
	routes map[string]string

	tunnels sync.WaitGroup

	mu     sync.Mutex
	seen   []ProxyRecord
	conns  map[net.Conn]struct{} // both ends of every open tunnel
	closed bool
}

// NewForwardProxy starts a proxy sending a request for each host name of routes (any
// port) to the address (host:port) it maps to; a request for any other host gets 502. It
// closes when tb's test ends.
func NewForwardProxy(tb testing.TB, routes map[string]string) *ForwardProxy {
	tb.Helper()
	p := &ForwardProxy{routes: make(map[string]string, len(routes)), conns: map[net.Conn]struct{}{},
		tr: &http.Transport{MaxResponseHeaderBytes: maxHeaderBytes, ResponseHeaderTimeout: time.Minute}}
	for host, addr := range routes {
		p.routes[strings.ToLower(host)] = addr
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = p.routes[strings.ToLower(pr.In.URL.Hostname())]
			// The upstream must see the name the client asked for: a Resource builds its
			// resource URL from it, and that URL must be the one the client connected to.
			pr.Out.Host = pr.In.Host
		},
		Transport: p.tr,
		// Server-sent events flow event by event.
		FlushInterval: -1,
		// An aborted stream (a client closing its SSE GET) is not worth a line on stderr.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			p.tunnel(w, r)
			return
		}
		if !r.URL.IsAbs() {
			http.Error(w, "authtest proxy: not a forward-proxy request (absolute URL required)", http.StatusBadRequest)
			return
		}
		host := strings.ToLower(r.URL.Hostname())
		_, ok := p.routes[host]
		p.mu.Lock()
		p.seen = appendRecord(p.seen, ProxyRecord{Method: r.Method, Host: host, Path: r.URL.Path, Routed: ok})
		p.mu.Unlock()
		if !ok || r.URL.Scheme != "http" {
			http.Error(w, "authtest proxy: no route to "+strconvQuote(host), http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		p.srv.Close()
		p.tr.CloseIdleConnections()
		// Hijacked connections are not the server's to close any more: end the tunnels
		// still open, so that their goroutines end with the test.
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.tunnels.Wait()
	})
	return p
}

// tunnel serves a CONNECT: it dials the route of the requested host and copies bytes both
// ways until either side closes, or the proxy does.
func (p *ForwardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host := strings.ToLower(r.URL.Hostname())
	addr, ok := p.routes[host]
	p.mu.Lock()
	p.seen = appendRecord(p.seen, ProxyRecord{Method: r.Method, Host: host, Routed: ok})
	p.mu.Unlock()
	if !ok {
		http.Error(w, "authtest proxy: no route to "+strconvQuote(host), http.StatusBadGateway)
		return
	}
	up, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(r.Context(), "tcp", addr)
	if err != nil {
		http.Error(w, "authtest proxy: cannot reach the route of "+strconvQuote(host), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "authtest proxy: cannot hijack", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = up.Close()
		_ = down.Close()
		return
	}
	p.conns[up], p.conns[down] = struct{}{}, struct{}{}
	p.tunnels.Add(2)
	p.mu.Unlock()
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = up.Close()
		_ = down.Close()
	}
	// Bytes the server read past the CONNECT request belong to the tunnel.
	go func() {
		defer p.tunnels.Done()
		_, _ = io.Copy(up, io.MultiReader(buf.Reader, down))
		closeWrite(up)
	}()
	go func() {
		defer p.tunnels.Done()
		_, _ = io.Copy(down, up)
		_ = down.Close()
		_ = up.Close()
		p.mu.Lock()
		delete(p.conns, up)
		delete(p.conns, down)
		p.mu.Unlock()
	}()
}

// closeWrite half-closes c so the peer sees EOF, or closes it.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}

// URL is the proxy's URL, for HTTP_PROXY or http.ProxyURL.
func (p *ForwardProxy) URL() string { return p.srv.URL }

// Requests returns every request the proxy was asked to carry, oldest first.
func (p *ForwardProxy) Requests() []ProxyRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// Hosts returns the distinct host names asked for, in the order first seen.
func (p *ForwardProxy) Hosts() []string {
	var hosts []string
	for _, r := range p.Requests() {
		if !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
	}
	return hosts
}
