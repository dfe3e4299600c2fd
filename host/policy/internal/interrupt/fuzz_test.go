package interrupt

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// FuzzInstrument: Instrument never panics; its errors carry the package
// prefix; when it succeeds, its output parses again up to $slow's
// table.grow (which Instrument rejects in its input); and when it succeeds
// on a module that wazero (with every feature it implements) accepts,
// wazero accepts the output too.
//
//	go test -run '^$' -fuzz FuzzInstrument -fuzztime 60s ./host/policy/internal/interrupt/
func FuzzInstrument(f *testing.F) {
	for _, path := range []string{
		"testdata/features.wat", "testdata/runaway.wat", "testdata/tailcall.wat",
		"testdata/atomics.wat", "testdata/imports.wat", "testdata/env.wat",
		"testdata/tight.wat", "testdata/dispatch.wat",
	} {
		f.Add(testbuild.WAT(f, path))
	}
	f.Add(ehModule())
	f.Add(typedRefsModule())
	f.Add(paddedModule())
	f.Add(depthModule())

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(false).
		WithCoreFeatures(allFeatures))
	f.Cleanup(func() { _ = rt.Close(ctx) })

	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm, testExport)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "interrupt: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		if _, err := Instrument(out, "again"); err != nil && !strings.Contains(err.Error(), "table.grow is not allowed") {
			t.Fatalf("the output cannot be parsed again: %v", err)
		}
		if compile(ctx, rt, wasm) != nil {
			return // wazero rejects the input: nothing to compare
		}
		if err := compile(ctx, rt, out); err != nil {
			t.Fatalf("wazero accepts the input but not the output: %v", err)
		}
	})
}

// compile compiles wasm with rt and releases it. A panic in wazero (it has
// a few on malformed input) is returned as an error.
func compile(ctx context.Context, rt wazero.Runtime, wasm []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero panicked: %v", p)
		}
	}()
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return err
	}
	return cm.Close(ctx)
}
