"""The official Python MCP SDK (mcp==2.3.0) calling an A2A agent through the gateway's bridge
(an `[[upstreams]]` entry of kind `a2a` in front of the a2a-sdk agent of
a2a_internal_agent.py).

Usage: python mcp_bridge_client.py GATEWAY_MCP_URL MODE PREFIX [KEY]
MODE is "2026-07-28" or "legacy" (all checks), or "keyed" (one `slow:3` send with idempotency
key KEY, on 2026-07-28, printing its result: the kill -9 test runs it before and after a restart),
or "cold" (a skill tool called before any tools/list, a skill the agent does not offer, and a
declined question whose task cancel_task and get_task take by the id the result named), or
"task-start" (a `slowask:5` send as an MCP task: prints its task id) and "task-finish" TASK_ID
(follows that task with tasks/get, answers its question with tasks/update, gets the result), or
"policy" (each skill and send_message is its own policy target, its arguments at
/arguments/<name>: the gateway's rules of bridge.rs's per-skill test deny `echo` of a text
starting "secret" and `send_message` of a text starting "wire").
Checks: the agent's skills are tools; a skill call answers with text and the A2A task's ids; a
data artifact is structuredContent; a large artifact is a resource_link whose bytes verify; an
INPUT_REQUIRED round is answered by elicitation (MRTR or a server->client request); a long task
is followed through the Tasks extension (a ResultClaim of the SDK's ClientExtension API, on
2026-07-28) and through `get_task`; cancel_task and an MCP cancellation cancel the A2A task; a
keyed retry attaches to the same call. Prints one JSON line per check; exits 1 on the first
failure. With MCP_BEARER set (the operator's token), every request (artifact downloads too)
carries it, and a client of another tenant checks it cannot see or cancel the calls.
"""

import os

import hashlib
import json
import sys
from typing import Any, ClassVar, Literal

import anyio
import httpx
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.client.extension import ClientExtension, ResultClaim
from mcp_types import Result
from pydantic import Field

TASKS = "io.modelcontextprotocol/tasks"
KEY_META = "dev.switchyard/idempotencyKey"
A2A_META = "dev.switchyard/a2a"


BEARER = os.environ.get("MCP_BEARER")
HEADERS = {"Authorization": f"Bearer {BEARER}"} if BEARER else {}


def server(url):
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=HEADERS)) if BEARER else url


def check(name, ok, detail=""):
    print(json.dumps({"check": name, "ok": bool(ok), "detail": str(detail)[:600]}), flush=True)
    if not ok:
        sys.exit(1)


def text(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def meta(result):
    return (result.meta or {}) if hasattr(result, "meta") else {}


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"text": "blue"})


class CreateTaskResult(Result):
    """SEP-2663's CreateTaskResult: the task's fields at the top level."""

    model_config = {"extra": "allow", "populate_by_name": True}
    result_type: Literal["task"] = Field("task", alias="resultType")
    task_id: str = Field(alias="taskId")


class TasksGet(types.Request[dict[str, Any], Literal["tasks/get"]]):
    # 2026-07-28 routes tasks/get by its Mcp-Name header: the task id.
    name_param: ClassVar[str] = "taskId"
    method: Literal["tasks/get"] = "tasks/get"
    params: dict[str, Any]


class TasksUpdate(types.Request[dict[str, Any], Literal["tasks/update"]]):
    name_param: ClassVar[str] = "taskId"
    method: Literal["tasks/update"] = "tasks/update"
    params: dict[str, Any]


class TaskPolled(Result):
    model_config = {"extra": "allow"}


class Tasks(ClientExtension):
    """The Tasks extension (SEP-2663) as far as a tools/call needs it: a `task` answer is
    polled with tasks/get until it is terminal, then its result is the call's."""

    identifier = TASKS

    def __init__(self):
        self.seen = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created, ctx):
        task_id = created.task_id
        self.seen.append(task_id)
        for _ in range(300):
            polled = await ctx.session.send_request(TasksGet(params={"taskId": task_id}), TaskPolled)
            body = polled.model_dump(by_alias=True)
            self.polled = body
            status = body.get("status")
            if status in ("completed", "failed", "cancelled"):
                result = body.get("result") or {"content": [{"type": "text", "text": status}], "isError": True}
                return types.CallToolResult.model_validate(result)
            await anyio.sleep(0.1)
        raise RuntimeError(f"the task never ended: {self.polled}")


