// Package exectest runs a real warden executor server in the test's process, for tests of
// the host that need an executor they can stop and start again on the same address.
//
//	stop := exectest.Serve(t, "127.0.0.1:7777", token)
//	defer stop()
package exectest

import (
	"context"
	"testing"
	"time"

	"github.com/warden-mcp/warden/host/executor"
)

// Serve runs an executor server (default options) on addr, guarded by token, until the
// returned stop is called (it closes its connections and waits for it; calling it again
// is a no-op). A port that a previous executor just released is retried for up to 10 s.
func Serve(tb testing.TB, addr, token string) (stop func()) {
	tb.Helper()
	srv, err := executor.New(executor.Options{})
	if err != nil {
		tb.Fatalf("executor.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ln *executor.Listener
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ln, err = srv.Listen(ctx, addr, token); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			tb.Fatalf("executor listen %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ln.Serve(ctx)
	}()
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		_ = srv.Close()
	}
}
