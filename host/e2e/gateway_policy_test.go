package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-mcp/warden/examples/mcpserver/mcpservertest"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/thread"
)

// Planted secrets: shapes the redact-secrets policy knows (an AWS access key id and a
// GitHub token). They must never reach the client, an upstream or the decision log.
const (
	plantedAWSKey = "AKIAIOSFODNN7EXAMPLE"
	plantedGitHub = "ghp_R2d2C3poBb8Luke0Leia1Han2Chewie3Yoda"
)

// operatorPolicies builds first-party and example policies as wasip1 modules (shared build
// cache) and returns their [[policies]] tables, written into dir.
func operatorPolicies(t *testing.T, dir string, srcs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, src := range srcs {
		path := filepath.Join(dir, filepath.Base(src)+".wasm")
		if err := os.WriteFile(path, testbuild.GoGuest(t, src), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "[[policies]]\npath = %q\n\n", path)
	}
	return b.String()
}

// elicitor is a front-door client's user: it answers every elicitation with the next
// queued action and records each question.
type elicitor struct {
	mu       sync.Mutex
	answers  []string
	messages []string
}

func (e *elicitor) answer(action string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answers = append(e.answers, action)
}

func (e *elicitor) asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.messages)
}

func (e *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.messages = append(e.messages, req.Params.Message)
	if len(e.answers) == 0 {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := e.answers[0]
	e.answers = e.answers[1:]
	if a == "accept" {
		return &mcp.ElicitResult{Action: a, Content: map[string]any{}}, nil
	}
	return &mcp.ElicitResult{Action: a}, nil
}

// connectWith connects a go-sdk client with options o to a streamable HTTP endpoint,
// closing it at cleanup.
func connectWith(t testing.TB, ctx context.Context, endpoint string, o *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "warden-e2e-policy", Version: "1"}, o).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", endpoint, err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the MCP session to %s: %v", endpoint, err)
		}
		tr.CloseIdleConnections()
	})
	return cs
}

// logLine is one decision-log line, as much of it as the tests read.
type logLine struct {
	Thread  string            `json:"thread"`
	Plugin  string            `json:"plugin"`
	Hook    string            `json:"hook"`
	Server  string            `json:"server"`
	Tool    string            `json:"tool"`
	Outcome map[string]string `json:"outcome"`
	Reasons map[string]string `json:"reasons"`
	Error   string            `json:"error"`
}

// readDecisionLog parses the decision log at path, failing on a line that is not JSON.
func readDecisionLog(t *testing.T, path string) (raw []byte, lines []logLine) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("decision log: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("decision log line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return raw, lines
}

// findLine reports whether some line matches.
func findLine(lines []logLine, match func(logLine) bool) bool {
	return slices.ContainsFunc(lines, match)
}

// listItems lists a session's prompt names, resource URIs and resource templates, without
// warden's own status resource.
func listItems(t *testing.T, ctx context.Context, cs *mcp.ClientSession) (prompts, resources, templates []string) {
	t.Helper()
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		prompts = append(prompts, p.Name)
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if r.URI != frontdoor.StatusURI {
			resources = append(resources, r.URI)
		}
	}
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		templates = append(templates, rt.URITemplate)
	}
	slices.Sort(prompts)
	slices.Sort(resources)
	slices.Sort(templates)
	return prompts, resources, templates
}

// readText reads a resource and returns its joined text.
func readText(ctx context.Context, cs *mcp.ClientSession, uri string) (string, error) {
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Contents {
		b.WriteString(c.Text)
	}
	return b.String(), nil
}

