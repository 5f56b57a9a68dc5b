"""Helpers shared by the scripts that drive the official Python A2A SDK (a2a-sdk 1.3.0) as a
client of the gateway: one JSON line per check, clients per binding, event kinds."""

import json
import os

import grpc
import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import TaskState


def check(name, ok, **detail):
    print(json.dumps({"check": name, "ok": bool(ok), **detail}), flush=True)
    if not ok:
        raise SystemExit(f"check failed: {name} {detail}")


def grpc_channel(url):
    """A gRPC channel to `url`: over TLS trusting the CA in $SWITCHYARD_TEST_CA when that is set
    (HTTP clients read $SSL_CERT_FILE), else plain."""
    ca = os.environ.get("SWITCHYARD_TEST_CA")
    if not ca:
        return grpc.aio.insecure_channel(url)
    with open(ca, "rb") as f:
        return grpc.aio.secure_channel(url, grpc.ssl_channel_credentials(root_certificates=f.read()))


async def client_for(base, binding, streaming):
    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=[binding],
        httpx_client=httpx.AsyncClient(timeout=30),
        grpc_channel_factory=grpc_channel,
    )
    return await create_client(base, client_config=config)


async def collect(it):
    return [ev async for ev in it]


def kind(ev):
    return ev.WhichOneof("payload")


def state_name(s):
    return TaskState.Name(s)
