package roots

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// waitTimeout only bounds failure: every wait returns as soon as its condition holds.
const waitTimeout = 10 * time.Second

// startWatcher runs a watcher on dirs until the test ends and returns it with a
// subscription.
func startWatcher(t *testing.T, dirs []string, opts WatcherOptions) (*Watcher, <-chan *Set) {
	t.Helper()
	return startWatcherHooks(t, dirs, opts, watcherHooks{})
}

// startWatcherHooks is startWatcher with test hooks installed before Run.
func startWatcherHooks(t *testing.T, dirs []string, opts WatcherOptions, hooks watcherHooks) (*Watcher, <-chan *Set) {
	t.Helper()
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	if opts.RetryInterval == 0 {
		opts.RetryInterval = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "roots", Output: testWriter{t}, Level: hclog.Debug})
	}
	w, err := NewWatcher(dirs, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.hooks = hooks
	sets, cancelSub := w.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancelSub()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return w, sets
}

// testWriter sends log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// waitFor reads sets until one satisfies cond.
func waitFor(t *testing.T, sets <-chan *Set, what string, cond func(*Set) bool) *Set {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case s, ok := <-sets:
			if !ok {
				t.Fatalf("waiting for %s: subscription closed", what)
			}
			if cond(s) {
				return s
			}
		case <-timeout:
			t.Fatalf("waiting for %s: timed out", what)
		}
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes p atomically (a temporary file renamed over it).
func replaceFile(t *testing.T, p, content string) {
	t.Helper()
	tmp := p + ".tmp"
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherAddModifyRemove(t *testing.T) {
	plugins := filepath.Join(tempDir(t), "plugins")
	layout(t, plugins, "", map[string]string{
		"a/.codex-plugin/plugin.json": `{"name":"a","version":"1"}`,
		"a/.mcp.json":                 `{"s":{"command":"s"}}`,
	})
	w, sets := startWatcher(t, []string{plugins}, WatcherOptions{})
	first := waitFor(t, sets, "the initial set", func(s *Set) bool { return s.Get("a@1") != nil })
	if w.Current() == nil || first.Len() != 1 {
		t.Fatalf("initial set: %d roots", first.Len())
	}

	// Drop a new root in: the directory first, then its files (as a copy would).
	b := filepath.Join(plugins, "b")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b, ".codex-plugin/plugin.json"), `{"name":"b","version":"1"}`)
	writeFile(t, filepath.Join(b, ".mcp.json"), `{"x":{"command":"x"}}`)
	waitFor(t, sets, "b@1 with server x", func(s *Set) bool {
		r := s.Get("b@1")
		return r != nil && r.Status == StatusOK && len(r.Servers) == 1
	})

	// Modify its servers.
	writeFile(t, filepath.Join(b, ".mcp.json"), `{"x":{"command":"x"},"y":{"url":"https://y.example/mcp"}}`)
	waitFor(t, sets, "b@1 with two servers", func(s *Set) bool {
		r := s.Get("b@1")
		return r != nil && len(r.Servers) == 2
	})

	// Modify its manifest (atomic replace, as editors do).
	replaceFile(t, filepath.Join(b, ".codex-plugin/plugin.json"), `{"name":"b","version":"2"}`)
	waitFor(t, sets, "b@2", func(s *Set) bool { return s.Get("b@2") != nil && s.Get("b@1") == nil })

	// Remove it.
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	// (RemoveAll may be seen half done: b without its manifest is a root "b" for a moment.)
	last := waitFor(t, sets, "b gone", func(s *Set) bool { return s.Len() == 1 })
	if last.Get("a@1") == nil {
		t.Errorf("a@1 lost")
	}

	// Recreate it at the same path (its old watches are gone with the old directory).
	writeFile(t, filepath.Join(b, ".mcp.json"), `{"z":{"command":"z"}}`)
	waitFor(t, sets, "b again", func(s *Set) bool { r := s.Get("b"); return r != nil && len(r.Servers) == 1 })
	writeFile(t, filepath.Join(b, ".mcp.json"), `{"z":{"command":"z"},"zz":{"command":"zz"}}`)
	waitFor(t, sets, "b again, changed", func(s *Set) bool { r := s.Get("b"); return r != nil && len(r.Servers) == 2 })
}

