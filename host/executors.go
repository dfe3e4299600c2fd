package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/executor/client"
	"github.com/warden-mcp/warden/host/executor/protocol"
	"github.com/warden-mcp/warden/host/mcpconn"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// executors keeps a client per environments.toml entry and is the thread layer's and the
// connection manager's view of them: each environment's state, capabilities and announced
// servers (thread.Options.Executors), a way to reach its servers (mcpconn.Options.Executor)
// and to read its capability roots (thread.Options.ExecutorFiles).
//
// A client is dialled in the background and redialled (with capped, jittered backoff) until
// its first connect succeeds; after that it reconnects by itself. Every change of state,
// capabilities or servers calls changed, which queues a refresh of every thread.
//
// Concurrency: every method is safe for concurrent use.
type executors struct {
	log     hclog.Logger
	lookup  func(string) (string, bool) // the host's environment (token_env values)
	changed func()
	// onReconnect, when set, is told of each reconnection of an environment after its first
	// connect (the executor reconnect metric); set before the first sync.
	onReconnect func(env string)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	envs map[string]*executorEnv // by id, for the configuration last given to sync
}

// executorEnv is one environment's entry.
type executorEnv struct {
	cfg config.Environment

	client    *client.Client // nil until the first connect
	connected bool
	caps      protocol.Capabilities
	servers   []config.ServerDecl // last announced
	// everConnected and reconnects: a connect after the first one is a reconnect
	// (Host.Status).
	everConnected bool
	reconnects    int
	unsub         func()
	stop          context.CancelFunc
}

func newExecutors(log hclog.Logger, lookup func(string) (string, bool), changed func()) *executors {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &executors{log: log, lookup: lookup, changed: changed, ctx: ctx, cancel: cancel, envs: map[string]*executorEnv{}}
}

// sync adopts the environments of home: new entries are dialled, removed or changed ones
// closed.
func (x *executors) sync(home *config.Home) {
	want := map[string]config.Environment{}
	if home != nil && home.Environments != nil {
		for _, e := range home.Environments.List {
			want[e.ID] = e
		}
	}
	x.mu.Lock()
	var closing []*executorEnv
	for id, e := range x.envs {
		if w, ok := want[id]; !ok || !sameEnvironment(w, e.cfg) {
			closing = append(closing, e)
			delete(x.envs, id)
		}
	}
	for id, cfg := range want {
		if _, ok := x.envs[id]; ok {
			continue
		}
		ctx, stop := context.WithCancel(x.ctx)
		e := &executorEnv{cfg: cfg, stop: stop}
		x.envs[id] = e
		x.wg.Add(1)
		go x.dialLoop(ctx, e)
	}
	x.mu.Unlock()
	for _, e := range closing {
		x.closeEnv(e)
	}
}

func sameEnvironment(a, b config.Environment) bool {
	return a.ID == b.ID && a.URL == b.URL && a.TokenEnv == b.TokenEnv && a.Program == b.Program &&
		strings.Join(a.Args, "\x00") == strings.Join(b.Args, "\x00") && fmt.Sprint(a.Env) == fmt.Sprint(b.Env)
}

