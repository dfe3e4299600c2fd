package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// MaxFileSize caps the credential file: a larger file is refused on read, and a write that
// would produce one fails, so the store never writes a file it would then refuse.
const MaxFileSize = 4 << 20

// formatVersion is the file's "version"; a file with another version is refused rather
// than rewritten without the fields a newer warden put there.
const formatVersion = 1

// Sentinel errors. Every error the package returns names the file (or the key) and wraps
// one of these or an fs / context error; none contains file content or a secret.
var (
	// ErrInvalidKey: a Key field is empty or malformed (see Key.Validate).
	ErrInvalidKey = errors.New("invalid credential key")
	// ErrNotRegular: the path is a symbolic link, directory, FIFO, socket or device.
	ErrNotRegular = errors.New("not a regular file")
	// ErrInsecureMode: the file is readable or writable by group or other.
	ErrInsecureMode = errors.New("permissions allow group or other access")
	// ErrForeignOwner: the file belongs to another user.
	ErrForeignOwner = errors.New("owned by another user")
	// ErrTooLarge: the file holds, or a write would produce, more than MaxFileSize bytes.
	ErrTooLarge = errors.New("credential file too large")
	// ErrMalformed: the file is not a credential file this version can read.
	ErrMalformed = errors.New("malformed credential file")
	// ErrKeyMismatch: an Update function returned an entry for another key.
	ErrKeyMismatch = errors.New("entry key differs from the key being updated")
	// ErrUnsupported: the platform has no flock(2).
	ErrUnsupported = errors.New("credential store needs a Unix system")
)

// Store is the credential file at one path. It holds no entries in memory: every call
// reads the file, so a Store sees what other Stores and other processes wrote.
//
// A Store is safe for concurrent use by goroutines, and any number of processes may have
// a Store on the same path: writes are serialised by an exclusive flock(2) on path+".lock"
// and reads need no lock (see the package documentation).
type Store struct {
	path     string
	lockPath string
	tmpPath  string
	// sem admits one writer of this Store at a time, so goroutines wait on a channel
	// (which honours ctx) rather than each holding a thread blocked in flock(2).
	sem chan struct{}
	// beforeRename, when set (by tests only), runs after the temporary file is written
	// and synced and before it is renamed over the credential file.
	beforeRename func()
}

// Open returns the store at path, checking the file if it exists; it creates nothing (the
// first write creates the file). It refuses a path that is not a regular file, a file that
// group or other can read or write, one that another user owns, one over MaxFileSize and
// one that does not parse.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("credential store: empty path")
	}
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("credential store %s: directory: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("credential store %s: %s is not a directory", path, dir)
	}
	s := &Store{path: path, lockPath: path + ".lock", tmpPath: path + ".tmp", sem: make(chan struct{}, 1)}
	if _, err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path returns the credential file's path.
func (s *Store) Path() string { return s.path }

// Get returns the entry for k and whether there is one.
func (s *Store) Get(ctx context.Context, k Key) (Entry, bool, error) {
	if err := k.Validate(); err != nil {
		return Entry{}, false, fmt.Errorf("credential store %s: get: %w", s.path, err)
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, false, fmt.Errorf("credential store %s: get %s: %w", s.path, k, err)
	}
	f, err := s.load()
	if err != nil {
		return Entry{}, false, err
	}
	i, ok := f.find(k)
	if !ok {
		return Entry{}, false, nil
	}
	return f.entries[i].entry, true, nil
}

// List returns every entry, sorted by key (owner, server name, URL).
func (s *Store) List(ctx context.Context) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("credential store %s: list: %w", s.path, err)
	}
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(f.entries))
	for i, r := range f.entries {
		out[i] = r.entry
	}
	return out, nil
}

// Put stores e under e.Key, replacing any entry there, and sets its UpdatedAt.
func (s *Store) Put(ctx context.Context, e Entry) error {
	if err := e.Key.Validate(); err != nil {
		return fmt.Errorf("credential store %s: put: %w", s.path, err)
	}
	return s.Update(ctx, e.Key, func(Entry, bool) (Entry, bool, error) { return e, true, nil })
}

