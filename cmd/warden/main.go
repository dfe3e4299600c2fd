// Command warden is a host for MCP servers whose behaviour is decided by sandboxed
// WebAssembly policy plugins. It only wires the process to host/cli; run `warden help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/warden-mcp/warden/host/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go cli.StopOnSignal(sigs, cancel, os.Stderr, os.Exit)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio())
	cancel()
	os.Exit(code)
}
