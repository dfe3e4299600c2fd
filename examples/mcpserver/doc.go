// Command warden-example-mcp is a small MCP server used by warden's tests and
// demo. It is built on the official go-sdk and speaks stdio (the default) or
// streamable HTTP.
//
// Usage:
//
//	warden-example-mcp [--stdio] [flags]
//	warden-example-mcp --http 127.0.0.1:0 [flags]
//
// In HTTP mode the MCP endpoint is /mcp and the first (and only) line written
// to stdout is
//
//	listening http://127.0.0.1:PORT/mcp
//
// so a test can start the server on port 0 and read its URL; everything else
// goes to stderr. HTTP mode stops on SIGINT or SIGTERM; stdio mode stops when
// stdin closes (or on a signal). Both exit 0 on a clean stop, 2 on a usage
// error and 1 on a runtime error.
//
// Flags:
//
//	--stdio                      serve over stdin/stdout (default)
//	--http ADDR                  serve streamable HTTP on ADDR at /mcp
//	--name NAME                  implementation name (default warden-example)
//	--tools LIST                 comma-separated tools to register (default all; "none")
//	--require-bearer-env VAR     HTTP: require "Authorization: Bearer $VAR", else 401
//	--require-header NAME=ENVVAR HTTP: require header NAME == $ENVVAR, else 401 (repeatable)
//	--startup-delay DURATION     sleep before serving (HTTP: after announcing the URL)
//	--first-response-delay DUR   HTTP: delay the first request only
//	--count-file PATH            append one line per received JSON-RPC method
//	--protocol-versions LIST     restrict the MCP protocol versions offered
//	--stateless                  HTTP: stateless streamable handler
//	--log-level LEVEL            debug, info (default), warn, error
//
// Secrets named by --require-bearer-env and --require-header are read from
// the environment at startup, compared in constant time, and never printed.
//
// Tools:
//
//	echo {text}            text back; structured {text, server}
//	env {name}             structured {name, set, value}: which env the process got
//	slow {ms}              sleeps (cancellable), then "done"; structured {status, ms}
//	fail {message}         a tool error (isError: true) carrying message
//	add {a, b}             structured {sum}
//	headers {}             names (never values) of the current HTTP request's headers
//	header_digest {name}   structured {name, present, sha256}: hex SHA-256 of the header's value
//	set_tools {tools}      make the registered tools exactly tools; clients get
//	                       notifications/tools/list_changed
//
// The count file gets the method of every JSON-RPC request and notification
// the server receives (responses carry no method and are not counted). Over
// HTTP it counts each message of every authorised POST body, batches included;
// requests rejected with 401 are not counted. A line is written before its
// message is handled, so once a client has the response, the line is there.
//
// Tests can build and start the binary with the helpers in the mcpservertest
// subpackage.
package main
