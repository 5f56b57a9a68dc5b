"""An "internal" A2A agent served by the official Python SDK (a2a-sdk 1.3.0) on loopback, for
the gateway's upstream-agent (proxy) tests and benchmark.

Usage: a2a_internal_agent.py <received-log> [--grpc-only] [--host ADDR]
Prints "listening http://127.0.0.1:<port>" once it serves JSON-RPC at / and HTTP+JSON at /rest
(with --grpc-only: the card, whose only interface is gRPC on another port, served by the SDK's
gRPC handler).
Every message it receives is appended to <received-log> as one JSON line {messageId, text,
metadata (the request's), modes (its accepted output modes), traceparent (the W3C header or gRPC
metadata it came with, or null)}, and
every cancel request as {cancel: <task id>}.
Behaviour by text: "slow:<seconds>" works, emits a first artifact chunk, sleeps, emits the last
chunk and completes; "late:<seconds>" answers with its task only after that long, then works as
"slow:30"; "big:<n>" answers with an artifact of n raw bytes (i % 251); "report:<x>" answers with a data
artifact {"report": x, "words": n} and a text artifact; "refuse" raises UnsupportedOperation;
"say:<x>" answers with a message "said: <x>" and no task; "ask" asks for input (a follow-up's stream then opens with the waiting task, as the JS SDK's
does); anything else completes with "echo: <text>".
"""

import asyncio
import json
import sys

from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.utils.errors import UnsupportedOperationError
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState

from a2a_serve import free_port, serve


def traceparent(context: RequestContext):
    """The `traceparent` the request carried: an HTTP header, or gRPC metadata."""
    state = context.call_context.state if context.call_context else {}
    headers = {k.lower(): v for k, v in (state.get("headers") or {}).items()}
    if "traceparent" in headers:
        return headers["traceparent"]
    grpc_context = state.get("grpc_context")
    for k, v in (grpc_context.invocation_metadata() or []) if grpc_context else []:
        if k.lower() == "traceparent":
            return v if isinstance(v, str) else v.decode()
    return None


class Internal(AgentExecutor):
    def __init__(self, log_path):
        self.log_path = log_path

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = message.parts[0].text if message and message.parts else ""
        with open(self.log_path, "a") as log:
            modes = list(context.configuration.accepted_output_modes) if context.configuration else []
            entry = {"messageId": message.message_id if message else "", "text": text, "metadata": context.metadata, "modes": modes,
                     "traceparent": traceparent(context)}
            log.write(json.dumps(entry) + "\n")
        if text.startswith("say:") and context.current_task is None:
            said = new_text_message(f"said: {text.split(':', 1)[1]}", context_id=context.context_id)
            await event_queue.enqueue_event(said)
            return
        if text.startswith("late:"):
            await asyncio.sleep(float(text.split(":", 1)[1]))
            text = "slow:30"
        if context.current_task is None:
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        elif context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # A follow-up's stream opens with the task as it is (still waiting for input), as
            # the JS SDK does on every turn; the answer follows.
            await event_queue.enqueue_event(context.current_task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if text.startswith("slow:"):
            await updater.start_work()
            await updater.add_artifact([Part(text="part-1 ")], artifact_id="out", append=False)
            await asyncio.sleep(float(text.split(":", 1)[1]))
            await updater.add_artifact([Part(text="part-2")], artifact_id="out", append=True, last_chunk=True)
            await updater.complete(updater.new_agent_message([Part(text="done")]))
        elif text.startswith("slowask:"):
            # Works a while, then asks once; the answer (a follow-up) completes the task.
            await updater.start_work()
            await asyncio.sleep(float(text.split(":", 1)[1]))
            await updater.requires_input(updater.new_agent_message([Part(text="which colour?")]))
        elif text.startswith("big:"):
            n = int(text.split(":", 1)[1])
            data = bytes(i % 251 for i in range(n))
            await updater.add_artifact([Part(raw=data, media_type="application/octet-stream", filename="big.bin")], artifact_id="big")
            await updater.complete()
        elif text.startswith("report:"):
            topic = text.split(":", 1)[1]
            await updater.add_artifact([Part(data=ParseDict({"report": topic, "words": len(topic.split())}, Value()))], artifact_id="data")
            await updater.add_artifact([Part(text=f"report on {topic}")], artifact_id="text")
            await updater.complete()
        elif text == "refuse":
            raise UnsupportedOperationError("refused by the internal agent's policy")
        elif text == "ask":
            await updater.requires_input(updater.new_agent_message([Part(text="what else?")]))
        else:
            await updater.complete(updater.new_agent_message([Part(text=f"echo: {text}")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        with open(self.log_path, "a") as log:
            log.write(json.dumps({"cancel": context.task_id}) + "\n")
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main():
    log_path = sys.argv[1]
    grpc_only = "--grpc-only" in sys.argv[2:]
    # --host ADDR: served on ADDR (an address of this machine) instead of loopback.
    host = sys.argv[sys.argv.index("--host") + 1] if "--host" in sys.argv[2:] else "127.0.0.1"

    port, grpc_port = free_port(), free_port()
    base = f"http://{host}:{port}"
    interfaces = [
        AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
        AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
    ]
    if grpc_only:
        interfaces = [AgentInterface(url=f"{host}:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0")]
    card = AgentCard(
        name="internal",
        description="An internal agent behind the gateway",
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[
            AgentSkill(id="echo", name="echo", description="echoes", tags=["test"]),
            AgentSkill(id="report", name="Report", description="writes a report on a topic", tags=["test"]),
        ],
    )
    handler = DefaultRequestHandler(agent_executor=Internal(log_path), task_store=InMemoryTaskStore(), agent_card=card)
    serve(handler, card, port, grpc_port if grpc_only else None, host)

if __name__ == "__main__":
    main()
