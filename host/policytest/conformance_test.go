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
	"github.com/warden-mcp/warden/host/internal/testbuild"
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
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

// entries returns the logged messages of one plugin (by ID) that contain
// substr.
func (s *logSink) entries(plugin, substr string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(s.buf.Bytes(), []byte("\n")) {
		var e map[string]any
		if json.Unmarshal(line, &e) != nil {
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
			MemoEntries: -1,
			Limits:      policy.Limits{Timeout: 10 * time.Second},
			Logger:      hclog.New(&hclog.LoggerOptions{Name: "warden", Output: shared.logs, Level: hclog.Trace, JSONFormat: true}),
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
	msg    any // *abi.ServersOutput, *abi.CredentialsOutput or *abi.ToolCallOutput
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
// for re-encodings of each input that any ABI v1 reader must treat the same:
// zero values omitted, fields in reverse order, unknown fields of every
// skippable wire type, and singular embedded messages split in two (which
// merge).
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
				for _, g := range guests {
					got := call(t, g, hook, v.input)
					if !reflect.DeepEqual(got.msg, want.msg) {
						t.Errorf("%s guest, input %s (%s):\n got %s\nwant %s (go guest, input as encoded by the host)",
							g.name, v.name, abbrev(v.input), js(got.msg), js(want.msg))
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
// 3-byte varint lengths, an input large enough that warden_alloc must grow
// the C guest's memory, and an output larger than the C guest's static
// output buffer (which must fail closed, not trap or truncate).
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

	t.Run("20 KB name (3-byte lengths)", func(t *testing.T) {
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
	want := []string{"warden_abi_version", "warden_alloc", "warden_credentials", "warden_hooks", "warden_servers", "warden_tool_call"}
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
// closed). The Go guest gets the same inputs, and the two must agree on
// which inputs are malformed and, for the rest, on the decisions: the C
// reader is exactly as strict as the host's Go decoder.
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
		if (c.errMsg == "") != (g.errMsg == "") {
			t.Fatalf("%v hook, input %s: c guest error %q, go guest error %q", hook, abbrev(in), c.errMsg, g.errMsg)
		}
		if c.errMsg == "" && !reflect.DeepEqual(c.msg, g.msg) {
			t.Fatalf("%v hook, input %s:\nc  %s\ngo %s", hook, abbrev(in), js(c.msg), js(g.msg))
		}
		if c.errMsg != "" && !onlyError(c.msg) {
			t.Fatalf("%v hook, input %s: c guest error output carries decisions: %s", hook, abbrev(in), js(c.msg))
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
						switch rng.IntN(3) {
						case 0:
							in[i] = byte(rng.Uint32())
						case 1:
							in[i] ^= 1 << rng.IntN(8)
						default:
							in[i] = []byte{0x00, 0x7f, 0x80, 0xff, 0x03, 0x04, 0x06, 0x07}[rng.IntN(8)]
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
					check(t, hook, in)
				}
			})
			t.Run("adversarial", func(t *testing.T) {
				for _, a := range adversarial() {
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
	}
	return false
}

// adversarial returns hand-made malformed (and a few valid but unusual)
// inputs; each is interpreted by every hook.
func adversarial() [][]byte {
	v := func(x uint64) []byte { return binary.AppendUvarint(nil, x) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tag := func(num, wire uint64) []byte { return v(num<<3 | wire) }
	str := func(num uint64, s []byte) []byte { return cat(tag(num, 2), v(uint64(len(s))), s) }
	cred := str(3, []byte("SECRET_X"))
	server := cat(str(1, []byte("deny-a")), str(9, cred))
	return [][]byte{
		{},
		{0x00},                         // field number 0
		{0x08},                         // truncated varint value
		{0x80},                         // truncated tag
		bytes.Repeat([]byte{0xff}, 11), // tag varint longer than 10 bytes
		cat(tag(20, 0), bytes.Repeat([]byte{0xff}, 9), []byte{0x02}), // 10th byte > 1
		cat(tag(20, 0), bytes.Repeat([]byte{0xff}, 9), []byte{0x01}), // max uint64: valid unknown field
		cat(tag(20, 0), bytes.Repeat([]byte{0x80}, 10)),              // overlong, no terminator
		tag(1<<29-1, 0), cat(tag(1<<29-1, 0), []byte{0}), // max field number (unknown, valid when complete)
		cat(v(1<<29<<3), []byte{0}),                                        // field number 2^29: invalid
		cat(v(1<<32<<3|2), []byte{0}),                                      // field number above 32 bits
		cat(tag(20, 1), make([]byte, 8)), cat(tag(20, 1), make([]byte, 7)), // fixed64 unknown / truncated
		cat(tag(20, 5), make([]byte, 4)), cat(tag(20, 5), make([]byte, 3)), // fixed32 unknown / truncated
		cat(tag(20, 3)), cat(tag(20, 4)), cat(tag(20, 6), []byte{0}), cat(tag(20, 7), []byte{0}), // groups, undefined
		cat(tag(1, 0), []byte{1}), // known field (thread) with the wrong wire type
		cat(tag(1, 5), make([]byte, 4)),
		cat(tag(2, 2), v(1<<32+1), []byte("abc")),     // length above 32 bits must not wrap
		cat(tag(2, 2), v(1<<64-1), []byte("abc")),     // length 2^64-1
		cat(tag(3, 2), v(3), []byte{0x0a, 0x05, 'a'}), // embedded length past the embedded end
		str(3, server), str(2, server), // valid: a server (servers / credentials)
		str(3, cat(str(1, []byte("x")), str(9, cat(tag(3, 2), v(50), []byte("SECRET_"))))), // credential overruns
		str(2, cat(str(9, cred), tag(9, 0), []byte{1})),                                    // credentials field as a varint
		str(1, str(3, str(1, []byte("root")))),                                             // thread with a root
		str(1, str(3, cat(tag(1, 0), []byte{1}))),                                          // root id as a varint
		str(1, cat(str(1, []byte("error")), str(1, []byte("ok")))),                         // last id wins
		cat(str(1, str(1, []byte("error"))), str(1, str(2, []byte("reviewer")))),           // threads merge
		cat(str(1, str(2, []byte("reviewer"))), str(3, cat(str(1, []byte("s")), str(4, []byte("stdio"))))),
		cat(str(2, str(2, []byte("e"))), str(4, str(2, []byte("e"))), str(5, []byte("x"))),
		bytes.Repeat(str(3, server), 200),
	}
}

// ---------------------------------------------------------------- variants

// wireField is one field of an encoded message.
type wireField struct {
	num, wire uint64
	value     []byte // the whole value: varint bytes, fixed bytes, or the payload of a bytes field
}

// fieldInfo describes a field of the input schema: the embedded message's
// type ("" for scalars) and whether it is repeated.
type fieldInfo struct {
	msg      string
	repeated bool
}

var inputSchema = map[string]map[uint64]fieldInfo{
	"ServersInput":     {1: {msg: "Thread"}, 2: {"Environment", true}, 3: {"Server", true}, 5: {"Requirement", true}},
	"CredentialsInput": {1: {msg: "Thread"}, 2: {msg: "Server"}, 4: {msg: "Environment"}},
	"ToolCallInput":    {1: {msg: "Thread"}},
	"Thread":           {3: {"Root", true}},
	"Server":           {7: {repeated: true}, 9: {"Credential", true}, 12: {repeated: true}, 13: {repeated: true}},
	"Root":             {},
	"Environment":      {},
	"Credential":       {},
	"Requirement":      {},
}

func inputType(h abi.Hook) string {
	switch h {
	case abi.HookServers:
		return "ServersInput"
	case abi.HookCredentials:
		return "CredentialsInput"
	}
	return "ToolCallInput"
}

func parseFields(t *testing.T, b []byte) []wireField {
	t.Helper()
	var fs []wireField
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad tag in % x", b)
		}
		b = b[n:]
		f := wireField{num: tag >> 3, wire: tag & 7}
		switch f.wire {
		case 0:
			_, n = binary.Uvarint(b)
			f.value, b = b[:n], b[n:]
		case 1:
			f.value, b = b[:8], b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			f.value, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			f.value, b = b[:4], b[4:]
		default:
			t.Fatalf("unexpected wire type %d", f.wire)
		}
		fs = append(fs, f)
	}
	return fs
}

func appendField(b []byte, f wireField) []byte {
	b = binary.AppendUvarint(b, f.num<<3|f.wire)
	if f.wire == 2 {
		b = binary.AppendUvarint(b, uint64(len(f.value)))
	}
	return append(b, f.value...)
}

// unknownFields are fields of numbers no ABI v1 message uses, one per
// skippable wire type, including the largest field number and value.
var unknownFields = func() []byte {
	var b []byte
	b = appendField(b, wireField{num: 16, wire: 0, value: binary.AppendUvarint(nil, 1<<64-1)})
	b = append(binary.AppendUvarint(b, 17<<3|1), 1, 2, 3, 4, 5, 6, 7, 8)
	b = appendField(b, wireField{num: 18, wire: 2, value: []byte("\x0a\x03not a field of this message")})
	b = append(binary.AppendUvarint(b, 19<<3|5), 1, 2, 3, 4)
	b = appendField(b, wireField{num: 1<<29 - 1, wire: 0, value: []byte{0}})
	return b
}()

// transform re-encodes message b of type typ, recursively:
//   - compact: singular fields holding a zero value are dropped;
//   - reverse: fields are stably sorted by descending number (repeated
//     elements keep their order);
//   - unknown: unknownFields go before every field and at the end;
//   - split: a singular embedded message is sent as two fields holding the
//     first and second half of its fields, which a reader must merge.
func transform(t *testing.T, typ string, b []byte, mode string) []byte {
	t.Helper()
	schema := inputSchema[typ]
	fs := parseFields(t, b)
	var out []wireField
	for _, f := range fs {
		info := schema[f.num]
		if info.msg != "" {
			f.value = transform(t, info.msg, f.value, mode)
		}
		if mode == "compact" && !info.repeated && (len(f.value) == 0 || f.wire == 0 && f.value[0] == 0) {
			continue
		}
		if mode == "split" && info.msg != "" && !info.repeated {
			sub := parseFields(t, f.value)
			var a, z []byte
			for i, g := range sub {
				if i < len(sub)/2 {
					a = appendField(a, g)
				} else {
					z = appendField(z, g)
				}
			}
			out = append(out, wireField{f.num, 2, a}, wireField{f.num, 2, z})
			continue
		}
		out = append(out, f)
	}
	if mode == "reverse" {
		slices.SortStableFunc(out, func(a, b wireField) int { return int(b.num) - int(a.num) })
	}
	var enc []byte
	for _, f := range out {
		if mode == "unknown" {
			enc = append(enc, unknownFields...)
		}
		enc = appendField(enc, f)
	}
	if mode == "unknown" {
		enc = append(enc, unknownFields...)
	}
	return enc
}

type variant struct {
	name  string
	input []byte
}

func variants(t *testing.T, hook abi.Hook, in []byte) []variant {
	t.Helper()
	typ := inputType(hook)
	vs := []variant{{"as encoded by the host (full form)", in}}
	all := in
	for _, mode := range []string{"compact", "reverse", "unknown", "split"} {
		vs = append(vs, variant{mode, transform(t, typ, in, mode)})
		all = transform(t, typ, all, mode)
	}
	return append(vs, variant{"compact+reverse+unknown+split", all})
}