func TestWatcherBrokenThenFixed(t *testing.T) {
	plugins := tempDir(t)
	_, sets := startWatcher(t, []string{plugins}, WatcherOptions{})
	waitFor(t, sets, "the initial empty set", func(s *Set) bool { return s.Len() == 0 })

	manifest := filepath.Join(plugins, "p/.codex-plugin/plugin.json")
	writeFile(t, manifest, `{"name":"p","vers`) // half written
	s := waitFor(t, sets, "p in error", func(s *Set) bool { r := s.Get("p"); return r != nil && r.Status == StatusError })
	// The watcher may have caught the file empty (1:1) or complete (1:17).
	if got := s.Get("p").Err.Error(); !strings.HasPrefix(got, `plugin "p": .codex-plugin/plugin.json:1:`) || !strings.HasSuffix(got, ": unexpected end of JSON input") {
		t.Errorf("Err = %s", got)
	}

	writeFile(t, manifest, `{"name":"p","version":"1"}`)
	writeFile(t, filepath.Join(plugins, "p/.mcp.json"), `{"s":{"command":"./bin/s"}}`)
	waitFor(t, sets, "p@1 ok", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Status == StatusOK && len(r.Servers) == 1 })

	// Break the server file, then fix it again.
	writeFile(t, filepath.Join(plugins, "p/.mcp.json"), `{"s":{"command":"./bin/s","cwd":"../.."}}`)
	waitFor(t, sets, "p@1 unusable", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Status == StatusError })
	writeFile(t, filepath.Join(plugins, "p/.mcp.json"), `{"s":{"command":"./bin/s"}}`)
	waitFor(t, sets, "p@1 recovered", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Status == StatusOK })
}

// TestWatcherRetry: a fix that no watched directory sees (a link replaced two levels down)
// is found by the periodic retry of roots in error; the policy's directory is watched.
func TestWatcherRetry(t *testing.T) {
	base := tempDir(t)
	plugins := filepath.Join(base, "plugins")
	layout(t, base, filepath.Join(base, "outside"), map[string]string{
		"outside/x":                           "dir:",
		"plugins/p/.codex-plugin/plugin.json": `{"name":"p","version":"1","policy":"build/out/p.wasm"}`,
		"plugins/p/build/out/p.wasm":          "\x00asm",
		"plugins/p/.mcp.json":                 `{"s":{"command":"s","cwd":"a/b/work"}}`,
		"plugins/p/a/b/work":                  "link:{OUT}/x",
	})
	_, sets := startWatcher(t, []string{plugins}, WatcherOptions{RetryInterval: 50 * time.Millisecond})
	waitFor(t, sets, "p@1 in error", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Status == StatusError })
	work := filepath.Join(plugins, "p/a/b/work")
	if err := os.Remove(work); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, sets, "p@1 ok", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Status == StatusOK })
	if s.Get("p@1").Policy == nil {
		t.Errorf("no policy")
	}
	// The policy's directory is watched: a change to the module is an event.
	writeFile(t, filepath.Join(plugins, "p/build/out/p.wasm"), "\x00asm\x01")
	waitFor(t, sets, "new policy digest", func(s *Set) bool { r := s.Get("p@1"); return r != nil && r.Policy != nil && r.Policy.Size == 5 })
}

func TestWatcherPluginsDirCreatedLater(t *testing.T) {
	base := tempDir(t)
	shallow := filepath.Join(base, "plugins")
	deep := filepath.Join(base, "x", "y", "plugins")
	_, sets := startWatcher(t, []string{shallow, deep}, WatcherOptions{RetryInterval: time.Hour})
	waitFor(t, sets, "two problems", func(s *Set) bool { return len(s.Problems()) == 2 })

	// With retries effectively off, only watches on the nearest existing ancestors see these.
	writeFile(t, filepath.Join(shallow, "p/.mcp.json"), `{"s":{"command":"s"}}`)
	waitFor(t, sets, "p from the late plugins dir", func(s *Set) bool { return s.Get("p") != nil && len(s.Problems()) == 1 })
	writeFile(t, filepath.Join(deep, "q/.mcp.json"), `{"s":{"command":"s"}}`)
	waitFor(t, sets, "q from the late deep plugins dir", func(s *Set) bool {
		r := s.Get("q")
		return r != nil && len(r.Servers) == 1 && len(s.Problems()) == 0
	})

	// Remove a plugins dir: its roots go, a problem comes back; recreate it.
	if err := os.RemoveAll(shallow); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sets, "p gone", func(s *Set) bool { return s.Get("p") == nil && len(s.Problems()) == 1 })
	writeFile(t, filepath.Join(shallow, "p2/.mcp.json"), `{"s":{"command":"s"}}`)
	waitFor(t, sets, "p2", func(s *Set) bool { return s.Get("p2") != nil && len(s.Problems()) == 0 })
}

