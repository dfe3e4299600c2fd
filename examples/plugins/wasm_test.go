// Package policies_test builds every example policy as a wasip1 reactor
// module and runs it in wazero, the way the host does: it checks the
// module's exports and imports against the ABI, calls its hooks through
// warden_alloc and the hook exports, checks the wasm build of the abi views
// against the native one, and benchmarks the servers hook with wazero's
// interrupt checks on (WithCloseOnContextDone).
package policies_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/examples/plugins/testdata/codeccheck/roundtrip"
)

var (
	// compiled caches wazero's compilation of each module across the tests'
	// runtimes (compiling a 2 MB Go module is the slow part, under -race).
	compiled  = wazero.NewCompilationCache()
	buildOnce sync.Map // example name -> *built
	buildDir  string
	dirOnce   sync.Once
)

type built struct {
	once sync.Once
	wasm []byte
	err  error
}

// buildExample compiles examples/plugins/<name> with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
func buildExample(tb testing.TB, name string) []byte {
	tb.Helper()
	dirOnce.Do(func() {
		var err error
		if buildDir, err = os.MkdirTemp("", "warden-policies-"); err != nil {
			tb.Fatal(err)
		}
	})
	v, _ := buildOnce.LoadOrStore(name, &built{})
	b := v.(*built)
	b.once.Do(func() {
		out := filepath.Join(buildDir, name+".wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./"+name)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = &buildError{name: name, msg: string(msg), err: err}
			return
		}
		b.wasm, b.err = os.ReadFile(out)
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.wasm
}

type buildError struct {
	name, msg string
	err       error
}

func (e *buildError) Error() string { return "build " + e.name + ": " + e.err.Error() + "\n" + e.msg }
func (e *buildError) Unwrap() error { return e.err }

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// instance is a minimal version of the host's policy runtime.
type instance struct {
	r     wazero.Runtime
	mod   api.Module
	alloc api.Function
	hooks map[abi.Hook]api.Function
	logs  []string
	stack []uint64
	ptr   uint32 // current warden_alloc buffer
	size  uint32
}

// newRawInstance compiles and instantiates wasm in a sandboxed runtime with
// interrupt checks on, rejecting imports outside wasi_snapshot_preview1 and
// warden.log and a _start export, and calling _initialize.
func newRawInstance(tb testing.TB, wasm []byte) *instance {
	tb.Helper()
	ctx := context.Background()
	inst := &instance{hooks: map[abi.Hook]api.Function{}, stack: make([]uint64, 2)}
	inst.r = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithCompilationCache(compiled))
	tb.Cleanup(func() { inst.r.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, inst.r)
	_, err := inst.r.NewHostModuleBuilder(abi.ImportModule).NewFunctionBuilder().
		WithFunc(func(_ context.Context, m api.Module, level, ptr, n uint32) {
			msg, _ := m.Memory().Read(ptr, n)
			inst.logs = append(inst.logs, abi.LogLevel(level).String()+": "+string(msg))
		}).Export(abi.ImportLog).Instantiate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	cm, err := inst.r.CompileModule(ctx, wasm)
	if err != nil {
		tb.Fatal(err)
	}
	for _, imp := range cm.ImportedFunctions() {
		mod, name, _ := imp.Import()
		if mod != abi.WASIModule && !(mod == abi.ImportModule && name == abi.ImportLog) {
			tb.Fatalf("module imports %s.%s", mod, name)
		}
	}
	if _, ok := cm.ExportedFunctions()[abi.ExportStart]; ok {
		tb.Fatal("module exports _start: not a reactor")
	}
	inst.mod, err = inst.r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions(abi.ExportInitialize))
	if err != nil {
		tb.Fatal(err)
	}
	return inst
}