// Update reads the entry for k, calls fn with it (ok reports whether there was one) and,
// when fn returns write = true, stores the entry fn returned (with UpdatedAt set); with
// write = false or an error nothing is written, and fn's error is returned wrapped.
//
// The exclusive lock is held from the read to the write, across fn, so concurrent Updates
// of any key, in this or another process, cannot lose each other's writes: the refresh
// path runs its token request inside fn, and a second refresher sees the first one's
// token. fn should therefore be bounded (use ctx) and must not call this Store's writing
// methods, which would wait for the lock fn's caller holds. Waiting for the lock honours
// ctx.
func (s *Store) Update(ctx context.Context, k Key, fn func(old Entry, ok bool) (Entry, bool, error)) error {
	if err := k.Validate(); err != nil {
		return fmt.Errorf("credential store %s: update: %w", s.path, err)
	}
	return s.modify(ctx, "update "+k.String(), func(f *file) (bool, error) {
		i, ok := f.find(k)
		var old Entry
		if ok {
			old = f.entries[i].entry
		}
		e, write, err := fn(old, ok)
		if err != nil || !write {
			return false, err
		}
		if e.Key != k {
			return false, ErrKeyMismatch
		}
		e.UpdatedAt = time.Now().UTC()
		f.set(e)
		return true, nil
	})
}

// Delete removes the entry for k, reporting whether there was one.
func (s *Store) Delete(ctx context.Context, k Key) (bool, error) {
	if err := k.Validate(); err != nil {
		return false, fmt.Errorf("credential store %s: delete: %w", s.path, err)
	}
	var found bool
	err := s.modify(ctx, "delete "+k.String(), func(f *file) (bool, error) {
		i, ok := f.find(k)
		if ok {
			f.entries = slices.Delete(f.entries, i, i+1)
		}
		found = ok
		return ok, nil
	})
	return found, err
}

// modify runs change on the current file under the exclusive lock and, when it reports a
// change, replaces the file.
func (s *Store) modify(ctx context.Context, op string, change func(*file) (bool, error)) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return fmt.Errorf("credential store %s: %s: %w", s.path, op, err)
	}
	defer unlock()
	f, err := s.load()
	if err != nil {
		return err
	}
	changed, err := change(f)
	if err != nil {
		return fmt.Errorf("credential store %s: %s: %w", s.path, op, err)
	}
	if !changed {
		return nil
	}
	data, err := f.encode()
	if err != nil {
		return fmt.Errorf("credential store %s: %s: encoding: %w", s.path, op, err)
	}
	if len(data) > MaxFileSize {
		return fmt.Errorf("credential store %s: %s: %w: the new file would hold %d bytes, over the %d-byte limit", s.path, op, ErrTooLarge, len(data), MaxFileSize)
	}
	if err := s.replace(data); err != nil {
		return fmt.Errorf("credential store %s: %s: %w", s.path, op, err)
	}
	return nil
}

// lock takes the exclusive file lock, waiting at most until ctx is done.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the lock: %w", ctx.Err())
	}
	release := func() { <-s.sem }
	lf, err := openLockFile(s.lockPath)
	if err != nil {
		release()
		return nil, err
	}
	// flock(2) cannot be interrupted for a context, so it runs in its own goroutine; if
	// ctx ends first, that goroutine drops the lock as soon as it gets it and only then
	// frees sem, so at most one such wait per Store is ever outstanding.
	done := make(chan error, 1)
	go func() { done <- flockExclusive(lf) }()
	closeLock := func() {
		_ = lf.Close() // closing the last descriptor releases the flock
		release()
	}
	select {
	case err := <-done:
		if err != nil {
			closeLock()
			return nil, fmt.Errorf("locking %s: %w", s.lockPath, err)
		}
		return closeLock, nil
	case <-ctx.Done():
		go func() {
			<-done
			closeLock()
		}()
		return nil, fmt.Errorf("waiting for the lock %s: %w", s.lockPath, ctx.Err())
	}
}

