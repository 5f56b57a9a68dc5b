// The official TypeScript MCP SDKs as clients of any MCP server: v2 (`@modelcontextprotocol/client`
// 2.4.0, 2026-07-28) or v1 (`@modelcontextprotocol/sdk` 1.32, 2025-11-25). Lists the tools and
// calls some, printing what the SDK made of each answer, for comparing a server seen directly
// with the same server seen through the gateway.
//
//   node mcp_client.mjs v2|v1 <server> <calls-json>
//
// <server> is a Streamable HTTP URL, or `stdio:` and a JSON list (the command to launch).
// <calls-json> is a list of [tool, arguments]. Prints {"tools": [names in order]}, {"properties":
// {tool: [input schema property names in order]}} and, per call,
// {"call", "ok": true, "result"} or {"call", "ok": false, "error"} (the SDK's own validation
// failure included).
const [sdk, server, callsJson] = process.argv.slice(2);
const calls = JSON.parse(callsJson);

let client;
let transport;
const stdio = server.startsWith("stdio:") ? JSON.parse(server.slice("stdio:".length)) : null;
if (sdk === "v2") {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  client = new Client({ name: "switchyard-ts-v2", version: "1.0.0" });
  if (stdio) {
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    transport = new StdioClientTransport({ command: stdio[0], args: stdio.slice(1) });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(server));
  }
} else if (sdk === "v1") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  client = new Client({ name: "switchyard-ts-v1", version: "1.0.0" });
  if (stdio) {
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    transport = new StdioClientTransport({ command: stdio[0], args: stdio.slice(1) });
  } else {
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    transport = new StreamableHTTPClientTransport(new URL(server));
  }
} else {
  throw new Error(`unknown sdk ${sdk}: v2 or v1`);
}
await client.connect(transport);
const tools = await client.listTools();
console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name) }));
// Each tool's input schema properties, in the order the server wrote them.
const order = Object.fromEntries(tools.tools.map((t) => [t.name, Object.keys(t.inputSchema?.properties ?? {})]));
console.log(JSON.stringify({ properties: order }));
for (const [name, args] of calls) {
  try {
    const result = await client.callTool({ name, arguments: args });
    console.log(JSON.stringify({ call: name, ok: true, result }));
  } catch (e) {
    console.log(JSON.stringify({ call: name, ok: false, error: `${e?.name}: ${e?.message}` }));
  }
}
await client.close();
