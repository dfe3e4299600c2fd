package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/thread"
)

// conformanceServerPkg is the go-sdk's conformance everything-server, built from the module
// cache at the go-sdk version go.mod requires.
const conformanceServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// conformanceSpec is the protocol revision the suite's scenarios are filtered by (what the
// go-sdk's own scripts/server-conformance.sh runs).
const conformanceSpec = "2025-11-25"

// TestConformanceThroughWarden runs the MCP conformance suite's server scenarios against
// the go-sdk's conformance everything-server directly and then through a single-server
// warden thread with bare tool names, both over streamable HTTP: every scenario that
// passes directly must pass through warden. The direct run must pass completely (it is
// the reference; a failure there is a broken harness, not a finding about warden).
func TestConformanceThroughWarden(t *testing.T) {
	npm := gatewayNPM(t)
	bin, err := testbuild.Binary(conformanceServerPkg, "conformance-everything-server")
	if err != nil {
		t.Fatalf("building %s: %v", conformanceServerPkg, err)
	}
	upstream := startConformanceServer(t, bin)

	direct := runConformance(t, npm, upstream)
	if len(direct) == 0 {
		t.Fatal("the direct run reported no scenario")
	}
	passed, checks := 0, 0
	for _, sc := range slices.Sorted(maps.Keys(direct)) {
		r := direct[sc]
		checks += r.passed
		if !r.ok() {
			t.Errorf("direct: scenario %s fails: %s", sc, r.failures())
			continue
		}
		passed++
	}
	t.Logf("direct: %d/%d scenarios, %d checks pass", passed, len(direct), checks)
	if t.Failed() {
		t.FailNow()
	}

	h := newHost(t, newHome(t, fmt.Sprintf("[mcp_servers.conformance]\nurl = %q\nrequired = true\n", upstream)))
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	st, err := th.Status(testCtx(t), "conformance", false)
	if err != nil || len(st) != 1 || st[0].Status != thread.StateReady {
		t.Fatalf("the conformance server is not ready in the thread: %+v, %v", st, err)
	}
	front := frontDoorListen(t, h, frontdoor.Options{ToolNames: frontdoor.ToolNamesBare}) + frontdoor.ThreadPath(th.ID())

	through := runConformance(t, npm, front)
	var fails, table []string
	okThrough, checksThrough := 0, 0
	for _, sc := range slices.Sorted(maps.Keys(direct)) {
		r, ran := through[sc]
		verdict := "pass"
		switch {
		case !ran:
			verdict = "FAIL (no result)"
			fails = append(fails, fmt.Sprintf("%s: no result through warden (the suite did not run it, or it did not finish)", sc))
		case !r.ok():
			verdict = "FAIL"
			fails = append(fails, fmt.Sprintf("%s: %s", sc, r.failures()))
		default:
			okThrough++
		}
		checksThrough += r.passed
		table = append(table, fmt.Sprintf("%-32s direct %d/%d  warden %d/%d  %s", sc, direct[sc].passed, len(direct[sc].checks), r.passed, len(r.checks), verdict))
	}
	t.Logf("checks passed per scenario (passed/checks):\n  %s", strings.Join(table, "\n  "))
	t.Logf("through warden: %d/%d scenarios, %d/%d checks pass", okThrough, len(direct), checksThrough, checks)
	if len(fails) > 0 {
		t.Errorf("%d of %d scenarios that pass directly fail through warden:\n  %s", len(fails), len(direct), strings.Join(fails, "\n  "))
	}
}

// conformanceResult is one scenario's checks (its checks.json).
type conformanceResult struct {
	checks []conformanceCheck
	passed int // checks with status SUCCESS
}

// conformanceCheck is an entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, ...
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// ok is the suite's own verdict (no check FAILURE), and at least one check passed, so that
// a scenario that checked nothing is not counted as passing.
func (r conformanceResult) ok() bool {
	return r.passed > 0 && !slices.ContainsFunc(r.checks, func(c conformanceCheck) bool { return c.Status == "FAILURE" })
}

