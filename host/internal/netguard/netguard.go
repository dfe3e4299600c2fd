// Package netguard is the one listen guard of warden's network listeners (the host API's
// WebSocket and the MCP front door's HTTP): which addresses a listener may bind, how it
// binds them (TCP, or a Unix-domain socket created 0600), which requests it lets through
// (a bearer token; without one, loopback Host names only), and the tokens themselves
// (generated with crypto/rand and written to a 0600 file).
//
// The rules, in one place so that every listener applies the same ones:
//   - A TCP listener requires a bearer token of at least MinTokenBytes. The explicit
//     opt-out NoAuth is accepted only on a loopback address (checked before and after
//     binding), and then the request's Host must be a loopback name, which defeats DNS
//     rebinding; a browser is kept out by the listeners' Origin checks, but another local
//     user is not — that is what the token is for.
//   - A Unix-domain socket ("unix:///path") needs no token: its file is created 0600, so
//     only warden's user can connect. A token, when one is configured, is still checked.
//   - A configured token shorter than MinTokenBytes is refused on every address.
package netguard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// MinTokenBytes is the shortest bearer token a listener accepts (128 bits of a random
// token; a person-chosen one should be longer still).
const MinTokenBytes = 16

// generatedTokenBytes is the entropy of a generated token (256 bits, hex-encoded).
const generatedTokenBytes = 32

// UnixScheme prefixes a Unix-domain socket address: unix:///run/warden/api.sock.
const UnixScheme = "unix://"

// Errors of Listen and WriteToken.
var (
	// ErrTokenRequired: a TCP listener without a bearer token and without NoAuth.
	ErrTokenRequired = errors.New("a bearer token is required to listen on TCP (or listen on a unix:// socket, or opt out with --no-auth on a loopback address)")
	// ErrNoAuthNotLoopback: NoAuth on an address that is not loopback.
	ErrNoAuthNotLoopback = errors.New("--no-auth is accepted only on a loopback address (127.0.0.0/8, ::1, localhost)")
	// ErrTokenTooShort: a configured token shorter than MinTokenBytes.
	ErrTokenTooShort = fmt.Errorf("the bearer token is shorter than %d bytes", MinTokenBytes)
	// ErrNotSocket: the Unix socket path exists and is not a socket (it is left alone).
	ErrNotSocket = errors.New("the path exists and is not a socket")
	// ErrSocketInUse: the Unix socket path is a socket another process is serving on.
	ErrSocketInUse = errors.New("another process is listening on the socket")
)

// Guard is the access rule of one listener.
type Guard struct {
	// Token, when set, is the bearer token every request must present
	// ("Authorization: Bearer TOKEN"), compared in constant time.
	Token string
	// NoAuth is the explicit opt-out of the token on a TCP listener; Listen accepts it
	// only on a loopback address.
	NoAuth bool
}

// Check validates the configured token (not the address): a token shorter than
// MinTokenBytes is refused.
func (g Guard) Check() error {
	if g.Token != "" && len(g.Token) < MinTokenBytes {
		return ErrTokenTooShort
	}
	return nil
}

// Handler wraps h with the request rule: with a token every request must carry
// "Authorization: Bearer TOKEN" (401 otherwise); without one, on a TCP listener, the
// request's Host must be a loopback name or address (403 otherwise). Over a Unix socket a
// request without a token configured is let through: the socket's 0600 mode is the
// authentication and no browser can reach it. log receives one debug line per refusal.
func (g Guard) Handler(h http.Handler, log hclog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.Allow(w, r, log) {
			h.ServeHTTP(w, r)
		}
	})
}

