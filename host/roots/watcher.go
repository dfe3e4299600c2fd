package roots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// Defaults for WatcherOptions.
const (
	// DefaultDebounce is how long the watcher waits after the last file event before it
	// rescans.
	DefaultDebounce = 150 * time.Millisecond
	// DefaultRetryInterval is how often roots in error (and missing plugins dirs) are
	// retried.
	DefaultRetryInterval = 2 * time.Second
	// maxDebounceFactor bounds how long a steady stream of events can postpone a rescan:
	// at most this many debounce periods after the first pending event.
	maxDebounceFactor = 10
	// maxRefreshRounds bounds the rescans of one refresh (each round may discover new
	// directories to watch, whose content is then read again); whatever is left is found
	// by the next event or retry.
	maxRefreshRounds = 8
)

// WatcherOptions tune a Watcher. The zero value is ready to use.
type WatcherOptions struct {
	// Logger receives load results; each plugin logs under Named(<plugin id>). Nil
	// discards logs.
	Logger hclog.Logger
	// Debounce is the quiet period after a file event before a rescan; 0 means
	// DefaultDebounce.
	Debounce time.Duration
	// RetryInterval is how often roots that are not ok, and plugins dirs that are missing,
	// are retried even without file events; 0 means DefaultRetryInterval.
	RetryInterval time.Duration
	// Load are the options for loading each root.
	Load Options
}

// Watcher keeps a current Set for some plugins dirs and publishes a new one whenever a
// root is added, changed or removed.
//
// Concurrency contract: Run must be called once; it owns all OS resources (inotify and
// friends) and releases them before it returns. Current, Subscribe and the cancel
// functions are safe to call from any goroutine at any time, before, during and after Run.
// Each subscription channel has room for one Set and always holds the newest: when a
// subscriber is slow, intermediate snapshots are skipped but it never misses the latest
// one, and the watcher never blocks on a subscriber. A channel is closed by its cancel
// function or when Run returns.
type Watcher struct {
	dirs []string
	opts WatcherOptions
	log  hclog.Logger
	cur  atomic.Pointer[Set]

	mu    sync.Mutex // guards subs, next, state; held while publishing
	subs  map[uint64]chan *Set
	next  uint64
	state int // watcherIdle, watcherRunning, watcherDone

	// hooks are nil outside tests. A test sets them before Run; Run calls them on its own
	// goroutine, so a test can wait until a file event was seen and the rescan after it
	// finished, instead of sleeping and hoping the watcher was done.
	hooks watcherHooks
}

// watcherHooks observe Run (see Watcher.hooks).
type watcherHooks struct {
	// event is called with the path of each file event after Run recorded it.
	event func(name string)
	// rescanned is called after each rescan with the number of Sets it published.
	rescanned func(published int)
}

const (
	watcherIdle = iota
	watcherRunning
	watcherDone
)

// NewWatcher scans dirs once (so Current is ready at once) and returns a watcher for them.
// It holds no OS resources until Run. Plugins dirs that do not exist yet are fine: they
// are reported in the Set's Problems and picked up when they appear.
func NewWatcher(dirs []string, opts WatcherOptions) (*Watcher, error) {
	if opts.Debounce < 0 || opts.RetryInterval < 0 {
		return nil, errors.New("roots: negative Debounce or RetryInterval")
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	opts.Load = opts.Load.withDefaults()
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	w := &Watcher{opts: opts, log: opts.Logger, subs: map[uint64]chan *Set{}}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("roots: plugins dir %q: %w", d, err)
		}
		w.dirs = append(w.dirs, abs)
	}
	set := scan(w.dirs, w.opts.Load, nil)
	w.cur.Store(set)
	w.logChanges(nil, set)
	return w, nil
}

// Current returns the newest Set.
func (w *Watcher) Current() *Set { return w.cur.Load() }

// Subscribe returns a channel that first holds the current Set and then receives every
// newer one (see the Watcher's concurrency contract), and a function that ends the
// subscription and closes the channel. After Run has returned, the channel holds the final
// Set and is already closed.
func (w *Watcher) Subscribe() (<-chan *Set, func()) {
	ch := make(chan *Set, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	ch <- w.cur.Load()
	if w.state == watcherDone {
		close(ch)
		return ch, func() {}
	}
	id := w.next
	w.next++
	w.subs[id] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if c, ok := w.subs[id]; ok {
			delete(w.subs, id)
			close(c)
		}
	}
}

