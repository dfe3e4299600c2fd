package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/logging"
	"github.com/warden-mcp/warden/host/roots"
	"github.com/warden-mcp/warden/host/thread"
)

// The demo walks through the embedded default: the example plugins under examples/plugins,
// the example MCP server (stdio and streamable HTTP, the latter behind a bearer token), and
// a home written for the run. Everything runs locally; nothing is left behind.
func runDemo(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "demo", "[--examples DIR] [--bin DIR] [--keep]")
	examples := fl.String("examples", "", "the examples directory (default: ../examples beside the warden binary, else ./examples)")
	binDir := fl.String("bin", "", "where warden-example-mcp is (default: beside the warden binary)")
	keep := fl.Bool("keep", false, "keep the demo home (config.toml, decision log) instead of deleting it")
	if _, err := parse(fl, args); err != nil {
		return err
	}
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the demo spawns itself as an executor and needs its own path: %w", err)
	}
	if *examples == "" {
		*examples = firstDir(filepath.Join(filepath.Dir(exe), "..", "examples"), "examples")
	}
	if *binDir == "" {
		*binDir = filepath.Dir(exe)
	}
	pluginsDir, err := filepath.Abs(filepath.Join(*examples, "plugins"))
	if err != nil {
		return err
	}
	server := filepath.Join(*binDir, "warden-example-mcp")
	if _, err := os.Stat(server); err != nil {
		if server, err = exec.LookPath("warden-example-mcp"); err != nil {
			return fmt.Errorf("the demo needs the example MCP server: run `make build` (or pass --bin DIR): %w", err)
		}
	}
	// The example plugins declare the example server by its bare name, as a plugin author
	// would; children of this process find it on PATH.
	os.Setenv("PATH", filepath.Dir(server)+string(os.PathListSeparator)+os.Getenv("PATH"))

	// Everything the demo prints is kept, to check at the end that no secret reached it.
	var printed strings.Builder
	w := io.MultiWriter(g.io.Stdout, &printed)
	fmt.Fprintln(w, "warden demo: the embedded default, end to end")
	fmt.Fprintln(w)

	// 1. The plugins, as `warden plugins list` shows them.
	set := roots.Scan([]string{pluginsDir}, roots.Options{})
	section(w, "Plugins in "+pluginsDir)
	var views []pluginView
	for _, r := range set.Roots() {
		views = append(views, viewRoot(ctx, g, r))
	}
	printPluginTable(w, views)
	for _, v := range views {
		if v.Status != string(roots.StatusOK) {
			return fmt.Errorf("example plugin %s is not ok (%s): run `make build` to build its policy", v.ID, v.Error)
		}
	}

	// 2. A home for this run: two host-config servers (stdio, and HTTP behind a bearer
	// token the host resolves from its environment), the example plugins dir, and an
	// executor the host spawns over stdio, whose own home declares a third server behind
	// a token only the executor's environment holds.
	home, err := os.MkdirTemp("", "warden-demo-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(home)
	}
	token := randomHex(16)
	httpServer, err := startExampleHTTP(ctx, server, "web", token)
	if err != nil {
		return err
	}
	defer httpServer.stop()
	execToken := randomHex(16)
	execServer, err := startExampleHTTP(ctx, server, demoExecServer, execToken)
	if err != nil {
		return err
	}
	defer execServer.stop()
	decisions := filepath.Join(home, "decisions.jsonl")
	cfg := fmt.Sprintf(`# Written by warden demo.
[plugins]
dirs = [%q]

[decision_log]
path = %q

[mcp_servers.docs]                 # stdio, on the host
command = %q
args = ["--name", "docs", "--tools", "echo,add,env"]
env = { MODE = "demo" }

[mcp_servers.web]                  # streamable HTTP behind a bearer token
url = %q
bearer_token_env_var = "WARDEN_DEMO_TOKEN"
enabled_tools = ["echo", "header_digest"]
`, pluginsDir, decisions, server, httpServer.url)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	section(w, "Home "+home)
	fmt.Fprintln(w, indent(cfg))
	execHome, envTOML, err := writeDemoExecutor(home, exe, execServer.url, execToken)
	if err != nil {
		return err
	}
	section(w, "Executor home "+execHome)
	fmt.Fprintln(w, indent(demoExecConfig(execServer.url)))
	section(w, "environments.toml (the host spawns the executor: this binary, over stdio)")
	fmt.Fprintln(w, indent(strings.ReplaceAll(envTOML, execToken, "<random; only the executor's environment holds it>")))
	fmt.Fprintln(w)

	logger := g.log
	var logged syncBuffer
	if !g.logLevelSet {
		// The demo's output is the story; logs only interrupt it unless asked for.
		logger = logging.New(logging.Options{JSON: g.logJSON, Level: "warn", Output: io.MultiWriter(g.io.Stderr, &logged)})
	}
	h, err := host.New(ctx, host.Options{
		Home:           home,
		Logger:         logger.Named("host"),
		PolicyCacheDir: policyCacheDir(),
		LookupEnv: func(name string) (string, bool) {
			switch name {
			case "WARDEN_DEMO_TOKEN":
				return token, true
			case demoExecTokenVar:
				// Only the executor resolves this one: the host has no value for it, so a
				// call that authenticates went through the executor.
				return "", false
			}
			return os.LookupEnv(name)
		},
	})
	if err != nil {
		return err
	}
	defer h.Close()
	mgr := h.Threads()
	// The executor connects in the background; its servers join a thread's plan when it
	// does, and the thread reports that as events. changed wakes the wait below.
	changed := make(chan struct{}, 1)
	unsubscribe := mgr.Subscribe(func(thread.Event) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()

	// 3. Two threads: one selects two plugins, the other is a reviewer selecting a third.
	type threadSpec struct {
		title string
		p     thread.StartParams
	}
	specs := []threadSpec{
		{"interactive thread selecting allow-hosts@1 and block-tool@1", thread.StartParams{
			Kind: thread.KindInteractive,
			SelectedRoots: []thread.SelectedRoot{
				{ID: "allow-hosts@1"}, {ID: "block-tool@1"},
			}}},
		{"reviewer thread selecting reviewer-no-stdio@1", thread.StartParams{
			Kind:          thread.KindReviewer,
			SelectedRoots: []thread.SelectedRoot{{ID: "reviewer-no-stdio@1"}},
		}},
	}
	var threads []*thread.Thread
	var checks demoChecks
	var threadStatus []thread.ServerStatus // thread 1's
	hostServers := map[string]bool{}
	for _, d := range h.Config().Config.Servers {
		hostServers[d.Name] = true
	}
	// A status names a server's plugin but not its other origins: a server no plugin
	// declared is the host's own when config.toml declares it, else an executor's.
	owner := func(s thread.ServerStatus) string {
		switch {
		case s.PluginID != "":
			return s.PluginID
		case hostServers[s.Name]:
			return "host-config"
		}
		return "executor-config"
	}
	for i, s := range specs {
		t, err := mgr.Start(ctx, s.p)
		if err != nil {
			return fmt.Errorf("starting the %s: %w", s.title, err)
		}
		threads = append(threads, t)
		var statuses []thread.ServerStatus
		if i == 0 {
			// Thread 1 is shown once the executor's server has joined it (Status waits
			// for it to finish starting; the checks below say if it failed).
			statuses, err = waitStatus(ctx, t, changed, func(st []thread.ServerStatus) bool {
				return slices.ContainsFunc(st, func(s thread.ServerStatus) bool { return s.Name == demoExecServer })
			})
		} else {
			statuses, err = t.Status(ctx, "", true)
		}
		if err != nil {
			return fmt.Errorf("status of the %s: %w", s.title, err)
		}
		section(w, fmt.Sprintf("Thread %d (%s): %s", i+1, t.ID(), s.title))
		printStatuses(w, statuses, owner)
		if i == 0 {
			checks.status(statuses, "local-echo", thread.StateReady, "")
			checks.status(statuses, "toolbox", thread.StateReady, "")
			checks.status(statuses, "rogue", thread.StateDisabled, "host mcp.evil.test is not in the allow list")
			checks.status(statuses, "web", thread.StateReady, "")
			checks.status(statuses, demoExecServer, thread.StateReady, "")
			threadStatus = statuses
		} else {
			checks.absent(statuses, "notes", "the reviewer policy hides it")
			checks.absent(statuses, "local-echo", "thread 2 did not select allow-hosts@1")
			checks.absent(statuses, demoExecServer, "reviewer threads do not discover executor-config servers")
		}
	}
	fmt.Fprintln(w, "  Thread 2 sees none of thread 1's plugin servers (plugin isolation); its")
	fmt.Fprintln(w, "  reviewer policy hid the stdio server `notes`, so it is not listed at all,")
	fmt.Fprintf(w, "  and a reviewer does not discover the executor's own server `%s`.\n", demoExecServer)
	fmt.Fprintln(w)

	// 4. The executor's server: reached through the executor, its token resolved there.
	demoExecutor(ctx, w, threads[0], threadStatus, owner, decisions, execToken, &checks)

	// 5. Tool calls through the host, each through the tool_call hook.
	section(w, "Tool calls in thread 1")
	calls := []struct{ server, tool, args string }{
		{"docs", "echo", `{"text":"hello from the demo"}`},
		{"web", "header_digest", `{"name":"Authorization"}`},
		{"local-echo", "echo", `{"text":"a plugin's own server"}`},
		{"docs", "env", `{"name":"HOME"}`},
		{"docs", "env", `{"name":"WARDEN_DEMO_TOKEN"}`},
		{"toolbox", "fail", `{"message":"should not run"}`},
		{"rogue", "echo", `{}`},
	}
	for _, c := range calls {
		res, err := threads[0].CallTool(ctx, c.server, c.tool, json.RawMessage(c.args), "warden-demo")
		fmt.Fprintf(w, "  %s__%s %s\n    -> %s\n", c.server, c.tool, c.args, describeResult(res, err))
		if c.tool == "header_digest" && res != nil {
			sum := sha256.Sum256([]byte("Bearer " + token))
			fmt.Fprintf(w, "    (the host resolved $WARDEN_DEMO_TOKEN and sent it; digest matches the token: %v)\n",
				strings.Contains(describeResult(res, err), hex.EncodeToString(sum[:])))
		}
	}
	fmt.Fprintln(w)

	// 6. The same thread through the MCP front door, as any MCP client sees it.
	if err := demoFrontDoor(ctx, w, h, threads[0], &checks); err != nil {
		return fmt.Errorf("front door: %w", err)
	}

	// 7. The decision log: every policy decision, with reasons and latency.
	section(w, "Decision log ("+decisions+")")
	if err := printDecisions(w, decisions); err != nil {
		return err
	}
	for _, t := range threads {
		t.Close()
	}
	// The executor's token was handed to its environment only: nothing the demo printed or
	// logged, nor the decision log, holds it.
	dlog, err := os.ReadFile(decisions)
	if err != nil {
		return err
	}
	for what, text := range map[string]string{"the demo's output": printed.String(), "the host log": logged.String(), "the decision log": string(dlog)} {
		if strings.Contains(text, execToken) {
			checks = append(checks, fmt.Sprintf("%s holds the executor's token", what))
		}
	}
	if len(checks) > 0 {
		for _, c := range checks {
			fmt.Fprintln(w, "demo check failed:", c)
		}
		return fmt.Errorf("%d demo checks failed (stale example policies? run `make build`)", len(checks))
	}
	fmt.Fprintf(w, "demo finished in %s; every check of the walk-through held\n", time.Since(start).Round(10*time.Millisecond))
	return nil
}

