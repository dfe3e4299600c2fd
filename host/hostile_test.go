package host_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/thread"
)

// A plugin whose policy takes as long to load as the runtime allows (its _initialize never
// returns, so the load ends at the init timeout, 2 s) holds up nothing but the threads that
// select it: the host starts, and a thread of other servers starts and is ready, within a
// second; a thread that selects the plugin waits for the load and fails closed with its
// reason.
func TestSlowPolicyLoadHoldsUpOnlyItsThreads(t *testing.T) {
	home := t.TempDir()
	plugins := filepath.Join(home, "plugins")
	root := filepath.Join(plugins, "slow")
	writeFile(t, filepath.Join(root, ".codex-plugin", "plugin.json"), `{"name":"slow","version":"1"}`)
	writeFile(t, filepath.Join(root, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{"slow_srv":{"command":%q}}}`, exampleBin))
	writeFile(t, filepath.Join(root, "policy.wasm"), string(testbuild.WAT(t, "policy/testdata/guests/init_loops.wat")))
	writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[plugins]\ndirs = [%q]\n\n", plugins)+stdioServer("host_srv", ""))

	began := time.Now()
	h, _ := newHost(t, home, host.Options{PolicyCacheDir: "-"})
	other := start(t, h, thread.StartParams{})
	if s := status(t, other)["host_srv"]; s.Status != thread.StateReady {
		t.Fatalf("host_srv = %+v, want ready", s)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("host start + a thread without the slow plugin took %v, want under 1s: the slow load held them up", d)
	}

	began = time.Now()
	th := start(t, h, thread.StartParams{SelectedRoots: []thread.SelectedRoot{{ID: "slow@1"}}})
	st := status(t, th)
	if s := st["slow_srv"]; s.Status != thread.StateDisabled || !strings.Contains(s.ToolsError, "_initialize") || !strings.Contains(s.ToolsError, "timed out") {
		t.Errorf("slow_srv = %+v, want disabled by the policy's load failure (_initialize timed out)", s)
	}
	if s := st["host_srv"]; s.Status != thread.StateReady {
		t.Errorf("host_srv = %+v, want ready", s)
	}
	if d := time.Since(began); d > 4*time.Second {
		t.Errorf("the selecting thread took %v, want at most 2× the 2s init timeout", d)
	}
}

// An operator policy path that is a device or a FIFO is refused when it is read (it was read
// with no cap, and a FIFO blocked the read forever): every server fails closed, naming the
// file and the cause, and the host keeps answering.
func TestOperatorPolicyNotARegularFile(t *testing.T) {
	home := t.TempDir()
	fifo := filepath.Join(home, "policies", "fifo.wasm")
	writeFile(t, filepath.Join(home, "policies", "keep"), "")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", fifo} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			writeFile(t, filepath.Join(home, "config.toml"), fmt.Sprintf("[[policies]]\npath = %q\n\n", path)+stdioServer("host_srv", ""))
			h, _ := newHost(t, home, host.Options{PolicyCacheDir: "-"})
			th := start(t, h, thread.StartParams{})
			s := status(t, th)["host_srv"]
			if s.Status != thread.StateDisabled || !strings.Contains(s.ToolsError, path) || !strings.Contains(s.ToolsError, "not a regular file") {
				t.Errorf("host_srv = %+v, want disabled naming %s, not a regular file", s, path)
			}
		})
	}
}
