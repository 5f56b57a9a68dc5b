"""A client of MCP Skills (SEP-2640, `io.modelcontextprotocol/skills`) run against the gateway's
MCP endpoint, for the skills test of the gateway (upstream: `fastmcp_skills_server.py`).

Usage: python skills_client.py GATEWAY_MCP_URL STEP [URI]
STEP is one of
  list        `skills/list` with FastMCP's client (opting into the skills extension); prints
              {"skills": [<SKILL.md uri>, ...]} sorted.
  get URI     `skills/get`; prints {"ok": true, "skill": <entry>} or
              {"ok": false, "code": <JSON-RPC code>, "message": ...}.
  read URI    `resources/read` with the official Python SDK (mcp==2.3.0); prints
              {"ok": true, "text": <text>} or {"ok": false, "code": ..., "message": ...}.
Each run prints exactly one JSON line on stdout and exits 0 (an MCP error is an answer, not a
failure); the negotiated protocol version goes to stderr. Both clients connect with their
default `mode="auto"`: `server/discover` at 2026-07-28, the only version with the skills
methods, falling back to the initialize handshake for a legacy server.
"""

import asyncio
import json
import sys

from fastmcp import Client as FastMCPClient
from fastmcp.skills import SkillsClientExtension
from mcp import Client
from mcp.shared.exceptions import MCPError


def say(value):
    print(json.dumps(value), flush=True)


def failed(error):
    return {"ok": False, "code": error.code, "message": error.message}


async def skills_step(url, step, uri):
    async with FastMCPClient(url, extensions=[SkillsClientExtension()], timeout=30) as client:
        print(f"protocol {client.protocol_version}", file=sys.stderr)
        if step == "list":
            skills = await client.list_skills(cache_mode="bypass")
            return {"skills": sorted(skill.uri for skill in skills)}
        try:
            result = await client.get_skill_mcp(uri, cache_mode="bypass")
        except MCPError as error:
            return failed(error)
        return {"ok": True, "skill": result.skill.model_dump(mode="json", by_alias=True, exclude_none=True)}


async def read_step(url, uri):
    # The error is caught inside the `async with`: leaving it raised, the SDK wraps it in an ExceptionGroup.
    async with Client(url, read_timeout_seconds=30) as client:
        print(f"protocol {client.protocol_version}", file=sys.stderr)
        try:
            result = await client.read_resource(uri, cache_mode="bypass")
        except MCPError as error:
            return failed(error)
        return {"ok": True, "text": "".join(getattr(c, "text", "") for c in result.contents)}


async def main():
    url, step, uri = (sys.argv[1:] + [None, None, None])[:3]
    if step not in ("list", "get", "read") or (step != "list") != (uri is not None) or len(sys.argv) > 4:
        sys.exit(__doc__)
    say(await (read_step(url, uri) if step == "read" else skills_step(url, step, uri)))


asyncio.run(main())