// Run watches until ctx is done, then releases its resources, closes every subscription
// channel and returns nil. It returns an error when it cannot start (or was called
// before) or when the file watcher fails for good.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.state != watcherIdle {
		w.mu.Unlock()
		return errors.New("roots: Watcher.Run called more than once")
	}
	w.state = watcherRunning
	w.mu.Unlock()
	defer w.stop()

	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("roots: starting file watcher: %w", err)
	}
	defer fw.Close()

	rs := &runState{fw: fw, watches: map[string]*watchInfo{}, failed: map[string]bool{}, dirty: map[string]bool{}}
	// Watch what the initial scan found, then read everything again: anything that changed
	// between NewWatcher and now is picked up.
	w.syncWatches(rs, w.cur.Load())
	w.refresh(rs, nil, true, false)

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	retry := time.NewTicker(w.opts.RetryInterval)
	defer retry.Stop()
	var pending bool
	var pendingSince time.Time
	arm := func() {
		now := time.Now()
		if !pending {
			pending, pendingSince = true, now
		}
		delay := w.opts.Debounce
		if left := pendingSince.Add(maxDebounceFactor * w.opts.Debounce).Sub(now); left < delay {
			delay = max(left, 0)
		}
		debounce.Reset(delay)
	}

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("roots: file watcher closed")
			}
			if w.handleEvent(rs, ev) {
				arm()
			}
			if w.hooks.event != nil {
				w.hooks.event(filepath.Clean(ev.Name))
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("roots: file watcher closed")
			}
			w.log.Warn("file watcher error; rescanning everything", "error", err)
			rs.all = true
			arm()
		case <-debounce.C:
			pending = false
			dirty, all := rs.dirty, rs.all
			rs.dirty, rs.all = map[string]bool{}, false
			w.refresh(rs, dirty, all, false)
		case <-retry.C:
			if !pending && needsRetry(w.cur.Load()) {
				w.refresh(rs, nil, false, true)
			}
		}
	}
}

// stop marks the watcher done and closes every subscription.
func (w *Watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = watcherDone
	for id, ch := range w.subs {
		close(ch)
		delete(w.subs, id)
	}
}

// runState is Run's private bookkeeping (only Run's goroutine touches it).
type runState struct {
	fw      *fsnotify.Watcher
	watches map[string]*watchInfo // watched path -> what it is for
	failed  map[string]bool       // paths whose Add failed (logged once)
	dirty   map[string]bool       // candidate paths to reload at the next refresh
	all     bool                  // reload every root at the next refresh
}

// watchInfo says why a directory is watched.
type watchInfo struct {
	plugins    bool     // a plugins dir: its entries are candidates
	ancestorOf []string // the nearest existing ancestor of these missing plugins dirs
	cands      []string // a directory of these candidates' roots
}

// handleEvent records what an event makes dirty and reports whether it matters.
func (w *Watcher) handleEvent(rs *runState, ev fsnotify.Event) bool {
	relevant := false
	name := filepath.Clean(ev.Name)
	if info, ok := rs.watches[name]; ok && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		// The watched directory itself went away: forget the watch so the next sync adds it
		// again if the path comes back.
		_ = rs.fw.Remove(name)
		delete(rs.watches, name)
		for _, c := range info.cands {
			rs.dirty[c] = true
		}
		relevant = true
	}
	if info, ok := rs.watches[filepath.Dir(name)]; ok {
		if info.plugins {
			rs.dirty[name] = true
			relevant = true
		}
		for _, c := range info.cands {
			rs.dirty[c] = true
			relevant = true
		}
		for _, target := range info.ancestorOf {
			if target == name || strings.HasPrefix(target, name+string(filepath.Separator)) {
				relevant = true
			}
		}
	}
	return relevant
}

// refresh rescans, reloading the dirty candidates (all: every root; retry: also every root
// that is not ok), updates the watches and publishes the result if it differs.
func (w *Watcher) refresh(rs *runState, dirty map[string]bool, all, retry bool) {
	published := 0
	if w.hooks.rescanned != nil {
		defer func() { w.hooks.rescanned(published) }()
	}
	for round := 0; round < maxRefreshRounds; round++ {
		prev := w.cur.Load()
		set := scan(w.dirs, w.opts.Load, func(c string) *Root {
			if all || dirty[c] {
				return nil
			}
			r := prev.loaded[c]
			if r == nil || (retry && r.Status != StatusOK) {
				return nil
			}
			return r
		})
		added, newDirs := w.syncWatches(rs, set)
		if w.publish(prev, set) {
			published++
		}
		if !newDirs {
			return
		}
		// New directories are watched now; read their roots again in case files appeared
		// in them before the watch existed.
		dirty, all, retry = added, false, false
	}
}

