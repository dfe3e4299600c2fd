// Package e2e holds warden's end-to-end tests and benchmarks; it has no code of its own.
//
// They drive a real Host through its public surfaces — the JSON-RPC host API (package api)
// and the MCP front door (package frontdoor, `warden mcp`, `warden serve --mcp-listen`) —
// against real MCP servers: the example server built from examples/mcpserver and the
// reference server-everything from npm. Some use MCP clients warden did not write: the
// official TypeScript SDK's, as a Node.js script (testdata/client.mjs), the MCP
// conformance suite (TestConformanceThroughWarden: every server scenario that passes
// against the go-sdk's conformance everything-server directly must pass through a
// single-server warden thread) and the MCP Inspector's CLIs, `mcp-inspector --cli` and the
// connection CLI mcpdo (TestInspectorCLIThroughWarden).
//
// The npm packages (server-everything, the TypeScript SDK, the conformance suite, the
// Inspector, and the Node 22 binary they all run on) are pinned by testdata/npm's
// package.json and package-lock.json and installed once per content into a shared cache by
// testbuild.NPM; the tests that use them fail, never skip, without npm.
//
// The benchmarks measure each result against a baseline taken in the same run:
//
//   - BenchmarkToolCall: a tool call through the front door vs the same call straight to the
//     server, over loopback streamable HTTP, at concurrency 1 and 32 (x-direct-p50,
//     x-direct-throughput);
//   - BenchmarkThreads1000: 1,000 threads sharing one server — one MCP session at the
//     server, and the resident memory they add (rss-MB).
//
// Run them with `go test -run '^$' -bench . ./host/e2e`.
package e2e