// newInstance is newRawInstance plus the host's ABI checks: version, hooks
// mask, alloc export.
func newInstance(tb testing.TB, wasm []byte) *instance {
	tb.Helper()
	ctx := context.Background()
	inst := newRawInstance(tb, wasm)
	res, err := inst.mod.ExportedFunction(abi.ExportABIVersion).Call(ctx)
	if err != nil || res[0] != abi.Version {
		tb.Fatalf("warden_abi_version = %v, %v", res, err)
	}
	res, err = inst.mod.ExportedFunction(abi.ExportHooks).Call(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	for _, h := range abi.Hooks() {
		if abi.Hook(res[0]).Has(h) {
			inst.hooks[h] = inst.mod.ExportedFunction(h.Export())
		}
	}
	inst.alloc = inst.mod.ExportedFunction(abi.ExportAlloc)
	return inst
}

// call runs hook h on input and returns a copy of the encoded output.
func (inst *instance) call(ctx context.Context, h abi.Hook, input []byte) ([]byte, error) {
	out, err := inst.callView(ctx, h, input)
	return slices.Clone(out), err
}

// callView is call without the copy: the result is a view of guest memory.
func (inst *instance) callView(ctx context.Context, h abi.Hook, input []byte) ([]byte, error) {
	if uint32(len(input)) > inst.size || inst.ptr == 0 {
		inst.stack[0] = uint64(len(input))
		if err := inst.alloc.CallWithStack(ctx, inst.stack); err != nil {
			return nil, err
		}
		inst.ptr, inst.size = uint32(inst.stack[0]), uint32(len(input))
	}
	mem := inst.mod.Memory()
	mem.Write(inst.ptr, input)
	inst.stack[0], inst.stack[1] = uint64(inst.ptr), uint64(len(input))
	if err := inst.hooks[h].CallWithStack(ctx, inst.stack); err != nil {
		return nil, err
	}
	r := inst.stack[0]
	out, _ := mem.Read(uint32(r>>32), uint32(r))
	return out, nil
}

func TestModulesFollowABI(t *testing.T) {
	tests := []struct {
		name  string
		hooks abi.Hook
	}{
		{"allow-hosts", abi.HookServers},
		{"reviewer-no-stdio", abi.HookServers},
		{"no-forwarding", abi.HookCredentials},
		{"block-tool", abi.HookServers | abi.HookToolCall},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstance(t, buildExample(t, tc.name))
			var got abi.Hook
			for h := range inst.hooks {
				got |= h
			}
			if got != tc.hooks {
				t.Fatalf("warden_hooks = %v, want %v", got, tc.hooks)
			}
			var exports []string
			for name := range inst.mod.ExportedFunctionDefinitions() {
				exports = append(exports, name)
			}
			sort.Strings(exports)
			want := []string{"_initialize", "warden_abi_version", "warden_alloc", "warden_credentials", "warden_hooks", "warden_host_features", "warden_log_level",
				"warden_prompt_get", "warden_resource_read", "warden_servers", "warden_tool_call", "warden_tool_result"}
			if !slices.Equal(exports, want) {
				t.Fatalf("exports = %v, want %v", exports, want)
			}
		})
	}
}

func TestHooksInWasm(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		example string
		hook    abi.Hook
		input   []byte
		check   func(t *testing.T, out []byte)
	}{
		{"reviewer hides stdio", "reviewer-no-stdio", abi.HookServers, abitest.ServersInput20().AppendTo(nil), func(t *testing.T, b []byte) {
			var out abi.ServersOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			stdio := 0
			for _, s := range abitest.ServersInput20().Servers {
				if s.Transport == "stdio" {
					stdio++
				}
			}
			if len(out.Decisions) != stdio || stdio == 0 {
				t.Fatalf("%d decisions, want %d", len(out.Decisions), stdio)
			}
			for _, d := range out.Decisions {
				if d.Action != abi.ServerHide {
					t.Fatalf("decision %+v", d)
				}
			}
		}},
		{"allow-hosts disables unknown hosts", "allow-hosts", abi.HookServers, abitest.ServersInput20().AppendTo(nil), func(t *testing.T, b []byte) {
			var out abi.ServersOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			for _, d := range out.Decisions {
				if d.Action != abi.ServerDisable || !strings.Contains(d.Reason, "browser.example.org") {
					t.Fatalf("decision %+v", d)
				}
			}
			if len(out.Decisions) == 0 {
				t.Fatal("no decisions")
			}
		}},
		{"no-forwarding denies", "no-forwarding", abi.HookCredentials, abitest.CredentialsInput().AppendTo(nil), func(t *testing.T, b []byte) {
			var out abi.CredentialsOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if len(out.Decisions) != 2 || out.Decisions[1].Index != 1 || out.Decisions[1].Action != abi.CredentialDeny {
				t.Fatalf("output %+v", out)
			}
		}},
		{"block-tool denies delete_", "block-tool", abi.HookToolCall, abitest.ToolCallInput("delete_file", `{"path":"/"}`).AppendTo(nil), func(t *testing.T, b []byte) {
			var out abi.ToolCallOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if out.Action != abi.ToolCallDeny || out.Reason != "tool delete_file is blocked by policy" {
				t.Fatalf("output %+v", out)
			}
		}},
		{"block-tool allows read", "block-tool", abi.HookToolCall, abitest.ToolCallInput("read_file", `{}`).AppendTo(nil), func(t *testing.T, b []byte) {
			if len(b) != 0 {
				t.Fatalf("output %x, want empty (allow)", b)
			}
		}},
		{"malformed input reports error", "reviewer-no-stdio", abi.HookServers, []byte("WDNF\x01"), func(t *testing.T, b []byte) {
			var out abi.ServersOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if out.Error != "abi: malformed ServersInput: header (at byte 5): unexpected end of input" {
				t.Fatalf("error = %q", out.Error)
			}
		}},
		{"field read past the input reports error", "allow-hosts", abi.HookServers, badURLHost(), func(t *testing.T, b []byte) {
			var out abi.ServersOutput
			if err := out.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if out.Error != fmt.Sprintf("abi: malformed ServersInput: servers[0].url_host (at byte %d): reference past end of input", badURLHostSlot()) || len(out.Decisions) != 0 {
				t.Fatalf("output = %+v", out)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := newInstance(t, buildExample(t, tc.example))
			for i := 0; i < 3; i++ { // repeated calls reuse the guest buffers
				out, err := inst.call(ctx, tc.hook, tc.input)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, out)
			}
			if tc.name == "allow-hosts disables unknown hosts" {
				if len(inst.logs) == 0 || !strings.HasPrefix(inst.logs[0], "debug: allow-hosts: disabled ") {
					t.Fatalf("warden.log messages = %q", inst.logs)
				}
				// Once the host says it records info and up, the guest's
				// debug lines never reach it.
				if _, err := inst.mod.ExportedFunction(abi.ExportLogLevel).Call(ctx, uint64(abi.LogInfo)); err != nil {
					t.Fatal(err)
				}
				inst.logs = nil
				if _, err := inst.call(ctx, tc.hook, tc.input); err != nil {
					t.Fatal(err)
				}
				if len(inst.logs) != 0 {
					t.Fatalf("warden.log messages below the level: %q", inst.logs)
				}
			}
		})
	}
}