// needsRetry reports whether a set has anything worth retrying without an event.
func needsRetry(s *Set) bool {
	if len(s.problems) > 0 {
		return true
	}
	for _, r := range s.roots {
		if r.Status != StatusOK {
			return true
		}
	}
	return false
}

// syncWatches makes the watched directories match what set needs. It returns the
// candidates whose directories were newly watched, and whether any directory was newly
// watched at all (a new plugins dir or ancestor may have gained entries before its watch
// existed, so the caller scans again).
func (w *Watcher) syncWatches(rs *runState, set *Set) (added map[string]bool, newDirs bool) {
	want := map[string]*watchInfo{}
	get := func(p string) *watchInfo {
		if want[p] == nil {
			want[p] = &watchInfo{}
		}
		return want[p]
	}
	for _, pd := range set.plugDirs {
		if pd.resolved != "" {
			get(pd.resolved).plugins = true
		} else if anc := nearestExistingDir(pd.path); anc != "" {
			info := get(anc)
			info.ancestorOf = append(info.ancestorOf, pd.path)
		}
	}
	for _, c := range set.candidates {
		info := get(c.resolved)
		info.cands = append(info.cands, c.path)
		for _, sub := range []string{".codex-plugin", ".claude-plugin"} {
			if p, err := filepath.EvalSymlinks(filepath.Join(c.resolved, sub)); err == nil {
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					sinfo := get(p)
					sinfo.cands = append(sinfo.cands, c.path)
				}
			}
		}
		if r := set.loaded[c.path]; r != nil {
			for _, d := range r.watchDirs {
				dinfo := get(d)
				dinfo.cands = append(dinfo.cands, c.path)
			}
		}
	}

	for p := range rs.watches {
		if want[p] == nil {
			_ = rs.fw.Remove(p)
			delete(rs.watches, p)
		}
	}
	added = map[string]bool{}
	for p, info := range want {
		if _, ok := rs.watches[p]; !ok {
			if err := rs.fw.Add(p); err != nil {
				if !rs.failed[p] {
					rs.failed[p] = true
					w.log.Warn("cannot watch directory; changes in it are picked up by retries only", "path", p, "error", err)
				}
				continue
			}
			delete(rs.failed, p)
			newDirs = true
			for _, c := range info.cands {
				added[c] = true
			}
		}
		rs.watches[p] = info
	}
	return added, newDirs
}

// nearestExistingDir returns the closest existing directory at or above p (symbolic links
// resolved), or "".
func nearestExistingDir(p string) string {
	for {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return r
			}
			return ""
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// publish makes set current and hands it to the subscribers, unless it is identical to
// prev; it reports whether it did.
func (w *Watcher) publish(prev, set *Set) bool {
	if prev != nil && prev.fp == set.fp {
		return false
	}
	w.mu.Lock()
	w.cur.Store(set)
	for _, ch := range w.subs {
		select {
		case ch <- set:
		default:
			// Replace the unread older snapshot. Only publish sends, under w.mu, so the
			// channel has room after the drain.
			select {
			case <-ch:
			default:
			}
			ch <- set
		}
	}
	w.mu.Unlock()
	w.logChanges(prev, set)
	return true
}

// logChanges logs roots that appeared, changed or disappeared, and new problems.
func (w *Watcher) logChanges(prev, set *Set) {
	old := map[string]*Root{}
	oldProblems := map[string]bool{}
	if prev != nil {
		for _, r := range prev.roots {
			old[r.Dir+"\x00"+r.ID] = r
		}
		for _, p := range prev.problems {
			oldProblems[p.Error()] = true
		}
	}
	for _, r := range set.roots {
		key := r.Dir + "\x00" + r.ID
		o, existed := old[key]
		delete(old, key)
		if existed && o.Fingerprint == r.Fingerprint {
			continue
		}
		msg := "plugin loaded"
		if existed {
			msg = "plugin reloaded"
		}
		l := w.log.Named(r.ID)
		args := []any{"dir", r.Dir, "status", string(r.Status), "servers", len(r.Servers)}
		switch r.Status {
		case StatusError:
			l.Error(msg, append(args, "error", r.Err)...)
		case StatusPartial:
			l.Warn(msg, append(args, "rejected", errors.Join(r.ServerErrors...))...)
		default:
			l.Info(msg, args...)
		}
	}
	for _, r := range old {
		w.log.Named(r.ID).Info("plugin removed", "dir", r.Dir)
	}
	for _, p := range set.problems {
		if !oldProblems[p.Error()] {
			w.log.Warn("plugins dir problem", "error", p)
		}
	}
}