// failures describes the checks that did not pass, with the suite's messages.
func (r conformanceResult) failures() string {
	var out []string
	for _, c := range r.checks {
		if c.Status != "FAILURE" {
			continue
		}
		msg := c.ErrorMessage
		if len(c.Details) > 0 && string(c.Details) != "null" {
			msg += " details: " + shortJSON(c.Details)
		}
		out = append(out, fmt.Sprintf("[%s] %s", c.ID, msg))
	}
	if len(out) == 0 {
		return fmt.Sprintf("no check passed (%d checks)", len(r.checks))
	}
	return strings.Join(out, "; ")
}

func shortJSON(b json.RawMessage) string {
	s := string(b)
	if len(s) > 800 {
		s = s[:800] + "…"
	}
	return s
}

// resultDir matches the directory the suite writes a server scenario's checks.json into:
// server-SCENARIO-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// conformanceTimeout bounds one run of the whole suite (a failure bound; a run takes a few
// seconds).
const conformanceTimeout = 4 * time.Minute

// runConformance runs every server scenario of the suite (for conformanceSpec) against the
// MCP endpoint url in one invocation and returns the results by scenario. The suite's exit
// status is not used (it is non-zero when a scenario fails); its output is logged when the
// test fails.
func runConformance(t *testing.T, npm *npmProject, url string) map[string]conformanceResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), conformanceTimeout)
	defer cancel()
	outDir := t.TempDir()
	cmd := npm.command(t, ctx, "conformance", "server", "--url", url, "--spec-version", conformanceSpec, "--output-dir", outDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("conformance server --url %s: %v in %s", url, runErr, time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Errorf("the conformance suite against %s did not finish within %s; reporting the scenarios it finished", url, conformanceTimeout)
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		t.Fatalf("running the conformance suite: %v\n%s", runErr, out.String())
	}
	des, err := os.ReadDir(outDir)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]conformanceResult{}
	for _, de := range des {
		m := resultDir.FindStringSubmatch(de.Name())
		if m == nil || !de.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(outDir, de.Name(), "checks.json"))
		if err != nil {
			t.Errorf("scenario %s: %v", m[1], err)
			continue
		}
		var r conformanceResult
		if err := json.Unmarshal(data, &r.checks); err != nil {
			t.Errorf("scenario %s: checks.json: %v", m[1], err)
			continue
		}
		for _, c := range r.checks {
			if c.Status == "SUCCESS" {
				r.passed++
			}
		}
		results[m[1]] = r
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(results)), func(r conformanceResult) bool { return !r.ok() }) || ctx.Err() != nil {
		t.Logf("conformance output (%s):\n%s", url, out.String())
	}
	return results
}

// startConformanceServer runs the go-sdk conformance everything-server (stateful streamable
// HTTP, as the go-sdk's scripts/server-conformance.sh does) on a free loopback port until
// the test ends, and returns its MCP endpoint once it accepts connections.
func startConformanceServer(t *testing.T, bin string) string {
	t.Helper()
	// The server binds the address it is given and prints nothing after binding, so the
	// port is chosen here and the server's readiness is its accepting a connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "-http="+addr, "-stateless=false")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("conformance everything-server log:\n%s", logs.String())
		}
	})
	ctx := testCtx(t)
	retry := time.NewTicker(20 * time.Millisecond)
	defer retry.Stop()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return "http://" + addr + "/mcp"
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the conformance everything-server exited before it listened on %s: %v\n%s", addr, err, logs.String())
		case <-ctx.Done():
			t.Fatalf("the conformance everything-server never listened on %s: %v", addr, err)
		case <-retry.C:
		}
	}
}

// frontDoorListen serves h's threads through a front door with options o on a real
// loopback listener (frontdoor.Listen, no token: loopback only) and returns its base URL.
// Cleanup stops the listener, then the front door.
func frontDoorListen(t *testing.T, h *host.Host, o frontdoor.Options) string {
	t.Helper()
	logs := &syncBuffer{}
	o.Logger = hclog.New(&hclog.LoggerOptions{Name: "frontdoor", Level: logLevel(t), Output: logs})
	fd := frontdoor.New(h.Threads(), o)
	l, err := fd.Listen("127.0.0.1:0", frontdoor.ListenOptions{NoAuth: true})
	if err != nil {
		t.Fatalf("frontdoor.Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("front door Serve: %v", err)
		}
		if err := fd.Close(); err != nil {
			t.Errorf("FrontDoor.Close: %v", err)
		}
		if t.Failed() {
			t.Logf("front door log:\n%s", logs.String())
		}
	})
	return l.URL()
}

