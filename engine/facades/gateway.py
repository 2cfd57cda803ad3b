"""The gateway's record: what it blocked, sanitised or escalated, and the chain of one message."""
from __future__ import annotations

from ..store.db import Store
from ..gateway.traces import DecisionRow, TraceLine, recent_decisions_sync, trace_sync


class GatewayFacade:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def decisions(self, limit: int = 200) -> tuple[DecisionRow, ...]:
        """Messages the gateway blocked, sanitised or escalated, newest first, with their evidence."""
        return await self._store.call(recent_decisions_sync, self._store, limit)

    async def trace(self, trace_id: str) -> tuple[TraceLine, ...]:
        """The whole chain of one question or message (`main.py trace`): messages, scans, tool calls,
        memory reads and writes, decisions, audit events, each with its depth under the root."""
        return await self._store.call(trace_sync, self._store, trace_id.strip())