// dialLoop dials e until the first connect succeeds or ctx ends.
func (x *executors) dialLoop(ctx context.Context, e *executorEnv) {
	defer x.wg.Done()
	cfg := client.Config{Name: e.cfg.ID, URL: e.cfg.URL, Program: e.cfg.Program, Args: e.cfg.Args,
		Logger: x.log, ClientInfo: protocol.Info{Name: "warden"}}
	for name, v := range e.cfg.Env {
		cfg.Env = append(cfg.Env, name+"="+v)
	}
	if e.cfg.TokenEnv != "" {
		tok, ok := x.lookup(e.cfg.TokenEnv)
		if !ok || tok == "" {
			x.log.Error("executor not dialled: its token variable is unset", "environment", e.cfg.ID, "token_env", e.cfg.TokenEnv)
			return
		}
		cfg.Token = tok
	}
	for attempt := 0; ; attempt++ {
		c, err := client.Dial(ctx, cfg)
		if err == nil {
			x.adopt(e, c)
			return
		}
		if ctx.Err() != nil {
			return
		}
		wait := (client.Backoff{}).Delay(attempt) // the client's own reconnection backoff
		// Redacted: a dial error quotes the URL, whose query string may carry a key.
		x.log.Warn("executor unreachable; retrying", "environment", e.cfg.ID, "error", mcpconn.RedactURLs(err.Error()), "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// adopt installs the first connected client of e and follows its events.
func (x *executors) adopt(e *executorEnv, c *client.Client) {
	x.mu.Lock()
	if x.envs[e.cfg.ID] != e { // removed meanwhile
		x.mu.Unlock()
		_ = c.Close()
		return
	}
	e.client = c
	x.mu.Unlock()
	e.unsub = c.Subscribe(func(ev client.Event) { x.update(e, ev.State == client.StateConnected, ev.Capabilities, ev.Servers) })
	x.update(e, c.State() == client.StateConnected, c.Capabilities(), c.Servers())
}

// update records what the executor announces now and tells the threads.
func (x *executors) update(e *executorEnv, connected bool, caps protocol.Capabilities, announced map[string]json.RawMessage) {
	var servers []config.ServerDecl
	if connected {
		var errs []error
		servers, errs = roots.ParseExecutorServers(announced, "executor "+e.cfg.ID, e.cfg.ID)
		for _, err := range errs {
			x.log.Warn("executor declares an unusable MCP server", "environment", e.cfg.ID, "error", err)
		}
	}
	x.mu.Lock()
	reconnected := connected && !e.connected && e.everConnected
	if reconnected {
		e.reconnects++
	}
	e.everConnected = e.everConnected || connected
	e.connected = connected
	if connected {
		// Kept while disconnected, so that its servers are listed failed ("not
		// connected") rather than re-decided against no capabilities at all; a reconnect
		// replaces both with what the executor announces then.
		e.caps, e.servers = caps, servers
	}
	x.mu.Unlock()
	x.log.Info("executor state", "environment", e.cfg.ID, "connected", connected,
		"http_header_env_vars", caps.HTTPHeaderEnvVars, "processes", caps.Processes, "servers", len(servers))
	if reconnected && x.onReconnect != nil {
		x.onReconnect(e.cfg.ID)
	}
	if x.changed != nil {
		x.changed()
	}
}

// environments implements thread.Options.Executors.
func (x *executors) environments(home *config.Home) []thread.Environment {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []thread.Environment
	for _, c := range home.Environments.List {
		env := thread.Environment{ID: c.ID}
		if e := x.envs[c.ID]; e != nil {
			env.Connected, env.HTTPHeaderEnvVars, env.Processes = e.connected, e.caps.HTTPHeaderEnvVars, e.caps.Processes
			env.Servers = e.servers
		}
		out = append(out, env)
	}
	return out
}

// views reports every environment for Host.Status, by id.
func (x *executors) views() []ExecutorStatus {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]ExecutorStatus, 0, len(x.envs))
	for _, e := range x.envs {
		addr := e.cfg.Program // its arguments may carry anything: the program only
		if e.cfg.URL != "" {
			addr = mcpconn.RedactURL(e.cfg.URL)
		}
		out = append(out, ExecutorStatus{ID: e.cfg.ID, Address: addr, Connected: e.connected, Dialled: e.client != nil,
			HTTPHeaderEnvVars: e.caps.HTTPHeaderEnvVars, Processes: e.caps.Processes,
			Servers: len(e.servers), Reconnects: e.reconnects})
	}
	slices.SortFunc(out, func(a, b ExecutorStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ErrExecutorUnavailable: the environment is unknown, not connected yet, or closed.
var ErrExecutorUnavailable = errors.New("executor not connected")

func (x *executors) client(env string) (*client.Client, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.envs[env]
	switch {
	case e == nil:
		return nil, fmt.Errorf("environment %q: %w (not in environments.toml)", env, ErrExecutorUnavailable)
	case e.client == nil || !e.connected:
		return nil, fmt.Errorf("environment %q: %w", env, ErrExecutorUnavailable)
	}
	return e.client, nil
}

// executor implements mcpconn.Options.Executor.
func (x *executors) executor(env string) (mcpconn.Executor, error) {
	c, err := x.client(env)
	if err != nil {
		return nil, err
	}
	return executorReach{c}, nil
}

// files implements thread.Options.ExecutorFiles: reads through fs/read, each bounded by a
// timeout of its own (a root is read while a thread is planned).
func (x *executors) files(env, root string) roots.ReadFunc {
	return func(rel string, max int64) ([]byte, error) {
		c, err := x.client(env)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(x.ctx, 10*time.Second)
		defer cancel()
		data, err := c.ReadFile(ctx, root, rel, max)
		if errors.Is(err, client.ErrNotFound) {
			return nil, fmt.Errorf("%s in executor %q: %w", rel, env, fs.ErrNotExist)
		}
		return data, err
	}
}

func (x *executors) closeEnv(e *executorEnv) {
	e.stop()
	x.mu.Lock()
	c, unsub := e.client, e.unsub
	x.mu.Unlock()
	if unsub != nil {
		unsub()
	}
	if c != nil {
		_ = c.Close()
	}
}

// close closes every client and waits for the dial loops.
func (x *executors) close() {
	x.cancel()
	x.mu.Lock()
	envs := make([]*executorEnv, 0, len(x.envs))
	for _, e := range x.envs {
		envs = append(envs, e)
	}
	x.envs = map[string]*executorEnv{}
	x.mu.Unlock()
	for _, e := range envs {
		x.closeEnv(e)
	}
	x.wg.Wait()
}

// executorReach adapts a client to mcpconn.Executor.
type executorReach struct{ c *client.Client }

func (r executorReach) RoundTripper(refs []mcpconn.HeaderRef) http.RoundTripper {
	headers := make([]protocol.Header, len(refs))
	for i, h := range refs {
		headers[i] = protocol.Header{Name: h.Name, ValueEnvVar: h.EnvVar, ValuePrefix: h.Prefix}
	}
	return r.c.RoundTripper(headers)
}

func (r executorReach) CommandTransport(spec *mcpconn.Spec) mcp.Transport {
	env := map[string]string{}
	for _, kv := range spec.Env { // literal env only: the executor adds its own base
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return r.c.CommandTransport(protocol.ProcessStartParams{
		Argv:    append([]string{spec.Command}, spec.Args...),
		Env:     env,
		EnvVars: spec.EnvVarRefs,
		Cwd:     spec.Cwd,
	})
}
