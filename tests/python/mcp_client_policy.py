"""The official Python MCP SDK (mcp==2.3.0) meets the gateway's policy enforcement point.

Usage: python mcp_client_policy.py GATEWAY_MCP_URL MODE PREFIX
With a policy whose envelope refuses PREFIX+ask_name and that holds writes: `echo` runs, the
refused tool answers with an isError result saying "denied" and why, and a write answers with
an isError result naming the held invocation. Prints one JSON line per check; exits 1 on the
first failure.
"""

import json
import sys

import anyio
from mcp import Client


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:500]}), flush=True)
    if not ok:
        sys.exit(1)


def structured(result):
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None) or {}


async def main():
    url, mode, p = sys.argv[1], sys.argv[2], sys.argv[3]
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        r = await client.call_tool(f"{p}echo", {"text": "allowed"})
        check(f"{mode} allowed", not r.is_error, r)
        r = await client.call_tool(f"{p}ask_name", {})
        s = structured(r)
        check(f"{mode} denied is a tool result", r.is_error and s.get("state") == "denied", r)
        check(f"{mode} denied says why", "may not ask" in str(s.get("reason")), s)
        r = await client.call_tool(f"{p}count_write", {"key": f"py-{mode}"})
        s = structured(r)
        check(f"{mode} held names its invocation", r.is_error and s.get("state") == "awaiting_approval"
              and str(s.get("invocation", "")).startswith("inv_"), r)
        print(json.dumps({"held": s.get("invocation")}), flush=True)


anyio.run(main)
