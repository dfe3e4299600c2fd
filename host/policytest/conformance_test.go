package policytest_test

// ABI conformance: the same policy written in Go (with the sdk) and in
// freestanding C (no libc, no WASI) must answer every fixture in
// examples/conformance/tests identically, and the C guest must never trap,
// whatever bytes it is given. See examples/conformance/README.md.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/policy"
	"github.com/warden-mcp/warden/host/policytest"
)

var conformanceDir = filepath.Join("..", "..", "examples", "conformance")

// guest is one loaded conformance guest.
type guest struct {
	name string // "go" or "c"
	mod  *policy.Module
}

// logSink collects the runtime's log output (JSON lines).
type logSink struct{ testmain.SyncBuffer }

// entries returns the logged messages of one plugin (by ID) that contain
// substr.
func (s *logSink) entries(plugin, substr string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(s.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e["@module"] == "warden."+plugin && strings.Contains(fmt.Sprint(e["@message"]), substr) {
			out = append(out, e)
		}
	}
	return out
}

// The conformance tests share one Runtime, so that each guest is compiled
// once per test process (compiling the Go guest takes seconds under the race
// detector). It has memoisation off (every call runs the guest) and a
// generous deadline (the machine may be busy; these tests are not about
// timeouts). It lives until the test process exits.
var shared struct {
	once sync.Once
	rt   *policy.Runtime
	logs *logSink
	err  error
}

// loadGuests builds both guests and loads them into the shared Runtime as
// "go/<test>" and "c/<test>", so that each test's log lines are its own.
func loadGuests(t *testing.T) ([]guest, *logSink) {
	t.Helper()
	ctx := context.Background()
	goWasm := testbuild.GoGuest(t, filepath.Join(conformanceDir, "go"))
	cWasm := testbuild.C(t, filepath.Join(conformanceDir, "c"))
	shared.once.Do(func() {
		shared.logs = &logSink{}
		shared.rt, shared.err = policy.NewRuntime(ctx, policy.Config{
			MemoEntries:         -1,
			Limits:              policy.Limits{Timeout: 10 * time.Second},
			CompilationCacheDir: testbuild.WazeroCache(t),
			Logger:              hclog.New(&hclog.LoggerOptions{Name: "warden", Output: shared.logs, Level: hclog.Trace, JSONFormat: true}),
		})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	var gs []guest
	for _, g := range []struct {
		name string
		wasm []byte
	}{{"go", goWasm}, {"c", cWasm}} {
		id := g.name + "/" + t.Name()
		m, err := shared.rt.Load(ctx, policy.LoadOptions{ID: id, Wasm: g.wasm})
		if err != nil {
			t.Fatalf("load %s guest: %v", g.name, err)
		}
		t.Cleanup(func() { _ = m.Close(ctx) })
		if m.Hooks() != abi.AllHooks {
			t.Fatalf("%s guest implements %v, want %v", g.name, m.Hooks(), abi.AllHooks)
		}
		gs = append(gs, guest{g.name, m})
	}
	return gs, shared.logs
}

func loadCases(t *testing.T) []policytest.Case {
	t.Helper()
	cases, err := policytest.LoadDir(filepath.Join(conformanceDir, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// encodeCase returns a case's hook and wire input.
func encodeCase(t *testing.T, c policytest.Case) (abi.Hook, []byte) {
	t.Helper()
	hook, err := abi.ParseHook(c.Hook)
	if err != nil {
		t.Fatal(err)
	}
	in, err := policytest.Encode(hook, c.Input)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return hook, in
}

// output is a decoded hook output and its error field.
type output struct {
	msg    any // *abi.ServersOutput, *abi.CredentialsOutput, *abi.ToolCallOutput, ...
	errMsg string
}

func decodeOutput(hook abi.Hook, raw []byte) (output, error) {
	switch hook {
	case abi.HookServers:
		var o abi.ServersOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	case abi.HookCredentials:
		var o abi.CredentialsOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	case abi.HookResourceRead:
		var o abi.ResourceReadOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	case abi.HookPromptGet:
		var o abi.PromptGetOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	case abi.HookToolResult:
		var o abi.ToolResultOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	default:
		var o abi.ToolCallOutput
		err := o.Unmarshal(raw)
		return output{&o, o.Error}, err
	}
}

// call runs hook on raw input and decodes the output. Any failure of the
// call itself (trap, timeout, memory, bad output range) or an output that
// does not decode is a test failure: a guest must answer every input with a
// decodable output, setting its error field when it cannot decide.
func call(t *testing.T, g guest, hook abi.Hook, in []byte) output {
	t.Helper()
	raw, err := g.mod.Call(context.Background(), hook, in)
	if err != nil {
		t.Fatalf("%s guest, %v hook, input %s: call failed: %v", g.name, hook, abbrev(in), err)
	}
	out, err := decodeOutput(hook, raw)
	if err != nil {
		t.Fatalf("%s guest, %v hook, input %s: output % x does not decode: %v", g.name, hook, abbrev(in), abbrevBytes(raw), err)
	}
	return out
}

func abbrevBytes(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

func abbrev(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("(%d bytes) % x ...", len(b), b[:64])
	}
	return fmt.Sprintf("(%d bytes) % x", len(b), b)
}

// TestConformanceFixtures runs every fixture against both guests.
func TestConformanceFixtures(t *testing.T) {
	t.Parallel()
	guests, logs := loadGuests(t)
	cases := loadCases(t)
	ctx := context.Background()
	serversCalls := 0 // per guest
	for _, c := range cases {
		if c.Hook == "servers" {
			serversCalls++
		}
	}
	for _, g := range guests {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					res := policytest.Run(ctx, g.mod, c)
					if !res.Pass {
						t.Errorf("%s (%s): %s\noutput: %+v\nerror: %v", c.Name, filepath.Base(c.File), strings.Join(res.Problems, "\n"), res.Output, res.Err)
					}
				})
			}
		})
	}
	// Both guests call warden.log once per servers call, at debug level.
	for _, g := range guests {
		got := logs.entries(g.mod.ID(), "conformance: servers hook")
		if len(got) != serversCalls {
			t.Errorf("%s guest logged %d servers-hook messages for %d servers calls", g.name, len(got), serversCalls)
		}
		for _, e := range got {
			if e["@level"] != "debug" || e["hook"] != "servers" {
				t.Errorf("%s guest log entry %v: want level debug, hook servers", g.name, e)
			}
		}
	}
}

