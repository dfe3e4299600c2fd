// Package testbuild builds WebAssembly guests for tests: hand-written WAT
// modules (via wabt's wat2wasm), Go wasip1 reactor modules (via the go tool
// with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) and freestanding C
// modules (via clang --target=wasm32 and wasm-ld).
//
// Missing tools are a test failure, never a skip: CI must exercise the
// adversarial and non-Go guests. Run `make tools` to install wat2wasm,
// clang and wasm-ld.
//
// Builds are cached twice. On disk, a cache shared by every test process
// (see shared.go; <module root>/.cache/testbuild) holds each result under
// the sha256 of everything the build reads, so the package test binaries of
// one `go test ./...` build each guest and helper binary once between them,
// and a changed source, tool or flag is a new build. In the test process,
// results are memoized by source path, so many tests and benchmarks can ask
// for the same guest cheaply. Computing a key reads the sources in the test
// process, which is what makes go test's result cache see them: editing a
// guest reruns the tests that build it. The in-process memo is the only
// package-level state; it is a sync.Map of immutable build results.
//
// Binary builds the helper executables tests run as processes (the warden
// binary, the example MCP server) through the same shared cache.
package testbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// result is one memoized build: the output or the error that building it
// produced (a failed build fails every test that asks for it).
type result struct {
	once sync.Once
	out  []byte // the module bytes, or the executable's path
	err  error
}

// memo maps "kind:absolute path" to the build result.
var memo sync.Map // string -> *result

func cached(key string, build func() ([]byte, error)) ([]byte, error) {
	v, _ := memo.LoadOrStore(key, &result{})
	r := v.(*result)
	r.once.Do(func() { r.out, r.err = build() })
	return r.out, r.err
}

// sharedBytes returns the content of the shared cache entry (see shared).
func sharedBytes(key, name string, build func(out string) error) ([]byte, error) {
	path, _, err := shared(key, name, build)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
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
	wasm, err := cached("wat:"+abs, func() ([]byte, error) { return buildWAT(tool, abs) })
	if err != nil {
		tb.Fatalf("testbuild.WAT: %v", err)
	}
	return wasm
}

func buildWAT(tool, abs string) ([]byte, error) {
	k, sum := newKeyer("wat")
	if err := k.tool(tool); err != nil {
		return nil, err
	}
	if err := k.file(abs); err != nil {
		return nil, err
	}
	return sharedBytes(sum(), "guest.wasm", func(out string) error {
		cmd := exec.Command(tool, "--enable-all", "-o", out, abs)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", tool, abs, err, stderr.Bytes())
		}
		return nil
	})
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
// once per content key in the shared cache, whichever test process asks
// first.
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

// goGuestEnv and goGuestArgs are how a Go guest is built.
var (
	goGuestEnv  = []string{"GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0"}
	goGuestArgs = []string{"build", "-buildmode=c-shared"}
)

func buildGo(abs string) ([]byte, error) {
	key, err := goKey(abs, ".", goGuestEnv, goGuestArgs)
	if err != nil {
		return nil, err
	}
	return sharedBytes(key, filepath.Base(abs)+".wasm", func(out string) error {
		return goBuild(abs, ".", out, goGuestEnv, goGuestArgs)
	})
}

// goBuild runs `go <args> -o out pkg` in dir with env added.
func goBuild(dir, pkg, out string, env, args []string) error {
	gotool, err := goTool()
	if err != nil {
		return err
	}
	cmd := exec.Command(gotool, append(slices.Clone(args), "-o", out, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("(cd %s && %s go %s -o %s %s): %v\n%s", dir, strings.Join(env, " "), strings.Join(args, " "), out, pkg, err, stderr.Bytes())
	}
	return nil
}

// Binary builds the Go main package importPath for the machine running the
// tests (go build, no extra flags) and returns the path of the executable,
// named name, in the shared cache; the caller must not modify or remove it.
// It must be called with a working directory inside the module. It suits a
// TestMain, where there is no testing.TB; the build runs once per process
// and once per content key across processes.
func Binary(importPath, name string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	out, err := cached("bin:"+importPath+":"+name, func() ([]byte, error) {
		key, err := goKey(wd, importPath, nil, []string{"build"})
		if err != nil {
			return nil, err
		}
		path, _, err := shared(key, name, func(out string) error {
			return goBuild(wd, importPath, out, nil, []string{"build"})
		})
		return []byte(path), err
	})
	return string(out), err
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
// The build runs once per content key in the shared cache. The test fails
// (it does not skip) when clang or wasm-ld is missing, telling the reader to
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
	srcs, err := filepath.Glob(filepath.Join(abs, "*.c"))
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no *.c files in %s", abs)
	}
	hdrs, err := filepath.Glob(filepath.Join(abs, "*.h"))
	if err != nil {
		return nil, err
	}
	clang, err := findTool("clang", "clang")
	if err != nil {
		return nil, err
	}
	// clang runs wasm-ld itself; check for it up front so that a missing
	// linker gets the same clear message as a missing compiler.
	ld, err := findTool("wasm-ld", "lld")
	if err != nil {
		return nil, err
	}
	k, sum := newKeyer("c")
	k.add(CFlags...)
	for _, t := range []string{clang, ld} {
		if err := k.tool(t); err != nil {
			return nil, err
		}
	}
	for _, f := range append(srcs, hdrs...) {
		if err := k.file(f); err != nil {
			return nil, err
		}
	}
	return sharedBytes(sum(), filepath.Base(abs)+".wasm", func(out string) error {
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
			return fmt.Errorf("(cd %s && %s %s): %v\n%s", abs, clang, strings.Join(args, " "), err, stderr.Bytes())
		}
		return nil
	})
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
