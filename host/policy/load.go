package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-mcp/warden/abi"
	"github.com/warden-mcp/warden/host/internal/safefile"
	"github.com/warden-mcp/warden/host/policy/internal/interrupt"
)

// MaxModuleBytes caps the size of a module read from LoadOptions.Path (the
// file must be a regular file; it is read once, so the bytes hashed against
// LoadOptions.SHA256 are the bytes compiled).
const MaxModuleBytes = 64 << 20

// LoadOptions says which module to load and how to run it.
type LoadOptions struct {
	// ID names the plugin in errors and logs (e.g. "acme@1"). Required.
	ID string
	// Path is the .wasm file to read. Exactly one of Path and Wasm is set.
	Path string
	// Wasm is the module bytes (used when Path is empty). The Runtime does
	// not retain the slice.
	Wasm []byte
	// SHA256 optionally pins the module: the lowercase or uppercase hex
	// sha256 of the bytes. A mismatch fails the load. Default "": no pin.
	SHA256 string
	// Limits override the Runtime's default limits field by field (zero
	// fields inherit).
	Limits Limits
	// MemoEntries overrides Config.MemoEntries for this module. Default 0:
	// inherit; negative: memoisation off.
	MemoEntries int
}

// Load reads, verifies, compiles (once per digest), validates and
// instantiates a policy module, and pre-warms its instance pool so that the
// request path never compiles or instantiates.
//
// Every failure is a *Error with Cause CauseLoad whose text names the plugin
// (and the file, import or export at fault); errors.Is distinguishes
// ErrDigestMismatch, ErrForbiddenImport, ErrBadExport, ErrCommandModule,
// ErrStartSection, ErrNoHooks, ErrABIVersion, ErrModuleLimit (a module complexity
// or memory footprint limit) and ErrCompileBudget (Config.CompileTimeout).
func (r *Runtime) Load(ctx context.Context, opts LoadOptions) (*Module, error) {
	m, err := r.load(ctx, opts)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &Error{PluginID: opts.ID, Cause: CauseLoad, Err: err}
	}
	return m, nil
}

func (r *Runtime) load(ctx context.Context, opts LoadOptions) (*Module, error) {
	if opts.ID == "" {
		return nil, errors.New("LoadOptions.ID is required")
	}
	wasm := opts.Wasm
	source := "module bytes"
	switch {
	case opts.Path != "" && opts.Wasm != nil:
		return nil, errors.New("set only one of LoadOptions.Path and LoadOptions.Wasm")
	case opts.Path != "":
		source = opts.Path
		var err error
		if wasm, err = safefile.ReadFile(opts.Path, MaxModuleBytes); err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
	case opts.Wasm == nil:
		return nil, errors.New("LoadOptions.Path or LoadOptions.Wasm is required")
	}
	limits := opts.Limits.merge(r.cfg.Limits)
	if err := limits.validate(); err != nil {
		return nil, err
	}

	digest := sha256.Sum256(wasm)
	if opts.SHA256 != "" {
		want, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(opts.SHA256)), "sha256:"))
		if err != nil || len(want) != sha256.Size {
			return nil, fmt.Errorf("sha256 pin %q for %s is not a 64-digit hex digest", opts.SHA256, source)
		}
		if !bytes.Equal(want, digest[:]) {
			return nil, detail(ErrDigestMismatch, "sha256 mismatch for %s: expected %x, actual %x", source, want, digest)
		}
	}

	// Cheap structural checks on the raw bytes first: a module with a start
	// section or importing anything but functions is rejected before it
	// costs a compilation.
	if err := scanSections(wasm); err != nil {
		return nil, err
	}

	// The module complexity limits and the static footprint, before the
	// compilation they protect. A module Scan finds malformed goes on to
	// Instrument, which reports the same error in context.
	fp, err := interrupt.Scan(wasm)
	if errors.Is(err, interrupt.ErrLimit) {
		return nil, limitDetail(err)
	}
	memLimit := uint64(limits.MemoryMB) << 20
	static := staticBytes(fp)
	if static > memLimit {
		return nil, detail(ErrModuleLimit, "tables (%d entries) and globals (%d) need %d KiB outside linear memory, over the %d MiB memory limit", fp.TableEntries, fp.Globals, (static+1023)>>10, limits.MemoryMB)
	}
	memLimit -= static

	cm, err := r.acquireCompiled(ctx, digest, wasm)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", source, err)
	}
	m, err := r.newModule(ctx, opts, limits, memLimit, digest, cm)
	if err != nil {
		r.releaseCompiled(ctx, digest)
		return nil, err
	}
	return m, nil
}

