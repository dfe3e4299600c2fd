package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// run is the whole program; main only wires in the process environment.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv lookupEnvFunc) int {
	o, err := parseOptions(args, lookupEnv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "warden-example-mcp: %v\n", err)
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: o.logLevel}))
	if err := serve(ctx, o, stdin, stdout, lookupEnv, logger); err != nil {
		logger.Error("server failed", "error", err)
		return exitError
	}
	return exitOK
}

func serve(ctx context.Context, o options, stdin io.Reader, stdout io.Writer, lookupEnv lookupEnvFunc, logger *slog.Logger) (err error) {
	var counter *methodCounter
	if o.countFile != "" {
		if counter, err = openMethodCounter(o.countFile, logger); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, counter.Close()) }()
	}
	server := newServer(serverOptions{
		Name:             o.name,
		Tools:            o.tools,
		ProtocolVersions: o.protocolVersions,
		LookupEnv:        lookupEnv,
		Logger:           logger,
		Items:            o.items,
	})
	if o.httpAddr != "" {
		return serveHTTP(ctx, o, server, counter, stdout, logger)
	}
	return serveStdio(ctx, o, server, counter, stdin, stdout, logger)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("startup delay interrupted: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

func serveStdio(ctx context.Context, o options, server *mcp.Server, counter *methodCounter, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	if err := sleepCtx(ctx, o.startupDelay); err != nil {
		return nil // signalled while starting: a clean exit
	}
	var t mcp.Transport = &mcp.IOTransport{Reader: nopReadCloser{stdin}, Writer: nopWriteCloser{stdout}}
	if counter != nil {
		t = &countingTransport{inner: t, counter: counter}
	}
	logger.Info("serving MCP over stdio", "name", o.name)
	err := server.Run(ctx, t)
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, mcp.ErrConnectionClosed):
		return nil // stdin closed
	case ctx.Err() != nil:
		return nil // SIGINT/SIGTERM
	default:
		return fmt.Errorf("stdio session: %w", err)
	}
}

func serveHTTP(ctx context.Context, o options, server *mcp.Server, counter *methodCounter, stdout io.Writer, logger *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.httpAddr, err)
	}
	defer ln.Close()
	url := "http://" + ln.Addr().String() + mcpPath
	// The one and only stdout line: tests read the URL from it.
	if _, err := fmt.Fprintf(stdout, "listening %s\n", url); err != nil {
		return fmt.Errorf("announcing address: %w", err)
	}
	// Connections queue in the listen backlog until the delay is over.
	if err := sleepCtx(ctx, o.startupDelay); err != nil {
		return nil
	}
	srv := &http.Server{
		Handler:           newHTTPHandler(server, o, counter, logger),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("serving MCP over streamable HTTP", "url", url, "name", o.name)

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	// End MCP sessions so their long-lived SSE streams return; Close waits for
	// in-flight calls, so do not block on it (Shutdown's timeout bounds us).
	for ss := range server.Sessions() {
		go func() { _ = ss.Close() }()
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Long-lived SSE streams keep connections busy; cut them off.
		if cerr := srv.Close(); cerr != nil {
			return fmt.Errorf("closing http server: %w", cerr)
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