// TestConformanceSameOutputs checks that the two guests' raw outputs for
// every fixture input decode to equal messages (byte equality is not
// required: the C guest writes some zero values the Go encoder omits), also
// for re-encodings of each input in other valid layouts (abitest.Relayout,
// written from docs/abi.md): a newer writer's (larger strides with unknown
// slots, more record types), shared strings, strings before the records.
// An older writer's layout (smaller strides: the last slot of every record
// missing) changes the message, so there the two guests must only agree
// with each other.
func TestConformanceSameOutputs(t *testing.T) {
	t.Parallel()
	guests, _ := loadGuests(t)
	goG := guests[0]
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			hook, in := encodeCase(t, c)
			want := call(t, goG, hook, in)
			if c.Expect.Error != "" && want.errMsg == "" {
				t.Fatalf("go guest: want error %q, got none", c.Expect.Error)
			}
			for _, v := range variants(t, hook, in) {
				ref := want
				if v.older {
					ref = call(t, goG, hook, v.input)
				}
				for _, g := range guests {
					got := call(t, g, hook, v.input)
					if !reflect.DeepEqual(got.msg, ref.msg) {
						t.Errorf("%s guest, input %s (%s):\n got %s\nwant %s (go guest)",
							g.name, v.name, abbrev(v.input), js(got.msg), js(ref.msg))
					}
				}
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// TestConformanceGenerated covers sizes that would bloat the fixture files:
// long strings, an input large enough that warden_alloc must grow the C
// guest's memory, and an output larger than the C guest's static output
// buffer (which must fail closed, not trap or truncate).
func TestConformanceGenerated(t *testing.T) {
	t.Parallel()
	guests, _ := loadGuests(t)
	goG, cG := guests[0], guests[1]

	same := func(t *testing.T, hook abi.Hook, in []byte) output {
		t.Helper()
		want := call(t, goG, hook, in)
		got := call(t, cG, hook, in)
		if !reflect.DeepEqual(got.msg, want.msg) {
			t.Fatalf("c guest:\n got %s\nwant %s", js(got.msg), js(want.msg))
		}
		return got
	}

	t.Run("20 KB name and argument", func(t *testing.T) {
		name := "deny-" + strings.Repeat("é", 10000)
		in := (&abi.ServersInput{Servers: []abi.Server{{Name: name, Args: []string{strings.Repeat("a", 20000)}}}}).AppendTo(nil)
		out := same(t, abi.HookServers, in)
		d := out.msg.(*abi.ServersOutput).Decisions
		if len(d) != 1 || d[0].Reason != "denied by name: "+name {
			t.Fatalf("decisions = %.200s", js(d))
		}
	})

	t.Run("1 MB input (alloc grows memory)", func(t *testing.T) {
		in := &abi.ServersInput{Thread: abi.Thread{ID: "big", Kind: "reviewer"}}
		for i := range 10000 {
			s := abi.Server{Name: fmt.Sprintf("server-%05d", i), Transport: "http", URL: "https://example.com/" + strings.Repeat("p", 60),
				Args: []string{"--a", "--b"}, Credentials: []abi.Credential{{Kind: "env_var", EnvVar: "TOKEN"}}}
			if i%1000 == 999 {
				s.Name = fmt.Sprintf("deny-%05d", i)
			}
			in.Servers = append(in.Servers, s)
		}
		wire := in.AppendTo(nil)
		if len(wire) < 1<<20 {
			t.Fatalf("input is only %d bytes", len(wire))
		}
		out := same(t, abi.HookServers, wire)
		if n := len(out.msg.(*abi.ServersOutput).Decisions); n != 10 {
			t.Fatalf("%d decisions, want 10", n)
		}
		// A small input afterwards reuses the grown buffer.
		same(t, abi.HookServers, (&abi.ServersInput{Servers: []abi.Server{{Name: "deny-x"}}}).AppendTo(nil))
	})

	t.Run("output over the C guest's 64 KiB buffer fails closed", func(t *testing.T) {
		in := &abi.ServersInput{}
		for i := range 400 {
			in.Servers = append(in.Servers, abi.Server{Name: fmt.Sprintf("deny-%03d-%s", i, strings.Repeat("n", 100))})
		}
		wire := in.AppendTo(nil)
		if got := call(t, goG, abi.HookServers, wire); got.errMsg != "" || len(got.msg.(*abi.ServersOutput).Decisions) != 400 {
			t.Fatalf("go guest: %.300s", js(got.msg))
		}
		got := call(t, cG, abi.HookServers, wire)
		if !strings.Contains(got.errMsg, "output larger than") || len(got.msg.(*abi.ServersOutput).Decisions) != 0 {
			t.Fatalf("c guest: want only an output-too-large error, got %.300s", js(got.msg))
		}
	})
}

// TestConformanceCGuestIsFreestanding checks the C module's interface: the
// ABI exports, and warden.log as its only import (no WASI at all).
func TestConformanceCGuestIsFreestanding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, testbuild.C(t, filepath.Join(conformanceDir, "c")))
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		imports = append(imports, mod+"."+name)
	}
	if want := []string{"warden.log"}; !slices.Equal(imports, want) {
		t.Errorf("imports = %v, want %v", imports, want)
	}
	var exports []string
	for name := range cm.ExportedFunctions() {
		exports = append(exports, name)
	}
	slices.Sort(exports)
	want := []string{"warden_abi_version", "warden_alloc", "warden_credentials", "warden_hooks", "warden_prompt_get", "warden_resource_read", "warden_servers", "warden_tool_call", "warden_tool_result"}
	if !slices.Equal(exports, want) {
		t.Errorf("exported functions = %v, want %v", exports, want)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		t.Error("memory is not exported")
	}
}

