package interrupt

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// gcChildEnv makes the test binary run TestGCWhileGuestRuns's scenario
// itself instead of supervising a child.
const gcChildEnv = "WARDEN_INTERRUPT_GC_CHILD"

// TestGCWhileGuestRuns: garbage collections complete while an instrumented
// guest runs a loop, a loop-free recursion, a loop of large memory.fill or
// a loop calling a huge straight-line function, and the guest is then
// interrupted. The Go runtime cannot preempt wazero's native code, so
// without $slow's periodic trips to Go the first stop-the-world
// would wait for the guest forever, and with it every goroutine, including
// the one that would set the flag. A deadlock cannot be detected from
// inside the process (timers stop too), so the scenario runs in a child
// test process that the parent kills after a generous timeout.
func TestGCWhileGuestRuns(t *testing.T) {
	if os.Getenv(gcChildEnv) == "1" {
		gcChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestGCWhileGuestRuns$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), gcChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child process hung (a garbage collection waited for the guest forever):\n%s", out)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestGCWhileGuestRuns") {
		t.Fatalf("the child did not run the scenario:\n%s", out)
	}
}

func gcChild(t *testing.T) {
	runaway := watFile("testdata/runaway.wat")
	for _, tt := range []struct {
		export string
		wasm   func(t *testing.T) []byte
	}{
		{"spin", runaway},       // a tight loop
		{"exp", runaway},        // calls, no loop
		{"spin_fill", bulkWasm}, // a loop of 16 MiB memory.fill
		{"spin_huge", bulkWasm}, // a loop calling a 700 KB straight-line function
	} {
		export := tt.export
		t.Run(export, func(t *testing.T) {
			rt := newRuntime(t, api.CoreFeaturesV2)
			mod, started := instantiateWithStarted(t, rt, tt.wasm(t))
			flag := flagOf(t, mod)
			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction(export).Call(context.Background())
				done <- err
			}()
			<-started
			for range 20 {
				runtime.GC()
			}
			flag.Set(1)
			if err := <-done; err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("%s returned %v, want an unreachable trap", export, err)
			}
		})
	}
}
