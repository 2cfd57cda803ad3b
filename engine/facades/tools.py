"""Agents' tool calls as an operator decides them (engine.gateway.tools), and the permission matrix."""
from __future__ import annotations

from typing import Mapping

from ..gateway.permissions import PermissionMatrix
from ..gateway.tools import OutboxMail, ToolBroker, ToolCall, ToolCallResult, ToolStatus
from ..types import Role


class ToolsFacade:
    def __init__(self, broker: ToolBroker, permissions: PermissionMatrix, roles: Mapping[str, Role]) -> None:
        self._broker = broker
        self.permissions = permissions          # read-only: the matrix is a config file
        self.roles = dict(roles)                # agent id → role, for the matrix's view

    async def pending(self) -> list[ToolCall]:
        return await self._broker.pending()

    async def calls(self, status: ToolStatus | str | None = None, limit: int | None = 100) -> list[ToolCall]:
        return await self._broker.calls(status, limit)

    async def outbox(self, limit: int = 100) -> list[OutboxMail]:
        return await self._broker.outbox(limit)

    async def decide(self, call_id: int | str, approve: bool, by: str, reason: str) -> ToolCallResult:
        """An operator's decision on a pending tool call: an approval runs it (send_email writes the outbox,
        nothing is sent), a rejection drops it. Both need a reason, and a decision is final."""
        return await (self._broker.approve if approve else self._broker.reject)(call_id, by, reason)
