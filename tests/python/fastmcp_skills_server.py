"""A third-party MCP Skills server (SEP-2640, `io.modelcontextprotocol/skills`): FastMCP (PyPI,
pinned by the test command) serving a directory of skills over Streamable HTTP, for the skills
test of the gateway.

Usage: python fastmcp_skills_server.py SKILLS_DIR
Every folder below SKILLS_DIR holding a SKILL.md is a skill (its frontmatter `name` must match
the folder). FastMCP's `SkillsDirectoryProvider` declares the skills extension and answers
`skills/list`, `skills/get` and `resources/read` of `skill://<name>/<file>`; with `reload=True`
it re-reads the folders on every request, so a file changed on disk is served (and listed, with
its new digest and size) from the next request on. Binds 127.0.0.1 on a free port, prints
`listening http://127.0.0.1:<port>/mcp` once uvicorn accepts connections, and serves until killed.
"""

import asyncio
import socket
import sys

import uvicorn
from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider


async def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    mcp = FastMCP("fastmcp-skills")
    mcp.add_provider(SkillsDirectoryProvider(sys.argv[1], reload=True))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(mcp.http_app(path="/mcp"), log_level="warning", timeout_graceful_shutdown=1))

    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            sys.exit("fastmcp_skills_server: uvicorn stopped before it started")
        await asyncio.sleep(0.02)
    print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
    await serving


asyncio.run(main())
