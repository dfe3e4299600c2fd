package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/api/threads"
	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/decision"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/metrics"
	"github.com/warden-mcp/warden/host/oauth"
	"github.com/warden-mcp/warden/host/oauth/store"
	"github.com/warden-mcp/warden/host/policy"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// Options configures New. Every zero value is usable and documented.
type Options struct {
	// Home is the warden home directory (config.toml, requirements.toml, environments.toml).
	// "": $WARDEN_HOME, else ~/.warden (config.DefaultHome).
	Home string
	// Logger receives the host's logs, with a named sub-logger per component. nil: none.
	Logger hclog.Logger
	// DecisionLog receives one JSON line per policy decision. nil: the config's
	// `[decision_log]` path (appended to, created 0600, rotated by max_size_mb — default
	// 64, 0 never — keeping `keep` old files, default 5; "-" or "stderr" for standard
	// error), else no decision log. It is fixed for the host's lifetime (a reload does not
	// change it).
	DecisionLog io.Writer
	// PolicyCacheDir is wazero's on-disk compilation cache, so a restarted host loads
	// already-compiled policies in milliseconds. "": <home>/cache/wazero; "-": no on-disk
	// cache.
	PolicyCacheDir string
	// LookupEnv reads the host environment: credential references owned by the host and the
	// minimal base environment of stdio servers. nil: os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// ExtraPluginDirs are plugins dirs watched in addition to the config's `[plugins] dirs`.
	ExtraPluginDirs []string
	// ConnIdleGrace keeps an MCP session open this long after its last user let go, so a
	// thread started soon after (or a status probe) reuses it. 0: close at once.
	ConnIdleGrace time.Duration
	// Executors replaces the host's executor clients in the thread layer
	// (thread.Options.Executors): the executor environments, their capabilities and
	// executor-config declarations, for tests of the thread layer alone. nil: the host
	// connects to every environments.toml entry itself (package host/executor/client).
	Executors func(home *config.Home) []thread.Environment
}

// Host is an embeddable warden host: configuration, capability roots (watched), the
// policy runtime and decision engine, shared MCP connections and the threads.
//
// Concurrency: every method is safe for concurrent use. Close releases everything New
// provisioned, also after New failed half-way.
type Host struct {
	homeDir   string
	log       hclog.Logger
	extraDirs []string

	logFile io.Closer // the decision log (a *decision.RotatingFile), when the host opened it
	rt      *policy.Runtime
	loader  *policy.Cache
	engine  *decision.Engine
	conns   *mcpconn.Manager
	oauth   *oauth.Manager // nil when the credential store cannot be opened
	oauthRT *http.Transport
	threads *thread.Manager
	execs   *executors
	obs     *observer // Status, Subscribe and Metrics

	watchMu  sync.Mutex // the roots watcher; also serializes feeding it to the threads
	watchGen int
	watch    *watch
	initErr  error // config errors found by New

	closeOnce sync.Once
}