async def keyed(url, prefix, key):
    async with Client(server(url), mode="2026-07-28", read_timeout_seconds=60) as client:
        r = await client.call_tool(f"{prefix}send_message", {"text": "slow:3"}, meta={KEY_META: key})
        print(json.dumps({"text": text(r), "isError": r.is_error, "meta": meta(r)}), flush=True)


async def on_decline(context, params):
    return types.ElicitResult(action="decline")


async def cold(url, prefix):
    async with Client(server(url), mode="2026-07-28", read_timeout_seconds=30, elicitation_callback=on_decline) as client:
        r = await client.call_tool(f"{prefix}echo", {"text": "cold"})
        check("a skill tool called before any listing", not r.is_error and text(r) == "echo: cold", r)
        try:
            missing = await client.call_tool(f"{prefix}nosuch", {"text": "x"})
            check("a skill the agent does not offer is an error", missing.is_error, missing)
        except Exception as e:  # a JSON-RPC error: the SDK raises it
            data = getattr(getattr(e, "error", None), "data", None) or {}
            check("a skill the agent does not offer is not retry-safe", "offers no skill" in str(e) and data.get("retrySafe") is False, (e, data))
        # Declined: the agent's task still waits; the result names it, and cancel_task takes that id.
        r = await client.call_tool(f"{prefix}send_message", {"text": "ask"})
        named = text(r).split("its task `", 1)[-1].split("`", 1)[0]
        check("a declined question names the waiting task", r.is_error and "still waits for input" in text(r) and named, r)
        c = await client.call_tool(f"{prefix}cancel_task", {"task_id": named})
        check("cancel_task cancels the task it named", c.is_error and "canceled" in text(c), c)
        got = await client.call_tool(f"{prefix}get_task", {"task_id": named})
        check("get_task reads it by the same id", "canceled" in text(got).lower(), got)


class TaskId(Tasks):
    """Takes a task answer as it comes: the call's result is the task id."""

    async def resolve(self, created, ctx):
        return types.CallToolResult(content=[types.TextContent(type="text", text=created.task_id)])


async def task_start(url, prefix):
    async with Client(server(url), mode="2026-07-28", read_timeout_seconds=30, extensions=[TaskId()]) as client:
        r = await client.call_tool(f"{prefix}send_message", {"text": "slowask:5"})
        print(json.dumps({"task": text(r)}), flush=True)


async def task_finish(url, task_id):
    async with Client(server(url), mode="2026-07-28", read_timeout_seconds=30, extensions=[Tasks()]) as client:
        async def get():
            polled = await client.session.send_request(TasksGet(params={"taskId": task_id}), TaskPolled)
            return polled.model_dump(by_alias=True)

        async def update(responses):
            return await client.session.send_request(TasksUpdate(params={"taskId": task_id, "inputResponses": responses}), TaskPolled)

        body = await get()
        seen = [body.get("status")]
        for _ in range(300):
            if body.get("status") != "working":
                break
            await anyio.sleep(0.1)
            body = await get()
        check("the task id from before the restart is the same task", body.get("taskId") == task_id and seen[0] in ("working", "input_required"), body)
        requests = body.get("inputRequests") or {}
        check("the agent's question is the task's input request", body.get("status") == "input_required" and len(requests) == 1
              and next(iter(requests.values()))["params"]["message"] == "which colour?", body)
        key = next(iter(requests))
        try:
            await update({"nosuch": {"action": "accept", "content": {"text": "red"}}})
            check("an answer to no outstanding request is refused", False, "accepted")
        except Exception as e:  # the SDK raises the JSON-RPC error
            check("an answer to no outstanding request is refused", key in str(e), e)
        answer = {key: {"action": "accept", "content": {"text": "green"}}}
        await update(answer)
        try:  # the same answer again: it attaches to the one follow-up, or nothing waits for it any more
            await update(answer)
            repeated = "attached"
        except Exception as e:
            repeated = str(e)
        check("a repeated answer sends nothing more", repeated == "attached" or "not waiting for input" in repeated, repeated)
        for _ in range(300):
            body = await get()
            if body.get("status") in ("completed", "failed", "cancelled"):
                break
            await anyio.sleep(0.1)
        result = body.get("result") or {}
        said = "\n".join(c.get("text", "") for c in result.get("content", []))
        check("the same task completes with the answer's result", body.get("status") == "completed" and said == "echo: green", body)


