"""The official Python MCP SDK (mcp==2.3.0) as a client of any MCP server: runs a script of
operations, printing what the SDK made of each answer, for comparing a server seen directly with
the same server seen through the gateway.

Usage: python mcp_peer_client.py SERVER MODE OPS_JSON
SERVER is a Streamable HTTP URL, or `stdio:` and a JSON list (the command to launch). MODE is
"2026-07-28" or "legacy". OPS_JSON is a list of operations:
  ["call", tool, args]             tools/call
  ["progress", tool, args]         tools/call with a progress callback (counts the notifications)
  ["cancel", tool, args, seconds]  tools/call given up after `seconds` (the SDK sends the cancel)
  ["read", uri]                    resources/read
  ["prompt", name, args]           prompts/get
  ["complete", prompt, argument, value, context]  completion/complete for a prompt argument
  ["resources"] | ["templates"] | ["prompts"]     the lists
The client declares elicitation, sampling and roots and answers each deterministically (a form
is filled from its schema, in order); each question is printed as {"asked": kind, …}.
Prints {"tools": [names in order]} first, then per operation {"op": kind, "ok": true, "result": …}
or {"op": kind, "ok": false, "error": …} (the SDK's own validation failure included).
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters, types


def fill(schema):
    """A deterministic answer for an elicitation form: each field, in the form's order."""
    out = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("type") == "boolean":
            out[name] = True
        elif prop.get("type") in ("integer", "number"):
            out[name] = prop.get("minimum", 7)
        elif prop.get("type") == "array":
            items = prop.get("items") or {}
            choices = items.get("enum") or [o.get("const") for o in items.get("anyOf", [])]
            out[name] = choices[:1]
        elif prop.get("enum"):
            out[name] = prop["enum"][0]
        elif prop.get("oneOf"):
            out[name] = prop["oneOf"][0].get("const")
        else:
            out[name] = {"email": "ada@example.com", "uri": "https://example.com/ada", "date": "1815-12-10",
                         "date-time": "1815-12-10T00:00:00Z"}.get(prop.get("format"), "Ada")
    return out


def say(line):
    print(json.dumps(line), flush=True)


async def elicit(_context, params):
    schema = params.requested_schema if hasattr(params, "requested_schema") else None
    schema = schema or {}
    say({"asked": "elicitation", "message": params.message, "fields": list((schema.get("properties") or {}).keys())})
    return types.ElicitResult(action="accept", content=fill(schema))


async def sample(_context, params):
    say({"asked": "sampling", "messages": len(params.messages)})
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled"),
                                     model="switchyard-test-model")


async def roots(_context):
    say({"asked": "roots"})
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/switchyard-peer-root", name="root")])


def dump(r):
    return r.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(client, op):
    kind = op[0]
    if kind == "call":
        return await client.call_tool(op[1], op[2])
    if kind == "progress":
        seen = []

        async def progress(value, total, message):
            seen.append([value, total, message])

        r = dump(await client.call_tool(op[1], op[2], progress_callback=progress))
        return {"result": r, "progress": seen}
    if kind == "cancel":
        with anyio.move_on_after(op[3]) as scope:
            await client.call_tool(op[1], op[2])
        return {"cancelled": scope.cancelled_caught}
    if kind == "read":
        return await client.read_resource(op[1])
    if kind == "prompt":
        return await client.get_prompt(op[1], op[2])
    if kind == "complete":
        ref = types.PromptReference(type="ref/prompt", name=op[1])
        return await client.complete(ref, {"name": op[2], "value": op[3]}, context_arguments=op[4] or None)
    if kind == "resources":
        return await client.list_resources()
    if kind == "templates":
        return await client.list_resource_templates()
    if kind == "prompts":
        return await client.list_prompts()
    raise ValueError(f"unknown operation {kind}")


async def main():
    server, mode, ops = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if server.startswith("stdio:"):
        command = json.loads(server[len("stdio:"):])
        server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, mode=mode, read_timeout_seconds=30, elicitation_callback=elicit,
                      sampling_callback=sample, list_roots_callback=roots) as client:
        tools = await client.list_tools()
        say({"tools": [t.name for t in tools.tools]})
        for op in ops:
            try:
                r = await run(client, op)
                say({"op": op[0], "ok": True, "result": r if isinstance(r, dict) else dump(r)})
            except Exception as e:  # what the SDK says, verbatim
                say({"op": op[0], "ok": False, "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    anyio.run(main)
