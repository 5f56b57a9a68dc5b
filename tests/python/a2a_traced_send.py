"""The official Python A2A SDK (a2a-sdk 1.3.0) as a client that is inside a trace: it sends one
message with a W3C `traceparent` as a service parameter, which the SDK carries as an HTTP header
(JSON-RPC, HTTP+JSON) or as gRPC metadata, for the tracing test (`tests/tests/traces.rs`).

Usage: a2a_traced_send.py <agent-base-url> <JSONRPC|HTTP+JSON|GRPC> <message-id> <traceparent>
Prints {"state": <the task's final state>} as one JSON line.
"""

import asyncio
import json
import sys

from a2a.client.client import ClientCallContext
from a2a.types import Message, Part, Role, SendMessageRequest

from a2a_common import client_for, collect, state_name


async def main():
    base, binding, message_id, traceparent = sys.argv[1:5]
    client = await client_for(base, binding, streaming=False)
    message = Message(role=Role.ROLE_USER, message_id=message_id, parts=[Part(text="hello")])
    context = ClientCallContext(service_parameters={"traceparent": traceparent})
    events = await collect(client.send_message(SendMessageRequest(message=message), context=context))
    task = events[-1].task
    print(json.dumps({"state": state_name(task.status.state)}), flush=True)


asyncio.run(main())
