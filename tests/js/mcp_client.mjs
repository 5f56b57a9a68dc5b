// The official TypeScript MCP SDKs as clients of any MCP server: v2 (`@modelcontextprotocol/client`
// 2.4.0, 2026-07-28) or v1 (`@modelcontextprotocol/sdk` 1.32, 2025-11-25). Runs a script of
// operations, printing what the SDK made of each answer, for comparing a server seen directly
// with the same server seen through the gateway.
//
//   node mcp_client.mjs v2|v1 <server> <ops-json>
//
// <server> is a Streamable HTTP URL, or `stdio:` and a JSON list (the command to launch).
// <ops-json> is a list of operations, as for tests/python/mcp_peer_client.py: ["call", tool,
// args], ["progress", tool, args], ["cancel", tool, args, seconds], ["read", uri], ["prompt",
// name, args], ["complete", prompt, argument, value, context], ["resources"], ["templates"],
// ["prompts"]. The client declares elicitation, sampling and roots and answers each the same way
// as the Python client (printing {"asked": kind, …}). Prints {"tools": [names in order]},
// {"era": the negotiated protocol version (v2)}, {"properties": {tool: [input schema property names in order]}} and, per operation,
// {"op", "ok": true, "result"} or {"op", "ok": false, "error"} (the SDK's own validation failure
// included).
const [sdk, server, opsJson] = process.argv.slice(2);
const ops = JSON.parse(opsJson);
const say = (line) => console.log(JSON.stringify(line));

// A deterministic answer for an elicitation form: each field, in the form's order.
function fill(schema) {
  const out = {};
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    if ("default" in prop) out[name] = prop.default;
    else if (prop.type === "boolean") out[name] = true;
    else if (prop.type === "integer" || prop.type === "number") out[name] = prop.minimum ?? 7;
    else if (prop.type === "array") {
      const items = prop.items ?? {};
      out[name] = (items.enum ?? (items.anyOf ?? []).map((o) => o.const)).slice(0, 1);
    } else if (prop.enum) out[name] = prop.enum[0];
    else if (prop.oneOf) out[name] = prop.oneOf[0].const;
    else {
      const formats = { email: "ada@example.com", uri: "https://example.com/ada", date: "1815-12-10",
        "date-time": "1815-12-10T00:00:00Z" };
      out[name] = formats[prop.format] ?? "Ada";
    }
  }
  return out;
}

const elicit = async (request) => {
  const schema = request.params.requestedSchema ?? {};
  say({ asked: "elicitation", message: request.params.message, fields: Object.keys(schema.properties ?? {}) });
  return { action: "accept", content: fill(schema) };
};
const sample = async (request) => {
  say({ asked: "sampling", messages: request.params.messages.length });
  return { role: "assistant", content: { type: "text", text: "sampled" }, model: "switchyard-test-model" };
};
const roots = async () => {
  say({ asked: "roots" });
  return { roots: [{ uri: "file:///tmp/switchyard-peer-root", name: "root" }] };
};

const capabilities = { elicitation: {}, sampling: {}, roots: {} };
let client;
let transport;
const stdio = server.startsWith("stdio:") ? JSON.parse(server.slice("stdio:".length)) : null;
if (sdk === "v2") {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  // The v2 SDK connects as a 2025-11-25 client unless told otherwise: `auto` probes
  // `server/discover` and speaks 2026-07-28 where the server does (falling back otherwise).
  const versionNegotiation = { mode: "auto" };
  client = new Client({ name: "switchyard-ts-v2", version: "1.0.0" }, { capabilities, versionNegotiation });
  client.setRequestHandler("elicitation/create", elicit);
  client.setRequestHandler("sampling/createMessage", sample);
  client.setRequestHandler("roots/list", roots);
  if (stdio) {
    const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
    transport = new StdioClientTransport({ command: stdio[0], args: stdio.slice(1) });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(server));
  }
} else if (sdk === "v1") {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const types = await import("@modelcontextprotocol/sdk/types.js");
  client = new Client({ name: "switchyard-ts-v1", version: "1.0.0" }, { capabilities });
  client.setRequestHandler(types.ElicitRequestSchema, elicit);
  client.setRequestHandler(types.CreateMessageRequestSchema, sample);
  client.setRequestHandler(types.ListRootsRequestSchema, roots);
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
// v1 takes a result schema before the options; v2 takes the options second.
const callTool = (params, options) =>
  sdk === "v1" ? client.callTool(params, undefined, options) : client.callTool(params, options);

async function run(op) {
  const [kind] = op;
  switch (kind) {
    case "call":
      return callTool({ name: op[1], arguments: op[2] });
    case "progress": {
      const progress = [];
      const onprogress = (p) => progress.push([p.progress, p.total ?? null, p.message ?? null]);
      const result = await callTool({ name: op[1], arguments: op[2] }, { onprogress });
      return { result, progress };
    }
    case "cancel": {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort("given up"), op[3] * 1000);
      try {
        await callTool({ name: op[1], arguments: op[2] }, { signal: abort.signal });
        return { cancelled: false };
      } catch (e) {
        if (!abort.signal.aborted) throw e;
        return { cancelled: true };
      } finally {
        clearTimeout(timer);
      }
    }
    case "read":
      return client.readResource({ uri: op[1] });
    case "prompt":
      return client.getPrompt({ name: op[1], arguments: op[2] });
    case "complete": {
      const params = { ref: { type: "ref/prompt", name: op[1] }, argument: { name: op[2], value: op[3] } };
      if (op[4]) params.context = { arguments: op[4] };
      return client.complete(params);
    }
    case "resources":
      return client.listResources();
    case "templates":
      return client.listResourceTemplates();
    case "prompts":
      return client.listPrompts();
    default:
      throw new Error(`unknown operation ${kind}`);
  }
}

await client.connect(transport);
say({ era: client.getNegotiatedProtocolVersion?.() ?? null });
const tools = await client.listTools();
say({ tools: tools.tools.map((t) => t.name) });
// Each tool's input schema properties, in the order the server wrote them.
say({ properties: Object.fromEntries(tools.tools.map((t) => [t.name, Object.keys(t.inputSchema?.properties ?? {})])) });
for (const op of ops) {
  try {
    say({ op: op[0], ok: true, result: await run(op) });
  } catch (e) {
    say({ op: op[0], ok: false, error: `${e?.name}: ${e?.message}` });
  }
}
await client.close();