// Allow applies the request rule of Handler to r and, when it refuses, writes the
// refusal and returns false.
func (g Guard) Allow(w http.ResponseWriter, r *http.Request, log hclog.Logger) bool {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if g.Token != "" {
		if ValidBearer(r.Header.Get("Authorization"), g.Token) {
			return true
		}
		log.Debug("request refused: missing or wrong bearer token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}
	if overUnix(r) {
		return true
	}
	if !IsLoopbackHost(HostOnly(r.Host)) {
		log.Debug("request refused: non-loopback Host without a token", "remote", r.RemoteAddr)
		http.Error(w, "forbidden: this server accepts only loopback Host names", http.StatusForbidden)
		return false
	}
	return true
}

// overUnix reports whether r arrived on a Unix-domain socket listener.
func overUnix(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && a.Network() == "unix"
}

// ValidBearer reports whether an Authorization header carries token as a bearer
// credential. Both sides are hashed first and compared in constant time, so the time
// depends on neither the token's value nor its length.
func ValidBearer(header, token string) bool {
	scheme, cred, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	want := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// HostOnly strips the port (and IPv6 brackets) from a host[:port].
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// IsLoopbackHost reports whether host is "localhost" or a loopback IP (127.0.0.0/8, ::1).
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// UnixPath returns the socket path of a "unix:///path" address and whether addr is one.
func UnixPath(addr string) (string, bool) {
	return strings.CutPrefix(addr, UnixScheme)
}

// Listener is a bound listener of Listen. Closing it removes its Unix socket file.
type Listener struct {
	net.Listener
	unixPath string
	hostPort string // TCP: the host as the caller wrote it for a wildcard, with the bound port

	closeOnce sync.Once
	closeErr  error
	sockInfo  fs.FileInfo
}

// URL names the listener: "unix:///path" for a Unix socket, else scheme://host:port. For a
// wildcard TCP address (0.0.0.0, ::) it names the wildcard as given, with the bound port.
func (l *Listener) URL(scheme string) string {
	if l.unixPath != "" {
		return UnixScheme + l.unixPath
	}
	return scheme + "://" + l.hostPort
}

// Unix reports whether l is a Unix-domain socket listener.
func (l *Listener) Unix() bool { return l.unixPath != "" }

// Close stops accepting and, for a Unix socket, removes the socket file if it is still
// the one Listen created.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.Listener.Close()
		if l.unixPath == "" {
			return
		}
		if fi, err := os.Lstat(l.unixPath); err == nil && os.SameFile(fi, l.sockInfo) {
			if err := os.Remove(l.unixPath); err != nil && l.closeErr == nil {
				l.closeErr = fmt.Errorf("removing the socket %s: %w", l.unixPath, err)
			}
		}
	})
	return l.closeErr
}

// Listen binds addr under g's rules: "unix:///path" is a Unix-domain socket, anything else
// a TCP "host:port" ("" means 127.0.0.1:0, an ephemeral loopback port). See the package
// documentation for the rules; the errors wrap ErrTokenRequired, ErrNoAuthNotLoopback,
// ErrTokenTooShort, ErrNotSocket or ErrSocketInUse and name the address.
func Listen(ctx context.Context, addr string, g Guard) (*Listener, error) {
	if err := g.Check(); err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	if path, ok := UnixPath(addr); ok {
		return listenUnix(ctx, path)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", addr, err)
	}
	if err := g.checkTCPHost(addr, IsLoopbackHost(host)); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		_ = ln.Close()
		return nil, fmt.Errorf("listen %s: bound %s, not a TCP address", addr, ln.Addr())
	}
	// A name may resolve to other addresses than it suggests: check what was bound.
	if err := g.checkTCPHost(addr+" (bound "+ta.String()+")", ta.IP.IsLoopback()); err != nil {
		_ = ln.Close()
		return nil, err
	}
	urlHost := ta.IP.String()
	if ta.IP.IsUnspecified() {
		// Go reports a dual-stack "::" for "0.0.0.0": name the wildcard as written.
		urlHost = host
		if urlHost == "" {
			urlHost = "0.0.0.0"
		}
	}
	return &Listener{Listener: ln, hostPort: net.JoinHostPort(urlHost, strconv.Itoa(ta.Port))}, nil
}

func (g Guard) checkTCPHost(what string, loopback bool) error {
	switch {
	case g.Token != "":
		return nil
	case !g.NoAuth:
		return fmt.Errorf("listen %s: %w", what, ErrTokenRequired)
	case !loopback:
		return fmt.Errorf("listen %s: %w", what, ErrNoAuthNotLoopback)
	}
	return nil
}