// signature renders a function type like "(i32,i32)->i64".
func signature(params, results []api.ValueType) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(api.ValueTypeName(p))
	}
	b.WriteString(")->(")
	for i, p := range results {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(api.ValueTypeName(p))
	}
	b.WriteByte(')')
	return b.String()
}

func defSignature(d api.FunctionDefinition) string {
	return signature(d.ParamTypes(), d.ResultTypes())
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// validateModule checks imports and exports of a compiled module against
// the ABI and returns the set of hook exports present (of every version:
// newModule checks them against the version the module declares). memLimit is what
// Limits.MemoryMB leaves for linear memory once the module's static
// footprint is charged (see Limits.MemoryMB).
func (r *Runtime) validateModule(cm wazero.CompiledModule, limits Limits, memLimit uint64) (present abi.Hook, err error) {
	logSig := signature([]api.ValueType{i32, i32, i32}, nil)
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case abi.ImportModule:
			if name != abi.ImportLog {
				return 0, detail(ErrForbiddenImport, "import %q.%q is not offered by the host (module %q offers only %q)", mod, name, abi.ImportModule, abi.ImportLog)
			}
			if got := defSignature(f); got != logSig {
				return 0, detail(ErrForbiddenImport, "import %q.%q has signature %s, expected %s", mod, name, got, logSig)
			}
		case abi.WASIModule:
			want, ok := r.wasiFuncs[name]
			if !ok {
				return 0, detail(ErrForbiddenImport, "import %q.%q is not a WASI preview1 function offered by the host", mod, name)
			}
			if got, exp := defSignature(f), defSignature(want); got != exp {
				return 0, detail(ErrForbiddenImport, "import %q.%q has signature %s, expected %s", mod, name, got, exp)
			}
		default:
			return 0, detail(ErrForbiddenImport, "import %q.%q is not allowed: a policy may import only %q.%q and %q functions", mod, name, abi.ImportModule, abi.ImportLog, abi.WASIModule)
		}
	}

	mem, ok := cm.ExportedMemories()[abi.ExportMemory]
	if !ok {
		return 0, detail(ErrBadExport, "missing export %q (memory)", abi.ExportMemory)
	}
	if limitPages := memLimit >> 16; uint64(mem.Min()) > limitPages {
		if memLimit < uint64(limits.MemoryMB)<<20 {
			return 0, detail(ErrModuleLimit, "memory %q needs %d pages (%d KiB) initially, over the %d KiB its %d MiB memory limit leaves after its tables and globals", abi.ExportMemory, mem.Min(), mem.Min()*64, memLimit>>10, limits.MemoryMB)
		}
		return 0, detail(ErrBadExport, "memory %q needs %d pages (%d KiB) initially, over the %d MiB limit", abi.ExportMemory, mem.Min(), mem.Min()*64, limits.MemoryMB)
	}

	fns := cm.ExportedFunctions()
	if _, ok := fns[abi.ExportStart]; ok {
		return 0, detail(ErrCommandModule, "exports %q: it is a WASI command, but policies must be reactors (build Go policies with -buildmode=c-shared)", abi.ExportStart)
	}
	type want struct {
		name     string
		params   []api.ValueType
		results  []api.ValueType
		required bool
	}
	wants := []want{
		{abi.ExportABIVersion, nil, []api.ValueType{i32}, true},
		{abi.ExportAlloc, []api.ValueType{i32}, []api.ValueType{i32}, true},
		{abi.ExportHooks, nil, []api.ValueType{i32}, false},
		{abi.ExportLogLevel, []api.ValueType{i32}, nil, false},
		{abi.ExportHostFeatures, []api.ValueType{i32}, nil, false},
		{abi.ExportInitialize, nil, nil, false},
	}
	for _, h := range abi.Hooks() {
		wants = append(wants, want{h.Export(), []api.ValueType{i32, i32}, []api.ValueType{i64}, false})
	}
	for _, w := range wants {
		d, ok := fns[w.name]
		if !ok {
			if w.required {
				return 0, detail(ErrBadExport, "missing export %q, expected signature %s", w.name, signature(w.params, w.results))
			}
			continue
		}
		if got, exp := defSignature(d), signature(w.params, w.results); got != exp {
			return 0, detail(ErrBadExport, "export %q has signature %s, expected %s", w.name, got, exp)
		}
	}
	for _, h := range abi.Hooks() {
		if _, ok := fns[h.Export()]; ok {
			present |= h
		}
	}
	if present == 0 {
		return 0, detail(ErrNoHooks, "exports no hook (one of %s is required)", exportNames(abi.AllHooks))
	}
	return present, nil
}

