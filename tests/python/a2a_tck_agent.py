"""An agent that behaves as the A2A TCK's system under test, served by the official Python SDK
(a2a-sdk 1.3.0) on loopback: the TCK runs against it directly and through the gateway
(an `[[upstreams]]` entry of kind `a2a`), and the two results are compared (conformance/a2a/run.sh).

Usage: a2a_tck_agent.py full|bare
Prints "listening http://127.0.0.1:<port>" once it serves JSON-RPC at /, HTTP+JSON at /rest and
gRPC on another loopback port (all three listed on its card). `full` declares streaming, `bare`
does not (the SDK then refuses streaming calls). Push notifications are not declared: the SDK
agent has no push sender here (through the gateway, the gateway delivers push itself).

Behaviour by messageId prefix, as the TCK's scenarios (scenarios/*.feature at 357c4a8) require:
tck-complete-task completes with "Hello from TCK"; tck-artifact-text / -file / -file-url / -data
add that artifact and complete; tck-message-response answers with a message and no task;
tck-input-required asks for input; tck-reject-task fails with an error; tck-stream-001 / -003 /
-ordering-001 / -artifact-text / -artifact-file / -artifact-chunked stream working, the
artifact(s), completed; tck-stream-002 completes; test-resubscribe-message-id works for 4 s
(twice the TCK's streaming timeout) then completes; anything else completes with a message
naming the prefix.
"""

import asyncio
import sys

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.helpers.proto_helpers import new_task
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Part,
    TaskState,
)

from a2a_serve import free_port, serve
from a2a.utils.errors import A2AError

RESUBSCRIBE_SECONDS = 4


def text(t):
    return [Part(text=t)]


def file_part():
    return [Part(raw=b"tck", media_type="text/plain", filename="output.txt")]


# Prefix -> the artifacts a streamed lifecycle emits between "working" and "completed".
STREAMED = {
    "tck-stream-001": [text("Stream hello from TCK")],
    "tck-stream-003": [text("Stream task lifecycle")],
    "tck-stream-ordering-001": [text("Ordered output")],
    "tck-stream-artifact-text": [text("Streamed text content")],
    "tck-stream-artifact-file": [file_part()],
}


class TckAgent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        message = context.message
        mid = message.message_id if message else ""
        if mid.startswith("tck-message-response"):
            await event_queue.enqueue_event(updater.new_agent_message(text("Direct message response")))
            return
        if mid.startswith("tck-reject-task"):
            raise A2AError("rejected")
        if context.current_task is None:
            # The SDK (1.x) wants the task enqueued before its first status update.
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        if mid.startswith("tck-stream-artifact-chunked"):
            await updater.start_work()
            await updater.add_artifact(text("chunk-1 "), append=True)
            await updater.add_artifact(text("chunk-2"), append=True, last_chunk=True)
            await updater.complete()
            return
        for prefix, artifacts in STREAMED.items():
            if mid.startswith(prefix):
                await updater.start_work()
                for parts in artifacts:
                    await updater.add_artifact(parts)
                await updater.complete()
                return
        if mid.startswith("test-resubscribe-message-id"):
            await updater.start_work()
            await asyncio.sleep(RESUBSCRIBE_SECONDS)
            await updater.complete()
            return
        if mid.startswith("tck-stream-002"):
            await updater.complete()
            return
        if mid.startswith("tck-input-required"):
            await updater.requires_input()
            return
        if mid.startswith("tck-complete-task"):
            await updater.complete(updater.new_agent_message(text("Hello from TCK")))
            return
        artifact = None
        if mid.startswith("tck-artifact-file-url"):
            artifact = [Part(url="https://example.com/output.txt", media_type="text/plain", filename="output.txt")]
        elif mid.startswith("tck-artifact-text"):
            artifact = text("Generated text content")
        elif mid.startswith("tck-artifact-file"):
            artifact = file_part()
        elif mid.startswith("tck-artifact-data"):
            artifact = [Part(data=json_format.Parse('{"key": "value", "count": 42}', Value()))]
        if artifact is not None:
            await updater.add_artifact(artifact)
            await updater.complete()
            return
        await updater.complete(updater.new_agent_message(text(f"Unhandled messageId prefix: {mid}")))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main():
    profile = sys.argv[1] if len(sys.argv) > 1 else "full"
    if profile not in ("full", "bare"):
        raise SystemExit("usage: a2a_tck_agent.py full|bare")
    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="TCK agent (a2a-sdk)",
        description="Behaves as the A2A TCK's system under test",
        version="1.0.0",
        provider=AgentProvider(organization="Switchyard tests", url="https://example.com/switchyard"),
        supported_interfaces=[
            AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=profile == "full", push_notifications=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="tck", name="TCK", description="Handles TCK messages by messageId prefix", tags=["tck"])],
    )
    handler = DefaultRequestHandler(agent_executor=TckAgent(), task_store=InMemoryTaskStore(), agent_card=card)
    serve(handler, card, port, grpc_port)

if __name__ == "__main__":
    main()
