"""An MCP server no one here wrote the framework of: FastMCP (PyPI, pinned by the test command),
served over stdio, for the bridge tests (`tests/tests/bridge.rs`).

Tools: `add` (integers; FastMCP's structured result), `greet` (one string argument), `chart`
(a PNG image), `fail` (a tool error), `steps` (progress notifications, then a text),
`trace_seen` (the W3C trace context the call arrived with, for the tracing test
`tests/tests/traces.rs`). A resource `data://motd` and a prompt
`review` with one argument.
"""

import asyncio
import struct
import zlib

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.types import Image

mcp = FastMCP("fastmcp-peer")


def png(width=2, height=2):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@mcp.tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@mcp.tool
def chart() -> Image:
    """Draws a tiny red PNG."""
    return Image(data=png(), format="png")


@mcp.tool
def fail() -> str:
    """Always fails with a tool error."""
    raise ToolError("fail: as designed")


@mcp.tool
async def steps(n: int, ctx: Context) -> str:
    """Reports progress n times, then answers."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i} of {n}")
        await asyncio.sleep(0.05)
    return f"{n} steps done"


@mcp.tool
def trace_seen(ctx: Context) -> dict:
    """The trace context this call arrived with: `_meta`'s traceparent and tracestate as sent,
    and the trace and parent span FastMCP's OpenTelemetry integration ran the tool under."""
    from opentelemetry import trace

    rc = ctx.request_context
    meta = (rc.meta if rc is not None else None) or {}
    sc = trace.get_current_span().get_span_context()
    return {
        "traceparent": meta.get("traceparent"),
        "tracestate": meta.get("tracestate"),
        "otelTraceId": format(sc.trace_id, "032x") if sc.is_valid else None,
        "otelSpanId": format(sc.span_id, "016x") if sc.is_valid else None,
    }


@mcp.resource("data://motd", mime_type="text/plain")
def motd() -> str:
    """The message of the day."""
    return "Gateways keep what upstreams said."


@mcp.prompt
def review(topic: str) -> str:
    """Asks for a review of a topic."""
    return f"Please review {topic}, field by field."


if __name__ == "__main__":
    mcp.run()
