// Package store keeps MCP servers' OAuth logins in one JSON file: the client warden
// registered (or was configured with) and the latest token, per login.
//
// A login is keyed by the environment that owns it (OwnerLocal for the host, or an
// executor id), the server's name and its URL, so a host-owned and an executor-owned
// login for the same URL are different entries and writing one never touches the other.
//
//	s, err := store.Open(filepath.Join(home, "mcp-oauth-credentials.json"))
//	if err != nil {
//		return err // names the file and what is wrong with it, never its content
//	}
//	k := store.Key{Owner: store.OwnerLocal, Server: "docs", URL: "https://docs.example/mcp"}
//
//	// After a login: keep the client and the token.
//	e := store.FromToken(k, tok)
//	e.ClientID, e.ClientSecret, e.Issuer = clientID, clientSecret, issuer
//	err = s.Put(ctx, e)
//
//	// On connect: the stored token, for auth.AuthorizationCodeHandler's InitialTokenSource.
//	cur, ok, err := s.Get(ctx, k)
//
//	// Refresh: under the store's lock, so a second refresher, in this process or another,
//	// sees the first one's token instead of spending the refresh token again.
//	err = s.Update(ctx, k, func(old store.Entry, ok bool) (store.Entry, bool, error) {
//		if !ok || !old.HasRefreshToken() {
//			return old, false, errNotLoggedIn
//		}
//		if time.Until(old.Expiry) > time.Minute {
//			return old, false, nil // someone refreshed already: write nothing
//		}
//		tok, err := cfg.TokenSource(ctx, old.Token()).Token()
//		if err != nil {
//			return old, false, err // the caller marks the server "expired"
//		}
//		return old.WithToken(tok), true, nil
//	})
//
//	log.Info("stored", "credential", e) // key, client id, expiry, refresh_token=yes|no
//
// # Secrets
//
// ClientSecret, AccessToken and RefreshToken never appear in this package's errors, nor
// in an Entry's String, fmt output (every verb), MarshalJSON (the logging form) or
// LogValue. The file format is a separate unexported type. Errors about a malformed
// file give byte offsets, entry indexes and field names and never quote the file, and
// errors about a key never quote its URL (it may hold userinfo).
//
// # File format
//
// UTF-8 JSON, one entry per line, sorted by key:
//
//	{"version":1,"entries":[
//	{"owner":"local","server":"docs","url":"https://docs.example/mcp","client_id":"…","client_secret":"…","issuer":"https://auth.example","token_url":"https://auth.example/token","access_token":"…","refresh_token":"…","token_type":"Bearer","expiry":"2030-01-02T03:04:05.123456789Z","scopes":["read"],"updated_at":"…"},
//	{"owner":"exec-1","server":"docs","url":"https://docs.example/mcp",…}
//	]}
//
// Times are RFC 3339 in UTC; empty fields are omitted. An entry no write changed is
// written back with exactly the bytes it was read as (fields a newer warden added
// survive an older one's write). A file of another version is refused, not rewritten;
// an empty file is an empty store. The file must be a regular file (not a symlink) of
// this user's, mode 0600 or narrower, and at most MaxFileSize bytes: Open and every
// later read refuse anything else, naming the file and the fix, and never loosen or
// tighten the mode themselves. The package writes the file with mode 0600 whatever the
// umask.
//
// # Concurrency and crashes
//
// A Store is safe for concurrent use by goroutines, and several processes (warden
// serve, warden oauth login, …) may use the same file at once. A Store caches nothing:
// every call reads the file.
//
// Writes (Put, Update, Delete) hold an exclusive flock(2) on path+".lock" (mode 0600,
// never removed) from reading the file to replacing it, so concurrent read-modify-writes
// never lose each other's changes. The new content goes to path+".tmp", created with
// O_EXCL and mode 0600, synced, renamed over the file, and the directory is synced. A
// writer killed at any point leaves the path naming either the old or the new complete
// file, and the kernel drops a dead process's flock, so the next writer proceeds; a
// path+".tmp" it left is ignored by readers and removed by the next writer (only the
// lock holder creates one, so under the lock any that exists is a dead writer's).
// Waiting for the lock honours ctx: within a process, writers queue on a channel; for
// the flock itself, which cannot be interrupted, the wait continues in a goroutine that
// releases the lock as soon as it gets it.
//
// Why flock and rename: rename(2) within a directory is atomic, which gives readers and
// crashes a whole file but does not stop two writers from each reading the old file and
// the second rename discarding the first writer's change; the flock serialises writers
// across processes, and a flock (unlike a lock file created with O_EXCL) cannot be left
// held by a process that died. A lock on the data file itself would not do, since the
// rename replaces the inode the lock is on.
//
// Reads (Get, List) take no lock: because the file is only ever replaced by rename, an
// open(2) gets one complete version, old or new, never a torn one. Readers therefore
// never wait behind a writer, even one whose Update is doing a token request. What a
// read returns can be stale by the time it is used, as with any lock; a decision that
// must act on the current entry belongs in Update's function.
//
// Update's function runs with the lock held: it should be bounded by ctx and must not
// call the same file's writing methods, which would wait for that lock.
//
// The store needs flock(2): on systems without it every call fails with ErrUnsupported.
package store