// TestInspectorCLIThroughWarden drives server-everything (stdio, from testdata/npm) behind a
// single-server warden thread with bare names, served by the front door over streamable
// HTTP, with the MCP Inspector's v2 CLI (`inspector --cli URL --transport http --method
// M`): it lists tools, lists and reads resources and resource templates, lists and gets
// prompts. What the Inspector sees through warden is compared with what a go-sdk client
// sees talking to the same server directly (the lists do not depend on the client's
// capabilities). The CLI has no completion method, so the package's connection CLI, mcpdo,
// completes a prompt argument through warden and straight from server-everything (stdio).
func TestInspectorCLIThroughWarden(t *testing.T) {
	npm := gatewayNPM(t)
	script := npm.file(t, everythingPkg, "dist/index.js")
	direct := everythingDirect(t, npm, script)

	h := newHost(t, newHome(t, serverTOML("everything", npm.node, []string{script, "stdio"},
		"required = true\nstartup_timeout_sec = 120\ntool_timeout_sec = 120")))
	th, err := h.Threads().Start(testCtx(t), thread.StartParams{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	if st, err := th.Status(testCtx(t), "everything", false); err != nil || len(st) != 1 || st[0].Status != thread.StateReady {
		t.Fatalf("server-everything is not ready in the thread: %+v, %v", st, err)
	}
	url := frontDoorListen(t, h, frontdoor.Options{ToolNames: frontdoor.ToolNamesBare}) + frontdoor.ThreadPath(th.ID())

	inspect := func(t *testing.T, out any, args ...string) {
		t.Helper()
		inspectorCLI(t, npm, url, out, args...)
	}
	t.Run("tools/list", func(t *testing.T) {
		var res struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		inspect(t, &res, "--method", "tools/list")
		var got []string
		for _, tl := range res.Tools {
			got = append(got, tl.Name)
		}
		// Bare names: the thread has one server, so it looks exactly like that server.
		for _, want := range []string{"echo", "get-sum", "trigger-long-running-operation"} {
			if !slices.Contains(got, want) {
				t.Errorf("tools/list through warden = %q, want %q among them", got, want)
			}
		}
	})
	t.Run("resources/list", func(t *testing.T) {
		var res struct {
			Resources []struct{ URI, Name, MimeType string } `json:"resources"`
		}
		inspect(t, &res, "--method", "resources/list")
		var got []string
		for _, r := range res.Resources {
			// warden's own resources (warden://status: the thread's servers and why any is
			// missing) are not the server's.
			if !strings.HasPrefix(r.URI, "warden://") {
				got = append(got, r.URI+" "+r.Name+" "+r.MimeType)
			}
		}
		sameSet(t, "resources/list", got, direct.resources)
	})
	t.Run("resources/templates/list", func(t *testing.T) {
		var res struct {
			ResourceTemplates []struct{ URITemplate, Name string } `json:"resourceTemplates"`
		}
		inspect(t, &res, "--method", "resources/templates/list")
		var got []string
		for _, r := range res.ResourceTemplates {
			got = append(got, r.URITemplate+" "+r.Name)
		}
		sameSet(t, "resources/templates/list", got, direct.templates)
	})
	t.Run("resources/read", func(t *testing.T) {
		// A resource of a template (the dynamic text resource 1) and a listed static one.
		for _, uri := range []string{"demo://resource/dynamic/text/1", direct.firstResource} {
			var res struct {
				Contents []struct{ URI, MimeType, Text, Blob string } `json:"contents"`
			}
			inspect(t, &res, "--method", "resources/read", "--uri", uri)
			if len(res.Contents) != 1 || res.Contents[0].URI != uri || res.Contents[0].Text == "" {
				t.Errorf("resources/read %s through warden = %+v, want its one text content", uri, res.Contents)
			}
		}
	})
	t.Run("prompts/list", func(t *testing.T) {
		var res struct {
			Prompts []struct {
				Name      string
				Arguments []struct{ Name string } `json:"arguments"`
			} `json:"prompts"`
		}
		inspect(t, &res, "--method", "prompts/list")
		var got []string
		for _, p := range res.Prompts {
			args := []string{}
			for _, a := range p.Arguments {
				args = append(args, a.Name)
			}
			got = append(got, p.Name+"("+strings.Join(args, ",")+")")
		}
		sameSet(t, "prompts/list", got, direct.prompts)
	})
	t.Run("prompts/get", func(t *testing.T) {
		var res struct {
			Messages []struct {
				Role    string
				Content struct{ Type, Text string } `json:"content"`
			} `json:"messages"`
		}
		inspect(t, &res, "--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris")
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != direct.argsPrompt {
			t.Errorf("prompts/get args-prompt(city=Paris) through warden = %+v, want one user message %q", res.Messages, direct.argsPrompt)
		}
	})
	t.Run("completion/complete", func(t *testing.T) {
		m := newMcpdo(t, npm)
		var conn struct{ Name string }
		m.run(t, &conn, "connect", "@warden", "--transport", "http", url)
		m.run(t, &conn, "connect", "@direct", "--", npm.node, script, "stdio")
		complete := func(connection string) []string {
			var res struct {
				Values  []string `json:"values"`
				HasMore bool     `json:"hasMore"`
			}
			m.run(t, &res, "--connection", connection, "prompts/complete", "--complete-ref-type", "ref/prompt",
				"--complete-ref", "completable-prompt", "--complete-arg-name", "department", "--complete-arg-value", "E")
			return res.Values
		}
		through, straight := complete("warden"), complete("direct")
		if !slices.Equal(through, []string{"Engineering"}) {
			t.Errorf("mcpdo prompts/complete completable-prompt department=E through warden = %q, want [Engineering]", through)
		}
		if !slices.Equal(through, straight) {
			t.Errorf("mcpdo prompts/complete completable-prompt department=E: %q through warden, %q from the server directly", through, straight)
		}
	})
}

// mcpdo is the Inspector's connection CLI with a HOME of its own (its catalog, secret store
// and the directory of its daemon, ~/.mcp-inspector). Its commands share the daemon the
// first one starts, which holds the named connections between commands (and runs the stdio
// servers connected to); the daemon is detached, so the test cannot wait for it as a child.
type mcpdo struct {
	npm  *npmProject
	home string
}

// newMcpdo returns an mcpdo whose daemon is stopped at cleanup: the test fails unless the
// daemon and every process it started (found by the HOME they inherit) have exited; any
// left are killed.
func newMcpdo(t *testing.T, npm *npmProject) *mcpdo {
	t.Helper()
	m := &mcpdo{npm: npm, home: t.TempDir()}
	t.Cleanup(func() { m.stop(t) })
	return m
}

// command is mcpdo --format json ARGS, bounded by ctx, in m's HOME.
func (m *mcpdo) command(t *testing.T, ctx context.Context, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	t.Helper()
	cmd = m.npm.command(t, ctx, "mcpdo", append([]string{"--format", "json"}, args...)...)
	cmd.Dir = m.home
	// The later HOME wins. The file secret store, in that HOME: there is no OS keychain
	// here, and the daemon refuses a memory store.
	cmd.Env = append(cmd.Env, "HOME="+m.home, "MCP_INSPECTOR_SECRET_STORE=file")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	return cmd, stdout, stderr
}

// run runs mcpdo --format json ARGS and decodes its output into out, failing the test with
// its output and the daemon's log when it fails.
func (m *mcpdo) run(t *testing.T, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), time.Minute)
	defer cancel()
	cmd, stdout, stderr := m.command(t, ctx, args...)
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcpdo %s: %v\nstdout: %s\nstderr: %s\ndaemon log: %s", strings.Join(args, " "), err, stdout, stderr, m.daemonLog())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("mcpdo %s printed %q: %v\nstderr: %s", strings.Join(args, " "), stdout, err, stderr)
	}
}

