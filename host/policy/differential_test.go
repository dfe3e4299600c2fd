package policy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// differentialGuests are the example and conformance guests, by name.
func differentialGuests(tb testing.TB) map[string][]byte {
	tb.Helper()
	examples := filepath.Join("..", "..", "examples")
	out := map[string][]byte{
		"conformance-go": testbuild.GoGuest(tb, filepath.Join(examples, "conformance", "go")),
		"conformance-c":  testbuild.C(tb, filepath.Join(examples, "conformance", "c")),
	}
	for _, name := range []string{"allow-hosts", "block-tool", "no-forwarding", "reviewer-no-stdio"} {
		out[name] = testbuild.GoGuest(tb, filepath.Join(examples, "plugins", name))
	}
	return out
}

// pair is one guest loaded instrumented (as the host runs it) and as it is.
type pair struct {
	name                   string
	instrumented, original *Module
}

// loadPairs loads every guest (or only $WARDEN_DIFF_GUEST) into an instrumented and an
// uninstrumented Runtime, closed at cleanup. Each fuzz worker process loads them once.
func loadPairs(tb testing.TB) []pair {
	tb.Helper()
	guests := differentialGuests(tb)
	ctx := context.Background()
	// Generous deadlines: the original side has no interrupt checks, so a timeout there
	// could not be enforced anyway, and valid inputs never need one.
	cfg := Config{PoolSize: 1, MemoEntries: -1, Limits: Limits{Timeout: 10 * time.Second}, CompilationCacheDir: compileCacheDir}
	inst := newRuntime(tb, cfg)
	orig, err := newUninstrumentedRuntime(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = orig.Close(ctx) })
	only := os.Getenv("WARDEN_DIFF_GUEST")
	// As a unit test (its seeds only), two guests keep make test fast — the C guest and
	// one Go guest, one of each toolchain's code shape; fuzzing checks every guest (or
	// the one named).
	unitOnly := map[string]bool{"conformance-c": true, "allow-hosts": true}
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	var ps []pair
	for name, wasm := range guests {
		if only != "" && name != only || only == "" && !fuzzing && !unitOnly[name] {
			continue
		}
		ps = append(ps, pair{name: name,
			instrumented: mustLoad(tb, inst, LoadOptions{ID: name, Wasm: wasm}),
			original:     mustLoad(tb, orig, LoadOptions{ID: name, Wasm: wasm})})
	}
	if len(ps) == 0 {
		tb.Fatalf("no guest named %q (WARDEN_DIFF_GUEST)", only)
	}
	return ps
}

// gen turns fuzz bytes into valid hook inputs: every choice is drawn from data, and
// running out of data yields zeros.
type gen struct{ data []byte }

