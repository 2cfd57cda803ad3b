"""Agents' memory as an operator sees and repairs it (engine.memory): reads, snapshots, rollback, quarantine."""
from __future__ import annotations

from ..errors import InputError
from ..memory import MemoryEntry, MemoryStore, NamespaceSummary, RollbackResult, Snapshot, Spread, StatusChange
from ..ids import row_id


class MemoryFacade:
    def __init__(self, memory: MemoryStore) -> None:
        self._memory = memory

    async def namespaces(self) -> tuple[NamespaceSummary, ...]:
        return await self._memory.namespaces()

    async def entries(self, namespace: str | None = None, include_inactive: bool = False) -> tuple[MemoryEntry, ...]:
        return await self._memory.entries(namespace, include_inactive=include_inactive)

    async def snapshots(self, namespace: str | None = None) -> tuple[Snapshot, ...]:
        return await self._memory.snapshots(namespace)

    async def spread(self, entry_id: int | str) -> Spread:
        """Who read an entry, in which traces, and what they wrote next."""
        return await self._memory.spread(entry_id)

    async def snapshot(self, namespace: str, label: str, by: str) -> Snapshot:
        return await self._memory.snapshot(namespace, label, by)

    async def snapshot_all(self, label: str, by: str) -> tuple[Snapshot, ...]:
        return await self._memory.snapshot_all(label, by)

    async def rollback(self, namespace: str, by: str, reason: str, *, snapshot_id: int | str | None = None,
                       before_trace: str | None = None) -> RollbackResult:
        """Rolls one agent's memory back to one of its own snapshots, or to just before the first entry a
        trace wrote in it (exactly one of the two). A snapshot of another namespace is refused rather than
        rolled back (the operator named this namespace); other namespaces never change."""
        trace = (before_trace or "").strip()
        if (snapshot_id is None) == (not trace):
            raise InputError("a memory rollback needs a snapshot or a trace id (one of them, not both)")
        if snapshot_id is None:
            return await self._memory.rollback_before_trace(namespace, trace, by, reason)
        number = row_id(snapshot_id, "memory snapshot")
        if number not in {s.id for s in await self._memory.snapshots(namespace)}:
            raise InputError(f"memory snapshot #{number} is not a snapshot of {namespace!r}")
        return await self._memory.rollback_to_snapshot(number, by, reason)

    async def quarantine(self, entry_id: int | str, by: str, reason: str) -> StatusChange:
        """Takes an entry out of memory (never read again until released)."""
        return await self._memory.quarantine(entry_id, by, reason)

    async def release(self, entry_id: int | str, by: str, reason: str) -> StatusChange:
        return await self._memory.release(entry_id, by, reason)
