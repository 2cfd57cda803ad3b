"""A keyed built-in agent's ASGI wrapper: refuses requests without the engine's signature and signs every
reply (engine.agents.auth has the format). /health passes through unsigned: it says nothing secret.

It reads the whole request body before the app sees it (to check the signature over the exact bytes) and
holds the whole reply back until it can sign it; both are small JSON documents under caps.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

from starlette.datastructures import Headers

from .auth import (NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, TRACE_HEADER, UNSIGNED_PATHS, ReplayGuard,
                   matches, reply_signature, request_signature)

_MAX_NONCE_CHARS = 128


def _relative_path(scope: dict) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


class SignedApp:
    def __init__(self, app: Any, agent_id: str, key: bytes, max_body: int,
                 clock: Callable[[], float] = time.time, guard: ReplayGuard | None = None) -> None:
        self.app, self.agent_id, self._key, self.max_body = app, agent_id, key, max_body
        self.clock = clock
        self.guard = guard or ReplayGuard()

    def __repr__(self) -> str:
        return f"SignedApp({self.agent_id})"

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or _relative_path(scope) in UNSIGNED_PATHS:
            await self.app(scope, receive, send)
            return
        path = _relative_path(scope)
        headers = Headers(scope=scope)
        trace_id = headers.get(TRACE_HEADER, "")
        nonce = headers.get(NONCE_HEADER, "")
        timestamp = headers.get(TIMESTAMP_HEADER, "")
        body, whole = await self._read_body(receive)

        async def reply(status: int, response_headers: list, content: bytes) -> None:
            signature = reply_signature(self._key, self.agent_id, path, trace_id, nonce, timestamp, status, content)
            response_headers = [(k, v) for k, v in response_headers if k.lower() != SIGNATURE_HEADER.lower().encode()]
            if signature:
                response_headers.append((SIGNATURE_HEADER.lower().encode(), signature.encode()))
            await send({"type": "http.response.start", "status": status, "headers": response_headers})
            await send({"type": "http.response.body", "body": content, "more_body": False})

        refusal = self._refusal(scope, path, trace_id, nonce, timestamp, body, headers.get(SIGNATURE_HEADER), whole)
        if refusal:
            status = 401 if whole else 400       # a body over the limit is a bad request; the rest, unauthorised
            content = json.dumps({"error": refusal}).encode()
            await reply(status, [(b"content-type", b"application/json"),
                                 (b"content-length", str(len(content)).encode())], content)
            return

        delivered = False

        async def replay_body() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()          # after the body: wait for the client to go away

        start: dict = {}
        chunks: list[bytes] = []
        done = False

        async def hold(message: dict) -> None:
            nonlocal done
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                done = not message.get("more_body", False)

        try:
            await self.app(scope, replay_body, hold)
        finally:
            # An app that sent its reply and then raised (Starlette's error page does) still gets it signed.
            if start and done:
                await reply(start["status"], list(start.get("headers", [])), b"".join(chunks))

    async def _read_body(self, receive: Callable) -> tuple[bytes, bool]:
        """The request body, up to max_body + 1 bytes; whole is False when it was longer (the rest unread)."""
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return bytes(body), True
            body.extend(message.get("body", b""))
            if len(body) > self.max_body:
                return bytes(body), False
            if not message.get("more_body", False):
                return bytes(body), True

    def _refusal(self, scope: dict, path: str, trace_id: str, nonce: str, timestamp: str, body: bytes,
                 presented: str | None, whole: bool) -> str:
        if not whole:
            return f"request body over {self.max_body} bytes"
        if not presented or not nonce or not timestamp:
            return "request is not signed (this agent has a key)"
        if len(nonce) > _MAX_NONCE_CHARS:
            return "request nonce too long"
        expected = request_signature(self._key, self.agent_id, scope.get("method", ""), path, trace_id, nonce,
                                     timestamp, body)
        if not matches(expected, presented):
            return "request signature does not match"
        return self.guard.refusal(nonce, timestamp, self.clock())
