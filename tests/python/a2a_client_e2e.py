"""The official Python A2A SDK (a2a-sdk 1.3.0) as an independent client of the gateway.

Usage:
  a2a_client_e2e.py full <base-url> <JSONRPC|HTTP+JSON|GRPC>
      send (blocking, resent: same task), extended card, stream, get (historyLength), list, cancel (twice:
      the second is TaskNotCancelable), subscribe, and push delivery to a local webhook with
      the configured Authorization header. Prints one JSON line per check.
  a2a_client_e2e.py isolation <base-url> <binding> <red-token> <blue-token>
      red starts a task; blue (another tenant) cannot get, cancel or subscribe to it (TaskNotFound)
      nor see it listed; no token is refused.
  a2a_client_e2e.py start <base-url> <binding> [text]
      starts a task (returnImmediately; default: the tck agent's slow one) and prints {"task": id}.
  a2a_client_e2e.py resubscribe <base-url> <binding> <task-id>
      subscribes and prints every event until the stream ends, then the final task.
  a2a_client_e2e.py route <agent-url> <binding> <text> [token]
      reads the agent's own card at <agent-url>, sends <text> on <binding> (with the bearer
      token, if given) and prints {"interface": …, "state": …, "reply": <the final status
      message's text>}, or {"error": …} when the call is refused.
"""

import asyncio
import http.server
import json
import sys
import threading
import uuid

import httpx

from a2a.client import ClientCallContext
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.types import AuthenticationInfo
from google.protobuf.json_format import MessageToDict

from a2a_common import check, client_for, collect, kind, state_name


def msg(prefix, task_id=None, text="hello"):
    m = Message(role=Role.ROLE_USER, message_id=f"{prefix}-{uuid.uuid4().hex[:8]}", parts=[Part(text=text)])
    if task_id:
        m.task_id = task_id
    return m