async def policy(url, prefix):
    async with Client(server(url), mode="2026-07-28", read_timeout_seconds=30) as client:
        async def call(tool, text_):
            return await client.call_tool(f"{prefix}{tool}", {"text": text_})

        r = await call("echo", "secret plans")
        check("a rule on a skill's argument denies that skill's call", r.is_error and "no secrets to echo" in text(r), r)
        r = await call("echo", "fine")
        check("the same skill with other arguments runs", not r.is_error and text(r) == "echo: fine", r)
        r = await call("send_message", "secret plans")
        check("the skill's rule is not send_message's", not r.is_error and text(r) == "echo: secret plans", r)
        r = await call("send_message", "wire 500")
        check("send_message is a target of its own", r.is_error and "wires go through the desk" in text(r), r)
        r = await call("report", "wire 5")
        check("send_message's rule is not a skill's", not r.is_error and text(r) == "echo: wire 5", r)


async def main():
    url, mode, p = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "policy":
        return await policy(url, p)
    if mode == "task-start":
        return await task_start(url, p)
    if mode == "task-finish":
        return await task_finish(url, sys.argv[4])
    if mode == "keyed":
        return await keyed(url, p, sys.argv[4])
    if mode == "cold":
        return await cold(url, p)
    if mode == "2026-07-28":
        # A client with the Tasks extension gets a task for a long call, and follows it.
        tasks = Tasks()
        async with Client(server(url), mode=mode, read_timeout_seconds=30, extensions=[tasks]) as client:
            r = await client.call_tool(f"{p}send_message", {"text": "slow:1.5"})
            check(f"{mode} long task through the Tasks extension", len(tasks.seen) == 1 and "done" in text(r) and "part-2" in text(r), (tasks.seen, r))
    async with Client(server(url), mode=mode, elicitation_callback=on_elicit, read_timeout_seconds=30) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        wanted = {f"{p}{n}" for n in ["send_message", "echo", "report", "get_task", "cancel_task"]}
        check(f"{mode} skills listed as tools", wanted <= names, sorted(names))

        r = await client.call_tool(f"{p}echo", {"text": f"hi {mode}"})
        a2a = meta(r).get(A2A_META, {})
        check(f"{mode} skill call", not r.is_error and text(r) == f"echo: hi {mode}", r)
        check(f"{mode} names the A2A task", a2a.get("state") == "TASK_STATE_COMPLETED" and a2a.get("taskId"), a2a)

        r = await client.call_tool(f"{p}report", {"text": "report:bridges and gateways"})
        check(f"{mode} data artifact as structuredContent", r.structured_content == {"report": "bridges and gateways", "words": 3}, r)
        check(f"{mode} and text", "report on bridges and gateways" in text(r), r)

        n = 100_000
        r = await client.call_tool(f"{p}send_message", {"text": f"big:{n}"})
        links = [c for c in r.content if getattr(c, "type", None) == "resource_link"]
        check(f"{mode} large artifact as a resource link", len(links) == 1 and "/artifacts/" in str(links[0].uri), r)
        # The link alone opens it (no credentials: it carries a signed grant for this caller),
        # and opens nothing else: not without its grant, not another artifact.
        uri = str(links[0].uri)
        path, grant = uri.split("?", 1)
        other = path[:-1] + ("0" if path[-1] != "0" else "1") + "?" + grant
        async with httpx.AsyncClient() as http:
            got = await http.get(uri)
            bare, forged = (await http.get(path)).status_code, (await http.get(other)).status_code
        expected = bytes(i % 251 for i in range(n))
        check(f"{mode} its bytes verify", got.status_code == 200 and hashlib.sha256(got.content).digest() == hashlib.sha256(expected).digest(),
              f"HTTP {got.status_code}, {len(got.content)} bytes")
        check(f"{mode} the link opens that artifact only", bare == 401 and forged == 401, (bare, forged))

        r = await client.call_tool(f"{p}send_message", {"text": "x" * 5000})
        check(f"{mode} a result above the cap is refused, saying so", r.is_error and "mcp.bridge_result_max_bytes = 4096" in text(r), r)

        r = await client.call_tool(f"{p}send_message", {"text": "ask"})
        check(f"{mode} INPUT_REQUIRED answered by elicitation", not r.is_error and text(r) == "echo: blue", r)

        # Twice the gateway's wait (mcp.call_wait_ms = 2000): still running when it answers.
        r = await client.call_tool(f"{p}send_message", {"text": "slow:4"})
        sc = r.structured_content or {}
        check(f"{mode} a running call names its task", r.is_error and sc.get("taskTool") == f"{p}get_task", r)
        for _ in range(200):
            got = await client.call_tool(f"{p}get_task", {"task_id": sc["invocation"]})
            if not (got.structured_content or {}).get("taskTool"):
                break
            await anyio.sleep(0.1)
        check(f"{mode} get_task follows it to the end", not got.is_error and "done" in text(got), got)
        if BEARER:
            # Another tenant (the operator's token naming tenant `globex`) cannot read or cancel it.
            other = streamable_http_client(url, http_client=create_mcp_http_client(headers={**HEADERS, "x-switchyard-tenant": "globex"}))
            async with Client(other, mode=mode, read_timeout_seconds=30) as intruder:
                for tool in ["get_task", "cancel_task"]:
                    for kind in ["invocation", "taskId"]:  # by either id a result names
                        try:
                            leaked = await intruder.call_tool(f"{p}{tool}", {"task_id": sc[kind]})
                        except Exception as e:  # the SDK raises the JSON-RPC error
                            leaked = e
                        check(f"{mode} another tenant's {tool} by {kind} finds no such task", "unknown task" in str(leaked), leaked)

        # The agent answers with its task only after 3.5 s: until then a cancel changes nothing
        # and says to try again; once it has, the cancel reaches the agent.
        r = await client.call_tool(f"{p}send_message", {"text": "late:3.5"})
        task = (r.structured_content or {}).get("invocation")
        first = c = await client.call_tool(f"{p}cancel_task", {"task_id": task})
        check(f"{mode} a cancel before the agent acknowledged asks to try again", "not been acknowledged" in text(first), first)
        for _ in range(100):
            if "not been acknowledged" not in text(c):
                break
            await anyio.sleep(0.1)
            c = await client.call_tool(f"{p}cancel_task", {"task_id": task})
        # On a busy machine the cancel itself can outlast the call's wait: it then answers with
        # its own invocation, which get_task follows to the cancel's outcome.
        for _ in range(200):
            pending = (c.structured_content or {}).get("taskTool") and (c.structured_content or {}).get("invocation")
            if not pending:
                break
            await anyio.sleep(0.1)
            c = await client.call_tool(f"{p}get_task", {"task_id": pending})
        check(f"{mode} cancel_task cancels the A2A task", c.is_error and "canceled" in text(c), c)

        with anyio.move_on_after(1.0) as scope:
            await client.call_tool(f"{p}send_message", {"text": "slow:31"}, read_timeout_seconds=60)
        check(f"{mode} MCP cancellation sent", scope.cancelled_caught)

        key = f"{mode}-{sys.argv[3]}-key"
        first = await client.call_tool(f"{p}send_message", {"text": f"once {mode}"}, meta={KEY_META: key})
        again = await client.call_tool(f"{p}send_message", {"text": f"once {mode}"}, meta={KEY_META: key})
        inv = lambda r: meta(r).get("dev.switchyard/invocation")
        check(f"{mode} a keyed retry attaches", inv(first) and inv(first) == inv(again) and text(again) == f"echo: once {mode}", (first, again))


anyio.run(main)
