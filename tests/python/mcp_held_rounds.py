"""Drives the rounds of one tools/call by hand with the official Python MCP SDK (mcp==2.3.0,
2026-07-28), for a tool whose legacy upstream asks for elicitation mid-call: the first round's
`input_required`, then the answer — after waiting WAIT seconds — and then the same answer again
(a replay of the answered `requestState`).

Usage: python mcp_held_rounds.py URL TOOL WAIT
Prints {"round": 1, "asked": [methods]}, then {"round": 2|3, "ok": true, "result": …} or
{"round": 2|3, "ok": false, "error": …}.
"""

import json
import sys
import time

import anyio
from mcp import Client, types

from mcp_peer_client import fill


async def elicit(_context, params):  # declares the capability; rounds are driven by hand
    return types.ElicitResult(action="decline")


async def main():
    url, tool, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
    async with Client(url, mode="2026-07-28", read_timeout_seconds=30, elicitation_callback=elicit) as client:
        first = await client.session.call_tool(tool, {}, allow_input_required=True)
        requests = first.input_requests or {}
        print(json.dumps({"round": 1, "asked": {k: r.method for k, r in requests.items()}}), flush=True)
        answers = {
            k: types.ElicitResult(action="accept", content=fill(r.params.requested_schema or {}))
            for k, r in requests.items()
        }
        time.sleep(wait)
        for n in (2, 3):
            try:
                r = await client.session.call_tool(tool, {}, input_responses=answers,
                                                   request_state=first.request_state, allow_input_required=True)
                out = {"round": n, "ok": True, "result": r.model_dump(mode="json", by_alias=True, exclude_none=True)}
            except Exception as e:  # what the SDK says, verbatim
                out = {"round": n, "ok": False, "error": f"{type(e).__name__}: {e}"}
            print(json.dumps(out), flush=True)


anyio.run(main)