class Hook(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        Hook.received.append({"auth": self.headers.get("authorization"), "body": json.loads(body)})
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


async def full(base, binding):
    blocking = await client_for(base, binding, streaming=False)
    first = msg("tck-complete-task")
    out = await collect(blocking.send_message(SendMessageRequest(message=first)))
    check("send returns a task", len(out) == 1 and kind(out[0]) == "task", kinds=[kind(e) for e in out])
    task = out[0].task
    check("the task completed", state_name(task.status.state) == "TASK_STATE_COMPLETED", state=state_name(task.status.state))
    again = await collect(blocking.send_message(SendMessageRequest(message=first)))
    check("a resent message answers with the same task", again[0].task.id == task.id, first=task.id, again=again[0].task.id)

    got = await blocking.get_task(GetTaskRequest(id=task.id, history_length=1))
    check("get honours historyLength", len(got.history) == 1 and got.id == task.id, history=len(got.history))

    ext = await blocking.get_extended_agent_card(GetExtendedAgentCardRequest())
    host = base.split("://", 1)[1]
    check(
        "extended card: the extra skill, interfaces at this gateway",
        any(s.id == "task-audit" for s in ext.skills) and all(host in i.url for i in ext.supported_interfaces),
        urls=[i.url for i in ext.supported_interfaces],
    )

    listed = await blocking.list_tasks(ListTasksRequest(context_id=task.context_id))
    check("list finds the task by context", any(t.id == task.id for t in listed.tasks), total=listed.total_size)

    streaming = await client_for(base, binding, streaming=True)
    events = await collect(streaming.send_message(SendMessageRequest(message=msg("tck-stream-001"))))
    kinds = [kind(e) for e in events]
    states = [state_name(e.status_update.status.state) for e in events if kind(e) == "status_update"]
    check(
        "stream: task, working, artifact, completed",
        kinds == ["task", "status_update", "artifact_update", "status_update"]
        and states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"],
        kinds=kinds,
        states=states,
    )

    waiting = (await collect(blocking.send_message(SendMessageRequest(message=msg("tck-input-required")))))[0].task
    check("input-required task", state_name(waiting.status.state) == "TASK_STATE_INPUT_REQUIRED")
    canceled = await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
    check("cancel", state_name(canceled.status.state) == "TASK_STATE_CANCELED")
    try:
        await blocking.cancel_task(CancelTaskRequest(id=waiting.id))
        check("second cancel refused", False)
    except Exception as e:  # the SDK raises TaskNotCancelableError (mapped from the binding's error)
        check("second cancel refused", "cancel" in f"{type(e).__name__} {e}".lower(), error=f"{type(e).__name__}: {e}")
    try:
        await blocking.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        check("unknown task", False)
    except Exception as e:
        check("unknown task is TaskNotFound", "notfound" in type(e).__name__.lower() or "not found" in str(e).lower(), error=f"{type(e).__name__}: {e}")

    # Subscribe to a running task: the first event is the task, the stream ends at COMPLETED.
    slow = (await collect(blocking.send_message(SendMessageRequest(
        message=msg("test-resubscribe-message-id"),
        configuration=SendMessageConfiguration(return_immediately=True),
    ))))[0].task
    sub = await collect(streaming.subscribe(SubscribeToTaskRequest(id=slow.id)))
    sub_states = [state_name(e.status_update.status.state) for e in sub if kind(e) == "status_update"]
    check("subscribe: task first, ends completed", kind(sub[0]) == "task" and sub_states[-1:] == ["TASK_STATE_COMPLETED"], states=sub_states)

    # Push: a webhook on loopback gets the task's updates with the configured credentials.
    Hook.received = []
    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    parked = (await collect(blocking.send_message(SendMessageRequest(message=msg("tck-input-required")))))[0].task
    cfg = await blocking.create_task_push_notification_config(TaskPushNotificationConfig(
        task_id=parked.id, url=hook_url, authentication=AuthenticationInfo(scheme="Bearer", credentials="hook-secret"),
    ))
    check("push config created", cfg.task_id == parked.id and cfg.id != "")
    done = (await collect(blocking.send_message(SendMessageRequest(message=msg("tck-complete-task", task_id=parked.id)))))[0].task
    check("follow-up completes the task in its context", done.id == parked.id and done.context_id == parked.context_id and state_name(done.status.state) == "TASK_STATE_COMPLETED")
    for _ in range(100):
        if any(r["body"].get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED" for r in Hook.received):
            break
        await asyncio.sleep(0.1)
    server.shutdown()
    completed = [r for r in Hook.received if r["body"].get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"]
    check("push delivered with the configured Authorization", completed and completed[0]["auth"] == "Bearer hook-secret", received=len(Hook.received))


async def isolation(base, binding, red, blue):
    c = await client_for(base, binding, streaming=False)
    as_ = lambda token: ClientCallContext(service_parameters={"Authorization": f"Bearer {token}"})
    first = await collect(c.send_message(SendMessageRequest(message=msg("tck-input-required")), context=as_(red)))
    task = first[0].task
    check("red starts a task", state_name(task.status.state) == "TASK_STATE_INPUT_REQUIRED")
    got = await c.get_task(GetTaskRequest(id=task.id), context=as_(red))
    check("red reads it", got.id == task.id)

    async def refused(name, call):
        try:
            await call()
            check(name, False)
        except Exception as e:
            check(name, "notfound" in type(e).__name__.lower() or "not found" in str(e).lower(), error=f"{type(e).__name__}: {e}")

    await refused("blue cannot get it", lambda: c.get_task(GetTaskRequest(id=task.id), context=as_(blue)))
    await refused("blue cannot cancel it", lambda: c.cancel_task(CancelTaskRequest(id=task.id), context=as_(blue)))
    streaming = await client_for(base, binding, streaming=True)
    await refused(
        "blue cannot subscribe to it",
        lambda: collect(streaming.subscribe(SubscribeToTaskRequest(id=task.id), context=as_(blue))),
    )
    listed = await c.list_tasks(ListTasksRequest(), context=as_(blue))
    check("blue lists nothing", len(listed.tasks) == 0 and listed.total_size == 0, total=listed.total_size)
    try:
        await c.get_task(GetTaskRequest(id=task.id))
        check("no token is refused", False)
    except Exception as e:
        check("no token is refused", True, error=f"{type(e).__name__}")
    still = await c.get_task(GetTaskRequest(id=task.id), context=as_(red))
    check("red's task is untouched", state_name(still.status.state) == "TASK_STATE_INPUT_REQUIRED")


async def start(base, binding, text):
    c = await client_for(base, binding, streaming=False)
    out = await collect(c.send_message(SendMessageRequest(
        message=msg("test-resubscribe-message-id", text=text),
        configuration=SendMessageConfiguration(return_immediately=True),
    )))
    print(json.dumps({"task": out[0].task.id, "state": state_name(out[0].task.status.state)}), flush=True)


async def resubscribe(base, binding, task_id):
    c = await client_for(base, binding, streaming=True)
    events = await collect(c.subscribe(SubscribeToTaskRequest(id=task_id)))
    for e in events:
        print(json.dumps({"event": MessageToDict(e)}), flush=True)
    final = await c.get_task(GetTaskRequest(id=task_id))
    print(json.dumps({"final": state_name(final.status.state)}), flush=True)


async def route(base, binding, text, token=None):
    c = await client_for(base, binding, streaming=False)
    context = ClientCallContext(service_parameters={"Authorization": f"Bearer {token}"}) if token else None
    async with httpx.AsyncClient() as h:
        card = (await h.get(f"{base}/.well-known/agent-card.json")).json()
    interface = next(i for i in card["supportedInterfaces"] if i["protocolBinding"] == binding)
    try:
        out = await collect(c.send_message(SendMessageRequest(message=msg("route", text=text)), context=context))
    except Exception as e:  # the refusal, as the SDK reports it
        print(json.dumps({"interface": interface, "error": f"{type(e).__name__}: {e}"}), flush=True)
        return
    task = out[0].task
    reply = "".join(p.text for p in task.status.message.parts)
    print(json.dumps({"interface": interface, "task": task.id, "state": state_name(task.status.state), "reply": reply}), flush=True)


def main():
    mode, base, binding = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "full":
        asyncio.run(full(base, binding))
    elif mode == "isolation":
        asyncio.run(isolation(base, binding, sys.argv[4], sys.argv[5]))
    elif mode == "start":
        asyncio.run(start(base, binding, sys.argv[4] if len(sys.argv) > 4 else "hello"))
    elif mode == "route":
        asyncio.run(route(base, binding, sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None))
    elif mode == "resubscribe":
        asyncio.run(resubscribe(base, binding, sys.argv[4]))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
