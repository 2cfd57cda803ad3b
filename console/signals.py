"""Await Qt signals from a coroutine (used by scripted runs such as the screenshot tool)."""
from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import SignalInstance


async def first_emission(*signals: SignalInstance, timeout_s: float | None = None) -> tuple[int, tuple[Any, ...]]:
    """Waits until one of `signals` is emitted; returns its position in `signals` and its arguments.

    Raises TimeoutError if none is emitted within timeout_s."""
    future: asyncio.Future[tuple[int, tuple[Any, ...]]] = asyncio.get_running_loop().create_future()
    receivers = []
    for position, signal in enumerate(signals):
        def receive(*args: Any, _position: int = position) -> None:
            if not future.done():
                future.set_result((_position, args))
        signal.connect(receive)
        receivers.append((signal, receive))
    try:
        return await asyncio.wait_for(future, timeout_s)
    finally:
        for signal, receive in receivers:
            signal.disconnect(receive)
