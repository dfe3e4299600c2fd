package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/internal/testbuild"
)

// hostileModules are policy modules built to hurt the host, one per finding of the
// hostile-input review, each generated here. want is a word the server's toolsError must
// hold once the module was refused or stopped.
func hostileModules(t *testing.T) []struct {
	name, want string
	wasm       []byte
} {
	t.Helper()
	dir := t.TempDir()
	wat := func(name, src string) []byte {
		p := filepath.Join(dir, name+".wat")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return testbuild.WAT(t, p)
	}
	const abi = `
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "warden_servers") (param i32 i32) (result i64) (i64.const 0))`
	return []struct {
		name, want string
		wasm       []byte
	}{
		// A start section runs inside instantiation, before any deadline exists.
		{"start-loop", "start", wat("start", `(module
  (memory (export "memory") 1)
  (func $spin (loop $l (br $l)))
  (start $spin)`+abi+`)`)},
		// One fd_write of 10⁶ iovecs, each covering all of memory, in a loop, in _initialize.
		{"fdwrite-init", "timed out", wat("fdwrite", `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 128)
  (func (export "_initialize") (local $i i32)
    (loop $fill
      (i32.store (i32.mul (local.get $i) (i32.const 8)) (i32.const 0))
      (i32.store (i32.add (i32.mul (local.get $i) (i32.const 8)) (i32.const 4)) (i32.const 8388608))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 1000000))))
    (loop $spin
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1000000) (i32.const 8388600)))
      (br $spin)))`+abi+`)`)},
		// Two tables of 2^27 entries: 2 GiB of host memory, declared in a few bytes.
		{"big-tables", "table", wat("tables", `(module
  (memory (export "memory") 1)
  (table 134217728 funcref)
  (table 134217728 funcref)`+abi+`)`)},
		// Five million globals.
		{"many-globals", "global", manyGlobals(5_000_000)},
		// 30 KB of nested loops: a cold compile of tens of seconds.
		{"nested-loops", "nesting", nestedLoops(15_000)},
	}
}

// manyGlobals is a module of n (i32.const 0) globals and nothing else.
func manyGlobals(n int) []byte {
	var body []byte
	body = appendULEB(body, uint64(n))
	for range n {
		body = append(body, 0x7f, 0x00, 0x41, 0x00, 0x0b) // i32, immutable, i32.const 0, end
	}
	return module(section(6, body))
}

// nestedLoops is a module whose one function nests depth loops.
func nestedLoops(depth int) []byte {
	types := section(1, []byte{1, 0x60, 0, 0})                      // one type: () -> ()
	funcs := section(3, []byte{1, 0})                               // one function of type 0
	code := []byte{0}                                               // no locals
	code = append(code, bytes.Repeat([]byte{0x03, 0x40}, depth)...) // loop (empty block type)
	code = append(code, bytes.Repeat([]byte{0x0b}, depth+1)...)     // the loops' ends, the body's
	body := appendULEB([]byte{1}, uint64(len(code)))
	return module(types, funcs, section(10, append(body, code...)))
}

