"""When the engine takes its scheduled snapshot of every namespace (MemoryStore.maybe_snapshot).

The last scheduled snapshot's time is read from the database each time, not kept here: a restart,
or the console and the CLI on the same file, never snapshot twice in one period."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SnapshotSchedule:
    every_s: float                 # seconds between scheduled snapshots; 0 or less: never
    label: str = "scheduled"       # the label scheduled snapshots carry (manual ones do not count)
    by: str = "engine"             # the actor in the audit trail

    @property
    def enabled(self) -> bool:
        return self.every_s > 0

    def due(self, now: float, last_at: float | None) -> bool:
        if not self.enabled:
            return False
        return last_at is None or now - last_at >= self.every_s
