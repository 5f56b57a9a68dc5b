"""Serving an agent built on the official Python A2A SDK (a2a-sdk 1.3.0) on loopback, for the
test agents (`a2a_internal_agent.py`, `a2a_tck_agent.py`): the card, JSON-RPC at /, HTTP+JSON at
/rest, and gRPC on its own port when asked."""

import asyncio
import socket

import grpc
import uvicorn
from starlette.applications import Starlette

from a2a.server.request_handlers.grpc_handler import GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.types import a2a_pb2_grpc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(handler, card, port, grpc_port=None, host="127.0.0.1"):
    """Serves until stopped; prints "listening http://<host>:<port>" once it does."""
    routes = (
        create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, rpc_url="/")
        + create_rest_routes(handler, path_prefix="/rest")
    )
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), host=host, port=port, log_level="warning"))

    async def run():
        grpc_server = None
        if grpc_port is not None:
            grpc_server = grpc.aio.server()
            a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), grpc_server)
            grpc_server.add_insecure_port(f"{host}:{grpc_port}")
            await grpc_server.start()
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        print(f"listening http://{host}:{port}", flush=True)
        try:
            await serving
        finally:
            if grpc_server is not None:
                await grpc_server.stop(0)

    asyncio.run(run())