// replace writes data to the temporary file, syncs it, renames it over the credential
// file and syncs the directory, so the path always names a complete file: the old one
// until the rename, the new one after. Called with the exclusive lock held, which is why
// any temporary file already there is a dead writer's and is removed.
func (s *Store) replace(data []byte) (err error) {
	if err := os.Remove(s.tmpPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the stale %s: %w", s.tmpPath, err)
	}
	t, err := os.OpenFile(s.tmpPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = t.Close()
			_ = os.Remove(s.tmpPath)
		}
	}()
	// The umask may have narrowed 0600; the store's files are exactly 0600.
	if err := t.Chmod(0o600); err != nil {
		return err
	}
	if _, err := t.Write(data); err != nil {
		return err
	}
	if err := t.Sync(); err != nil {
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	if s.beforeRename != nil {
		s.beforeRename()
	}
	if err := os.Rename(s.tmpPath, s.path); err != nil {
		return err
	}
	// The rename is durable only once the directory is synced; the data already is.
	d, err := os.Open(filepath.Dir(s.path))
	if err != nil {
		return fmt.Errorf("syncing the directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing the directory: %w", err)
	}
	return nil
}

// load reads and parses the credential file; a missing file is an empty store.
func (s *Store) load() (*file, error) {
	data, err := s.read()
	if errors.Is(err, fs.ErrNotExist) {
		return &file{}, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("credential store %s: %w", s.path, err)
	}
	return f, nil
}

// read returns the file's bytes after checking, on the descriptor it reads, that it is a
// regular file of this user's with mode 0600 or narrower and at most MaxFileSize bytes.
func (s *Store) read() ([]byte, error) {
	fd, err := openChecked(s.path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	data, err := io.ReadAll(io.LimitReader(fd, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("credential store %s: reading: %w", s.path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("credential store %s: %w: over the %d-byte limit", s.path, ErrTooLarge, MaxFileSize)
	}
	return data, nil
}

// checkFile applies the checks every store file (the credentials and the lock) must pass.
func checkFile(path, what string, fi os.FileInfo, uid int) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("credential store %s: %s is %w (%s); remove it or choose another path", path, what, ErrNotRegular, kind(fi.Mode()))
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("credential store %s: %s %w (mode %#o, must be 0600); it is not changed automatically: check who could have read it, then run chmod 600 %s", path, what, ErrInsecureMode, perm, path)
	}
	if me := os.Geteuid(); uid >= 0 && me >= 0 && uid != me {
		return fmt.Errorf("credential store %s: %s is %w (uid %d, not uid %d)", path, what, ErrForeignOwner, uid, me)
	}
	if fi.Size() > MaxFileSize {
		return fmt.Errorf("credential store %s: %s: %w: %d bytes, over the %d-byte limit", path, what, ErrTooLarge, fi.Size(), MaxFileSize)
	}
	return nil
}

func kind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}

// file is the parsed credential file. Each entry keeps the bytes it was read as, so a
// write re-emits untouched entries byte for byte (fields a reader does not know survive,
// and one login's refresh provably leaves another's entry alone).
type file struct {
	entries []record // sorted by key
}

type record struct {
	entry Entry
	raw   json.RawMessage // nil once the entry changed
}

func (f *file) find(k Key) (int, bool) {
	return slices.BinarySearchFunc(f.entries, k, func(r record, k Key) int { return r.entry.Key.compare(k) })
}

func (f *file) set(e Entry) {
	i, ok := f.find(e.Key)
	if ok {
		f.entries[i] = record{entry: e}
		return
	}
	f.entries = slices.Insert(f.entries, i, record{entry: e})
}

// wireFile and wireEntry are the on-disk format, apart from Entry so that Entry's
// MarshalJSON can be the secret-free logging form. Times are strings so that a bad one is
// reported by this package, whose errors do not quote content.
type wireFile struct {
	Version int         `json:"version"`
	Entries []wireEntry `json:"entries"`
}

