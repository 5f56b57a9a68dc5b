"""The official Python MCP SDK (mcp==2.3.0) as an independent client of the gateway.

Usage: python mcp_client_e2e.py GATEWAY_MCP_URL MODE PREFIX [PREFIX ...]
MODE is "2026-07-28" or "legacy". For each upstream PREFIX (e.g. "local__"), it lists tools,
calls `echo`, runs an elicitation round through `ask_name` (MRTR on 2026-07-28, a server->client
request in legacy), receives progress from `slow`, and cancels a long `slow` call. Prints one
JSON line per check and exits 1 on the first failure. With MCP_BEARER set, every request carries
`Authorization: Bearer $MCP_BEARER`.
"""

import json
import os
import sys

import anyio
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:500]}), flush=True)
    if not ok:
        sys.exit(1)


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def main():
    url, mode, prefixes = sys.argv[1], sys.argv[2], sys.argv[3:]
    server = url
    bearer = os.environ.get("MCP_BEARER")
    if bearer:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
        server = streamable_http_client(url, http_client=http)
    async with Client(server, mode=mode, elicitation_callback=on_elicit, read_timeout_seconds=30) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        for p in prefixes:
            check(f"{mode} {p} listed", f"{p}echo" in names and f"{p}ask_name" in names, sorted(names))
            r = await client.call_tool(f"{p}echo", {"text": f"py {mode}"})
            check(f"{mode} {p} echo", not r.is_error and text(r) == f"py {mode}", r)
            r = await client.call_tool(f"{p}ask_name", {})
            check(f"{mode} {p} elicitation round", text(r) == "hello Ada", r)
            seen = []

            async def on_progress(progress, total, message):
                seen.append(progress)

            r = await client.call_tool(f"{p}slow", {"steps": 3, "step_ms": 50}, progress_callback=on_progress)
            check(f"{mode} {p} slow", text(r) == "done 3", r)
            check(f"{mode} {p} progress relayed", len(seen) >= 1, seen)
            with anyio.move_on_after(1.5) as scope:
                await client.call_tool(f"{p}slow", {"steps": 100, "step_ms": 100})
            check(f"{mode} {p} cancel sent", scope.cancelled_caught, "gave up after 1.5 s" if scope.cancelled_caught else "the long call finished first")
        r = await client.call_tool(f"{prefixes[0]}echo", {"text": "still fine"})
        check(f"{mode} session usable after cancel", text(r) == "still fine", r)


anyio.run(main)
