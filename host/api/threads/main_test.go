package threads_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/internal/testbuild"
	"github.com/warden-mcp/warden/host/internal/testmain"
	"github.com/warden-mcp/warden/host/thread"
)

var exampleBin string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, &exampleBin, nil)) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// writeFile writes a test file, creating its directories.
var writeFile = testmain.WriteFile

func stdioServer(name, extra string) string {
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\n%s\n", name, strconv.Quote(exampleBin), extra)
}

// guardWasm is the host's test policy (host/testdata/policies/guard), built for wasip1.
func guardWasm(t *testing.T) []byte {
	t.Helper()
	return testbuild.GoGuest(t, "../../testdata/policies/guard")
}

// newHost starts a real host over home, closing it at cleanup.
func newHost(t *testing.T, home string, o host.Options) (*host.Host, *testmain.SyncBuffer) {
	t.Helper()
	logs := &testmain.SyncBuffer{}
	o.Home = home
	o.Logger = hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Trace, Output: logs})
	h, err := host.New(ctx(t), o)
	if err != nil {
		t.Fatalf("host.New: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return h, logs
}

func start(t *testing.T, h *host.Host, p thread.StartParams) *thread.Thread {
	t.Helper()
	th, err := h.Threads().Start(ctx(t), p)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return th
}