type wireEntry struct {
	Owner        string   `json:"owner"`
	Server       string   `json:"server"`
	URL          string   `json:"url"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Issuer       string   `json:"issuer,omitempty"`
	TokenURL     string   `json:"token_url,omitempty"`
	TokenAuth    string   `json:"token_auth,omitempty"`
	AccessToken  string   `json:"access_token,omitempty"`
	RefreshToken string   `json:"refresh_token,omitempty"`
	TokenType    string   `json:"token_type,omitempty"`
	Expiry       string   `json:"expiry,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	UpdatedAt    string   `json:"updated_at,omitempty"`
}

func toWire(e Entry) wireEntry {
	return wireEntry{
		Owner: e.Owner, Server: e.Server, URL: e.URL,
		ClientID: e.ClientID, ClientSecret: e.ClientSecret, Issuer: e.Issuer,
		TokenURL: e.TokenURL, TokenAuth: e.TokenAuth,
		AccessToken: e.AccessToken, RefreshToken: e.RefreshToken, TokenType: e.TokenType,
		Expiry: formatTime(e.Expiry), Scopes: e.Scopes, UpdatedAt: formatTime(e.UpdatedAt),
	}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

// parse decodes a credential file. Its errors give byte offsets, entry indexes and field
// names, never content: json's own messages can quote the offending bytes.
func parse(data []byte) (*file, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return &file{}, nil
	}
	var w wireFile
	if err := json.Unmarshal(data, &w); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("%w: invalid JSON at byte offset %d", ErrMalformed, syn.Offset)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("%w: at byte offset %d: %s is a JSON %s, want %s", ErrMalformed, typ.Offset, fieldName(typ), typ.Value, typ.Type)
		default:
			return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
		}
	}
	if w.Version != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, this warden reads version %d", ErrMalformed, w.Version, formatVersion)
	}
	// The same bytes again, keeping each entry's raw form; it cannot fail where the first
	// decode succeeded.
	var raws struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(data, &raws); err != nil || len(raws.Entries) != len(w.Entries) {
		return nil, fmt.Errorf("%w: entries do not decode", ErrMalformed)
	}
	f := &file{entries: make([]record, 0, len(w.Entries))}
	for i, we := range w.Entries {
		e := Entry{
			Key:      Key{Owner: we.Owner, Server: we.Server, URL: we.URL},
			ClientID: we.ClientID, ClientSecret: we.ClientSecret, Issuer: we.Issuer,
			TokenURL: we.TokenURL, TokenAuth: we.TokenAuth,
			AccessToken: we.AccessToken, RefreshToken: we.RefreshToken, TokenType: we.TokenType,
			Scopes: we.Scopes,
		}
		if err := e.Key.Validate(); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrMalformed, i, err)
		}
		var ok bool
		if e.Expiry, ok = parseTime(we.Expiry); !ok {
			return nil, fmt.Errorf("%w: entry %d (%s): expiry is not an RFC 3339 time", ErrMalformed, i, e.Key)
		}
		if e.UpdatedAt, ok = parseTime(we.UpdatedAt); !ok {
			return nil, fmt.Errorf("%w: entry %d (%s): updated_at is not an RFC 3339 time", ErrMalformed, i, e.Key)
		}
		f.entries = append(f.entries, record{entry: e, raw: raws.Entries[i]})
	}
	slices.SortFunc(f.entries, func(a, b record) int { return a.entry.Key.compare(b.entry.Key) })
	for i := 1; i < len(f.entries); i++ {
		if f.entries[i-1].entry.Key == f.entries[i].entry.Key {
			return nil, fmt.Errorf("%w: two entries for %s", ErrMalformed, f.entries[i].entry.Key)
		}
	}
	return f, nil
}

func fieldName(e *json.UnmarshalTypeError) string {
	if e.Field == "" {
		return "the document"
	}
	return "field " + e.Field
}

// encode writes the file: one entry per line, sorted by key, untouched entries as read.
func (f *file) encode() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"version\":%d,\"entries\":[", formatVersion)
	for i, r := range f.entries {
		raw := r.raw
		if raw == nil {
			var err error
			if raw, err = json.Marshal(toWire(r.entry)); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n")
		b.Write(raw)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), nil
}