// scanSections walks the sections of a wasm binary before it is compiled
// and rejects what the compiled module would not let the host see in time:
//
//   - a start section (id 8): its function would run inside instantiation,
//     before the instance's interrupt flag exists, so no deadline could stop
//     it. Policies are reactors; initialization belongs in _initialize, which
//     the host runs under Limits.InitTimeout;
//   - any non-function import (memory, table, global, tag), which wazero's
//     public API does not list. Function imports are checked after
//     compilation, with their signatures.
//
// A binary this scanner cannot parse is left to the compiler, which reports
// the precise decoding error: a section whose framing is unreadable here is
// invalid for the compiler too, so nothing can hide behind it.
func scanSections(wasm []byte) error {
	const header = "\x00asm\x01\x00\x00\x00"
	if len(wasm) < 8 || string(wasm[:8]) != header {
		return nil // not a wasm 1.0 binary: the compiler says why
	}
	p := wasm[8:]
	for len(p) > 0 {
		id := p[0]
		size, n := uleb(p[1:])
		if n == 0 || uint64(len(p)-1-n) < size {
			return nil
		}
		body := p[1+n : 1+n+int(size)]
		p = p[1+n+int(size):]
		switch id {
		case 2: // import
			if err := scanImports(body); err != nil {
				return err
			}
		case 8: // start
			fn, n := uleb(body)
			if n == 0 {
				return detail(ErrStartSection, "the module has a start section: policies are reactors and run no code at instantiation (initialize in %q, which the host runs under the init timeout)", abi.ExportInitialize)
			}
			return detail(ErrStartSection, "the module has a start section (function %d): policies are reactors and run no code at instantiation (initialize in %q, which the host runs under the init timeout)", fn, abi.ExportInitialize)
		}
	}
	return nil
}

// scanImports checks the body of an import section (see scanSections).
func scanImports(body []byte) error {
	count, n := uleb(body)
	if n == 0 {
		return nil
	}
	body = body[n:]
	for i := uint64(0); i < count; i++ {
		var mod, name string
		var ok bool
		if mod, body, ok = wasmName(body); !ok {
			return nil
		}
		if name, body, ok = wasmName(body); !ok || len(body) == 0 {
			return nil
		}
		kind := body[0]
		body = body[1:]
		if kind != 0 { // 0 = function
			kinds := map[byte]string{1: "table", 2: "memory", 3: "global", 4: "tag"}
			k := kinds[kind]
			if k == "" {
				k = fmt.Sprintf("kind %#x", kind)
			}
			return detail(ErrForbiddenImport, "import %q.%q is a %s: a policy may import only functions (%q.%q and %q)", mod, name, k, abi.ImportModule, abi.ImportLog, abi.WASIModule)
		}
		if _, n = uleb(body); n == 0 {
			return nil
		}
		body = body[n:]
	}
	return nil
}

// uleb decodes an unsigned LEB128 value, returning the bytes consumed (0 on
// error).
func uleb(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func wasmName(b []byte) (string, []byte, bool) {
	l, n := uleb(b)
	if n == 0 || uint64(len(b)-n) < l {
		return "", nil, false
	}
	return string(b[n : n+int(l)]), b[n+int(l):], true
}