// BenchmarkWasmServers20 measures one servers-hook call (write input, call,
// read output view) with a 20-server input, interrupt checks on.
func BenchmarkWasmServers20(b *testing.B) {
	for _, name := range []string{"reviewer-no-stdio", "allow-hosts", "block-tool"} {
		b.Run(name, func(b *testing.B) {
			inst := newInstance(b, buildExample(b, name))
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			in := abitest.ServersInput20().AppendTo(nil)
			if _, err := inst.callView(ctx, abi.HookServers, in); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := inst.callView(ctx, abi.HookServers, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// badURLHost returns a servers input whose first server's url_host runs
// past the end: only a policy that reads it finds out.
func badURLHost() []byte {
	b := (&abi.ServersInput{Servers: []abi.Server{{Name: "a", Transport: "http", URL: "https://x.example.com/"}}}).AppendTo(nil)
	binary.LittleEndian.PutUint32(b[badURLHostSlot()+4:], 1<<20) // url_host: length 1 MiB
	return b
}

// badURLHostSlot is where badURLHost's first server's url_host slot is: its record, found
// through the root's servers slot (root record at 56, slot 2), plus the slot's offset.
func badURLHostSlot() int {
	b := (&abi.ServersInput{Servers: []abi.Server{{Name: "a", Transport: "http", URL: "https://x.example.com/"}}}).AppendTo(nil)
	return int(binary.LittleEndian.Uint32(b[56+16:])) + 96 // url_host is slot 12
}

// TestWasmCodecMatchesNative parses inputs (valid, relaid out, from the abi
// fuzz corpus, and randomly mutated) with the abi views compiled for wasm
// and natively, reads every field and re-encodes: results, parse errors and
// view panics must be identical. The wasm build uses the wasm-only loads of
// abi/load_wasm.go and the loop-free header check, which native tests never
// run in wasm.
func TestWasmCodecMatchesNative(t *testing.T) {
	ctx := context.Background()
	inst := newRawInstance(t, buildExample(t, "testdata/codeccheck"))
	alloc := inst.mod.ExportedFunction("alloc")
	roundtripFn := inst.mod.ExportedFunction("roundtrip")
	wasmRoundTrip := func(t *testing.T, h abi.Hook, in []byte) string {
		res, err := alloc.Call(ctx, uint64(len(in)))
		if err != nil {
			t.Fatal(err)
		}
		if !inst.mod.Memory().Write(uint32(res[0]), in) {
			t.Fatal("write out of range")
		}
		res, err = roundtripFn.Call(ctx, uint64(h), uint64(len(in)))
		if err != nil {
			t.Fatal(err)
		}
		b, ok := inst.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		if !ok {
			t.Fatal("read out of range")
		}
		return string(b)
	}
	var flat abi.Flat
	nativeRoundTrip := func(h abi.Hook, in []byte) string { return roundtrip.RoundTrip(&flat, h, in) }

	var bigger, smaller [abitest.NumTypes]uint32
	for ty, slots := range abitest.Schema {
		bigger[ty], smaller[ty] = uint32(8*len(slots)+16), uint32(8*(len(slots)-1))
	}
	relaid := func(h abi.Hook, b []byte) [][]byte {
		var out [][]byte
		for _, l := range []abitest.Layout{{Strides: bigger, ExtraTypes: 2, Fill: 0xff}, {Strides: smaller}, {Dedup: true, StringsFirst: true}} {
			r, err := abitest.Relayout(b, h, l)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	big := abitest.ServersInput20()
	big.Servers[3].URL = strings.Repeat("u", 200)
	corpus := map[abi.Hook][][]byte{
		abi.HookServers:      {abitest.ServersInput20().AppendTo(nil), big.AppendTo(nil), (&abi.ServersInput{}).AppendTo(nil), badURLHost()},
		abi.HookCredentials:  {abitest.CredentialsInput().AppendTo(nil)},
		abi.HookToolCall:     {abitest.ToolCallInput("delete_file", `{"path":"/"}`).AppendTo(nil)},
		abi.HookResourceRead: {abitest.ResourceReadInput("file:///etc/hosts").AppendTo(nil)},
		abi.HookPromptGet:    {abitest.PromptGetInput("greet", `{"name":"ada"}`).AppendTo(nil)},
		abi.HookToolResult:   {abitest.ToolResultInput("read_file", `{"path":"/"}`, `{"content":[{"type":"text","text":"hi"}]}`, true).AppendTo(nil)},
	}
	for h, seeds := range corpus {
		for _, b := range seeds[:1] {
			corpus[h] = append(corpus[h], relaid(h, b)...)
		}
	}
	fuzzDirs := map[abi.Hook]string{
		abi.HookServers:      "FuzzUnmarshalServersInput",
		abi.HookCredentials:  "FuzzUnmarshalCredentialsInput",
		abi.HookToolCall:     "FuzzUnmarshalToolCallInput",
		abi.HookResourceRead: "FuzzUnmarshalResourceReadInput",
		abi.HookPromptGet:    "FuzzUnmarshalPromptGetInput",
		abi.HookToolResult:   "FuzzUnmarshalToolResultInput",
	}
	for h, dir := range fuzzDirs {
		files, _ := filepath.Glob(filepath.Join("..", "..", "abi", "testdata", "fuzz", dir, "*"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			lit := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")")
			s, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			corpus[h] = append(corpus[h], []byte(s))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mutate := func(b []byte) []byte {
		b = slices.Clone(b)
		if len(b) == 0 {
			return b
		}
		switch rng.IntN(5) {
		case 0: // flip a byte
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case 1: // truncate
			b = b[:rng.IntN(len(b))]
		case 2: // insert a random byte
			i := rng.IntN(len(b) + 1)
			b = slices.Insert(b, i, byte(rng.IntN(256)))
		case 3: // a small or large value in a u32 of the records
			if len(b) > 64 {
				i := 56 + 4*rng.IntN((len(b)-60)/4)
				binary.LittleEndian.PutUint32(b[i:], []uint32{0, 1, 2, 7, 8, 100, 1 << 16, 1<<32 - 1}[rng.IntN(8)])
			}
		case 4: // a stride
			if len(b) > 56 {
				binary.LittleEndian.PutUint32(b[20+4*rng.IntN(9):], uint32(8*rng.IntN(20)))
			}
		}
		return b
	}
	for _, h := range abi.Hooks() {
		t.Run(h.String(), func(t *testing.T) {
			seeds := corpus[h]
			cases := slices.Clone(seeds)
			for i := 0; i < 4000; i++ {
				b := seeds[rng.IntN(len(seeds))]
				for k := rng.IntN(3); k >= 0; k-- {
					b = mutate(b)
				}
				cases = append(cases, b)
			}
			kinds := map[string]int{}
			for _, in := range cases {
				want := nativeRoundTrip(h, in)
				if got := wasmRoundTrip(t, h, in); got != want {
					t.Fatalf("input %x:\nwasm   %q\nnative %q", in, got, want)
				}
				k, _, _ := strings.Cut(want, ":")
				if k != "ERR" && k != "PANIC" {
					k = "ok"
				}
				kinds[k]++
			}
			t.Logf("%v", kinds)
			if kinds["ok"] < 100 || kinds["ERR"] < 100 || h == abi.HookServers && kinds["PANIC"] == 0 {
				t.Errorf("too few cases of a kind: %v", kinds)
			}
		})
	}
}