// listenUnix creates the socket 0600 whatever the umask: it binds inside a fresh 0700
// directory next to path (so nobody else can connect while its mode is still the umask's),
// sets 0600 and renames it into place before anything is accepted.
func listenUnix(ctx context.Context, path string) (*Listener, error) {
	if path == "" {
		return nil, errors.New("listen unix://: empty socket path")
	}
	if err := removeStaleSocket(ctx, path); err != nil {
		return nil, fmt.Errorf("listen %s%s: %w", UnixScheme, path, err)
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".warden-sock-")
	if err != nil {
		return nil, fmt.Errorf("listen %s%s: %w", UnixScheme, path, err)
	}
	defer func() { _ = os.RemoveAll(tmpDir) }()
	tmp := filepath.Join(tmpDir, "s")
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen %s%s: %w", UnixScheme, path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // Close removes the final path, if it is still ours
	fail := func(err error) (*Listener, error) {
		_ = ln.Close()
		return nil, fmt.Errorf("listen %s%s: %w", UnixScheme, path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(tmp)
	if err != nil {
		return fail(err)
	}
	// Re-check just before the rename, which would replace whatever is at path.
	if err := removeStaleSocket(ctx, path); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &Listener{Listener: ln, unixPath: path, sockInfo: fi}, nil
}

// removeStaleSocket removes path if it is a socket nobody serves on; it refuses anything
// else that exists there.
func removeStaleSocket(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s: %w", path, ErrNotSocket)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	if c, err := d.DialContext(dctx, "unix", path); err == nil {
		_ = c.Close()
		return fmt.Errorf("%s: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	return nil
}

// GenerateToken returns a new bearer token: 256 bits from crypto/rand, hex-encoded.
func GenerateToken() (string, error) {
	b := make([]byte, generatedTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a bearer token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// WriteToken writes token and a newline to path, mode 0600, atomically: into a new
// (O_EXCL) temporary file in path's directory, then renamed over path, so a reader sees
// the old token or the new one and a symlink planted at path is replaced, not followed.
// The directory is created 0700 if missing.
func WriteToken(path, token string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing the token file %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing the token file %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600 already; chmod keeps it so whatever the umask did.
	err = errors.Join(f.Chmod(0o600), write(f, token+"\n"), f.Sync(), f.Close())
	if err != nil {
		return fmt.Errorf("writing the token file %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the token file %s: %w", path, err)
	}
	ok = true
	return nil
}

func write(f *os.File, s string) error {
	_, err := f.WriteString(s)
	return err
}

// Serve runs hs on ln until ctx is done or the listener fails, then stops: it calls stop
// (which ends the handlers' own contexts — upgraded connections, hanging streams), closes
// the connections that have not sent a request yet, shuts hs down gracefully within 5 s
// (closing it hard past that) and returns the listener's error, or nil for a stop through
// ctx. The caller waits for its own connection goroutines after.
//
// http.Server.Shutdown counts a connection that sent nothing as active for its first 5 s (a
// client's spare or reconnecting connection): left to it, one such connection would hold a
// stop past the 2 s a signalled process has.
func Serve(ctx context.Context, hs *http.Server, ln net.Listener, stop func()) error {
	fresh := &freshConns{conns: map[net.Conn]bool{}}
	if prev := hs.ConnState; prev != nil {
		hs.ConnState = func(c net.Conn, st http.ConnState) { fresh.track(c, st); prev(c, st) }
	} else {
		hs.ConnState = fresh.track
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	stop()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	fresh.closeAll()
	if serr := <-shut; serr != nil {
		_ = hs.Close()
	}
	if err == nil {
		err = <-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// freshConns tracks a server's connections that have not sent a request yet.
type freshConns struct {
	mu      sync.Mutex
	conns   map[net.Conn]bool
	closing bool
}

func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case st == http.StateNew && f.closing:
		_ = c.Close()
	case st == http.StateNew:
		f.conns[c] = true
	default:
		delete(f.conns, c)
	}
}

// closeAll closes the connections that have sent nothing, and any that arrive from now on.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.conns {
		_ = c.Close()
	}
	clear(f.conns)
}