func (g *gen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

func (g *gen) pick(options ...string) string { return options[int(g.byte())%len(options)] }

// str is a short string from data, or one of a few that the guests look for.
func (g *gen) str(words ...string) string {
	n := int(g.byte() % 12)
	if n < len(words) && g.byte()%2 == 0 {
		return words[n]
	}
	b := make([]byte, 0, n)
	for range n {
		b = append(b, "abcdefghijklmnopqrstuvwxyz0123456789-_./:@ é"[int(g.byte())%45])
	}
	return string(b)
}

var (
	hosts   = []string{"api.githubcopilot.com", "mcp.example.com", "mcp.evil.test", "127.0.0.1:7777", "localhost"}
	names   = []string{"github", "filesystem", "node_repl", "deny-p", "limited", "docs", "rogue", "notes", "items"}
	kinds   = []string{"", "interactive", "reviewer", "subagent"}
	origins = []string{"host-config", "executor-config:exec-1", "plugin:p@1", "plugin:allow-hosts@1"}
	tools   = []string{"echo", "add", "delete_everything", "env", "search", "x", "ask", "fail"}
)

func (g *gen) thread() abi.Thread {
	t := abi.Thread{ID: g.pick("thr_1", "error", "thr_"+g.str()), Kind: g.pick(kinds...)}
	for range int(g.byte() % 4) {
		t.Roots = append(t.Roots, abi.Root{ID: g.pick("p@1", "allow-hosts@1", "q@2", g.str()), Location: g.pick("local", "environment"),
			EnvironmentID: g.pick("", "exec-1"), Path: "/plugins/" + g.str()})
	}
	return t
}

func (g *gen) server() abi.Server {
	s := abi.Server{Name: g.str(names...), Origin: g.pick(origins...), PluginID: g.pick("", "p@1", "allow-hosts@1"),
		Environment: g.pick("local", "exec-1", "exec-legacy"), Enabled: g.byte()%5 != 0, Required: g.byte()%3 == 0}
	if g.byte()%2 == 0 {
		s.Transport, s.URL = "http", g.pick("https", "http")+"://"+g.pick(hosts...)+"/"+g.str()
	} else {
		s.Transport, s.Command = "stdio", g.pick("npx", "/usr/bin/node", "./bin/"+g.str())
		for range int(g.byte() % 3) {
			s.Args = append(s.Args, g.str())
		}
	}
	for range int(g.byte() % 3) {
		s.Credentials = append(s.Credentials, abi.Credential{Kind: g.pick("bearer_env", "header_env", "env_var", "oauth"),
			Name: g.pick("Authorization", "X-Key", ""), EnvVar: g.pick("TOKEN", "GITHUB_TOKEN", ""), Owner: g.pick("local", "exec-1")})
	}
	for range int(g.byte() % 3) {
		s.EnabledTools = append(s.EnabledTools, g.pick(tools...))
	}
	for range int(g.byte() % 3) {
		s.DisabledTools = append(s.DisabledTools, g.pick(tools...))
	}
	return s
}

func (g *gen) serversInput() *abi.ServersInput {
	if g.byte()%8 == 0 {
		return abitest.ServersInput20()
	}
	in := &abi.ServersInput{Thread: g.thread(), HasRequirements: g.byte()%3 == 0}
	in.Environments = []abi.Environment{{ID: "local", Local: true, Connected: true, HTTPHeaderEnvVars: true, Processes: true}}
	if g.byte()%2 == 0 {
		in.Environments = append(in.Environments, abi.Environment{ID: "exec-1", Connected: g.byte()%2 == 0, HTTPHeaderEnvVars: g.byte()%2 == 0, Processes: true})
	}
	for range int(g.byte() % 24) {
		in.Servers = append(in.Servers, g.server())
	}
	if in.HasRequirements {
		for range int(g.byte() % 3) {
			in.Requirements = append(in.Requirements, abi.Requirement{Name: g.str(names...), URL: "https://" + g.pick(hosts...) + "/mcp"})
		}
	}
	return in
}

func (g *gen) credentialsInput() *abi.CredentialsInput {
	in := &abi.CredentialsInput{Thread: g.thread(), Server: g.server(), Route: g.pick("local", "exec-1")}
	in.Environment = abi.Environment{ID: in.Route, Local: in.Route == "local", Connected: true, HTTPHeaderEnvVars: g.byte()%2 == 0, Processes: true}
	for i := range in.Server.Credentials {
		in.Server.Credentials[i].ResolvesAt = g.pick("local", "exec-1")
	}
	return in
}

func (g *gen) toolCallInput() *abi.ToolCallInput {
	args, _ := json.Marshal(map[string]any{g.str("text", "path", "query"): g.str(), "n": int(g.byte())})
	return &abi.ToolCallInput{Thread: g.thread(), Server: g.str(names...), PluginID: g.pick("", "p@1"), Tool: g.pick(tools...),
		Arguments: abi.RawJSON(args), Caller: g.pick("", "test", "front-door")}
}

func (g *gen) resourceReadInput() *abi.ResourceReadInput {
	return &abi.ResourceReadInput{Thread: g.thread(), Server: g.str(names...), PluginID: g.pick("", "p@1"),
		URI: g.pick("file:///etc/", "file:///pub/", "https://", "") + g.str("passwd", "secret"), Caller: g.pick("", "front-door")}
}

func (g *gen) promptGetInput() *abi.PromptGetInput {
	args, _ := json.Marshal(map[string]any{g.str("name", "topic"): g.str()})
	return &abi.PromptGetInput{Thread: g.thread(), Server: g.str(names...), PluginID: g.pick("", "p@1"),
		Name: g.str("greet", "blocked", "simple"), Arguments: abi.RawJSON(args), Caller: g.pick("", "front-door")}
}

func (g *gen) toolResultInput() *abi.ToolResultInput {
	args, _ := json.Marshal(map[string]any{g.str("text", "path"): g.str()})
	text := g.str("CONFORMANCE-SECRET", "ok") + g.pick("", " CONFORMANCE-SECRET")
	res, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	return &abi.ToolResultInput{Thread: g.thread(), Server: g.str(names...), PluginID: g.pick("", "p@1"), Tool: g.pick(tools...),
		Arguments: abi.RawJSON(args), Result: abi.RawJSON(res), IsError: g.byte()%3 == 0, Caller: g.pick("", "front-door")}
}

// FuzzDifferential runs every guest instrumented and as it is on the same random valid
// inputs, for each hook the guest has, and requires byte-identical outputs (and the same
// failure, if any): the load-time rewrite must change no answer. Select one guest with
// WARDEN_DIFF_GUEST (allow-hosts, block-tool, no-forwarding, reviewer-no-stdio,
// conformance-go, conformance-c).
func FuzzDifferential(f *testing.F) {
	ps := loadPairs(f)
	var seed [8]byte
	for i := range uint64(16) {
		binary.LittleEndian.PutUint64(seed[:], i*0x9e3779b97f4a7c15)
		f.Add(bytes.Repeat(seed[:], 1+int(i)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		g := &gen{data: data}
		inputs := map[abi.Hook][]byte{
			abi.HookServers:     g.serversInput().AppendTo(nil),
			abi.HookCredentials: g.credentialsInput().AppendTo(nil),
			abi.HookToolCall:    g.toolCallInput().AppendTo(nil),
			// The hooks of ABI version 2 (the conformance guests have them).
			abi.HookResourceRead: g.resourceReadInput().AppendTo(nil),
			abi.HookPromptGet:    g.promptGetInput().AppendTo(nil),
			abi.HookToolResult:   g.toolResultInput().AppendTo(nil),
		}
		for _, p := range ps {
			for _, h := range abi.Hooks() {
				if !p.instrumented.Hooks().Has(h) {
					continue
				}
				want, werr := p.original.Call(ctx, h, inputs[h])
				got, gerr := p.instrumented.Call(ctx, h, inputs[h])
				if errText(werr) != errText(gerr) || !bytes.Equal(got, want) {
					t.Fatalf("%s %s: instrumented = %x, %v; original = %x, %v", p.name, h, got, gerr, want, werr)
				}
			}
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}
