package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sync"

	"github.com/warden-mcp/warden/host"
	"github.com/warden-mcp/warden/host/api"
	"github.com/warden-mcp/warden/host/frontdoor"
	"github.com/warden-mcp/warden/host/internal/netguard"
	"github.com/warden-mcp/warden/host/ui"
)

const serveUsage = "[--listen stdio|ws://127.0.0.1:PORT|unix:///PATH] [--mcp-listen 127.0.0.1:PORT|unix:///PATH] [--token-env VAR | --no-auth] [--tool-names prefixed|bare] [--ui-listen 127.0.0.1:PORT|unix:///PATH]"

// ListenTokenFile is the file in the warden home where `warden serve` writes the bearer
// token it generates for its TCP listeners (mode 0600). It holds the token of the most
// recent serve that generated one.
const ListenTokenFile = "listen.token"

// runServe is `warden serve`: the host API (JSON-RPC) over stdio, WebSocket or a Unix
// socket and, with --mcp-listen, the MCP front door over streamable HTTP. It runs until
// SIGINT/SIGTERM (ctx) or, in stdio mode, until stdin closes.
//
// Every TCP listener requires a bearer token: --token-env names the variable holding one;
// without it warden generates one (loopback addresses only), writes it to
// <home>/listen.token (0600) and names that file on stderr. --no-auth opts out, on loopback
// addresses only. A unix:// socket is created 0600 and needs no token.
func runServe(ctx context.Context, g *global, args []string) error {
	fl := subFlags(g, "serve", serveUsage)
	listen := fl.String("listen", "stdio", "host API transport: stdio (one JSON-RPC message per line on stdin/stdout), ws://HOST:PORT (WebSocket, bearer token required) or unix:///PATH (WebSocket over a Unix socket created 0600)")
	uiListen := fl.String("ui-listen", "", "also serve the operator's status page and /metrics over HTTP on HOST:PORT (bearer token required; a browser opens /?token=TOKEN once) or unix:///PATH (a Unix socket created 0600)")
	mcpListen := fl.String("mcp-listen", "", "also serve the MCP front door over streamable HTTP on HOST:PORT (bearer token required) or unix:///PATH (a Unix socket created 0600), every thread at /threads/{id}/mcp")
	tokenEnv := fl.String("token-env", "", "environment `VAR` holding the bearer token (at least 16 bytes) WebSocket and front-door clients must send; without it a token is generated into <home>/"+ListenTokenFile+" for loopback addresses. The token itself is never a flag")
	noAuth := fl.Bool("no-auth", false, "serve TCP listeners without a bearer token (loopback addresses only): any local user can then drive warden")
	toolNames := fl.String("tool-names", "", toolNamesUsage+" (with --mcp-listen)")
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
	if err := mcpAddrValid(*mcpListen); err != nil {
		fmt.Fprintf(g.io.Stderr, "warden serve: --mcp-listen: %v\n", err)
		return errUsage
	}
	if err := mcpAddrValid(*uiListen); err != nil {
		fmt.Fprintf(g.io.Stderr, "warden serve: --ui-listen: %v\n", err)
		return errUsage
	}
	if err := checkToolNames(*toolNames); err != nil {
		fmt.Fprintf(g.io.Stderr, "warden serve: %v\n", err)
		return errUsage
	}
	if *noAuth && *tokenEnv != "" {
		fmt.Fprintln(g.io.Stderr, "warden serve: --no-auth and --token-env exclude each other")
		return errUsage
	}
	token, err := tokenFromEnv(g, *tokenEnv)
	if err != nil {
		return err
	}
	generated := false
	if token == "" && !*noAuth {
		if generated, err = needGeneratedToken(map[string]string{"--listen": wsAddr, "--mcp-listen": *mcpListen, "--ui-listen": *uiListen}); err != nil {
			return err
		}
		if generated {
			if token, err = netguard.GenerateToken(); err != nil {
				return err
			}
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	warnEmptyHome(g, nil)
	h, err := host.New(ctx, host.Options{Home: g.home, Logger: g.log})
	if err != nil {
		return err
	}
	defer h.Close()
	// A generated token guards the TCP listeners only; a Unix socket's 0600 mode is its
	// authentication (a token from --token-env is checked on every listener).
	tokenFor := func(addr string) string {
		if generated && apiUnix(addr) {
			return ""
		}
		return token
	}
	srv := api.New(h.NewBackend(host.BackendOptions{Version: Version}), api.Options{Logger: g.log, Token: tokenFor(wsAddr), NoAuth: *noAuth})

	// Bind everything before the token file is written and announced, so that a failed
	// bind leaves no token behind.
	var (
		apiLn *api.Listener
		mcpLn *frontdoor.Listener
		fd    *frontdoor.FrontDoor
		uiLn  *ui.Listener
	)
	if wsAddr != "" {
		if apiLn, err = srv.Listen(wsAddr); err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		defer apiLn.Close()
	}
	if *mcpListen != "" {
		names, err := resolveToolNames(*toolNames, homeConfig(h))
		if err != nil {
			return err
		}
		fd = frontdoor.New(h.Threads(), frontdoor.Options{Logger: g.log, Version: Version, ToolNames: names})
		defer fd.Close()
		if mcpLn, err = fd.Listen(*mcpListen, frontdoor.ListenOptions{Token: tokenFor(*mcpListen), NoAuth: *noAuth}); err != nil {
			return fmt.Errorf("--mcp-listen: %w", err)
		}
		defer mcpLn.Close()
	}
	if *uiListen != "" {
		page, err := ui.New(h, ui.Options{Token: tokenFor(*uiListen), NoAuth: *noAuth, Logger: g.log, Version: Version})
		if err != nil {
			return err
		}
		if uiLn, err = page.Listen(*uiListen); err != nil {
			return fmt.Errorf("--ui-listen: %w", err)
		}
		defer uiLn.Close()
	}
	if generated {
		path := filepath.Join(g.home, ListenTokenFile)
		if err := netguard.WriteToken(path, token); err != nil {
			return err
		}
		fmt.Fprintf(g.io.Stderr, "warden: bearer token for the listeners written to %s (mode 0600); clients send \"Authorization: Bearer <token>\"\n", path)
	}
	if *noAuth && (apiLn != nil && !apiUnix(wsAddr) || mcpLn != nil && !apiUnix(*mcpListen) || uiLn != nil && !apiUnix(*uiListen)) {
		fmt.Fprintln(g.io.Stderr, "warden: --no-auth: any local user can drive the TCP listeners")
	}

	var (
		wg     sync.WaitGroup
		mcpErr error
		uiErr  error
	)
	if uiLn != nil {
		if tokenFor(*uiListen) != "" {
			// Never the token itself: where to read it.
			fmt.Fprintf(g.io.Stderr, "warden: status page on %s (open %s/?token=TOKEN, TOKEN from %s)\n", uiLn.URL(), uiLn.URL(), tokenSource(g, *tokenEnv))
		} else {
			fmt.Fprintf(g.io.Stderr, "warden: status page on %s\n", uiLn.URL())
		}
		wg.Go(func() {
			if err := uiLn.Serve(ctx); err != nil {
				uiErr = err
				cancel() // the status page failed: stop the rest too
			}
		})
	}
	if mcpLn != nil {
		fmt.Fprintf(g.io.Stderr, "warden: MCP front door listening on %s\n", mcpLn.URL()+frontdoor.PathPattern)
		wg.Go(func() {
			if err := mcpLn.Serve(ctx); err != nil {
				mcpErr = err
				cancel() // the front door failed: stop the API too
			}
		})
	}

	var apiErr error
	if apiLn == nil {
		fmt.Fprintln(g.io.Stderr, "warden: host API listening on stdio")
		apiErr = srv.ServeStdio(ctx, g.io.Stdin, g.io.Stdout)
		if errors.Is(apiErr, context.Canceled) {
			apiErr = nil
		}
	} else {
		g.log.Info("listening", "url", apiLn.URL(), "token", tokenFor(wsAddr) != "")
		fmt.Fprintf(g.io.Stderr, "warden: host API listening on %s\n", apiLn.URL())
		apiErr = apiLn.Serve(ctx)
	}
	cancel()
	wg.Wait()
	return errors.Join(apiErr, mcpErr, uiErr)
}

// tokenSource names where the listeners' token is: the --token-env variable, or the
// generated token's file.
func tokenSource(g *global, tokenEnv string) string {
	if tokenEnv != "" {
		return "$" + tokenEnv
	}
	return filepath.Join(g.home, ListenTokenFile)
}

// needGeneratedToken reports whether any of the listen addresses (flag name to address;
// "" for none) is TCP, so needs a token. A generated token is for loopback addresses: a
// non-loopback one must name its token with --token-env.
func needGeneratedToken(addrs map[string]string) (bool, error) {
	need := false
	for _, name := range []string{"--listen", "--mcp-listen", "--ui-listen"} {
		addr := addrs[name]
		if addr == "" || apiUnix(addr) {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return false, fmt.Errorf("%s %q: %w", name, addr, err)
		}
		if !netguard.IsLoopbackHost(host) {
			return false, fmt.Errorf("%s %s: %w (a non-loopback address needs --token-env VAR)", name, addr, netguard.ErrTokenRequired)
		}
		need = true
	}
	return need, nil
}

func apiUnix(addr string) bool {
	_, ok := netguard.UnixPath(addr)
	return ok
}

// apiAddr parses --listen: "stdio" gives "", ws://HOST:PORT gives HOST:PORT and
// unix:///PATH is kept as it is.
func apiAddr(listen string) (string, error) {
	if listen == "stdio" {
		return "", nil
	}
	if path, ok := netguard.UnixPath(listen); ok {
		if path == "" {
			return "", fmt.Errorf("unix:// address %q has no path", listen)
		}
		return listen, nil
	}
	u, err := url.Parse(listen)
	if err != nil || u.Scheme != "ws" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("want stdio, ws://HOST:PORT or unix:///PATH, got %q", listen)
	}
	if u.Port() == "" {
		return "", fmt.Errorf("ws:// address %q has no port (use :0 for any free port)", listen)
	}
	return u.Host, nil
}

// mcpAddrValid checks --mcp-listen: "" (none), HOST:PORT or unix:///PATH.
func mcpAddrValid(addr string) error {
	if addr == "" {
		return nil
	}
	if path, ok := netguard.UnixPath(addr); ok {
		if path == "" {
			return fmt.Errorf("unix:// address %q has no path", addr)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("want HOST:PORT or unix:///PATH, got %q", addr)
	}
	return nil
}

// tokenFromEnv reads the bearer token from the environment variable named by --token-env
// and refuses one shorter than netguard.MinTokenBytes. The value is never printed.
func tokenFromEnv(g *global, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	token := g.io.Getenv(name)
	if token == "" {
		return "", fmt.Errorf("--token-env: environment variable %s is unset or empty", name)
	}
	if len(token) < netguard.MinTokenBytes {
		return "", fmt.Errorf("--token-env: the value of %s: %w", name, netguard.ErrTokenTooShort)
	}
	return token, nil
}
