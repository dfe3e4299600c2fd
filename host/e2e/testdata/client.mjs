// An MCP client warden did not write: the official TypeScript SDK's Client. The Go tests in
// this directory run it against warden's MCP front door and parse its one line of output.
//
//   node client.mjs '<config JSON>'
//
// config: {"transport": "stdio", "command": "...", "args": [...], "env": {...}}
//      or {"transport": "http", "url": "http://127.0.0.1:PORT/threads/ID/mcp", "token": "..."}
//         (token, when given, is sent as "Authorization: Bearer TOKEN")
//    plus "call": {"name": "docs__echo", "arguments": {...}}
//
// It connects, lists every tool (following pagination), calls config.call and prints
// {"serverInfo": ..., "protocolVersion": ..., "tools": [names], "result": CallToolResult}
// as one JSON line on stdout. Any failure exits 1 with the error on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2]);

let transport;
switch (config.transport) {
  case "stdio":
    transport = new StdioClientTransport({
      command: config.command,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...(config.env ?? {}) },
      stderr: "inherit",
    });
    break;
  case "http":
    transport = new StreamableHTTPClientTransport(new URL(config.url), config.token
      ? { requestInit: { headers: { Authorization: `Bearer ${config.token}` } } }
      : undefined);
    break;
  default:
    throw new Error(`unknown transport ${config.transport}`);
}

const client = new Client({ name: "warden-e2e-ts-client", version: "1.0.0" });
try {
  await client.connect(transport);
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  const result = await client.callTool(config.call);
  process.stdout.write(JSON.stringify({
    serverInfo: client.getServerVersion(),
    protocolVersion: transport.protocolVersion ?? null,
    tools,
    result,
  }) + "\n");
} finally {
  await client.close();
}
