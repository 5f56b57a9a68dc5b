"""The official Python A2A SDK (a2a-sdk 1.3.0) as a client of a `tools` agent: MCP tools of the
fixture upstream, bridged to A2A by the gateway.

Usage:
  a2a_bridge_client.py full <base-url> <JSONRPC|HTTP+JSON|GRPC>
      card skills, a call by metadata and by data part, text-only arguments, structured and text
      results, an image as a raw part, a tool error as FAILED, an input round as INPUT_REQUIRED,
      refusals (unknown skill, arguments that break the schema), a stream with WORKING then the
      artifact then COMPLETED, and cancel. Prints one JSON line per check.
  a2a_bridge_client.py fastmcp <base-url> <binding>
      the same through a `tools` agent over a FastMCP server (tests/python/fastmcp_peer.py).
  a2a_bridge_client.py start <base-url> <binding> <message-id> <key> <delay-ms>
      sends `count_write` (returnImmediately) and prints {"task": id}.
  a2a_bridge_client.py send <base-url> <binding> <message-id> <key> <delay-ms>
      sends the same message blocking and prints the task as JSON.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value

from a2a_common import check, client_for, collect, kind, state_name


def data_part(obj):
    return Part(data=ParseDict(obj, Value()))


def msg(parts, skill=None, message_id=None):
    m = Message(role=Role.ROLE_USER, message_id=message_id or f"bridge-{uuid.uuid4().hex[:8]}", parts=parts)
    if skill:
        meta = Struct()
        meta.update({"dev.switchyard/skill": skill})
        m.metadata.CopyFrom(meta)
    return m


async def task_of(client, message, immediately=False):
    config = SendMessageConfiguration(return_immediately=True) if immediately else None
    out = await collect(client.send_message(SendMessageRequest(message=message, configuration=config)))
    return out[0].task


def parts_of(task):
    return [MessageToDict(p) for a in task.artifacts for p in a.parts]


def status_text(task):
    return " ".join(p.text for p in task.status.message.parts if p.text)


async def refused(name, call, expect):
    try:
        await call
        check(name, False)
    except Exception as e:  # the SDK raises its InvalidParams error, mapped from the binding's error
        text = f"{type(e).__name__}: {e}"
        check(name, all(x in text for x in expect), error=text)


async def full(base, binding):
    c = await client_for(base, binding, streaming=False)
    card = await A2ACardResolver(httpx.AsyncClient(timeout=30), base).get_agent_card()
    skills = {s.id: s for s in card.skills}
    check("the card lists one skill per tool", {"echo", "test_image_content", "test_error_handling"} <= set(skills), skills=sorted(skills))
    check("a skill carries the tool's description", "structuredContent" in skills["echo"].description, description=skills["echo"].description)

    done = await task_of(c, msg([data_part({"text": "hi there"})], skill="echo"))
    parts = parts_of(done)
    check("a call by metadata completes", state_name(done.status.state) == "TASK_STATE_COMPLETED", state=state_name(done.status.state), status=status_text(done))
    check("structured content is a data part", {"data": {"text": "hi there"}} in [{"data": p.get("data")} for p in parts if "data" in p], parts=parts)
    check("text content is a text part", any(p.get("text") == "hi there" for p in parts), parts=parts)
    call = MessageToDict(done.metadata).get("dev.switchyard/call", {})
    check("the task names the tool call's invocation", call.get("tool") == "echo" and call.get("state") == "succeeded" and call.get("invocation"), call=call)

    by_part = await task_of(c, msg([data_part({"skill": "echo", "arguments": {"text": "by part"}})]))
    check("a call by data part", any(p.get("text") == "by part" for p in parts_of(by_part)), parts=parts_of(by_part))
    by_text = await task_of(c, msg([Part(text="plain text")], skill="echo"))
    check("text is the sole required string argument", any(p.get("text") == "plain text" for p in parts_of(by_text)), parts=parts_of(by_text))

    image = await task_of(c, msg([data_part({"skill": "test_image_content"})]))
    raw = [p for p in parts_of(image) if "raw" in p or "url" in p]
    check("an image is a raw part with its media type", raw and raw[0].get("mediaType") == "image/png", parts=parts_of(image))

    failed = await task_of(c, msg([data_part({"skill": "test_error_handling"})]))
    check("a tool error fails the task with the tool's message", state_name(failed.status.state) == "TASK_STATE_FAILED" and status_text(failed), state=state_name(failed.status.state), status=status_text(failed))

    asked = await task_of(c, msg([data_part({"skill": "test_streaming_elicitation"})]))
    check("a tool's input round is INPUT_REQUIRED with the question", state_name(asked.status.state) == "TASK_STATE_INPUT_REQUIRED" and status_text(asked), state=state_name(asked.status.state), status=status_text(asked))

    def follow_up(task, parts):
        m = msg(parts)
        m.task_id, m.context_id = task.id, task.context_id
        return m

    await refused("an answer that breaks the requested schema is refused", c.send_message(SendMessageRequest(message=follow_up(asked, [data_part({"value": 5})]))).__anext__(), ["schema"])
    answered = await task_of(c, follow_up(asked, [data_part({"value": "blue"})]))
    check("the follow-up answers the tool's question on the same task", answered.id == asked.id and state_name(answered.status.state) == "TASK_STATE_COMPLETED" and any(p.get("text") == "Received value: blue" for p in parts_of(answered)), state=state_name(answered.status.state), parts=parts_of(answered), status=status_text(answered))
    asked2 = await task_of(c, msg([data_part({"skill": "test_streaming_elicitation"})]))
    by_text = await task_of(c, follow_up(asked2, [Part(text="green")]))
    check("a text answer fills a one-property schema", any(p.get("text") == "Received value: green" for p in parts_of(by_text)), parts=parts_of(by_text), status=status_text(by_text))

    await refused("an unknown skill is refused, naming the skills", c.send_message(SendMessageRequest(message=msg([data_part({"skill": "nope"})]))).__anext__(), ["nope", "echo"])
    await refused("arguments that break the schema are refused", c.send_message(SendMessageRequest(message=msg([data_part({"text": 5})], skill="echo"))).__anext__(), ["schema", "echo"])

    streaming = await client_for(base, binding, streaming=True)
    events = await collect(streaming.send_message(SendMessageRequest(message=msg([data_part({"text": "streamed"})], skill="echo"))))
    kinds = [kind(e) for e in events]
    states = [state_name(e.status_update.status.state) for e in events if kind(e) == "status_update"]
    check("stream: working, the artifact, completed", "artifact_update" in kinds and states[:1] == ["TASK_STATE_WORKING"] and states[-1:] == ["TASK_STATE_COMPLETED"], kinds=kinds, states=states)

    events = await collect(streaming.send_message(SendMessageRequest(message=msg([data_part({"skill": "slow", "arguments": {"steps": 3, "step_ms": 100}})]))))
    texts = [" ".join(p.text for p in e.status_update.status.message.parts) for e in events if kind(e) == "status_update" and state_name(e.status_update.status.state) == "TASK_STATE_WORKING"]
    # The fixture reports step 3 just before it answers, so that one may arrive after the answer
    # (late progress is dropped); the earlier ones are followed by a pause.
    steps = [t for t in texts if "step" in t]
    check("progress arrives as WORKING updates, in order", steps[:2] == ["step 1/3", "step 2/3"] and steps in (["step 1/3", "step 2/3"], ["step 1/3", "step 2/3", "step 3/3"]), texts=texts)

    sampled = await task_of(c, msg([data_part({"skill": "test_sampling", "arguments": {"prompt": "hi"}})]))
    check("a tool's sampling request is refused, saying why", state_name(sampled.status.state) == "TASK_STATE_FAILED" and "sampling" in status_text(sampled), state=state_name(sampled.status.state), status=status_text(sampled))

    slow = await task_of(c, msg([data_part({"skill": "slow", "arguments": {"steps": 20, "step_ms": 500}})]), immediately=True)
    for _ in range(50):
        got = await c.get_task(GetTaskRequest(id=slow.id))
        if state_name(got.status.state) == "TASK_STATE_WORKING":
            break
        await asyncio.sleep(0.1)
    check("the tool call runs", state_name(got.status.state) == "TASK_STATE_WORKING", state=state_name(got.status.state))
    canceled = await c.cancel_task(CancelTaskRequest(id=slow.id))
    check("cancel stops the tool call", state_name(canceled.status.state) == "TASK_STATE_CANCELED", state=state_name(canceled.status.state))


async def fastmcp(base, binding):
    c = await client_for(base, binding, streaming=False)
    card = await A2ACardResolver(httpx.AsyncClient(timeout=30), base).get_agent_card()
    skills = {s.id: s for s in card.skills}
    check("FastMCP's tools are skills", {"add", "greet", "chart", "fail", "steps"} <= set(skills), skills=sorted(skills))
    added = await task_of(c, msg([data_part({"a": 2, "b": 3})], skill="add"))
    parts = parts_of(added)
    check("add: FastMCP's structured result and its text", {"result": 5} in [p.get("data") for p in parts] and any(p.get("text") == "5" for p in parts), parts=parts)
    greeted = await task_of(c, msg([Part(text="Ada")], skill="greet"))
    check("greet by text", any(p.get("text") == "Hello, Ada!" for p in parts_of(greeted)), parts=parts_of(greeted))
    chart = await task_of(c, msg([data_part({"skill": "chart"})]))
    raw = [p for p in parts_of(chart) if "raw" in p]
    check("chart: a PNG as a raw part", raw and raw[0].get("mediaType") == "image/png" and raw[0]["raw"].startswith("iVBORw"), parts=parts_of(chart))
    failed = await task_of(c, msg([data_part({"skill": "fail"})]))
    check("fail: FAILED with FastMCP's message", state_name(failed.status.state) == "TASK_STATE_FAILED" and "as designed" in status_text(failed), status=status_text(failed))
    await refused("add with a string is refused by the pinned schema", c.send_message(SendMessageRequest(message=msg([data_part({"a": "two", "b": 3})], skill="add"))).__anext__(), ["schema"])
    streaming = await client_for(base, binding, streaming=True)
    events = await collect(streaming.send_message(SendMessageRequest(message=msg([data_part({"n": 3})], skill="steps"))))
    texts = [" ".join(p.text for p in e.status_update.status.message.parts) for e in events if kind(e) == "status_update" and state_name(e.status_update.status.state) == "TASK_STATE_WORKING"]
    states = [state_name(e.status_update.status.state) for e in events if kind(e) == "status_update"]
    steps = [t for t in texts if t.startswith("step")]
    check("steps: progress as WORKING updates, then COMPLETED", steps[:2] == ["step 1 of 3", "step 2 of 3"] and steps in (["step 1 of 3", "step 2 of 3"], ["step 1 of 3", "step 2 of 3", "step 3 of 3"]) and states[-1:] == ["TASK_STATE_COMPLETED"], texts=texts, states=states)


def count_write(message_id, key, delay_ms):
    return msg([data_part({"skill": "count_write", "arguments": {"key": key, "delay_ms": int(delay_ms)}})], message_id=message_id)


async def start(base, binding, message_id, key, delay_ms):
    c = await client_for(base, binding, streaming=False)
    task = await task_of(c, count_write(message_id, key, delay_ms), immediately=True)
    print(json.dumps({"task": task.id}), flush=True)


async def send(base, binding, message_id, key, delay_ms):
    c = await client_for(base, binding, streaming=False)
    task = await task_of(c, count_write(message_id, key, delay_ms))
    print(json.dumps({"task": MessageToDict(task)}), flush=True)


def main():
    mode, base, binding = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "full":
        asyncio.run(full(base, binding))
    elif mode == "fastmcp":
        asyncio.run(fastmcp(base, binding))
    elif mode == "start":
        asyncio.run(start(base, binding, *sys.argv[4:7]))
    elif mode == "send":
        asyncio.run(send(base, binding, *sys.argv[4:7]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