// TestWatcherPublishesOnlyChanges: events that change nothing warden uses publish nothing.
func TestWatcherPublishesOnlyChanges(t *testing.T) {
	plugins := tempDir(t)
	layout(t, plugins, "", map[string]string{
		"p/.codex-plugin/plugin.json": `{"name":"p","version":"1"}`,
		"p/.mcp.json":                 `{"s":{"command":"s"}}`,
	})
	// Run's events and rescans, in the order Run saw them (one channel keeps the order; its
	// room exceeds what this test causes, so Run never blocks on it).
	type observed struct {
		event     string // a file event's path, or "" for a rescan
		published int    // a rescan: the Sets it published
	}
	obs := make(chan observed, 4096)
	w, sets := startWatcherHooks(t, []string{plugins}, WatcherOptions{}, watcherHooks{
		event:     func(name string) { obs <- observed{event: name} },
		rescanned: func(n int) { obs <- observed{published: n} },
	})
	first := <-sets
	// Run's first rescan follows its first watches: events from here on are seen.
	select {
	case o := <-obs:
		if o.event != "" || o.published != 0 {
			t.Fatalf("Run's first observation is %+v, want its initial rescan publishing nothing", o)
		}
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for Run's initial rescan")
	}
	// (Rewrites are atomic: an in-place write passes through a truncated file, which is a
	// real, publishable change.)
	writeFile(t, filepath.Join(plugins, "p/README.md"), "docs")
	replaceFile(t, filepath.Join(plugins, "p/.mcp.json"), `{"s":{"command":"s"}}`)
	replaceFile(t, filepath.Join(plugins, "p/.codex-plugin/plugin.json"), `{"name":"p","version":"1","homepage":"https://x"}`)
	if err := os.Mkdir(filepath.Join(plugins, "not-a-root"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A last no-op event, after the others in the watcher's event order: once Run has seen
	// it, the next rescan covers every event above. Every rescan until then publishes
	// nothing.
	fence := filepath.Join(plugins, "p/FENCE.md")
	writeFile(t, fence, "fence")
	published, sawFence := 0, false
	timeout := time.After(waitTimeout)
	for done := false; !done; {
		select {
		case o := <-obs:
			switch {
			case o.event == fence:
				sawFence = true
			case o.event == "":
				published += o.published
				done = sawFence
			}
		case <-timeout:
			t.Fatalf("timed out waiting for the rescan after the no-op events (fence event seen: %v)", sawFence)
		}
	}
	if published != 0 {
		t.Errorf("the rescans after no-op events published %d sets", published)
	}
	select {
	case s := <-sets:
		t.Fatalf("a set was published for no-op events (fingerprint %s, first %s)", s.Fingerprint(), first.Fingerprint())
	default:
	}
	// A real change afterwards must be the next set published.
	writeFile(t, filepath.Join(plugins, "p/.mcp.json"), `{"s":{"command":"s2"}}`)
	next := waitFor(t, sets, "the change", func(*Set) bool { return true })
	if r := next.Get("p@1"); r == nil || r.Servers[0].Command != "s2" {
		t.Errorf("the first set published after no-op events is not the real change")
	}
	if w.Current() != next || first.Fingerprint() == next.Fingerprint() {
		t.Errorf("Current is not the published set")
	}
	// The not-a-root directory is watched: turning it into a root is seen.
	writeFile(t, filepath.Join(plugins, "not-a-root/.claude-plugin/plugin.json"), `{"name":"late"}`)
	waitFor(t, sets, "late", func(s *Set) bool { return s.Get("late") != nil })
}

func TestWatcherLifecycle(t *testing.T) {
	plugins := tempDir(t)
	w, err := NewWatcher([]string{plugins}, WatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWatcher(nil, WatcherOptions{Debounce: -1}); err == nil {
		t.Errorf("negative Debounce accepted")
	}
	sub, cancelSub := w.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-sub // the current set
	cancelSub()
	cancelSub() // idempotent
	if _, ok := <-sub; ok {
		t.Errorf("cancelled subscription still open")
	}
	sub2, _ := w.Subscribe()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for range sub2 { // closed when Run returns
	}
	if err := w.Run(context.Background()); err == nil {
		t.Errorf("second Run accepted")
	}
	sub3, cancel3 := w.Subscribe()
	if s, ok := <-sub3; !ok || s != w.Current() {
		t.Errorf("subscription after Run does not hold the final set")
	}
	if _, ok := <-sub3; ok {
		t.Errorf("subscription after Run is not closed")
	}
	cancel3()
}
