"""An ASGI app on a real loopback port in the test's own event loop, for agents the tests write themselves; and a
free loopback port for agents the tests start as processes of their own."""
from __future__ import annotations

import asyncio
import socket

import uvicorn

from engine.agents.serve import bind_socket



def free_port() -> int:
    """A loopback port free right now (an agent process is then told to bind it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def serving(app, *, scheme: str = "http", **options):
    """app on scheme://127.0.0.1:<free port> (real TCP, with TCP_NODELAY as the built-in agents have it);
    returns (url, stop). options: uvicorn.Config's own (ssl_certfile, ssl_keyfile, ssl_ca_certs, ...)."""
    sock = bind_socket("127.0.0.1", 0, allow_non_loopback=False)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off", access_log=False, **options))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "the test server did not start"
        await asyncio.sleep(0.02)

    async def stop() -> None:
        server.should_exit = True
        await task
        sock.close()
    return f"{scheme}://127.0.0.1:{sock.getsockname()[1]}", stop