// TestConformanceCGuestRobustness feeds the C guest truncated, mutated and
// random inputs for every hook. It must never trap or return an output that
// does not decode: each answer is a decision or an error-only output (fail
// closed). The Go guest gets the same inputs. For a well-formed input (the
// host's full check, abi.ValidateInput, accepts it) the two must give the
// same answer. A malformed input may be answered with an error or, when the
// policy never reads the bad part, with a decision (docs/abi.md §6: a
// reader checks what it reads); when both guests decide, the decisions must
// be equal.
func TestConformanceCGuestRobustness(t *testing.T) {
	t.Parallel()
	guests, _ := loadGuests(t)
	goG, cG := guests[0], guests[1]
	cases := loadCases(t)
	rng := rand.New(rand.NewPCG(1, 2))

	// answers counts decisions and errors, to show that the inputs reach
	// both the policy and the error paths.
	var answers [2]int
	check := func(t *testing.T, hook abi.Hook, in []byte) {
		t.Helper()
		c := call(t, cG, hook, in)
		if c.errMsg == "" {
			answers[0]++
		} else {
			answers[1]++
		}
		g := call(t, goG, hook, in)
		wellFormed := abi.ValidateInput(hook, in) == nil
		if wellFormed && (c.errMsg == "") != (g.errMsg == "") {
			t.Fatalf("%v hook, well-formed input %s: c guest error %q, go guest error %q", hook, abbrev(in), c.errMsg, g.errMsg)
		}
		if c.errMsg == "" && g.errMsg == "" && !reflect.DeepEqual(c.msg, g.msg) {
			t.Fatalf("%v hook, input %s:\nc  %s\ngo %s", hook, abbrev(in), js(c.msg), js(g.msg))
		}
		if c.errMsg != "" && !onlyError(c.msg) {
			t.Fatalf("%v hook, input %s: c guest error output carries decisions: %s", hook, abbrev(in), js(c.msg))
		}
		if g.errMsg != "" && !onlyError(g.msg) && !strings.HasPrefix(g.errMsg, "conformance:") {
			t.Fatalf("%v hook, input %s: go guest error output carries decisions: %s", hook, abbrev(in), js(g.msg))
		}
	}

	byHook := map[abi.Hook][][]byte{}
	for _, c := range cases {
		hook, in := encodeCase(t, c)
		byHook[hook] = append(byHook[hook], in)
	}

	for _, hook := range abi.Hooks() {
		inputs := byHook[hook]
		t.Run(hook.String(), func(t *testing.T) {
			answers = [2]int{}
			defer func() {
				t.Logf("%d decided, %d malformed", answers[0], answers[1])
				if answers[0] < 100 || answers[1] < 100 {
					t.Errorf("too few inputs on one side: %d decided, %d malformed", answers[0], answers[1])
				}
			}()
			t.Run("prefixes", func(t *testing.T) {
				for _, in := range inputs {
					// Every prefix of small inputs; a sample of long ones.
					for n := 0; n <= len(in); n++ {
						if n > 600 && n < len(in)-50 && n%37 != 0 {
							continue
						}
						check(t, hook, in[:n:n])
					}
				}
			})
			t.Run("mutations", func(t *testing.T) {
				for range 1500 {
					in := bytes.Clone(inputs[rng.IntN(len(inputs))])
					if len(in) == 0 {
						continue
					}
					for range 1 + rng.IntN(4) {
						i := rng.IntN(len(in))
						switch rng.IntN(4) {
						case 0:
							in[i] = byte(rng.Uint32())
						case 1:
							in[i] ^= 1 << rng.IntN(8)
						case 2: // a u32 of the records: often an offset, a length or a count
							if len(in) > 64 {
								j := 56 + 4*rng.IntN((len(in)-60)/4)
								binary.LittleEndian.PutUint32(in[j:], []uint32{0, 1, 2, 8, 200, 1 << 16, 1<<31 + 5, 1<<32 - 1}[rng.IntN(8)])
							}
						default: // the header
							j := 4 * rng.IntN(14)
							binary.LittleEndian.PutUint32(in[j:], []uint32{0, 1, 2, 4, 7, 8, 9, 16, 96, 104, 1 << 20}[rng.IntN(11)])
						}
					}
					check(t, hook, in)
				}
			})
			t.Run("random", func(t *testing.T) {
				for range 1000 {
					in := make([]byte, rng.IntN(300))
					for i := range in {
						in[i] = byte(rng.Uint32())
					}
					// Half of them behind a valid header, to reach the records.
					if src := inputs[rng.IntN(len(inputs))]; rng.IntN(2) == 0 && len(src) >= 56 {
						in = append(bytes.Clone(src[:56]), in...)
					}
					check(t, hook, in)
				}
			})
			t.Run("adversarial", func(t *testing.T) {
				for _, a := range adversarial(hook) {
					check(t, hook, a)
				}
			})
		})
	}
}

