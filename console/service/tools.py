"""Tools adapter: agents' tool calls (pending ones wait for an operator), the outbox, the permission matrix."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Mapping

from PySide6.QtCore import Signal

from engine import OutboxMail, PermissionMatrix, Role, ToolCall

from .core import Adapter, Attempt

TOOL_CALLS_SHOWN = 500        # the latest tool calls a load reads (every pending one comes on top)
OUTBOX_SHOWN = 100


@dataclass(frozen=True)
class ToolCallsState:
    """Tool calls as stored: every pending one (oldest first), the latest others (newest first), the outbox."""
    pending: tuple[ToolCall, ...]
    calls: tuple[ToolCall, ...]
    outbox: tuple[OutboxMail, ...]


@dataclass(frozen=True)
class PermissionsView:
    """The permission matrix (frozen) and the fleet's roles, for a read-only table."""
    matrix: PermissionMatrix
    roles: Mapping[str, Role]


class ToolsAdapter(Adapter):
    sig_loaded = Signal(object)                # ToolCallsState: pending calls, the latest calls, the outbox
    sig_changed = Signal(object)               # ToolCallResult of an operator's approval or rejection
    sig_failed = Signal(int, str)              # call id, why the decision was refused

    def load(self) -> asyncio.Task | None:
        """Reads the pending tool calls, the latest others and the outbox: sig_loaded(ToolCallsState)."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(), "tools.load")

    def decide(self, call_id: int, approve: bool, reason: str) -> asyncio.Task | None:
        """Approves (runs: send_email writes the outbox, nothing is sent) or rejects a pending tool call as
        the operator: sig_changed, or sig_failed(call_id, why) and sig_error."""
        call_id = int(call_id)
        if not self.core.require_ready("tool calls cannot be decided", lambda m: self.sig_failed.emit(call_id, m)):
            return None
        return self.core.spawn(self._decide(call_id, bool(approve), reason), "tools.decide")

    def permissions(self) -> PermissionsView:
        """The permission matrix and the fleet's roles (read-only; the matrix is a config file)."""
        return PermissionsView(self.engine.tools.permissions, self.engine.tools.roles)

    async def _decide(self, call_id: int, approve: bool, reason: str) -> None:
        outcome, result = await self.core.attempt(
            lambda: self.engine.tools.decide(call_id, approve, self.core.operator, reason),
            context=f"the decision on tool call #{call_id} was not saved",
            refused=lambda m: self.sig_failed.emit(call_id, m),
            refusal_prefix=f"{'approval' if approve else 'rejection'} refused: ")
        if outcome is Attempt.DONE:
            self.sig_changed.emit(result)
        if outcome is not Attempt.FAILED:      # show the call as the store has it (decided elsewhere?)
            await self._load()

    async def _load(self) -> None:
        tools = self.engine.tools

        async def read():
            return ToolCallsState(tuple(await tools.pending()), tuple(await tools.calls(limit=TOOL_CALLS_SHOWN)),
                                  tuple(await tools.outbox(OUTBOX_SHOWN)))
        outcome, state = await self.core.attempt(read, context="the tool calls could not be read")
        if outcome is Attempt.DONE:
            self.sig_loaded.emit(state)