// TestGatewayPolicy: policy over every item, through the front door with a go-sdk client
// over streamable HTTP. Two example servers with resources and prompts (--items), "local"
// over stdio and "web" over HTTP, run under three operator policies: reviewer-no-stdio
// (hides stdio servers in reviewer threads), scoped-items (resource and prompt lists, and a
// resource_read hook refusing ".." paths) and the first-party redact-secrets (tool_call and
// tool_result). local's add tool has approval_mode "prompt".
//
//   - in a reviewer thread the hidden local server contributes no prompt, resource or
//     template, while an interactive thread sees both servers' items;
//   - a resources/read the resource_read hook denies answers the client with the policy's
//     reason;
//   - a secret in a tool's arguments never reaches the upstream (echo returns what it got),
//     and a secret in a tool's result (env returns a variable the server was started with)
//     never reaches the client, in content and structuredContent alike;
//   - the prompt-mode tool runs after the user accepts and not after a decline;
//   - each of these is in the decision log, which never holds a planted secret.
func TestGatewayPolicy(t *testing.T) {
	ctx := testCtx(t)
	home := t.TempDir()
	policies := operatorPolicies(t, home, "../../examples/plugins/reviewer-no-stdio", "../../examples/plugins/scoped-items", "../../plugins/redact-secrets")
	web := mcpservertest.StartHTTP(t, exampleBin, nil, "--items", "--name", "web", "--log-level", "warn")
	counts := filepath.Join(home, "local-methods")
	decisions := filepath.Join(home, "decisions.jsonl")
	cfg := serverTOML("local", exampleBin, []string{"--items", "--name", "local", "--count-file", counts},
		fmt.Sprintf("required = true\n\n[mcp_servers.local.env]\nPLANTED_TOKEN = %q\n\n[mcp_servers.local.tools.add]\napproval_mode = \"prompt\"\n", plantedGitHub)) +
		fmt.Sprintf("[mcp_servers.web]\nurl = %q\nrequired = true\n\n", web.URL) +
		policies + fmt.Sprintf("[decision_log]\npath = %q\n", decisions)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, home)
	base := frontDoorHTTP(t, h)
	user := &elicitor{}
	open := func(kind thread.Kind) (*thread.Thread, *mcp.ClientSession) {
		t.Helper()
		th, err := h.Threads().Start(ctx, thread.StartParams{Kind: kind})
		if err != nil {
			t.Fatalf("thread/start %s: %v", kind, err)
		}
		return th, connectWith(t, ctx, base+frontdoor.ThreadPath(th.ID()), &mcp.ClientOptions{ElicitationHandler: user.handle})
	}
	reviewerThread, reviewer := open(thread.KindReviewer)
	_, interactive := open(thread.KindInteractive)

	t.Run("hidden server contributes nothing", func(t *testing.T) {
		prompts, resources, templates := listItems(t, ctx, reviewer)
		if !slices.Equal(prompts, []string{frontdoor.ToolName("web", "greet")}) ||
			!slices.Equal(resources, []string{"docs://example/readme"}) || !slices.Equal(templates, []string{"file:///docs/{+path}"}) {
			t.Errorf("reviewer thread: prompts %q, resources %q, templates %q; want web's only", prompts, resources, templates)
		}
		if got, err := readText(ctx, reviewer, "docs://example/readme"); err != nil || got != "readme of web" {
			t.Errorf("reviewer thread: docs://example/readme = %q, %v; want web's", got, err)
		}
		if tools := listToolNames(t, ctx, reviewer); slices.ContainsFunc(tools, func(n string) bool { return strings.HasPrefix(n, "local") }) {
			t.Errorf("reviewer thread lists local's tools: %q", tools)
		}
		// The same servers in an interactive thread: both contribute (the shared URI is
		// qualified per server).
		prompts, resources, _ = listItems(t, ctx, interactive)
		if !slices.Equal(prompts, []string{frontdoor.ToolName("local", "greet"), frontdoor.ToolName("web", "greet")}) ||
			!slices.Equal(resources, []string{frontdoor.QualifiedURI("local", "docs://example/readme"), frontdoor.QualifiedURI("web", "docs://example/readme")}) {
			t.Errorf("interactive thread: prompts %q, resources %q; want both servers'", prompts, resources)
		}
		if got, err := readText(ctx, interactive, frontdoor.QualifiedURI("local", "docs://example/readme")); err != nil || got != "readme of local" {
			t.Errorf("interactive thread: local's readme = %q, %v", got, err)
		}
	})

	t.Run("resources/read denied with the reason", func(t *testing.T) {
		if got, err := readText(ctx, reviewer, "file:///docs/guide.txt"); err != nil || got != "file guide.txt" {
			t.Fatalf("an allowed read: %q, %v", got, err)
		}
		const climbing = "file:///docs/../etc/passwd"
		got, err := readText(ctx, reviewer, climbing)
		if err == nil {
			t.Fatalf("reading %s succeeded: %q", climbing, got)
		}
		if !strings.Contains(err.Error(), "resource "+climbing+" climbs out of its directory") || !strings.Contains(err.Error(), "denied by policy") {
			t.Errorf("the denial does not carry the policy's reason: %v", err)
		}
	})

	t.Run("secrets redacted from arguments and results", func(t *testing.T) {
		text, res := callText(t, ctx, interactive, frontdoor.ToolName("web", "echo"), map[string]any{"text": "key " + plantedAWSKey + " token " + plantedGitHub})
		structured := string(mustJSON(t, res.StructuredContent))
		if res.IsError || text != "key [REDACTED:aws_access_key_id] token [REDACTED:github_token]" ||
			!strings.Contains(structured, `"text":"key [REDACTED:aws_access_key_id] token [REDACTED:github_token]"`) {
			t.Errorf("echo of planted secrets: text %q, structured %s (isError %v)", text, structured, res.IsError)
		}
		// env returns PLANTED_TOKEN's value from the server's environment: the secret is in
		// the result only.
		text, res = callText(t, ctx, interactive, frontdoor.ToolName("local", "env"), map[string]any{"name": "PLANTED_TOKEN"})
		structured = string(mustJSON(t, res.StructuredContent))
		if res.IsError || text != "PLANTED_TOKEN=[REDACTED:github_token]" || !strings.Contains(structured, `"value":"[REDACTED:github_token]"`) ||
			!strings.Contains(structured, `"set":true`) {
			t.Errorf("env of a planted secret: text %q, structured %s (isError %v)", text, structured, res.IsError)
		}
		for _, s := range []string{text, structured} {
			if strings.Contains(s, plantedGitHub) || strings.Contains(s, plantedAWSKey) {
				t.Errorf("a planted secret reached the client: %s", s)
			}
		}
	})

	t.Run("prompt-mode tool runs after accept, not after decline", func(t *testing.T) {
		upstreamCalls := func() int {
			n := 0
			for _, m := range mcpservertest.Methods(t, counts) {
				if m == "tools/call" {
					n++
				}
			}
			return n
		}
		before := upstreamCalls()
		user.answer("accept")
		text, res := callText(t, ctx, interactive, frontdoor.ToolName("local", "add"), map[string]any{"a": 1, "b": 2})
		if res.IsError || text != "3" {
			t.Errorf("accepted add: %q (isError %v)", text, res.IsError)
		}
		asked := user.asked()
		if len(asked) != 1 || !strings.Contains(asked[0], `"add"`) || !strings.Contains(asked[0], `"local"`) || !strings.Contains(asked[0], `"a":1`) {
			t.Errorf("the user was asked %q; want one question naming the tool, server and arguments", asked)
		}
		if n := upstreamCalls(); n != before+1 {
			t.Errorf("the accepted call made %d upstream calls, want 1", n-before)
		}
		user.answer("decline")
		text, res = callText(t, ctx, interactive, frontdoor.ToolName("local", "add"), map[string]any{"a": 5, "b": 5})
		if !res.IsError || !strings.Contains(text, "the user declined the call") || strings.Contains(text, "10") {
			t.Errorf("declined add: %q (isError %v)", text, res.IsError)
		}
		if n := upstreamCalls(); n != before+1 {
			t.Errorf("the declined call reached the upstream (%d calls in all since the accept, want 1)", n-before)
		}
		if asked := user.asked(); len(asked) != 2 {
			t.Errorf("the user was asked %d times, want 2", len(asked))
		}
	})

	t.Run("decision log", func(t *testing.T) {
		raw, lines := readDecisionLog(t, decisions)
		for _, s := range []string{plantedAWSKey, plantedGitHub} {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("the decision log holds a planted secret (%.8s…)", s)
			}
		}
		checks := []struct {
			what  string
			match func(logLine) bool
		}{
			{"servers: local hidden in the reviewer thread", func(l logLine) bool {
				return l.Hook == "servers" && l.Thread == reviewerThread.ID() && l.Outcome["local"] == "hide" && strings.Contains(l.Reasons["local"], "reviewer")
			}},
			{"resource_read: the climbing read denied", func(l logLine) bool {
				return l.Hook == "resource_read" && l.Outcome["read"] == "deny" && strings.Contains(l.Reasons["read"], "climbs out of its directory")
			}},
			{"resource_read: an allowed read", func(l logLine) bool {
				return l.Hook == "resource_read" && l.Outcome["read"] == "allow" && l.Plugin != "baseline"
			}},
			{"tool_call: arguments redacted", func(l logLine) bool {
				return l.Hook == "tool_call" && l.Plugin == "redact-secrets" && l.Outcome["call"] == "allow" && strings.Contains(l.Reasons["call"], "arguments rewritten")
			}},
			{"tool_result: result redacted", func(l logLine) bool {
				return l.Hook == "tool_result" && l.Plugin == "redact-secrets" && l.Outcome["result"] == "rewrite" && strings.Contains(l.Reasons["result"], "redacted 2 secrets (github_token×2) from the result of env")
			}},
			{"approval: accepted", func(l logLine) bool {
				return l.Hook == "approval" && l.Server == "local" && l.Tool == "add" && l.Outcome["call"] == "accepted"
			}},
			{"approval: declined", func(l logLine) bool {
				return l.Hook == "approval" && l.Server == "local" && l.Tool == "add" && l.Outcome["call"] == "declined"
			}},
		}
		for _, c := range checks {
			if !findLine(lines, c.match) {
				t.Errorf("no decision-log line for %s", c.what)
			}
		}
		if t.Failed() {
			t.Logf("decision log:\n%s", raw)
		}
	})
}
