package interrupt

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-mcp/warden/abi/abitest"
	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// guest is a real policy module: the example Go policies and the
// conformance guests.
type guest struct {
	name string
	wasm func(t testing.TB) []byte
}

func guests() []guest {
	goGuest := func(dir string) func(t testing.TB) []byte {
		return func(t testing.TB) []byte { return testbuild.GoGuest(t, dir) }
	}
	var gs []guest
	for _, name := range []string{"allow-hosts", "block-tool", "no-forwarding", "reviewer-no-stdio"} {
		gs = append(gs, guest{name, goGuest(filepath.Join("..", "..", "..", "..", "examples", "plugins", name))})
	}
	gs = append(gs,
		guest{"conformance-go", goGuest(filepath.Join("..", "..", "..", "..", "examples", "conformance", "go"))},
		guest{"conformance-c", func(t testing.TB) []byte {
			return testbuild.C(t, filepath.Join("..", "..", "..", "..", "examples", "conformance", "c"))
		}},
	)
	return gs
}

// addPolicyImports instantiates in rt what policy modules import: WASI and
// a warden.log stub.
func addPolicyImports(t testing.TB, rt wazero.Runtime) {
	t.Helper()
	ctx := context.Background()
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if _, err := rt.NewHostModuleBuilder("warden").
		NewFunctionBuilder().WithFunc(func(context.Context, uint32, uint32, uint32) {}).Export("log").
		Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
}

// instantiateGuest instantiates a policy module in rt (which has
// addPolicyImports) the way warden does: _initialize when exported.
func instantiateGuest(t testing.TB, rt wazero.Runtime, wasm []byte, name string) api.Module {
	t.Helper()
	ctx := context.Background()
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatalf("%s: compile: %v", name, err)
	}
	cfg := wazero.NewModuleConfig().WithName(name).WithStartFunctions()
	if _, ok := cm.ExportedFunctions()["_initialize"]; ok {
		cfg = cfg.WithStartFunctions("_initialize")
	}
	mod, err := rt.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		t.Fatalf("%s: instantiate: %v", name, err)
	}
	return mod
}

// callHook passes in to a hook export the ABI way (warden_alloc, write,
// call) and returns a copy of the output bytes.
func callHook(t *testing.T, mod api.Module, hook string, in []byte) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	res, err := mod.ExportedFunction("warden_alloc").Call(ctx, uint64(len(in)))
	if err != nil {
		return nil, err
	}
	ptr := uint32(res[0])
	if !mod.Memory().Write(ptr, in) {
		t.Fatalf("warden_alloc returned %#x, outside memory", ptr)
	}
	f := mod.ExportedFunction(hook)
	if f == nil {
		return nil, nil
	}
	if res, err = f.Call(ctx, uint64(ptr), uint64(len(in))); err != nil {
		return nil, err
	}
	out, ok := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok {
		t.Fatalf("%s returned %#x, outside memory", hook, res[0])
	}
	return bytes.Clone(out), nil
}

// TestGuests instruments every example policy and conformance guest, runs
// the original and the instrumented module side by side and compares their
// answers: warden_abi_version, warden_hooks and each hook on the standard
// test inputs. Then it sets the flag and checks that calls trap within the
// budget.
func TestGuests(t *testing.T) {
	inputs := []struct {
		hook string
		in   []byte
	}{
		{"warden_servers", abitest.ServersInput20().AppendTo(nil)},
		{"warden_credentials", abitest.CredentialsInput().AppendTo(nil)},
		{"warden_tool_call", abitest.ToolCallInput("write_file", `{"path":"/tmp/x","content":"hello"}`).AppendTo(nil)},
	}
	for _, g := range guests() {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			wasm := g.wasm(t)
			rt := newRuntime(t, api.CoreFeaturesV2)
			addPolicyImports(t, rt)
			orig := instantiateGuest(t, rt, wasm, "orig")
			inst := instantiateGuest(t, rt, mustInstrument(t, wasm), "inst")
			flag := flagOf(t, inst)

			for _, name := range []string{"warden_abi_version", "warden_hooks"} {
				f := orig.ExportedFunction(name)
				if f == nil {
					if name == "warden_abi_version" {
						t.Fatalf("no %s export", name)
					}
					continue
				}
				want, werr := f.Call(ctx)
				got, gerr := inst.ExportedFunction(name).Call(ctx)
				if werr != nil || gerr != nil || got[0] != want[0] {
					t.Fatalf("%s: instrumented = %v, %v; original = %v, %v", name, got, gerr, want, werr)
				}
			}
			for _, in := range inputs {
				want, werr := callHook(t, orig, in.hook, in.in)
				got, gerr := callHook(t, inst, in.hook, in.in)
				if firstLine(werr) != firstLine(gerr) || !bytes.Equal(got, want) {
					t.Fatalf("%s: instrumented = %x, %v; original = %x, %v", in.hook, got, gerr, want, werr)
				}
			}

			flag.Set(1)
			abiVersion := inst.ExportedFunction("warden_abi_version")
			n := trapsWithin(t, "warden_abi_version", func() error { _, err := abiVersion.Call(ctx); return err })
			t.Logf("warden_abi_version trapped at call %d after the flag was set", n)
		})
	}
}
