"""Memory adapter: every agent's own memory, and the operator's snapshot, rollback, quarantine and release.

Memory is read whole when the engine is ready, after every answered question (an agent may have written)
and after each change; a refused change comes back as sig_failed and, like every failure, sig_error
("rollback refused: ...")."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable

from PySide6.QtCore import Signal

from engine import MemoryEntry, NamespaceSummary, Snapshot

from .core import Adapter, Attempt

SNAPSHOT_LABEL = "console"    # the label of a snapshot an operator takes in the console


@dataclass(frozen=True)
class MemoryState:
    """Agents' memory as stored: every namespace's counts, every version of every entry (inactive ones
    included), and every snapshot (newest first)."""
    namespaces: tuple[NamespaceSummary, ...]
    entries: tuple[MemoryEntry, ...]
    snapshots: tuple[Snapshot, ...]


class MemoryAdapter(Adapter):
    sig_loaded = Signal(object)                # MemoryState: namespaces, every entry version, snapshots
    sig_changed = Signal(object)               # what a change returned: tuple[Snapshot], RollbackResult or StatusChange
    sig_failed = Signal(str, str)              # action (snapshot, rollback, quarantine, release, spread), why
    sig_spread = Signal(object)                # Spread: who read an entry, in which traces, and what they wrote next

    def load(self) -> asyncio.Task | None:
        """Reads every namespace, every entry version and every snapshot: sig_loaded(MemoryState)."""
        if not self.core.require_ready("", quiet=True):
            return None
        return self.core.spawn(self._load(), "memory.load")

    def snapshot(self, namespace: str | None, label: str = SNAPSHOT_LABEL) -> asyncio.Task | None:
        """Marks one namespace's state (None: every namespace's) to roll back to later, as the operator."""
        memory, operator = self.engine.memory, self.core.operator
        if namespace is None:
            return self._act("snapshot", lambda: memory.snapshot_all(label, operator))

        async def one():
            return (await memory.snapshot(namespace, label, operator),)
        return self._act("snapshot", one)

    def rollback(self, namespace: str, snapshot_id: int | None = None, before_trace: str | None = None,
                 reason: str = "") -> asyncio.Task | None:
        """Rolls one namespace back to one of its snapshots, or to just before a trace's first write in it."""
        return self._act("rollback", lambda: self.engine.memory.rollback(
            namespace, self.core.operator, reason, snapshot_id=snapshot_id, before_trace=before_trace))

    def quarantine(self, entry_id: int, reason: str) -> asyncio.Task | None:
        """Takes an entry out of memory (never read again until released); the key's previous version in
        play becomes active."""
        return self._act("quarantine", lambda: self.engine.memory.quarantine(entry_id, self.core.operator, reason))

    def release(self, entry_id: int, reason: str) -> asyncio.Task | None:
        """Puts a quarantined entry back in play."""
        return self._act("release", lambda: self.engine.memory.release(entry_id, self.core.operator, reason))

    def spread(self, entry_id: int) -> asyncio.Task | None:
        """Who read an entry, in which traces, and what they wrote next in them: sig_spread(Spread)."""
        if not self.core.require_ready("memory cannot be read", lambda m: self.sig_failed.emit("spread", m)):
            return None
        return self.core.spawn(self._spread(entry_id), "memory.spread")

    def _act(self, action: str, call: Callable[[], Awaitable[object]]) -> asyncio.Task | None:
        if not self.core.require_ready("memory cannot be changed", lambda m: self.sig_failed.emit(action, m)):
            return None
        return self.core.spawn(self._change(action, call), f"memory.{action}")

    async def _change(self, action: str, call: Callable[[], Awaitable[object]]) -> None:
        outcome, result = await self.core.attempt(call, context=f"the memory {action} was not saved",
                                                  refused=lambda m: self.sig_failed.emit(action, m),
                                                  refusal_prefix=f"{action} refused: ")
        if outcome is Attempt.DONE:
            self.sig_changed.emit(result)
            await self._load()

    async def _load(self) -> None:
        memory = self.engine.memory

        async def read():
            return MemoryState(await memory.namespaces(), await memory.entries(None, include_inactive=True),
                               await memory.snapshots())
        outcome, state = await self.core.attempt(read, context="agents' memory could not be read")
        if outcome is Attempt.DONE:
            self.sig_loaded.emit(state)

    async def _spread(self, entry_id: int) -> None:
        outcome, spread = await self.core.attempt(
            lambda: self.engine.memory.spread(entry_id),
            context=f"the readers of memory entry #{entry_id} could not be read",
            refused=lambda m: self.sig_failed.emit("spread", m), refusal_prefix="spread refused: ")
        if outcome is Attempt.DONE:
            self.sig_spread.emit(spread)