// watch is one running roots watcher and the goroutines feeding it to the thread manager.
type watch struct {
	dirs   []string
	w      *roots.Watcher
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New starts a host: it loads the home (a config with errors still loads its valid part;
// see ConfigErrors), starts the roots watcher on the plugins dirs, creates the policy
// runtime and the decision engine, loads the operator policies and every root's policy,
// and creates the connection and thread managers. On error everything provisioned so far is
// released.
func New(ctx context.Context, o Options) (*Host, error) {
	h := &Host{log: o.Logger, extraDirs: slices.Clone(o.ExtraPluginDirs)}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	h.obs = newObserver(metrics.New(metrics.Options{
		OpenSessions: func() int {
			if h.conns == nil {
				return 0
			}
			return h.conns.OpenSessions()
		},
		Threads: func() int {
			if h.threads == nil {
				return 0
			}
			return len(h.threads.List())
		},
	}))
	if err := h.provision(ctx, o); err != nil {
		_ = h.Close() // caddy style: release whatever was provisioned
		return nil, err
	}
	return h, nil
}

func (h *Host) provision(ctx context.Context, o Options) (err error) {
	h.homeDir = o.Home
	if h.homeDir == "" {
		if h.homeDir, err = config.DefaultHome(); err != nil {
			return fmt.Errorf("warden host: %w", err)
		}
	}
	home, cfgErr := config.LoadHome(h.homeDir)
	h.initErr = cfgErr
	if cfgErr != nil {
		h.log.Warn("configuration has errors; its valid part is used", "error", cfgErr)
	}

	logW := o.DecisionLog
	if logW == nil {
		if logW, err = h.openDecisionLog(home.Config.DecisionLog); err != nil {
			return err
		}
	}
	var dlog *decision.Log
	if logW != nil {
		dlog = decision.NewLog(logW)
	}
	h.engine = decision.NewEngine(decision.Options{Log: dlog, Observe: h.obs.decided})

	cacheDir := o.PolicyCacheDir
	switch cacheDir {
	case "-":
		cacheDir = ""
	case "":
		cacheDir = filepath.Join(h.homeDir, "cache", "wazero")
	}
	if cacheDir != "" {
		if mkErr := os.MkdirAll(cacheDir, 0o700); mkErr != nil {
			h.log.Warn("no on-disk policy compilation cache", "dir", cacheDir, "error", mkErr)
			cacheDir = ""
		}
	}
	lim := home.Config.PolicyLimits
	h.rt, err = policy.NewRuntime(ctx, policy.Config{
		CompilationCacheDir: cacheDir,
		Limits:              policy.Limits{MemoryMB: uint32(lim.MemoryMB), Timeout: time.Duration(lim.TimeoutMS) * time.Millisecond},
		Logger:              h.log.Named("policy"),
	})
	if err != nil {
		return fmt.Errorf("warden host: policy runtime: %w", err)
	}
	h.loader = policy.NewCache(h.rt, h.log.Named("policy"))

	dirs := h.pluginDirs(home)
	w, err := roots.NewWatcher(dirs, roots.WatcherOptions{Logger: h.log.Named("roots")})
	if err != nil {
		return fmt.Errorf("warden host: roots watcher: %w", err)
	}

	// The executors' changes re-plan the threads. Dialling starts (sync, below) only once
	// the thread manager exists.
	mo := mcpconn.Options{Logger: h.log.Named("mcp"), IdleGrace: o.ConnIdleGrace,
		OnRestart: func(s *mcpconn.Spec) { h.obs.metrics.UpstreamRestart(s.Name) }}
	to := thread.Options{
		Engine:     h.engine,
		Snapshot:   &thread.Snapshot{Home: home, Roots: w.Current(), ConfigErr: cfgErr},
		Load:       h.loadSnapshot,
		OnSnapshot: h.adopted,
		Policies:   policyLoader{h.loader, h.obs},
		Executors:  o.Executors,
		LookupEnv:  o.LookupEnv,
		Logger:     h.log.Named("thread"),
		OnToolCall: func(server string, outcome thread.ToolCallOutcome) {
			h.obs.metrics.ToolCall(cmp.Or(server, "(unlisted)"), string(outcome))
		},
	}
	if o.Executors == nil {
		h.execs = newExecutors(h.log.Named("executor"), o.LookupEnv, func() {
			h.threads.ExecutorsChanged(context.Background())
			h.obs.changed()
		})
		h.execs.onReconnect = h.obs.metrics.ExecutorReconnect
		mo.Executor = h.execs.executor
		to.Executors = h.execs.environments
		to.ExecutorFiles = h.execs.files
	}
	h.provisionOAuth(home)
	if h.oauth != nil {
		mo.OAuth = func(spec *mcpconn.Spec) auth.OAuthHandler {
			return h.oauth.Handler(store.Key{Owner: spec.Environment, Server: spec.Name, URL: spec.URL})
		}
		to.OAuth = h.oauth
	}
	h.conns = mcpconn.NewManager(mo)
	to.Conns = h.conns
	h.threads, err = thread.NewManager(ctx, to)
	if err != nil {
		return fmt.Errorf("warden host: %w", err)
	}
	// Servers starting, failing and recovering, threads refreshing: the status page's cue.
	// The subscription ends with the thread manager.
	h.threads.Subscribe(func(thread.Event) { h.obs.changed() })
	if h.execs != nil {
		h.execs.sync(home)
	}
	h.watchMu.Lock()
	h.startWatchLocked(dirs, w)
	h.watchMu.Unlock()
	h.log.Info("host ready", "home", h.homeDir, "plugin_dirs", dirs, "servers", len(home.Config.Servers))
	return nil
}

// provisionOAuth opens the credential store and the OAuth manager. A store that cannot be
// opened (a wrong mode, a malformed file) leaves the host without OAuth, with the reason
// logged: servers that need a login fail, everything else runs.
func (h *Host) provisionOAuth(home *config.Home) {
	path := filepath.Join(h.homeDir, config.OAuthCredentialsFile)
	st, err := store.Open(path)
	if err != nil {
		h.log.Error("OAuth is unavailable: the credential store cannot be opened", "file", path, "error", err)
		return
	}
	h.oauthRT = http.DefaultTransport.(*http.Transport).Clone()
	o := oauth.Options{
		Store:             st,
		CallbackPort:      home.Config.OAuth.CallbackPort,
		ClientMetadataURL: home.Config.OAuth.ClientMetadataURL,
		Logger:            h.log.Named("oauth"),
		OnLogin: func(k store.Key) {
			if h.threads != nil {
				h.threads.CredentialsChanged(context.Background(), k)
			}
		},
		Transport: func(env string) (http.RoundTripper, error) {
			if env == config.LocalEnvironment {
				return h.oauthRT, nil
			}
			if h.execs == nil {
				return nil, fmt.Errorf("no executor client for environment %q", env)
			}
			ex, err := h.execs.executor(env)
			if err != nil {
				return nil, err
			}
			return ex.RoundTripper(nil), nil
		},
	}
	if h.oauth, err = oauth.New(o); err != nil {
		h.log.Error("OAuth is unavailable", "error", err)
	}
}

// OAuth is the host's OAuth manager (logins, the credential store), or nil when the
// credential store could not be opened (the host logged why).
func (h *Host) OAuth() *oauth.Manager { return h.oauth }

func (h *Host) openDecisionLog(dl config.DecisionLog) (io.Writer, error) {
	switch {
	case dl.Path == "":
		return nil, nil
	case dl.Stderr():
		return os.Stderr, nil
	}
	f, err := decision.OpenRotatingFile(dl.Path, decision.RotatingFileOptions{
		MaxBytes: dl.MaxBytes(),
		Keep:     dl.KeepFiles(),
		Logger:   h.log.Named("decision_log"),
	})
	if err != nil {
		return nil, fmt.Errorf("warden host: %w", err)
	}
	h.logFile = f
	return f, nil
}

func (h *Host) pluginDirs(home *config.Home) []string {
	return append(slices.Clone(home.Config.Plugins.Dirs), h.extraDirs...)
}

// loadSnapshot is the thread manager's Load: config files and a fresh scan of the plugins
// dirs the new config names.
func (h *Host) loadSnapshot(context.Context) (*thread.Snapshot, error) {
	home, err := config.LoadHome(h.homeDir)
	return &thread.Snapshot{Home: home, Roots: roots.Scan(h.pluginDirs(home), roots.Options{}), ConfigErr: err}, nil
}

// adopted follows a reload: executors added to or removed from environments.toml are
// dialled or closed, and when the plugins dirs changed, the watcher is replaced.
func (h *Host) adopted(snap *thread.Snapshot) {
	if h.execs != nil {
		h.execs.sync(snap.Home)
	}
	dirs := h.pluginDirs(snap.Home)
	h.watchMu.Lock()
	old := h.watch
	if old != nil && slices.Equal(old.dirs, dirs) {
		h.watchMu.Unlock()
		return
	}
	w, err := roots.NewWatcher(dirs, roots.WatcherOptions{Logger: h.log.Named("roots")})
	if err != nil {
		h.watchMu.Unlock()
		h.log.Error("plugins dirs changed but cannot be watched; keeping the old watcher", "dirs", dirs, "error", err)
		return
	}
	h.startWatchLocked(dirs, w)
	h.watchMu.Unlock()
	if old != nil {
		old.stop()
	}
	h.log.Info("watching new plugins dirs", "dirs", dirs)
}

// policyLoader is the thread layer's PolicyLoader over the host's policy module cache;
// every module is wrapped so that its calls are timed (Status, Metrics).
type policyLoader struct {
	c   *policy.Cache
	obs *observer
}

func (l policyLoader) Load(ctx context.Context, cfg *config.Config, rs []*roots.Root) thread.Policies {
	s := l.c.Load(ctx, cfg, rs)
	return l.obs.wrap(s.Operator, s.Plugins)
}

// startWatchLocked runs w and feeds its snapshots to the thread manager (h.watchMu held).
func (h *Host) startWatchLocked(dirs []string, w *roots.Watcher) {
	h.watchGen++
	gen := h.watchGen
	ctx, cancel := context.WithCancel(context.Background())
	wt := &watch{dirs: dirs, w: w, cancel: cancel}
	sets, unsubscribe := w.Subscribe()
	wt.done.Go(func() {
		if err := w.Run(ctx); err != nil {
			h.log.Error("roots watcher stopped", "error", err)
		}
		unsubscribe()
	})
	wt.done.Go(func() {
		for set := range sets {
			h.watchMu.Lock()
			if gen == h.watchGen { // a replaced watcher's last sets are stale
				h.threads.UpdateRoots(context.Background(), set)
			}
			h.watchMu.Unlock()
		}
	})
	h.watch = wt
}

func (wt *watch) stop() {
	wt.cancel()
	wt.done.Wait()
}

// Close shuts the host down: the roots watcher, every thread, every MCP connection (stdio
// servers are stopped), the policy modules and runtime, and the decision log file it
// opened. It is idempotent, and safe after New failed half-way.
func (h *Host) Close() error {
	var errs []error
	h.closeOnce.Do(func() {
		h.watchMu.Lock()
		h.watchGen++ // nothing feeds the threads any more
		wt := h.watch
		h.watch = nil
		h.watchMu.Unlock()
		if wt != nil {
			wt.stop()
		}
		if h.oauth != nil {
			// First: a running login holds a thread manager goroutine until it ends.
			errs = append(errs, h.oauth.Close())
			h.oauthRT.CloseIdleConnections()
		}
		if h.threads != nil {
			errs = append(errs, h.threads.Close())
		}
		if h.conns != nil {
			errs = append(errs, h.conns.Close())
		}
		if h.execs != nil {
			h.execs.close()
		}
		if h.loader != nil {
			h.loader.Close()
		}
		h.obs.close() // after the loader, whose Close ends the loads its goroutines wait for
		if h.rt != nil {
			// Bounded: a compilation still running (a load that gave up) must not hold up
			// a host that is stopping; the runtime finishes closing after it.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			errs = append(errs, h.rt.Close(ctx))
			cancel()
		}
		if h.logFile != nil {
			errs = append(errs, h.logFile.Close())
		}
	})
	return errors.Join(errs...)
}

// HomeDir is the host's home directory.
func (h *Host) HomeDir() string { return h.homeDir }

// Threads is the thread manager: thread/start, thread/list, mcpServerStatus/list,
// mcpServer/tool/call, config/mcpServer/reload and the status notifications.
func (h *Host) Threads() *thread.Manager { return h.threads }

// Roots is the set of capability roots threads are currently built from.
func (h *Host) Roots() *roots.Set { return h.threads.Snapshot().Roots }

// Config is the configuration threads are currently built from.
func (h *Host) Config() *config.Home { return h.threads.Snapshot().Home }

// ConfigErrors lists the problems of the current configuration files (a config.Errors),
// whose valid part is in use; nil when they are clean.
func (h *Host) ConfigErrors() error {
	if h.threads == nil {
		return h.initErr
	}
	return h.threads.Snapshot().ConfigErr
}

// Engine is the decision engine (for a policy test runner or the MCP front door).
func (h *Host) Engine() *decision.Engine { return h.engine }

// Conns is the shared MCP connection manager.
func (h *Host) Conns() *mcpconn.Manager { return h.conns }

// BackendOptions configures NewBackend (Logger nil: the host's logger, named "backend").
type BackendOptions = threads.Options

// Backend is the host API backend over the host's threads (NewBackend with the zero
// BackendOptions).
//
//	srv := api.New(h.Backend(), api.Options{Logger: log})
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
func (h *Host) Backend() api.Backend { return h.NewBackend(BackendOptions{}) }

// NewBackend returns the host API backend over the host's threads (threads.NewBackend); it
// is valid until the Host is closed.
func (h *Host) NewBackend(o BackendOptions) api.Backend {
	if o.Logger == nil {
		o.Logger = h.log.Named("backend")
	}
	return threads.NewBackend(h.threads, o)
}