// daemonLog is the daemon's stderr, which mcpdo keeps next to its socket.
func (m *mcpdo) daemonLog() string {
	b, err := os.ReadFile(filepath.Join(m.home, ".mcp-inspector", "mcpdod.log"))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// stop stops the daemon (`mcpdo daemon stop`, which disconnects every connection and ends
// their stdio servers), waits for its exit, and checks that no process with m's HOME is
// left.
func (m *mcpdo) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	marker := "HOME=" + m.home
	var status struct {
		PID int `json:"pid"`
	}
	cmd, stdout, stderr := m.command(t, ctx, "daemon", "status") // does not start a daemon
	if err := cmd.Run(); err != nil || json.Unmarshal(stdout.Bytes(), &status) != nil {
		t.Errorf("mcpdo daemon status: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	if status.PID != 0 {
		d, err := openProcess(status.PID)
		if err != nil {
			t.Errorf("mcpdo daemon %d: %v", status.PID, err)
		} else {
			defer func() { _ = d.close() }()
			// The marker finds the daemon: the check for leftovers below is not vacuous.
			if pids, err := processesWithEnv(marker); err != nil || !slices.Contains(pids, status.PID) {
				t.Errorf("the processes with mcpdo's HOME are %v (%v), which lacks its daemon %d", pids, err, status.PID)
			} else {
				t.Logf("stopping mcpdo's daemon %d; processes with its HOME: %v", status.PID, pids)
			}
			cmd, stdout, stderr := m.command(t, ctx, "daemon", "stop")
			if err := cmd.Run(); err != nil {
				t.Errorf("mcpdo daemon stop: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
			}
			if err := d.wait(ctx); err != nil {
				t.Errorf("mcpdo's daemon after daemon stop: %v; killing it\ndaemon log: %s", err, m.daemonLog())
				_ = d.kill()
			}
		}
	}
	pids, err := processesWithEnv(marker)
	if err != nil {
		t.Errorf("listing processes: %v", err)
	}
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		t.Errorf("process %d (%s) outlived mcpdo's daemon; killing it", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte(" ")))
		if p, err := openProcess(pid); err == nil {
			_ = p.kill()
			_ = p.close()
		}
	}
}