// onlyError reports whether a decoded output holds nothing but its error.
func onlyError(msg any) bool {
	switch o := msg.(type) {
	case *abi.ServersOutput:
		return len(o.Decisions) == 0
	case *abi.CredentialsOutput:
		return len(o.Decisions) == 0
	case *abi.ToolCallOutput:
		return o.Action == abi.ToolCallAllow && o.Reason == "" && !o.Rewrite && o.Arguments == nil
	case *abi.ResourceReadOutput:
		return o.Action == abi.ToolCallAllow && o.Reason == ""
	case *abi.PromptGetOutput:
		return o.Action == abi.ToolCallAllow && o.Reason == "" && !o.Rewrite && o.Arguments == nil
	case *abi.ToolResultOutput:
		return o.Action == abi.ToolResultPass && o.Reason == "" && o.Result == nil
	}
	return false
}

// adversarial returns hand-made malformed (and a few valid but unusual)
// inputs of hook h, made by patching the encoding of a small valid one:
// header fields, counts and offsets chosen to overflow 32-bit arithmetic,
// zero messages, a record type missing from the stride table.
func adversarial(h abi.Hook) [][]byte {
	var base []byte
	switch h {
	case abi.HookServers:
		base = (&abi.ServersInput{Thread: abi.Thread{ID: "t", Kind: "reviewer"}, Servers: []abi.Server{
			{Name: "deny-a", Transport: "stdio", Args: []string{"--unsafe"}, Credentials: []abi.Credential{{EnvVar: "SECRET_X"}}},
		}}).AppendTo(nil)
	case abi.HookCredentials:
		base = (&abi.CredentialsInput{Route: "exec-1", Server: abi.Server{Name: "s", Credentials: []abi.Credential{{EnvVar: "A"}, {EnvVar: "SECRET_B"}}}}).AppendTo(nil)
	case abi.HookResourceRead:
		base = (&abi.ResourceReadInput{Server: "fs", URI: "file:///etc/passwd"}).AppendTo(nil)
	case abi.HookPromptGet:
		base = (&abi.PromptGetInput{Server: "everything", Name: "blocked", Arguments: []byte(`{}`)}).AppendTo(nil)
	case abi.HookToolResult:
		base = (&abi.ToolResultInput{Tool: "t", Result: []byte(`{"content":[]}`), IsError: true}).AppendTo(nil)
	default:
		base = (&abi.ToolCallInput{Server: "rewrite", Tool: "echo", Arguments: []byte(`{}`)}).AppendTo(nil)
	}
	set := func(at int, v uint32) []byte {
		b := bytes.Clone(base)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	root := int(binary.LittleEndian.Uint32(base[12:]))
	out := [][]byte{
		{}, base[:19], base[:20], base[:55], base[:56],
		set(0, 0x464E4458),           // magic
		set(4, 2),                    // layout version 2
		set(8, 8),                    // kind
		set(16, 0),                   // no record types: every stride 0
		set(16, 3),                   // three record types: the others missing
		set(16, 1<<30),               // stride table past the end
		set(20+4*6, 0),               // Server stride 0
		set(20+4*6, 7),               // Server stride not a multiple of 8
		set(20+4*6, 1<<31),           // Server stride huge
		set(20+4*3, 8),               // Thread stride 8: only the id (an older writer)
		set(12, uint32(len(base))),   // root past the end
		set(12, 1<<32-8),             // root offset huge
		set(root+4, 0),               // slot 0 count 0: the zero thread
		set(root+4, 2),               // thread count 2
		set(root, 1<<32-4),           // thread offset huge
		set(root, uint32(len(base))), // thread past the end
	}
	// Every slot of every record: a huge offset, a huge count, both.
	for i := root; i+8 <= len(base); i += 8 {
		out = append(out, set(i, 1<<32-16), set(i+4, 1<<32-1), set(i+4, 1<<28))
		b := set(i, 1<<31)
		binary.LittleEndian.PutUint32(b[i+4:], 1<<31)
		out = append(out, b)
	}
	return out
}

// ---------------------------------------------------------------- variants

type variant struct {
	name  string
	input []byte
	older bool // an older writer's layout: the message is not the same
}

func variants(t *testing.T, hook abi.Hook, in []byte) []variant {
	t.Helper()
	var bigger, smaller [abitest.NumTypes]uint32
	for ty, slots := range abitest.Schema {
		bigger[ty], smaller[ty] = uint32(8*len(slots)+24), uint32(8*(len(slots)-1))
	}
	vs := []variant{{"as encoded by the host", in, false}}
	for _, l := range []struct {
		name  string
		l     abitest.Layout
		older bool
	}{
		{"newer writer: larger strides, unknown slots, more record types", abitest.Layout{Strides: bigger, ExtraTypes: 2, Fill: 0xa5}, false},
		{"shared strings, placed before the records", abitest.Layout{Dedup: true, StringsFirst: true}, false},
		{"older writer: the last slot of every record missing", abitest.Layout{Strides: smaller}, true},
	} {
		b, err := abitest.Relayout(in, hook, l.l)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		vs = append(vs, variant{l.name, b, l.older})
	}
	return vs
}

// TestConformanceV1Guest: the C guest built as a version 1 guest
// (-DWARDEN_ABI_VERSION=1: warden_abi_version returns 1, the hooks of
// version 2 are left out) loads, is held to version 1, passes every
// fixture of version 1 (the files not named v2_*) and answers each of
// their inputs with exactly the bytes the version 2 build answers: what
// version 1 defined behaves as it always did.
func TestConformanceV1Guest(t *testing.T) {
	t.Parallel()
	guests, _ := loadGuests(t)
	cV2 := guests[1]
	ctx := context.Background()
	// The same sources in a directory of their own, with the define at
	// the top of policy.c (testbuild.C takes no flags).
	dir := t.TempDir()
	for _, f := range []string{"policy.c", "wire.h", "wire_gen.h"} {
		b, err := os.ReadFile(filepath.Join(conformanceDir, "c", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "policy.c" {
			b = append([]byte("#define WARDEN_ABI_VERSION 1\n"), b...)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := shared.rt.Load(ctx, policy.LoadOptions{ID: "c-v1/" + t.Name(), Wasm: testbuild.C(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if m.ABIVersion() != 1 || m.Hooks() != abi.V1Hooks {
		t.Fatalf("v1 build: ABI version %d, hooks %v", m.ABIVersion(), m.Hooks())
	}
	v1 := guest{"c-v1", m}
	n := 0
	for _, c := range loadCases(t) {
		if strings.HasPrefix(filepath.Base(c.File), "v2_") {
			continue
		}
		n++
		if res := policytest.Run(ctx, m, c); !res.Pass {
			t.Errorf("%s (%s): %s\noutput: %+v\nerror: %v", c.Name, filepath.Base(c.File), strings.Join(res.Problems, "\n"), res.Output, res.Err)
		}
		hook, in := encodeCase(t, c)
		got, err1 := v1.mod.Call(ctx, hook, in)
		want, err2 := cV2.mod.Call(ctx, hook, in)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: v1 build answered % x (%v), v2 build % x (%v)", c.Name, got, err1, want, err2)
		}
	}
	if n < 20 {
		t.Fatalf("only %d version 1 fixtures", n)
	}
	// A hook of version 2 is not there to call.
	if _, err := m.Call(ctx, abi.HookToolResult, (&abi.ToolResultInput{}).AppendTo(nil)); err == nil {
		t.Fatal("a version 1 guest ran tool_result")
	}
}
