package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/frontdoor"
)

const serveUsage = "[--listen stdio|ws://127.0.0.1:PORT] [--mcp-listen 127.0.0.1:PORT] [--token-env VAR]"

// runServe is `warden serve`: the host API (JSON-RPC) over stdio or WebSocket and, with
// --mcp-listen, the MCP front door over streamable HTTP. It runs until SIGINT/SIGTERM (ctx)
// or, in stdio mode, until stdin closes.
func runServe(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "serve", serveUsage)
	listen := fl.String("listen", "stdio", "host API transport: stdio (one JSON-RPC message per line on stdin/stdout) or ws://HOST:PORT (WebSocket; loopback unless a token is set)")
	mcpListen := fl.String("mcp-listen", "", "also serve the MCP front door over streamable HTTP on HOST:PORT, every thread at /threads/{id}/mcp")
	tokenEnv := fl.String("token-env", "", "environment `VAR` holding the bearer token WebSocket and front-door clients must send (required for a non-loopback address); the token itself is never a flag")
	rest, err := parse(fl, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fl.Usage()
		return errUsage
	}
	wsAddr, err := apiAddr(*listen)
	if err != nil {
		fmt.Fprintf(g.io.Stderr, "warden serve: --listen: %v\n", err)
		return errUsage
	}
	token, err := tokenFromEnv(g, *tokenEnv)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, err := host.New(ctx, host.Options{Home: g.home, Logger: g.log})
	if err != nil {
		return err
	}
	defer h.Close()
	srv := api.New(h.NewBackend(host.BackendOptions{Version: Version}), api.Options{Logger: g.log, Token: token})

	var (
		wg     sync.WaitGroup
		fd     *frontdoor.FrontDoor
		mcpErr error
	)
	if *mcpListen != "" {
		fd = frontdoor.New(h.Threads(), frontdoor.Options{Logger: g.log, Version: Version})
		defer fd.Close()
		l, err := fd.Listen(*mcpListen, token)
		if err != nil {
			return fmt.Errorf("--mcp-listen: %w", err)
		}
		fmt.Fprintf(g.io.Stderr, "warden: MCP front door listening on %s\n", l.URL()+frontdoor.PathPattern)
		wg.Go(func() {
			if err := l.Serve(ctx); err != nil {
				mcpErr = err
				cancel() // the front door failed: stop the API too
			}
		})
	}

	var apiErr error
	if wsAddr == "" {
		fmt.Fprintln(g.io.Stderr, "warden: host API listening on stdio")
		apiErr = srv.ServeStdio(ctx, g.io.Stdin, g.io.Stdout)
		if errors.Is(apiErr, context.Canceled) {
			apiErr = nil
		}
	} else {
		apiErr = srv.ListenAndServe(ctx, wsAddr, func(url string) {
			fmt.Fprintf(g.io.Stderr, "warden: host API listening on %s\n", url)
		})
	}
	cancel()
	wg.Wait()
	return errors.Join(apiErr, mcpErr)
}

// apiAddr parses --listen: "stdio" gives "", ws://HOST:PORT gives HOST:PORT.
func apiAddr(listen string) (string, error) {
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

// tokenFromEnv reads the bearer token from the environment variable named by --token-env.
// The value is never printed.
func tokenFromEnv(g *global, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	token := g.io.Getenv(name)
	if token == "" {
		return "", fmt.Errorf("--token-env: environment variable %s is unset or empty", name)
	}
	return token, nil
}
