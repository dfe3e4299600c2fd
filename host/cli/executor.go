package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"syscall"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/executor"
	"github.com/warden-mcp/warden/host/executor/protocol"
)

const executorUsage = "[--listen stdio|ws://127.0.0.1:PORT] [--token-env VAR] [--no-http-header-env-vars] [--no-processes] [--no-fs-read]"

// runExecutor is `warden executor`: the executor protocol (docs/executor-protocol.md) over
// WebSocket or stdio, serving HTTP requests from this machine's network, processes on
// this machine and reads of its files to the host that connects. Its home (--home,
// $WARDEN_HOME) is its own: its config.toml's [mcp_servers] are the servers it announces.
// It runs until SIGINT/SIGTERM (ctx) or, over stdio, until stdin closes.
//
// Over WebSocket the first line of stdout is the URL, ws://HOST:PORT/, and every upgrade
// must present the bearer token held in --token-env's variable: an executor runs
// processes, so it never listens without one.
func runExecutor(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "executor", executorUsage)
	listen := fl.String("listen", "stdio", "transport: stdio (one JSON-RPC message per line on stdin/stdout) or ws://HOST:PORT (WebSocket, loopback unless HOST says otherwise; prints ws://HOST:PORT/ as the first stdout line)")
	tokenEnv := fl.String("token-env", "", "environment `VAR` holding the bearer token (at least 16 bytes) every WebSocket upgrade must send; required with ws://. The token itself is never a flag")
	noHeaderEnv := fl.Bool("no-http-header-env-vars", false, "do not offer the httpHeaderEnvVars capability (headers resolved from this executor's environment)")
	noProc := fl.Bool("no-processes", false, "do not offer the processes capability (process/*)")
	noFS := fl.Bool("no-fs-read", false, "do not offer the fsRead capability (fs/read)")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fl.Usage()
		return errUsage
	}
	addr, err := executorAddr(*listen)
	if err != nil {
		fmt.Fprintf(g.io.Stderr, "warden executor: --listen: %v\n", err)
		return errUsage
	}
	var token string
	if addr != "" {
		if *tokenEnv == "" {
			fmt.Fprintf(g.io.Stderr, "warden executor: --listen %s: %v\n", *listen, executor.ErrTokenRequired)
			return errUsage
		}
		if token, err = tokenFromEnv(g, *tokenEnv); err != nil {
			return err
		}
	}

	home, cfgErr := config.LoadHome(g.home)
	if cfgErr != nil {
		g.log.Warn("configuration has errors; its valid part is used", "home", g.home, "error", cfgErr)
	}
	hostname, _ := os.Hostname()
	srv, err := executor.New(executor.Options{
		Logger: g.log,
		Capabilities: protocol.Capabilities{
			HTTPHeaderEnvVars: !*noHeaderEnv,
			Processes:         !*noProc,
			FSRead:            !*noFS,
		},
		MCPServers:      home.Config.Servers,
		EnvironmentInfo: protocol.EnvironmentInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Version: Version, Hostname: hostname},
		Getenv:          os.LookupEnv,
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	if addr == "" {
		fmt.Fprintln(g.io.Stderr, "warden: executor serving on stdio")
		err := srv.ServeStdio(ctx, g.io.Stdin, pollableStdout(g.io.Stdout))
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}
	ln, err := srv.Listen(ctx, addr, token)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintln(g.io.Stdout, ln.URL())
	g.log.Info("executor listening", "url", ln.URL())
	return ln.Serve(ctx)
}

// executorAddr parses --listen: "stdio" gives "", ws://HOST:PORT gives HOST:PORT.
func executorAddr(listen string) (string, error) {
	if listen == "stdio" {
		return "", nil
	}
	u, err := url.Parse(listen)
	if err != nil || u.Scheme != "ws" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("want stdio or ws://HOST:PORT, got %q", listen)
	}
	if u.Port() == "" {
		return "", fmt.Errorf("ws:// address %q has no port (use :0 for any free port)", listen)
	}
	return u.Host, nil
}

// pollableStdout switches standard output to non-blocking mode when it is a pipe or a
// socket, so that Go's poller writes it and a write deadline bounds a write to a host
// that stopped reading. Anything else is returned as it is.
func pollableStdout(w io.Writer) io.Writer {
	f, ok := w.(*os.File)
	if !ok || f != os.Stdout {
		return w
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return w
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return w
	}
	return os.NewFile(uintptr(fd), "/dev/stdout")
}
