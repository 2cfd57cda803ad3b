"""The rows of agent memory as the rest of the engine sees them: frozen, so a caller can never change
what the store holds by editing what it was handed."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..gateway.decision import Action


class EntryStatus(str, enum.Enum):
    ACTIVE = "active"            # the version a read returns (at most one per namespace and key)
    SUPERSEDED = "superseded"    # an older version, still a candidate if a newer one is taken out
    QUARANTINED = "quarantined"  # taken out by a person or the engine; never read, can be released
    ROLLED_BACK = "rolled_back"  # written after a rollback point; out for good (final)

    @property
    def in_play(self) -> bool:
        """May this version become the active one again (after a rollback, quarantine or release)?"""
        return self in (EntryStatus.ACTIVE, EntryStatus.SUPERSEDED)


@dataclass(frozen=True)
class MemoryEntry:
    id: int                 # global, increasing: "written after" is "id greater than"
    namespace: str          # the agent that owns it
    key: str
    content: str            # as screened: sanitised when the gateway said SANITISE
    version: int            # 1, 2, ... per namespace and key; never reused, even after a rollback
    author: str
    trace_id: str           # the question (or message) the write belonged to
    written_at: float
    screen_score: float     # the gateway's injection score when it was written
    status: EntryStatus
    status_why: str = ""    # the last status change, in words

    @property
    def active(self) -> bool:
        return self.status is EntryStatus.ACTIVE


@dataclass(frozen=True)
class MemoryRead:
    id: int
    entry_id: int
    reader: str
    trace_id: str           # the question the reader served with this entry
    at: float


@dataclass(frozen=True)
class Snapshot:
    id: int
    namespace: str
    label: str
    at: float
    last_entry_id: int      # the namespace's newest entry then (0: none); a rollback keeps ids ≤ this
    created_by: str


@dataclass(frozen=True)
class WriteResult:
    """What became of one write: stored (maybe sanitised), or blocked by the gateway and not stored."""
    stored: bool
    action: Action
    score: float
    evidence: tuple[str, ...] = ()
    entry: MemoryEntry | None = None      # the new version when stored
    superseded: int | None = None         # the entry id it replaced as the active version

    @property
    def blocked(self) -> bool:
        return not self.stored

    @property
    def sanitised(self) -> bool:
        return self.action is Action.SANITISE


@dataclass(frozen=True)
class RollbackResult:
    namespace: str
    after_entry_id: int                   # entries with a greater id were rolled back
    rolled_back: tuple[int, ...]          # entry ids now rolled_back
    restored: tuple[int, ...]             # entry ids that became active again
    snapshot_id: int | None = None        # set for a rollback to a snapshot
    before_trace: str = ""                # set for a rollback before a trace


@dataclass(frozen=True)
class NamespaceSummary:
    namespace: str
    active: int
    superseded: int
    quarantined: int
    rolled_back: int
    last_entry_id: int
    last_written_at: float

    @property
    def total(self) -> int:
        return self.active + self.superseded + self.quarantined + self.rolled_back


@dataclass(frozen=True)
class Spread:
    """Where a (tainted) entry went: every read of it, and what the readers wrote in those same traces
    afterwards (they may have copied it on)."""
    entry: MemoryEntry
    reads: tuple[MemoryRead, ...]
    derived: tuple[MemoryEntry, ...] = ()

    @property
    def readers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.reader for r in self.reads))

    @property
    def traces(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.trace_id for r in self.reads))


@dataclass(frozen=True)
class RescanHit:
    """An active entry that the current screen no longer lets through."""
    entry: MemoryEntry
    action: Action
    score: float
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class StatusChange:
    """An entry after a quarantine or release, and the version of its key that is active now."""
    entry: MemoryEntry
    active: MemoryEntry | None       # None: the key has no active version left
