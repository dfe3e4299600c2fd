//go:build unix

package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// A test binary started by a test as a writer process runs the helper, never the
	// tests (so no test passes vacuously in the child).
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	goleak.VerifyTestMain(m)
}

const secretMark = "PLANTED-SECRET"

// entryFor returns a complete entry for k whose secret fields hold distinctive values
// derived from tag, so a leak of any of them is found by searching for secretMark.
func entryFor(k Key, tag string) Entry {
	return Entry{
		Key:          k,
		ClientID:     "client-" + tag,
		ClientSecret: secretMark + "-client-secret-" + tag,
		Issuer:       "https://auth.example.test",
		AccessToken:  secretMark + "-access-" + tag,
		RefreshToken: secretMark + "-refresh-" + tag,
		TokenType:    "Bearer",
		Expiry:       time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Scopes:       []string{"read", "write"},
	}
}

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp-oauth-credentials.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// redact hides planted secret values in a failure message, in case a defect put one
// in an error.
func redact(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), secretMark, "<planted secret>")
}

// ignoreUpdated compares entries apart from the time the store stamped.
var ignoreUpdated = cmp.Comparer(func(a, b Entry) bool {
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	return cmp.Equal(toWire(a), toWire(b))
})

// check reports a failure without printing the values compared, which hold secrets.
func mustEqual(t *testing.T, what string, got, want Entry) {
	t.Helper()
	if !cmp.Equal(got, want, ignoreUpdated) {
		t.Fatalf("%s: stored entry differs from the one put (%s vs %s)", what, got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	for _, p := range []string{path, path + ".lock", path + ".tmp"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Open created %s (or stat failed: %v); it must create nothing", p, err)
		}
	}
	if got, err := s.List(ctx); err != nil || len(got) != 0 {
		t.Fatalf("List of a new store = %d entries, %v", len(got), err)
	}
	k := Key{Owner: OwnerLocal, Server: "github", URL: "https://mcp.example.test/mcp"}
	want := entryFor(k, "1")
	before := time.Now().UTC()
	if err := s.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Get = ok %v, %v", ok, err)
	}
	mustEqual(t, "Get", got, want)
	if got.UpdatedAt.Before(before) || got.UpdatedAt.Location() != time.UTC {
		t.Errorf("UpdatedAt = %v, want UTC and not before %v", got.UpdatedAt, before)
	}
	if !got.Expiry.Equal(want.Expiry) || got.Expiry.Nanosecond() != 123456789 {
		t.Errorf("Expiry = %v, want %v to the nanosecond", got.Expiry, want.Expiry)
	}

	// Another Store on the same path (as another process would have) sees it.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got2, ok, err := s2.Get(ctx, k)
	if err != nil || !ok {
		t.Fatalf("Get through a second Store = ok %v, %v", ok, err)
	}
	if !cmp.Equal(toWire(got2), toWire(got)) {
		t.Fatalf("second Store reads %s, first %s", got2, got)
	}

	// List is sorted by owner, then server, then URL, whatever the order of the Puts.
	keys := []Key{
		{Owner: "exec-b", Server: "a", URL: "https://a.test/"},
		{Owner: "exec-a", Server: "z", URL: "https://a.test/"},
		{Owner: "exec-a", Server: "m", URL: "https://b.test/"},
		{Owner: "exec-a", Server: "m", URL: "https://a.test/"},
	}
	for i, k := range keys {
		if err := s.Put(ctx, entryFor(k, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range list {
		order = append(order, e.Key.String())
	}
	wantOrder := []string{
		"exec-a/m https://a.test/", "exec-a/m https://b.test/", "exec-a/z https://a.test/",
		"exec-b/a https://a.test/", "local/github https://mcp.example.test/mcp",
	}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Fatalf("List order (-want +got):\n%s", diff)
	}

	found, err := s.Delete(ctx, k)
	if err != nil || !found {
		t.Fatalf("Delete = %v, %v; want true", found, err)
	}
	if _, ok, err := s.Get(ctx, k); err != nil || ok {
		t.Fatalf("Get after Delete = ok %v, %v", ok, err)
	}
	if found, err := s.Delete(ctx, k); err != nil || found {
		t.Fatalf("second Delete = %v, %v; want false", found, err)
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/mcp"}

	// fn sees no entry, declines to write: no file appears.
	err := s.Update(ctx, k, func(old Entry, ok bool) (Entry, bool, error) {
		if ok {
			t.Error("fn saw an entry in an empty store")
		}
		return Entry{}, false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an Update that wrote nothing created the file (%v)", err)
	}
	if err := s.Put(ctx, entryFor(k, "old")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// fn's error aborts and is returned; nothing changes.
	boom := errors.New("refresh failed")
	err = s.Update(ctx, k, func(old Entry, ok bool) (Entry, bool, error) { return old, true, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Update with a failing fn = %v; want it to wrap the fn's error and name %s", err, path)
	}
	// An entry for another key is refused.
	err = s.Update(ctx, k, func(old Entry, ok bool) (Entry, bool, error) {
		old.Owner = "exec-1"
		return old, true, nil
	})
	if !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("Update returning another key = %v; want ErrKeyMismatch", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("a failed Update changed the file")
	}

	// fn sees the stored entry and its result replaces it.
	err = s.Update(ctx, k, func(old Entry, ok bool) (Entry, bool, error) {
		if !ok || old.ClientID != "client-old" {
			t.Errorf("fn saw ok=%v %s; want the stored entry", ok, old)
		}
		old.AccessToken = "rotated"
		return old, true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(ctx, k)
	if err != nil || got.AccessToken != "rotated" || got.RefreshToken != entryFor(k, "old").RefreshToken {
		t.Fatalf("after Update: %s, %v; want the rotated access token and the old refresh token", got, err)
	}
}

// rawEntries returns each entry's bytes in the file, by key.
func rawEntries(t *testing.T, path string) map[Key]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Entries []json.RawMessage }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("the file is not JSON: %v", err)
	}
	out := map[Key]string{}
	for _, raw := range f.Entries {
		var w wireEntry
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		out[Key{w.Owner, w.Server, w.URL}] = string(raw)
	}
	return out
}

func TestKeysIsolate(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	const url = "https://shared.example.test/mcp"
	host := Key{Owner: OwnerLocal, Server: "docs", URL: url}
	exec := Key{Owner: "exec-1", Server: "docs", URL: url}
	otherServer := Key{Owner: OwnerLocal, Server: "docs2", URL: url}
	otherURL := Key{Owner: OwnerLocal, Server: "docs", URL: url + "/v2"}
	all := []Key{host, exec, otherServer, otherURL}
	for _, k := range all {
		if err := s.Put(ctx, entryFor(k, k.String())); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range all {
		got, ok, err := s.Get(ctx, k)
		if err != nil || !ok {
			t.Fatalf("Get %s = ok %v, %v", k, ok, err)
		}
		mustEqual(t, k.String(), got, entryFor(k, k.String()))
	}
	if _, ok, err := s.Get(ctx, Key{Owner: "exec-2", Server: "docs", URL: url}); err != nil || ok {
		t.Fatalf("another executor's key found an entry (ok %v, %v)", ok, err)
	}

	// The executor's login refreshes, is replaced, and is deleted: the host's entry for
	// the same URL stays byte for byte what it was.
	hostBefore := rawEntries(t, path)[host]
	if hostBefore == "" {
		t.Fatal("the host entry is not in the file")
	}
	steps := []func() error{
		func() error {
			return s.Update(ctx, exec, func(old Entry, ok bool) (Entry, bool, error) {
				old.AccessToken = "refreshed"
				return old, true, nil
			})
		},
		func() error { return s.Put(ctx, entryFor(exec, "relogin")) },
		func() error { _, err := s.Delete(ctx, exec); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		if got := rawEntries(t, path)[host]; got != hostBefore {
			t.Fatalf("step %d on the executor entry changed the host entry's bytes", i)
		}
	}
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestModeStays0600(t *testing.T) {
	// A umask that would make new files 0400 must not change the store's modes. The
	// umask is process-wide; this test does not run in parallel with others.
	old := syscall.Umask(0o377)
	defer syscall.Umask(old)
	ctx := context.Background()
	s, path := newStore(t)
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
	ops := []func() error{
		func() error { return s.Put(ctx, entryFor(k, "1")) },
		func() error {
			return s.Update(ctx, k, func(e Entry, _ bool) (Entry, bool, error) { e.AccessToken = "x"; return e, true, nil })
		},
		func() error { return s.Put(ctx, entryFor(Key{Owner: "exec-1", Server: "s", URL: k.URL}, "2")) },
		func() error { _, err := s.Delete(ctx, k); return err },
	}
	for i, op := range ops {
		if err := op(); err != nil {
			t.Fatal(err)
		}
		if m := modeOf(t, path); m != 0o600 {
			t.Fatalf("after write %d the file's mode is %v, want -rw-------", i, m)
		}
		if m := modeOf(t, path+".lock"); m.Perm()&0o077 != 0 || !m.IsRegular() {
			t.Fatalf("after write %d the lock file's mode is %v", i, m)
		}
		if _, err := os.Lstat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after write %d a temporary file remains (%v)", i, err)
		}
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	valid := fmt.Sprintf(`{"version":1,"entries":[{"owner":"local","server":"s","url":"https://s.test/","access_token":%q}]}`, secretMark+"-in-file")
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	target := write("target.json", valid, 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	subdir := filepath.Join(dir, "dir.json")
	if err := os.Mkdir(subdir, 0o700); err != nil {
		t.Fatal(err)
	}
	big := write("big.json", valid[:len(valid)-2]+strings.Repeat(" ", MaxFileSize)+"]}", 0o600)
	foreign := write("foreign.json", valid, 0o600)
	chownErr := os.Chown(foreign, 12345, 12345)

	tests := []struct {
		name string
		path string
		err  error
		want []string // substrings the message must contain
	}{
		{"group/other readable", write("open.json", valid, 0o644), ErrInsecureMode, []string{"mode 0644", "must be 0600", "not changed automatically", "chmod 600 " + filepath.Join(dir, "open.json")}},
		{"group writable", write("gw.json", valid, 0o620), ErrInsecureMode, []string{"mode 0620"}},
		{"symlink to a good file", link, ErrNotRegular, []string{"symbolic link"}},
		{"FIFO: refused, not a hang", fifo, ErrNotRegular, []string{"a FIFO"}},
		{"directory", subdir, ErrNotRegular, []string{"a directory"}},
		{"over the size cap", big, ErrTooLarge, []string{"over the 4194304-byte limit"}},
		{"truncated JSON", write("trunc.json", valid[:60], 0o600), ErrMalformed, []string{"invalid JSON at byte offset 60"}},
		{"garbage after a secret", write("junk.json", valid[:len(valid)-2]+"x]}", 0o600), ErrMalformed, []string{fmt.Sprintf("invalid JSON at byte offset %d", len(valid)-1)}},
		{"wrong type", write("type.json", `{"version":1,"entries":[{"owner":"local","server":"s","url":"https://s.test/","access_token":7}]}`, 0o600), ErrMalformed, []string{"byte offset 94", "field entries.access_token is a JSON number, want string"}},
		{"unknown version", write("v2.json", `{"version":2,"entries":[]}`, 0o600), ErrMalformed, []string{"format version 2"}},
		{"not an object", write("array.json", `["`+secretMark+`"]`, 0o600), ErrMalformed, []string{"byte offset"}},
		{"URL with a password", write("userinfo.json", `{"version":1,"entries":[{"owner":"local","server":"s","url":"https://u:`+secretMark+`@s.test/"}]}`, 0o600), ErrInvalidKey, []string{"entry 0", "userinfo"}},
		{"bad time", write("time.json", `{"version":1,"entries":[{"owner":"local","server":"s","url":"https://s.test/","expiry":"`+secretMark+`"}]}`, 0o600), ErrMalformed, []string{"entry 0 (local/s https://s.test/): expiry is not an RFC 3339 time"}},
		{"duplicate entries", write("dup.json", `{"version":1,"entries":[{"owner":"local","server":"s","url":"https://s.test/"},{"owner":"local","server":"s","url":"https://s.test/"}]}`, 0o600), ErrMalformed, []string{"two entries for local/s https://s.test/"}},
		{"another user's file", foreign, ErrForeignOwner, []string{"uid 12345"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == ErrForeignOwner && chownErr != nil {
				t.Skipf("cannot give a file to another user here (%v)", chownErr)
			}
			s, err := Open(tt.path)
			if err == nil {
				t.Fatalf("Open(%s) succeeded (%v)", tt.path, s != nil)
			}
			msg := redact(err)
			if !errors.Is(err, tt.err) {
				t.Errorf("Open error %q does not wrap %v", msg, tt.err)
			}
			if !strings.Contains(msg, tt.path) {
				t.Errorf("Open error %q does not name %s", msg, tt.path)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Open error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(err.Error(), secretMark) || strings.Contains(msg, "access_token\":") {
				t.Error("Open error echoes file content")
			}
		})
	}

	// A file that turns bad after Open is refused on the next read and write, and the
	// write leaves it alone.
	t.Run("loosened after Open", func(t *testing.T) {
		ctx := context.Background()
		s, path := newStore(t)
		k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
		if err := s.Put(ctx, entryFor(k, "1")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(path)
		if _, _, err := s.Get(ctx, k); !errors.Is(err, ErrInsecureMode) {
			t.Fatalf("Get = %v; want ErrInsecureMode", err)
		}
		if err := s.Put(ctx, entryFor(k, "2")); !errors.Is(err, ErrInsecureMode) {
			t.Fatalf("Put = %v; want ErrInsecureMode", err)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(before, after) || modeOf(t, path) != 0o640 {
			t.Fatal("a refused Put changed the file or its mode")
		}
	})
	t.Run("lock file a symlink", func(t *testing.T) {
		s, path := newStore(t)
		if err := os.Symlink(target, path+".lock"); err != nil {
			t.Fatal(err)
		}
		err := s.Put(context.Background(), entryFor(Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}, "1"))
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "lock file") {
			t.Fatalf("Put with a symlinked lock file = %v; want ErrNotRegular naming the lock file", err)
		}
	})
	t.Run("parent not a directory", func(t *testing.T) {
		if _, err := Open(filepath.Join(target, "x.json")); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Open under a file = %v", err)
		}
	})
}

func TestEmptyFileIsEmptyStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := s.List(context.Background()); err != nil || len(l) != 0 {
		t.Fatalf("List = %d, %v", len(l), err)
	}
}

func TestInvalidKeys(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	tests := []struct {
		k    Key
		want string
	}{
		{Key{Server: "s", URL: "https://s.test/"}, "owner is empty"},
		{Key{Owner: "local", URL: "https://s.test/"}, "server name is empty"},
		{Key{Owner: "local", Server: "s"}, "URL is empty"},
		{Key{Owner: "lo\ncal", Server: "s", URL: "https://s.test/"}, "owner contains a control character"},
		{Key{Owner: "local", Server: "s", URL: "ftp://s.test/"}, "scheme"},
		{Key{Owner: "local", Server: "s", URL: "/relative"}, "scheme"},
		{Key{Owner: "local", Server: "s", URL: "https://"}, "no host"},
		{Key{Owner: "local", Server: "s", URL: "https://u:" + secretMark + "@s.test/"}, "userinfo"},
		{Key{Owner: "local", Server: "s", URL: "https://s.test/#" + secretMark}, "fragment"},
		{Key{Owner: "local", Server: "s", URL: "https://s.test/#"}, "fragment"},
		{Key{Owner: "local", Server: "s", URL: "https://s.test/%zz" + secretMark}, "does not parse"},
	}
	for _, tt := range tests {
		for op, err := range map[string]error{
			"Put":    s.Put(ctx, Entry{Key: tt.k}),
			"Get":    func() error { _, _, err := s.Get(ctx, tt.k); return err }(),
			"Delete": func() error { _, err := s.Delete(ctx, tt.k); return err }(),
			"Update": s.Update(ctx, tt.k, func(e Entry, _ bool) (Entry, bool, error) { return e, true, nil }),
		} {
			if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s(%q) = %s; want ErrInvalidKey saying %q", op, tt.k.Owner+"|"+tt.k.Server, redact(err), tt.want)
			}
			if err != nil && strings.Contains(err.Error(), secretMark) {
				t.Errorf("%s error echoes the URL's secret part", op)
			}
		}
	}
}

func TestStaleTempFileIgnoredAndCleaned(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
	if err := s.Put(ctx, entryFor(k, "1")); err != nil {
		t.Fatal(err)
	}
	// What a writer killed before its rename leaves: a torn temporary file.
	if err := os.WriteFile(path+".tmp", []byte(`{"version":1,"entries":[{"own`), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("Open with a stale temporary file: %v", err)
	}
	if got, ok, err := s2.Get(ctx, k); err != nil || !ok {
		t.Fatalf("Get = ok %v, %v", ok, err)
	} else {
		mustEqual(t, "Get", got, entryFor(k, "1"))
	}
	if err := s2.Put(ctx, entryFor(k, "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale temporary file is still there after a write (%v)", err)
	}
}

func TestLockWaitHonoursContext(t *testing.T) {
	s, path := newStore(t)
	k := Key{Owner: OwnerLocal, Server: "s", URL: "https://s.test/"}
	if err := s.Put(context.Background(), entryFor(k, "1")); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	// Hold the lock as another process would: through a separate open file description.
	held, err := os.Open(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Repeated so that both waits are exercised: for this Store's writer slot and, once a
	// call gets the slot, for the flock itself.
	for i := range 20 {
		err := s.Put(ctx, entryFor(k, "2"))
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Put %d while another holds the lock, with a done ctx = %v; want context.Canceled naming %s", i, err, path)
		}
	}
	if err := held.Close(); err != nil { // releases the flock
		t.Fatal(err)
	}
	// The abandoned flock wait gets the lock, drops it and frees the writer slot, so this
	// Put completes.
	if err := s.Put(context.Background(), entryFor(k, "3")); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if bytes.Equal(before, after) {
		t.Fatal("the Put after the lock was released did not write")
	}
}

// counterKey's access token counts the Updates applied to it; a lost update shows as a
// count short of the number of Updates made.
var counterKey = Key{Owner: OwnerLocal, Server: "counter", URL: "https://counter.test/"}

func increment(ctx context.Context, s *Store) error {
	return s.Update(ctx, counterKey, func(e Entry, ok bool) (Entry, bool, error) {
		n := 0
		if ok {
			var err error
			if n, err = strconv.Atoi(e.AccessToken); err != nil {
				return e, false, errors.New("counter entry corrupted")
			}
		}
		e.Key = counterKey
		e.AccessToken = strconv.Itoa(n + 1)
		return e, true, nil
	})
}

func writerKey(writer string, i int) Key {
	return Key{Owner: writer, Server: "srv-" + strconv.Itoa(i), URL: "https://w.test/" + writer + "/" + strconv.Itoa(i)}
}

// checkCommitted verifies that every writer's entries 0..n-1 are present and intact.
func checkCommitted(t *testing.T, s *Store, writers []string, n int) {
	t.Helper()
	for _, w := range writers {
		for i := range n {
			k := writerKey(w, i)
			got, ok, err := s.Get(context.Background(), k)
			if err != nil || !ok {
				t.Fatalf("entry %s: ok %v, %v; lost", k, ok, err)
			}
			mustEqual(t, k.String(), got, entryFor(k, k.String()))
		}
	}
}

func counter(t *testing.T, s *Store) int {
	t.Helper()
	e, ok, err := s.Get(context.Background(), counterKey)
	if err != nil || !ok {
		t.Fatalf("counter: ok %v, %v", ok, err)
	}
	n, err := strconv.Atoi(e.AccessToken)
	if err != nil {
		t.Fatal("counter entry corrupted")
	}
	return n
}

func TestConcurrentGoroutines(t *testing.T) {
	ctx := context.Background()
	s, path := newStore(t)
	// A second Store on the same path: its writers are excluded by the flock alone, as
	// another process's would be.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	start := make(chan struct{})
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			<-start
			k := writerKey("goroutines", i)
			errs <- st.Put(ctx, entryFor(k, k.String()))
			errs <- increment(ctx, st)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	checkCommitted(t, s, []string{"goroutines"}, n)
	if got := counter(t, s); got != n {
		t.Fatalf("counter = %d after %d concurrent Updates: updates were lost", got, n)
	}
	if l, err := s.List(ctx); err != nil || len(l) != n+1 {
		t.Fatalf("List = %d entries, %v; want %d", len(l), err, n+1)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Fatalf("mode %v", m)
	}
}
