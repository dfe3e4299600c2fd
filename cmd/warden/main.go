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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio())
	stop()
	os.Exit(code)
}