func module(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

func section(id byte, body []byte) []byte {
	return append(appendULEB([]byte{id}, uint64(len(body))), body...)
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// TestHostileModulesInPluginsDir: with a plugins dir full of hostile policy modules, `warden
// serve` answers initialize, and a thread that selects none of them starts, within a second;
// a thread that selects one gets its server disabled with the reason within the load's
// budget; and SIGTERM stops the process within 2 s.
func TestHostileModulesInPluginsDir(t *testing.T) {
	plugins := t.TempDir()
	mods := hostileModules(t)
	for _, m := range mods {
		root := filepath.Join(plugins, m.name)
		for name, data := range map[string][]byte{
			".codex-plugin/plugin.json": fmt.Appendf(nil, `{"name":%q,"version":"1"}`, m.name),
			".mcp.json":                 fmt.Appendf(nil, `{"mcpServers":{"%s_srv":{"command":%q}}}`, strings.ReplaceAll(m.name, "-", "_"), exampleBin),
			"policy.wasm":               m.wasm,
		} {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	home := newHome(t, fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", plugins)+serverTOML("host_srv", exampleBin, nil, ""))

	cmd := exec.Command(wardenBin(t), "--log-level", "debug", "serve")
	cmd.Env = append(os.Environ(), "WARDEN_HOME="+home)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the process has been waited for
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("warden serve stderr:\n%s", stderr.String())
		}
	})
	responses := make(chan map[string]json.RawMessage, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] != nil {
				responses <- m
			}
		}
		close(responses)
	}()
	id := 0
	call := func(method string, params any, within time.Duration) json.RawMessage {
		t.Helper()
		id++
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		began := time.Now()
		if _, err := stdin.Write(append(msg, '\n')); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		select {
		case m, ok := <-responses:
			if !ok {
				t.Fatalf("%s: warden serve closed stdout", method)
			}
			if d := time.Since(began); d > within {
				t.Errorf("%s answered after %v, want within %v", method, d, within)
			}
			if m["error"] != nil {
				t.Fatalf("%s: error %s", method, m["error"])
			}
			return m["result"]
		case <-time.After(within + 30*time.Second): // a failure bound: the check above measures
			t.Fatalf("%s: no answer within %v", method, within+30*time.Second)
		}
		return nil
	}
	type serverStatus struct {
		Name       string  `json:"name"`
		ToolsError *string `json:"toolsError"`
	}
	statusOf := func(thread json.RawMessage, within time.Duration) map[string]serverStatus {
		t.Helper()
		var th struct {
			Thread struct{ ID string } `json:"thread"`
		}
		if err := json.Unmarshal(thread, &th); err != nil {
			t.Fatal(err)
		}
		var page struct {
			Data []serverStatus `json:"data"`
		}
		if err := json.Unmarshal(call("mcpServerStatus/list", map[string]any{"threadId": th.Thread.ID}, within), &page); err != nil {
			t.Fatal(err)
		}
		out := map[string]serverStatus{}
		for _, s := range page.Data {
			out[s.Name] = s
		}
		return out
	}

	call("initialize", map[string]any{"clientInfo": map[string]string{"name": "hostile-e2e", "version": "1"}}, time.Second)
	plain := call("thread/start", map[string]any{}, time.Second)
	if s := statusOf(plain, time.Second)["host_srv"]; s.ToolsError != nil {
		t.Errorf("host_srv: %s, want ready", *s.ToolsError)
	}
	for _, m := range mods {
		sel := map[string]any{"id": m.name + "@1", "location": map[string]string{"type": "local", "path": filepath.Join(plugins, m.name)}}
		// A thread that selects the plugin waits for its policy: refused at once, or
		// stopped within twice its budget (the 2 s init timeout, here).
		th := call("thread/start", map[string]any{"selectedCapabilityRoots": []any{sel}}, 4*time.Second)
		srv := strings.ReplaceAll(m.name, "-", "_") + "_srv"
		s := statusOf(th, time.Second)[srv]
		if s.ToolsError == nil || !strings.Contains(*s.ToolsError, m.name+"@1") || !strings.Contains(strings.ToLower(*s.ToolsError), m.want) {
			t.Errorf("%s: toolsError %v, want one naming the plugin and %q", srv, deref(s.ToolsError), m.want)
		}
	}
	// The host still answers.
	if s := statusOf(plain, time.Second)["host_srv"]; s.ToolsError != nil {
		t.Errorf("host_srv after the hostile threads: %s, want ready", *s.ToolsError)
	}

	began := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("warden serve exited %v after SIGTERM, want within 2s", d)
		}
		// And gracefully: the stdio transport stopped, not the signal handler's hard exit.
		if strings.Contains(stderr.String(), "exiting now") {
			t.Errorf("warden serve needed the hard exit to stop:\n%s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("warden serve did not exit within 30s of SIGTERM")
	}
}