// everythingAnswers is what server-everything answers a go-sdk client directly.
type everythingAnswers struct {
	resources     []string // "URI NAME MIMETYPE"
	templates     []string // "URITEMPLATE NAME"
	prompts       []string // "NAME(ARG,...)"
	firstResource string   // the first listed resource's URI
	argsPrompt    string   // the text of prompts/get args-prompt(city=Paris)
}

// everythingDirect starts server-everything over stdio for a go-sdk client and collects its
// answers (nonempty lists, or the test fails: the comparisons would be vacuous).
func everythingDirect(t *testing.T, npm *npmProject, script string) everythingAnswers {
	t.Helper()
	ctx := testCtx(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "warden-e2e-direct", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(npm.node, script, "stdio")}, nil)
	if err != nil {
		t.Fatalf("connecting to server-everything directly: %v", err)
	}
	defer func() { _ = cs.Close() }()
	var a everythingAnswers
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("direct resources/list: %v", err)
		}
		if a.firstResource == "" {
			a.firstResource = r.URI
		}
		a.resources = append(a.resources, r.URI+" "+r.Name+" "+r.MIMEType)
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("direct resources/templates/list: %v", err)
		}
		a.templates = append(a.templates, r.URITemplate+" "+r.Name)
	}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("direct prompts/list: %v", err)
		}
		args := []string{}
		for _, arg := range p.Arguments {
			args = append(args, arg.Name)
		}
		a.prompts = append(a.prompts, p.Name+"("+strings.Join(args, ",")+")")
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "Paris"}})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("direct prompts/get args-prompt: %+v, %v", res, err)
	}
	if tc, ok := res.Messages[0].Content.(*mcp.TextContent); ok {
		a.argsPrompt = tc.Text
	}
	if len(a.resources) == 0 || len(a.templates) == 0 || len(a.prompts) == 0 || a.argsPrompt == "" {
		t.Fatalf("server-everything answered a direct client with empty lists: %+v", a)
	}
	return a
}

// inspectorCLI runs `inspector --cli URL --transport http --format json -q ARGS...` and
// decodes the result into out, failing the test with the CLI's error (its JSON error
// envelope on stderr, or its output) when there is no result.
func inspectorCLI(t *testing.T, npm *npmProject, url string, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), time.Minute)
	defer cancel()
	cmd := npm.command(t, ctx, "mcp-inspector", append([]string{"--cli", url, "--transport", "http", "--format", "json", "-q"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &env); err != nil || len(env.Result) == 0 {
		t.Fatalf("inspector --cli %s: %v (exit: %v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, runErr, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		t.Fatalf("inspector --cli %s: result %s: %v", strings.Join(args, " "), env.Result, err)
	}
}

// sameSet fails the test unless got and want hold the same strings (in any order).
func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s through warden:\n  got  %q\n  want %q (what the server answers directly)", what, g, w)
	}
}