// demoChecks collects what the walk-through shows but did not happen, so `make demo`
// never reports a success it did not see.
type demoChecks []string

func (c *demoChecks) status(statuses []thread.ServerStatus, name string, want thread.StartupState, reason string) {
	for _, s := range statuses {
		if s.Name != name {
			continue
		}
		if s.Status != want || !strings.Contains(s.ToolsError, reason) {
			*c = append(*c, fmt.Sprintf("server %s is %s (%s), want %s %s", name, s.Status, s.ToolsError, want, reason))
		}
		return
	}
	*c = append(*c, fmt.Sprintf("server %s is not listed", name))
}

func (c *demoChecks) absent(statuses []thread.ServerStatus, name, why string) {
	for _, s := range statuses {
		if s.Name == name {
			*c = append(*c, fmt.Sprintf("server %s is listed (%s), but %s", name, s.Status, why))
		}
	}
}

func section(w io.Writer, title string) {
	fmt.Fprintf(w, "== %s\n", title)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func firstDir(cands ...string) string {
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
	}
	return cands[len(cands)-1]
}

func policyCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "warden", "wazero")
	}
	return "-"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func printStatuses(w io.Writer, statuses []thread.ServerStatus, owner func(thread.ServerStatus) string) {
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].Name < statuses[j].Name })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SERVER\tOWNER\tSTATUS\tTOOLS / REASON")
	for _, s := range statuses {
		detail := s.ToolsError
		if s.Status == thread.StateReady {
			var names []string
			for _, t := range s.Tools {
				names = append(names, t.Name)
			}
			detail = strings.Join(names, ", ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Name, owner(s), s.Status, detail)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func describeResult(res *mcp.CallToolResult, err error) string {
	var denied *thread.DeniedError
	var unavailable *thread.UnavailableError
	switch {
	case errors.As(err, &denied):
		return "denied by policy: " + err.Error()
	case errors.As(err, &unavailable):
		return "refused: " + err.Error()
	case err != nil:
		return "error: " + err.Error()
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	out := strings.Join(parts, " ")
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		out += "  structured: " + string(b)
	}
	if res.IsError {
		return "tool error: " + out
	}
	return out
}

func printDecisions(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  THREAD\tPOLICY\tHOOK\tLATENCY\tNOT EXPOSED / DENIED")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		var d struct {
			Thread    string            `json:"thread"`
			Plugin    string            `json:"plugin"`
			Hook      string            `json:"hook"`
			Outcome   map[string]string `json:"outcome"`
			Reasons   map[string]string `json:"reasons"`
			Error     string            `json:"error"`
			LatencyUS float64           `json:"latency_us"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return fmt.Errorf("decision log line %d: %w", lines+1, err)
		}
		lines++
		var notable []string
		for name, action := range d.Outcome {
			if action != "expose" && action != "allow" && action != "local" && action != "unspecified" {
				notable = append(notable, fmt.Sprintf("%s=%s (%s)", name, action, d.Reasons[name]))
			}
		}
		sort.Strings(notable)
		if d.Error != "" {
			notable = append(notable, "error: "+d.Error)
		}
		summary := strings.Join(notable, "; ")
		if summary == "" {
			summary = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.0fµs\t%s\n", shortID(d.Thread), d.Plugin, d.Hook, d.LatencyUS, summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "  (%d decisions)\n\n", lines)
	return sc.Err()
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12] + "…"
	}
	return id
}

// exampleHTTP is the example MCP server serving streamable HTTP on loopback.
type exampleHTTP struct {
	cmd *exec.Cmd
	url string
}

func startExampleHTTP(ctx context.Context, bin, name, token string) (*exampleHTTP, error) {
	cmd := exec.CommandContext(ctx, bin, "--http", "127.0.0.1:0", "--name", name, "--require-bearer-env", "EXAMPLE_TOKEN")
	cmd.Env = append(os.Environ(), "EXAMPLE_TOKEN="+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the example HTTP server %s: %w", name, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the example HTTP server %s did not report its URL: %w", name, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return &exampleHTTP{cmd: cmd, url: url}, nil
}

func (e *exampleHTTP) stop() {
	_ = e.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = e.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = e.cmd.Process.Kill()
		<-done
	}
}

// demoFrontDoor serves thread th over streamable HTTP on loopback, behind a generated
// bearer token as `warden serve` does, and uses it with the go-sdk MCP client: a client
// without the token is refused, the tool list is exactly what policy exposes, names are
// server__tool.
func demoFrontDoor(ctx context.Context, w io.Writer, h *host.Host, th *thread.Thread, checks *demoChecks) error {
	fd := frontdoor.New(h.Threads(), frontdoor.Options{Version: Version})
	defer fd.Close()
	token, err := netguard.GenerateToken()
	if err != nil {
		return err
	}
	ln, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{Token: token})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ln.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	url := ln.ThreadURL(th.ID())
	section(w, "Thread 1 through the MCP front door: "+url)
	status, err := demoPostStatus(ctx, url)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  a client without the bearer token -> HTTP %d\n", status)
	if status != http.StatusUnauthorized {
		*checks = append(*checks, fmt.Sprintf("the front door answered a client without the token with HTTP %d, want 401", status))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "warden-demo", Version: Version}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{
		Transport: bearerTransport{token: token, base: http.DefaultTransport},
	}}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "  tools/list (%d): %s\n", len(names), strings.Join(names, ", "))
	for _, want := range []string{"docs__echo", "local-echo__echo", "toolbox__echo"} {
		if !slices.Contains(names, want) {
			*checks = append(*checks, "front door tools/list lacks "+want)
		}
	}
	if slices.Contains(names, "toolbox__fail") {
		*checks = append(*checks, "front door lists toolbox__fail, which block-tool@1 denies")
	}
	for _, c := range []struct{ name, args string }{
		{"docs__add", `{"a":2,"b":40}`},
		{"toolbox__fail", `{"message":"x"}`},
	} {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.args), &args)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: args})
		fmt.Fprintf(w, "  tools/call %s %s\n    -> %s\n", c.name, c.args, describeResult(res, err))
	}
	fmt.Fprintln(w)
	return nil
}

// demoPostStatus posts an MCP initialize to url without credentials and returns the status.
func demoPostStatus(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("front door without a token: %w", err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// bearerTransport adds "Authorization: Bearer token" to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}

const (
	// demoExecServer is the server the demo's executor declares in its own config.toml.
	demoExecServer = "remote-web"
	// demoExecTokenVar holds that server's bearer token in the executor's environment only.
	demoExecTokenVar = "WARDEN_DEMO_EXECUTOR_TOKEN"
	// demoExecID is the executor's id in environments.toml.
	demoExecID = "exec-1"
	// demoWait bounds waiting for the executor's server to join a thread; a failure bound.
	demoWait = 30 * time.Second
)

// demoExecConfig is the executor's config.toml: one HTTP server whose token variable the
// executor resolves from its own environment.
func demoExecConfig(url string) string {
	return fmt.Sprintf(`# Written by warden demo: the executor's own home.
[mcp_servers.%s]            # announced by the executor to the host
url = %q
bearer_token_env_var = %q
enabled_tools = ["echo", "header_digest"]
`, demoExecServer, url, demoExecTokenVar)
}

// writeDemoExecutor writes the executor's home under home and the host's environments.toml
// spawning exe as that executor over stdio (which needs no listener token); the token is
// put in the executor's environment only. default stays "local": the other servers of the
// demo run where they did without an executor.
func writeDemoExecutor(home, exe, url, token string) (execHome, envTOML string, err error) {
	execHome = filepath.Join(home, "executor")
	if err := os.Mkdir(execHome, 0o700); err != nil {
		return "", "", fmt.Errorf("demo executor home: %w", err)
	}
	if err := os.WriteFile(filepath.Join(execHome, "config.toml"), []byte(demoExecConfig(url)), 0o600); err != nil {
		return "", "", fmt.Errorf("demo executor home: %w", err)
	}
	envTOML = fmt.Sprintf(`# Written by warden demo.
default = "local"

[[environments]]
id = %q
program = %q
args = ["executor", "--listen", "stdio"]
[environments.env]
WARDEN_HOME = %q
%s = %q
`, demoExecID, exe, execHome, demoExecTokenVar, token)
	if err := os.WriteFile(filepath.Join(home, "environments.toml"), []byte(envTOML), 0o600); err != nil {
		return "", "", fmt.Errorf("demo environments.toml: %w", err)
	}
	return execHome, envTOML, nil
}

// waitStatus reads t's status until cond holds, waking on the Manager's events (changed),
// for at most demoWait.
func waitStatus(ctx context.Context, t *thread.Thread, changed <-chan struct{}, cond func([]thread.ServerStatus) bool) ([]thread.ServerStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, demoWait)
	defer cancel()
	for {
		st, err := t.Status(ctx, "", true)
		if err == nil && cond(st) {
			return st, nil
		}
		if err == nil {
			// An event after this read re-arms changed, so none is missed.
			select {
			case <-changed:
				continue
			case <-ctx.Done():
			}
		}
		if ctx.Err() == nil {
			return nil, err
		}
		return nil, fmt.Errorf("thread %s: the executor's server %s did not join within %s (the executor did not connect?): %w",
			t.ID(), demoExecServer, demoWait, context.Cause(ctx))
	}
}

// demoExecutor shows the executor's server in thread th: its owner and route, a tool call
// through it, and the credentials decision that let its token resolve in the executor.
func demoExecutor(ctx context.Context, w io.Writer, th *thread.Thread, statuses []thread.ServerStatus, owner func(thread.ServerStatus) string, decisions, token string, checks *demoChecks) {
	section(w, fmt.Sprintf("Executor %s: the server %s, declared in the executor's home", demoExecID, demoExecServer))
	route := "?"
	line, reason, err := executorDecision(decisions, th.ID(), demoExecID)
	switch {
	case err != nil:
		*checks = append(*checks, "reading the credentials decision: "+err.Error())
	case line == "":
		*checks = append(*checks, fmt.Sprintf("thread 1's decision log has no credentials decision \"executor\" for %s", demoExecID))
	default:
		route = demoExecID
	}
	for _, s := range statuses {
		if s.Name == demoExecServer {
			if o := owner(s); o != "executor-config" {
				*checks = append(*checks, fmt.Sprintf("%s is owned by %s, want executor-config", demoExecServer, o))
			}
			var names []string
			for _, t := range s.Tools {
				names = append(names, t.Name)
			}
			fmt.Fprintf(w, "  %s: owner %s, routed to %s, %s, tools %s\n", s.Name, owner(s), route, s.Status, strings.Join(names, ", "))
		}
	}
	res, err := th.CallTool(ctx, demoExecServer, "header_digest", json.RawMessage(`{"name":"Authorization"}`), "warden-demo")
	got := describeResult(res, err)
	fmt.Fprintf(w, "  %s__header_digest {\"name\":\"Authorization\"}\n    -> %s\n", demoExecServer, got)
	sum := sha256.Sum256([]byte("Bearer " + token))
	match := err == nil && !res.IsError && strings.Contains(got, hex.EncodeToString(sum[:]))
	fmt.Fprintf(w, "    (the host has no $%s; the executor resolved it in its own\n", demoExecTokenVar)
	fmt.Fprintf(w, "     environment and sent it; digest matches the executor's token: %v)\n", match)
	if !match {
		*checks = append(*checks, fmt.Sprintf("%s/header_digest did not show the executor's token reaching the server: %s", demoExecServer, got))
	}
	if line != "" {
		fmt.Fprintf(w, "  credentials decision for $%s: %s\n", demoExecTokenVar, reason)
		fmt.Fprintln(w, "  its decision-log line:")
		fmt.Fprintln(w, indent("  "+line))
	}
	fmt.Fprintln(w)
}

// executorDecision finds thread's credentials-hook line in the decision log that resolves
// a credential in executor env ("executor": owned there, resolved there by name). A line
// names credentials by index, not their server; in the demo only the executor's server
// has a credential owned by an executor.
func executorDecision(path, threadID, env string) (line, reason string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	want := fmt.Sprintf("owned by executor %q; resolved there by name", env)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var d struct {
			Thread  string            `json:"thread"`
			Hook    string            `json:"hook"`
			Outcome map[string]string `json:"outcome"`
			Reasons map[string]string `json:"reasons"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return "", "", fmt.Errorf("decision log %s: %w", path, err)
		}
		if d.Thread != threadID || d.Hook != "credentials" {
			continue
		}
		for i, action := range d.Outcome {
			if action == "executor" && d.Reasons[i] == want {
				return sc.Text(), fmt.Sprintf("%s=%s (%s)", i, action, want), nil
			}
		}
	}
	return "", "", sc.Err()
}

// syncBuffer keeps what is written to it; loggers on several goroutines share it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
