// Package cli implements the warden command line: one binary with subcommands. Main is what
// cmd/warden runs and what the testscript tests run in-process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/warden-mcp/warden/host/config"
	"github.com/warden-mcp/warden/host/logging"
	"github.com/warden-mcp/warden/host/policy"
)

// IO is the process's standard streams and environment, injectable for tests.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Stdio returns the real process streams.
func Stdio() IO {
	return IO{Stdin: pollableStdin(), Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// pollableStdin returns standard input, switched to non-blocking mode when it is a pipe or
// a socket, so that Go's poller reads it: closing it then ends a read blocked on a silent
// peer, which is how the host API's stdio transport stops on SIGTERM. A terminal is left
// as it is (its mode is shared with the shell); the signal handler's hard exit covers it.
func pollableStdin() *os.File {
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return os.Stdin
	}
	fd := int(os.Stdin.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "/dev/stdin")
}

// Exit codes.
const (
	ExitOK       = 0
	ExitFailure  = 1 // the command ran and found problems (or failed)
	ExitUsage    = 2 // bad flags or arguments
	ExitInternal = 3
)

// errUsage marks an error as a usage error (exit 2) after its message is printed.
var errUsage = errors.New("usage")

// global holds the flags every subcommand accepts before its name.
type global struct {
	home     string
	logJSON  bool
	logLevel string
	io       IO
	log      hclog.Logger
	// logLevelSet reports whether --log-level was given (the demo quiets logs otherwise).
	logLevelSet bool
	// policyRT is created on first use by commands that load policy modules and closed
	// when Main returns.
	policyRT *policy.Runtime
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, g *global, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "serve the host API (stdio or WebSocket) and, with --mcp-listen, the MCP front door", runServe},
		{"mcp", "serve one thread as an MCP server over stdio (for Claude Desktop, Codex, ...)", runMCP},
		{"executor", "serve the executor protocol (stdio or WebSocket): run servers in this environment for a host", runExecutor},
		{"plugins", "list and inspect capability roots (plugins list|inspect ID)", runPlugins},
		{"config", "validate a warden home (config check)", runConfig},
		{"doctor", "check a warden home end to end and say what to fix", runDoctor},
		{"oauth", "log in to OAuth-protected MCP servers and manage stored logins (oauth login|list|logout)", runOAuth},
		{"policy", "evaluate and test policy plugins (policy eval|test)", runPolicy},
		{"decisions", "read the decision log (decisions tail|grep)", runDecisions},
		{"demo", "walk through the embedded default", runDemo},
		{"version", "print the version", runVersion},
	}
}

// Main runs the warden command line with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = os.Getenv
	}
	g := &global{io: io}
	fs := flag.NewFlagSet("warden", flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	fs.StringVar(&g.home, "home", "", "warden home directory (default $WARDEN_HOME, else ~/.warden)")
	fs.BoolVar(&g.logJSON, "log-json", false, "log JSON lines instead of text")
	fs.StringVar(&g.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error, off")
	fs.Usage = func() { usage(io.Stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	fs.Visit(func(f *flag.Flag) { g.logLevelSet = g.logLevelSet || f.Name == "log-level" })
	if !logging.ValidLevel(g.logLevel) {
		fmt.Fprintf(io.Stderr, "warden: unknown log level %q\n", g.logLevel)
		return ExitUsage
	}
	g.log = logging.New(logging.Options{JSON: g.logJSON, Level: g.logLevel, Output: io.Stderr})
	if g.home == "" {
		g.home = homeFromEnv(io.Getenv)
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" {
		usage(io.Stdout, fs)
		if len(rest) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	defer func() {
		if g.policyRT != nil {
			g.policyRT.Close(context.WithoutCancel(ctx))
		}
	}()
	for _, c := range commands() {
		if c.name != rest[0] {
			continue
		}
		err := c.run(ctx, g, rest[1:])
		switch {
		case err == nil:
			return ExitOK
		case errors.Is(err, errUsage):
			return ExitUsage
		case errors.Is(err, errSilentFailure):
			return ExitFailure
		default:
			fmt.Fprintf(io.Stderr, "warden %s: %v\n", c.name, err)
			return ExitFailure
		}
	}
	fmt.Fprintf(io.Stderr, "warden: unknown command %q (run `warden help`)\n", rest[0])
	return ExitUsage
}

// errSilentFailure makes Main exit 1 without printing: the command already reported why.
var errSilentFailure = errors.New("failed (reported)")

func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: warden [--home DIR] [--log-json] [--log-level LEVEL] COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nglobal flags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

func homeFromEnv(getenv func(string) string) string {
	if h := getenv("WARDEN_HOME"); h != "" {
		return h
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".warden")
	}
	h, err := config.DefaultHome()
	if err != nil {
		return ".warden"
	}
	return h
}

// subFlags returns a FlagSet for a subcommand that prints its errors to stderr.
// runSubcommand runs `warden NAME SUB ...`: the one of subs named args[0], or a usage error
// listing them.
func runSubcommand(ctx context.Context, g *global, name string, args []string, subs []command) error {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	if len(args) == 0 {
		fmt.Fprintf(g.io.Stderr, "usage: warden %s %s [flags]\n", name, strings.Join(names, "|"))
		return errUsage
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, g, args[1:])
		}
	}
	want := names[len(names)-1]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + want
	}
	fmt.Fprintf(g.io.Stderr, "warden %s: unknown subcommand %q (want %s)\n", name, args[0], want)
	return errUsage
}

func subFlags(g *global, name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet("warden "+name, flag.ContinueOnError)
	fs.SetOutput(g.io.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(g.io.Stderr, "usage: warden %s %s\n", name, argsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a subcommand's flags, mapping flag errors to errUsage. Flags may appear
// after positional arguments too (`warden plugins inspect ID --json`).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errUsage
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func runVersion(_ context.Context, g *global, _ []string) error {
	fmt.Fprintln(g.io.Stdout, "warden", Version)
	return nil
}

// Version is the warden version, set at link time with -X.
var Version = "dev"

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// StopGrace is how long after SIGINT/SIGTERM a command may take to stop gracefully before
// StopOnSignal ends the process; below 2 s so that the process is gone within 2 s of the
// signal whatever is stuck (a guest, a host function, a server that does not exit).
const StopGrace = 1800 * time.Millisecond

// StopOnSignal is the process's signal handling: the first signal on sigs cancels the
// command (cancel: a graceful stop) and says so on stderr; if the command has not returned StopGrace later, or a
// second signal arrives first, it prints why on stderr and calls exit with 128+signal, the
// shell's code for death by that signal. It returns only if sigs is closed.
func StopOnSignal(sigs <-chan os.Signal, cancel func(), stderr io.Writer, exit func(code int)) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	cancel()
	fmt.Fprintf(stderr, "warden: %v: stopping (again to exit at once)\n", sig)
	timer := time.NewTimer(StopGrace)
	defer timer.Stop()
	select {
	case again, ok := <-sigs:
		if !ok {
			return
		}
		fmt.Fprintf(stderr, "warden: second signal (%v) while stopping: exiting now\n", again)
	case <-timer.C:
		fmt.Fprintf(stderr, "warden: did not stop within %v of %v: exiting now\n", StopGrace, sig)
	}
	code := 128 + 15
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	exit(code)
}
