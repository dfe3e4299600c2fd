package netguard

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestValidBearer(t *testing.T) {
	tests := []struct {
		header, token string
		want          bool
	}{
		{"Bearer s3cret", "s3cret", true},
		{"bearer s3cret", "s3cret", true},
		{"Bearer  s3cret ", "s3cret", true},
		{"Bearer s3cre", "s3cret", false},
		{"Bearer s3cretX", "s3cret", false},
		{"Basic s3cret", "s3cret", false},
		{"s3cret", "s3cret", false},
		{"", "s3cret", false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			if got := ValidBearer(tt.header, tt.token); got != tt.want {
				t.Fatalf("ValidBearer(%q) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestLoopback(t *testing.T) {
	tests := []struct {
		hostport string
		want     bool
	}{
		{"127.0.0.1:80", true},
		{"127.1.2.3:80", true},
		{"[::1]:80", true},
		{"localhost:80", true},
		{"LOCALHOST", true},
		{"::1", true},
		{"10.0.0.1:80", false},
		{"example.com:80", false},
		{"0.0.0.0:80", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.hostport, func(t *testing.T) {
			if got := IsLoopbackHost(HostOnly(tt.hostport)); got != tt.want {
				t.Fatalf("IsLoopbackHost(HostOnly(%q)) = %v, want %v", tt.hostport, got, tt.want)
			}
		})
	}
}

// listenRule is one row of TestListenRules.
type listenRule struct {
	name    string
	addr    string
	guard   Guard
	wantErr error
}

// TestListenRules: a TCP listener needs a token unless NoAuth on loopback; a short token is
// refused on every address; a Unix socket needs none.
func TestListenRules(t *testing.T) {
	good := strings.Repeat("k", MinTokenBytes)
	short := strings.Repeat("k", MinTokenBytes-1)
	sock := "unix://" + filepath.Join(t.TempDir(), "s.sock")
	for _, tt := range []listenRule{
		{"tcp loopback without token", "127.0.0.1:0", Guard{}, ErrTokenRequired},
		{"tcp default address without token", "", Guard{}, ErrTokenRequired},
		{"tcp wildcard without token", "0.0.0.0:0", Guard{}, ErrTokenRequired},
		{"no-auth on wildcard", "0.0.0.0:0", Guard{NoAuth: true}, ErrNoAuthNotLoopback},
		{"no-auth on ipv6 wildcard", "[::]:0", Guard{NoAuth: true}, ErrNoAuthNotLoopback},
		{"no-auth on empty host", ":0", Guard{NoAuth: true}, ErrNoAuthNotLoopback},
		{"short token on loopback", "127.0.0.1:0", Guard{Token: short}, ErrTokenTooShort},
		{"short token on wildcard", "0.0.0.0:0", Guard{Token: short}, ErrTokenTooShort},
		{"short token on unix", sock, Guard{Token: short}, ErrTokenTooShort},
		{"no-auth on loopback", "127.0.0.1:0", Guard{NoAuth: true}, nil},
		{"no-auth on localhost", "localhost:0", Guard{NoAuth: true}, nil},
		{"token on loopback", "127.0.0.1:0", Guard{Token: good}, nil},
		{"token on wildcard", "0.0.0.0:0", Guard{Token: good}, nil},
		{"unix without token", sock, Guard{}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Listen(context.Background(), tt.addr, tt.guard)
			if l != nil {
				defer l.Close()
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Listen(%q) = %v, want success", tt.addr, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Listen(%q) = %v, want %v", tt.addr, err, tt.wantErr)
			}
			if tt.guard.Token != "" && strings.Contains(err.Error(), tt.guard.Token) {
				t.Errorf("the error names the token: %v", err)
			}
		})
	}
}

// withUmask runs f with the process umask set to mask (a umask that would make files
// world-accessible must not make warden's).
func withUmask(t *testing.T, mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// TestUnixSocket: the socket is 0600 whatever the umask, serves, and is removed on close;
// a stale socket is replaced, a live one or a non-socket is refused and left alone.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "api.sock")
	var l *Listener
	withUmask(t, 0, func() {
		var err error
		if l, err = Listen(context.Background(), "unix://"+path, Guard{}); err != nil {
			t.Fatal(err)
		}
	})
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket with 0600", fi.Mode())
	}
	if got := l.URL("ws"); got != "unix://"+path || !l.Unix() {
		t.Errorf("URL = %q, Unix = %v", got, l.Unix())
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial the socket: %v", err)
	}
	_ = c.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("accept: %v", err)
	}

	// Live: a second listener on the same path is refused and the first keeps its file.
	if l2, err := Listen(context.Background(), "unix://"+path, Guard{}); !errors.Is(err, ErrSocketInUse) {
		if l2 != nil {
			_ = l2.Close()
		}
		t.Errorf("second Listen on a live socket = %v, want ErrSocketInUse", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket file outlived Close: %v", err)
	}

	// Stale: a socket file nobody serves on is replaced.
	raw, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	raw.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = raw.Close()
	l, err = Listen(context.Background(), "unix://"+path, Guard{})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	_ = l.Close()

	// Not a socket: refused, and the file is untouched.
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := Listen(context.Background(), "unix://"+path, Guard{}); !errors.Is(err, ErrNotSocket) {
		if l != nil {
			_ = l.Close()
		}
		t.Errorf("Listen over a regular file = %v, want ErrNotSocket", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was changed: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("Listen left files behind: %v", ents)
	}
}

// TestGuardHandler serves a real listener per row and checks what the request rule lets
// through: the token when one is set (on TCP and Unix alike), else a loopback Host on TCP
// and anything over a Unix socket.
func TestGuardHandler(t *testing.T) {
	token := strings.Repeat("t", 32)
	sock := "unix://" + filepath.Join(t.TempDir(), "h.sock")
	for _, tt := range []struct {
		name   string
		addr   string
		guard  Guard
		host   string
		header string
		want   int
	}{
		{"tcp token: none sent", "127.0.0.1:0", Guard{Token: token}, "", "", http.StatusUnauthorized},
		{"tcp token: wrong", "127.0.0.1:0", Guard{Token: token}, "", "Bearer " + token[1:], http.StatusUnauthorized},
		{"tcp token: right", "127.0.0.1:0", Guard{Token: token}, "", "Bearer " + token, http.StatusOK},
		{"tcp no-auth: loopback Host", "127.0.0.1:0", Guard{NoAuth: true}, "", "", http.StatusOK},
		{"tcp no-auth: rebound Host", "127.0.0.1:0", Guard{NoAuth: true}, "rebound.example", "", http.StatusForbidden},
		{"unix: any Host", sock, Guard{}, "rebound.example", "", http.StatusOK},
		{"unix token: none sent", sock, Guard{Token: token}, "", "", http.StatusUnauthorized},
		{"unix token: right", sock, Guard{Token: token}, "", "Bearer " + token, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Listen(context.Background(), tt.addr, tt.guard)
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: tt.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nil)}
			served := make(chan error, 1)
			go func() { served <- hs.Serve(l) }()
			defer func() { _ = hs.Close(); <-served }()

			tr := &http.Transport{}
			url := "http://" + l.Addr().String() + "/"
			if l.Unix() {
				path, _ := UnixPath(l.URL(""))
				tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
					var d net.Dialer
					return d.DialContext(ctx, "unix", path)
				}
				url = "http://localhost/"
			}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestWriteToken: a generated token has 256 bits; the file is 0600 whatever the umask, and
// a symlink planted at its path is replaced, its target left alone.
func TestWriteToken(t *testing.T) {
	a, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateToken()
	if len(a) != 2*generatedTokenBytes || a == b {
		t.Fatalf("tokens %d bytes, distinct %v", len(a), a != b)
	}
	dir := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(dir, "listen.token")
	withUmask(t, 0, func() {
		if err := WriteToken(path, a); err != nil {
			t.Fatal(err)
		}
	})
	checkToken := func(want string) {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file mode = %v, want a regular 0600 file", fi.Mode())
		}
		if got, _ := os.ReadFile(path); string(got) != want+"\n" {
			t.Errorf("token file = %q", got)
		}
	}
	checkToken(a)
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("created home mode = %v, want 0700", fi.Mode().Perm())
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(path)
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteToken(path, b); err != nil {
		t.Fatal(err)
	}
	checkToken(b)
	if got, _ := os.ReadFile(victim); string(got) != "untouched" {
		t.Errorf("the symlink's target was written: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("WriteToken left files behind: %v", ents)
	}
}

// A connection that never sends a request does not hold the stop: http.Server.Shutdown
// alone would wait 5 s for it, past the 2 s a signalled warden has.
func TestServeClosesSilentConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	hs := &http.Server{Handler: http.NotFoundHandler(), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted <- struct{}{}
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, hs, ln, func() {}) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-accepted
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("Serve waited for a connection that sent nothing")
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the silent connection is still open")
	}
}
