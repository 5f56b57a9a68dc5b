"""The official Python MCP SDK (mcp==2.3.0) as a client of any MCP server: lists the tools and
calls some, printing what the SDK made of each answer, for comparing a server seen directly with
the same server seen through the gateway.

Usage: python mcp_peer_client.py SERVER MODE CALLS_JSON
SERVER is a Streamable HTTP URL, or `stdio:` and a JSON list (the command to launch). MODE is "2026-07-28" or "legacy". CALLS_JSON is a list of [tool, arguments]. Prints one JSON
line {"tools": [names in order]} and then, per call, {"call": tool, "ok": true, "result": …} or
{"call": tool, "ok": false, "error": …} (the SDK's own validation failure included).
"""

import json
import sys

import anyio
from mcp import Client, StdioServerParameters


async def main():
    server, mode, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if server.startswith("stdio:"):
        command = json.loads(server[len("stdio:"):])
        server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, mode=mode, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        print(json.dumps({"tools": [t.name for t in tools.tools]}), flush=True)
        for name, args in calls:
            try:
                r = await client.call_tool(name, args)
                out = {"call": name, "ok": True, "result": r.model_dump(mode="json", by_alias=True, exclude_none=True)}
            except Exception as e:  # what the SDK says, verbatim
                out = {"call": name, "ok": False, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(out), flush=True)


anyio.run(main)
