package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultName is the default server implementation name.
const defaultName = "warden-example"

// lookupEnvFunc has the signature of os.LookupEnv; it is injected so that
// tests can control the environment the server sees.
type lookupEnvFunc func(string) (string, bool)

// headerRequirement is one header every HTTP request must carry with an exact
// value. The value comes from an environment variable and is never logged.
type headerRequirement struct {
	header string // canonical header name
	envVar string // where the value came from (safe to log)
	bearer bool   // header is Authorization and value is "Bearer <token>"
	value  string // the secret
}

// options is the parsed command line.
type options struct {
	httpAddr           string // empty means stdio
	name               string
	tools              []string // nil means all tools
	protocolVersions   []string // nil means every version the SDK supports
	stateless          bool
	requirements       []headerRequirement
	startupDelay       time.Duration
	firstResponseDelay time.Duration
	countFile          string
	logLevel           slog.Level
	items              bool // register the example resources, template and prompt
}

var errUsage = errors.New("usage error")

// parseOptions parses args (without the program name). Secrets named by
// --require-bearer-env and --require-header are resolved through lookupEnv.
func parseOptions(args []string, lookupEnv lookupEnvFunc, usageOut io.Writer) (options, error) {
	var (
		o          options
		stdio      bool
		toolsFlag  string
		protoFlag  string
		bearerEnv  string
		headerReqs []string
		logLevel   string
	)
	fs := flag.NewFlagSet("warden-example-mcp", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.BoolVar(&stdio, "stdio", false, "serve MCP over stdin/stdout (the default)")
	fs.StringVar(&o.httpAddr, "http", "", "serve streamable HTTP at `ADDR` (e.g. 127.0.0.1:0); endpoint is /mcp")
	fs.StringVar(&o.name, "name", defaultName, "server implementation `NAME`")
	fs.StringVar(&bearerEnv, "require-bearer-env", "", "HTTP: require 'Authorization: Bearer $`VAR`' on every request")
	fs.Func("require-header", "HTTP: require header `NAME=ENVVAR` (header NAME must equal $ENVVAR); repeatable", func(s string) error {
		headerReqs = append(headerReqs, s)
		return nil
	})
	fs.DurationVar(&o.startupDelay, "startup-delay", 0, "sleep `DURATION` before serving")
	fs.DurationVar(&o.firstResponseDelay, "first-response-delay", 0, "HTTP: delay the first request by `DURATION`")
	fs.StringVar(&toolsFlag, "tools", "", "comma-separated `LIST` of tools to register (default all; \"none\" for none)")
	fs.StringVar(&o.countFile, "count-file", "", "append one line per received JSON-RPC method to `PATH`")
	fs.StringVar(&protoFlag, "protocol-versions", "", "comma-separated `LIST` restricting the MCP protocol versions offered (default all the SDK supports)")
	fs.BoolVar(&o.items, "items", false, "also serve the example resources, resource template and prompt (see items.go)")
	fs.BoolVar(&o.stateless, "stateless", false, "HTTP: run the streamable handler in stateless mode")
	fs.StringVar(&logLevel, "log-level", "info", "stderr log `LEVEL`: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return options{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if stdio && o.httpAddr != "" {
		return options{}, fmt.Errorf("%w: --stdio and --http are mutually exclusive", errUsage)
	}
	if o.name == "" {
		return options{}, fmt.Errorf("%w: --name must not be empty", errUsage)
	}
	if err := o.logLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return options{}, fmt.Errorf("%w: --log-level: %w", errUsage, err)
	}
	if o.startupDelay < 0 || o.firstResponseDelay < 0 {
		return options{}, fmt.Errorf("%w: delays must not be negative", errUsage)
	}

	tools, err := parseToolList(toolsFlag)
	if err != nil {
		return options{}, fmt.Errorf("%w: --tools: %w", errUsage, err)
	}
	o.tools = tools

	if protoFlag != "" {
		supported := mcp.SupportedProtocolVersions()
		for _, v := range splitList(protoFlag) {
			if !slices.Contains(supported, v) {
				return options{}, fmt.Errorf("%w: --protocol-versions: %q is not one of %s", errUsage, v, strings.Join(supported, ", "))
			}
			o.protocolVersions = append(o.protocolVersions, v)
		}
	}

	httpOnly := bearerEnv != "" || len(headerReqs) > 0 || o.firstResponseDelay > 0 || o.stateless
	if httpOnly && o.httpAddr == "" {
		return options{}, fmt.Errorf("%w: --require-bearer-env, --require-header, --first-response-delay and --stateless need --http", errUsage)
	}
	if bearerEnv != "" {
		v, err := requireEnv(lookupEnv, bearerEnv)
		if err != nil {
			return options{}, fmt.Errorf("%w: --require-bearer-env: %w", errUsage, err)
		}
		o.requirements = append(o.requirements, headerRequirement{
			header: "Authorization", envVar: bearerEnv, bearer: true, value: v,
		})
	}
	for _, spec := range headerReqs {
		name, envVar, ok := strings.Cut(spec, "=")
		if !ok || name == "" || envVar == "" {
			return options{}, fmt.Errorf("%w: --require-header %q: want NAME=ENVVAR", errUsage, spec)
		}
		v, err := requireEnv(lookupEnv, envVar)
		if err != nil {
			return options{}, fmt.Errorf("%w: --require-header %s: %w", errUsage, name, err)
		}
		o.requirements = append(o.requirements, headerRequirement{
			header: http.CanonicalHeaderKey(name), envVar: envVar, value: v,
		})
	}
	return o, nil
}

// parseToolList turns the --tools value into a list of tool names; nil means
// every tool.
func parseToolList(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "", "all":
		return nil, nil
	case "none":
		return []string{}, nil
	}
	names := splitList(s)
	if err := checkToolNames(names); err != nil {
		return nil, err
	}
	return names, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func requireEnv(lookupEnv lookupEnvFunc, name string) (string, error) {
	v, ok := lookupEnv(name)
	if !ok || v == "" {
		return "", fmt.Errorf("environment variable %s is not set or empty", name)
	}
	return v, nil
}
