// Package testbuild builds WebAssembly guests for tests: hand-written WAT
// modules (via wabt's wat2wasm), Go wasip1 reactor modules (via the go tool
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) and freestanding C
// modules (via clang --target=wasm32 and wasm-ld).
//
// Missing tools are a test failure, never a skip: CI must exercise the
// adversarial and non-Go guests. Run `make tools` to install wat2wasm,
// clang and wasm-ld.
//
// Builds are cached for the lifetime of the test process (keyed by the
// absolute source path), so many tests and benchmarks can ask for the same
// guest cheaply. A build reads its sources in the test process too (see
// recordInputs), so that go test's result cache sees them: editing a guest
// reruns the tests that build it. The cache is the only package-level
// state; it is guarded by a mutex and holds only immutable build results.
package testbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// result is one cached build: the module bytes or the error that building
// them produced (a failed build fails every test that asks for it).
type result struct {
	once sync.Once
	wasm []byte
	err  error
}

// cache maps "kind:absolute path" to the build result.
var cache sync.Map // string -> *result

func cached(key string, build func() ([]byte, error)) ([]byte, error) {
	v, _ := cache.LoadOrStore(key, &result{})
	r := v.(*result)
	r.once.Do(func() { r.wasm, r.err = build() })
	return r.wasm, r.err
}

// WAT compiles the WebAssembly text file at path with wat2wasm and returns
// the binary module. A relative path is resolved against the test's working
// directory (the package directory). The test fails (it does not skip) when
// wat2wasm is missing, telling the reader to run `make tools`.
func WAT(tb testing.TB, path string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		tb.Fatalf("testbuild.WAT(%q): %v", path, err)
	}
	tool, err := wat2wasm()
	if err != nil {
		tb.Fatalf("testbuild.WAT(%q): %v", path, err)
	}
	wasm, err := cached("wat:"+abs, func() ([]byte, error) {
		recordInputs(abs)
		dir, err := os.MkdirTemp("", "warden-testbuild-wat-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "guest.wasm")
		cmd := exec.Command(tool, "--enable-all", "-o", out, abs)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s %s: %v\n%s", tool, abs, err, stderr.Bytes())
		}
		return os.ReadFile(out)
	})
	if err != nil {
		tb.Fatalf("testbuild.WAT: %v", err)
	}
	return wasm
}

// wat2wasm locates the wat2wasm binary (PATH first, then /usr/bin).
func wat2wasm() (string, error) {
	if p, err := exec.LookPath("wat2wasm"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/wat2wasm"); err == nil {
		return "/usr/bin/wat2wasm", nil
	}
	return "", fmt.Errorf("wat2wasm (from wabt) not found in PATH: run `make tools` to install it")
}

// GoGuest builds the Go main package in dir as a wasip1 reactor module
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared) and returns its
// bytes. dir may be relative to the test's working directory. The build runs
// once per test process per directory; the go build cache makes repeated
// test runs fast too.
func GoGuest(tb testing.TB, dir string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatalf("testbuild.GoGuest(%q): %v", dir, err)
	}
	if _, err := os.Stat(abs); err != nil {
		tb.Fatalf("testbuild.GoGuest(%q): %v", dir, err)
	}
	wasm, err := cached("go:"+abs, func() ([]byte, error) { return buildGo(abs) })
	if err != nil {
		tb.Fatalf("testbuild.GoGuest: %v", err)
	}
	return wasm
}

func buildGo(abs string) ([]byte, error) {
	// The guest's own packages, and the SDK and ABI packages of this
	// module that every guest builds against.
	recordInputs(abs)
	if root := moduleRoot(abs); root != "" {
		recordInputs(filepath.Join(root, "go.mod"), filepath.Join(root, "sdk"), filepath.Join(root, "abi"))
	}
	gotool, err := goTool()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "warden-testbuild-go-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, filepath.Base(abs)+".wasm")
	cmd := exec.Command(gotool, "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared %s: %v\n%s", abs, err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

// goTool finds the go command on PATH (go test puts the toolchain that runs the tests
// first on PATH).
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("go command not found in PATH")
}

// CFlags are the clang flags C builds a guest with (before -o and the
// sources): a freestanding wasm32 reactor with no libc and no WASI, whose
// exports and imports are declared in the source with
// __attribute__((export_name)) and __attribute__((import_module,
// import_name)). -mbulk-memory lowers memcpy/memmove to memory.copy instead
// of libc calls. examples/conformance/c/build.sh uses the same flags.
var CFlags = []string{
	"--target=wasm32", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
	"-ffreestanding", "-nostdlib", "-mbulk-memory",
	"-Wl,--no-entry", "-Wl,--stack-first", "-Wl,--strip-debug",
}

// C compiles every *.c file in dir (headers are found next to them) into
// one freestanding wasm32 module with clang and wasm-ld, using [CFlags], and
// returns its bytes. dir may be relative to the test's working directory.
// The build runs once per test process per directory. The test fails (it
// does not skip) when clang or wasm-ld is missing, telling the reader to
// run `make tools`.
func C(tb testing.TB, dir string) []byte {
	tb.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatalf("testbuild.C(%q): %v", dir, err)
	}
	wasm, err := cached("c:"+abs, func() ([]byte, error) { return buildC(abs) })
	if err != nil {
		tb.Fatalf("testbuild.C: %v", err)
	}
	return wasm
}

func buildC(abs string) ([]byte, error) {
	recordInputs(abs)
	srcs, err := filepath.Glob(filepath.Join(abs, "*.c"))
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no *.c files in %s", abs)
	}
	clang, err := findTool("clang", "clang")
	if err != nil {
		return nil, err
	}
	// clang runs wasm-ld itself; check for it up front so that a missing
	// linker gets the same clear message as a missing compiler.
	if _, err := findTool("wasm-ld", "lld"); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "warden-testbuild-c-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, filepath.Base(abs)+".wasm")
	args := append(append([]string{}, CFlags...), "-o", out)
	for _, s := range srcs {
		args = append(args, filepath.Base(s))
	}
	cmd := exec.Command(clang, args...)
	cmd.Dir = abs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("(cd %s && %s %s): %v\n%s", abs, clang, strings.Join(args, " "), err, stderr.Bytes())
	}
	return os.ReadFile(out)
}

// findTool locates a binary (PATH first, then /usr/bin), or explains how to
// install the package that provides it.
func findTool(name, pkg string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p := filepath.Join("/usr/bin", name); fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("%s (from %s) not found in PATH: run `make tools` to install it", name, pkg)
}

// recordInputs reads the source files at paths (files, or directories
// walked recursively: .go, .wat, .c, .h, go.mod), for nothing but go test's
// result cache, which hashes the files a test opens and reuses a cached
// result only while they are unchanged. The compilers run in subprocesses,
// whose reads it cannot see.
func recordInputs(paths ...string) {
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			switch filepath.Ext(path) {
			case ".go", ".wat", ".c", ".h", ".mod":
				_, _ = os.ReadFile(path)
			}
			return nil
		})
	}
}

// moduleRoot returns the directory of the go.mod above dir, or "".
func moduleRoot(dir string) string {
	for d := dir; ; {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
