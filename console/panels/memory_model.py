"""What the Memory panel shows: agents' memory namespaces (with each status counted), every version of the
selected namespace's entries, its snapshots, and the spread of one entry (who read it, in which trace, and
what they wrote next in that trace).

An entry's key and content come from an agent, and an agent may be the attacker: cells show them as one line
of printable characters, the details pane spells them out with hidden characters named (`visible`), and
tooltips are escaped. Nothing is ever rendered as rich text or a link.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Iterable, Sequence

from PySide6.QtGui import QColor

from engine import EntryStatus, MemoryEntry, NamespaceSummary, RollbackResult, Snapshot, Spread, StatusChange

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import cell, visible
from .approvals import when_text

CONTENT_CHARS = 200           # a content cell is cut here (the details pane has it whole)

# status -> (label, colour, what it means)
STATUSES = {
    EntryStatus.ACTIVE: ("active", "good", "The version a read returns."),
    EntryStatus.SUPERSEDED: ("superseded", "muted", "An older version: active again if the newer ones are "
                                                       "taken out (rollback, quarantine)."),
    EntryStatus.QUARANTINED: ("quarantined", "bad", "Taken out by an operator or the engine: never read until "
                                                        "released."),
    EntryStatus.ROLLED_BACK: ("rolled back", "warn", "Written after a rollback point: out of memory for good."),
}
STATUS_ORDER = (EntryStatus.ACTIVE, EntryStatus.SUPERSEDED, EntryStatus.QUARANTINED, EntryStatus.ROLLED_BACK)


def status_label(status: EntryStatus) -> str:
    return STATUSES[status][0]


def status_colour(status: EntryStatus) -> QColor:
    return style.tone(STATUSES[status][1])


def status_meaning(status: EntryStatus) -> str:
    return STATUSES[status][2]


def full_time(at: float | None) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at else "—"


def short_trace(trace_id: str, keep: int = 8) -> str:
    """The start of a trace id (the tooltip and the details have it whole)."""
    return trace_id if len(trace_id) <= keep + 2 else f"{trace_id[:keep]}…"


def entry_order(entry: MemoryEntry) -> tuple:
    """By key, then the newest version first."""
    return (entry.key, -entry.version, -entry.id)


def entry_details(entry: MemoryEntry) -> str:
    """One entry spelled out, for a plain-text pane."""
    lines = [f"#{entry.id} {entry.namespace}/{entry.key} v{entry.version} · {status_label(entry.status).upper()}",
             f"By {entry.author}, {full_time(entry.written_at)} · score {entry.screen_score:.2f}",
             f"Trace {entry.trace_id}"]
    if entry.status_why:
        lines.append(f"Status: {entry.status_why}")
    lines += ["", "Content (as the gateway let it through; written by an agent, never instructions):",
              entry.content]
    return visible("\n".join(lines))


def rollback_text(result: RollbackResult) -> str:
    point = f"snapshot #{result.snapshot_id}" if result.snapshot_id else f"before trace {result.before_trace}"
    undone = ", ".join(f"#{i}" for i in result.rolled_back) or "nothing (no later entries)"
    restored = ", ".join(f"#{i}" for i in result.restored) or "none"
    return f"Rolled {result.namespace} back to {point}: rolled back {undone}; active again {restored}."


def change_text(change: StatusChange) -> str:
    entry, active = change.entry, change.active
    now = f"#{active.id} (v{active.version}) is the active version" if active else "the key has no active version"
    return f"Entry #{entry.id} {entry.namespace}/{cell(entry.key, 60)} is {status_label(entry.status)}; {now}."


def snapshots_text(snapshots: Sequence[Snapshot]) -> str:
    if not snapshots:
        return "No namespace has entries; nothing to snapshot."
    names = ", ".join(f"#{s.id} {s.namespace}" for s in snapshots)
    return f"Snapshot{'s' if len(snapshots) > 1 else ''} taken: {names}."


def result_text(result: object) -> str:
    """What an operator's memory change did, in one sentence."""
    if isinstance(result, RollbackResult):
        return rollback_text(result)
    if isinstance(result, StatusChange):
        return change_text(result)
    if isinstance(result, (tuple, list)):
        return snapshots_text(result)
    return str(result)


# --- namespaces ---------------------------------------------------------------------------------
def _count(colour: QColor):
    """A count column's colour: its status colour when there are any, grey for none."""
    return lambda n: colour if n else style.tones().muted


NAMESPACE_COLUMNS: tuple[Column[NamespaceSummary], ...] = (
    Column("Agent", lambda n: cell(n.namespace, 60), bold=lambda n: True,
           tooltip=lambda n: (f"{n.namespace}: {n.total} entry version(s), last written "
                              f"{full_time(n.last_written_at)}"),
           header_tooltip="The agent that owns the namespace (an agent reads and writes its own only)"),
    Column("Active", lambda n: str(n.active), align=RIGHT, foreground=lambda n: _count(style.tones().good)(n.active),
           header_tooltip=status_meaning(EntryStatus.ACTIVE)),
    Column("Superseded", lambda n: str(n.superseded), align=RIGHT, foreground=lambda n: style.tones().muted,
           header_tooltip=status_meaning(EntryStatus.SUPERSEDED)),
    Column("Quarantined", lambda n: str(n.quarantined), align=RIGHT,
           foreground=lambda n: _count(style.tones().bad)(n.quarantined), bold=lambda n: n.quarantined > 0,
           header_tooltip=status_meaning(EntryStatus.QUARANTINED)),
    Column("Rolled back", lambda n: str(n.rolled_back), align=RIGHT,
           foreground=lambda n: _count(style.tones().warn)(n.rolled_back),
           header_tooltip=status_meaning(EntryStatus.ROLLED_BACK)),
)


class NamespaceModel(RecordTableModel[NamespaceSummary]):
    def __init__(self, parent=None) -> None:
        super().__init__(NAMESPACE_COLUMNS, parent)

    def row_of(self, namespace: str) -> int:
        return next((at for at, n in enumerate(self.records()) if n.namespace == namespace), -1)

    def total(self, status: EntryStatus) -> int:
        field = {EntryStatus.ACTIVE: "active", EntryStatus.SUPERSEDED: "superseded",
                 EntryStatus.QUARANTINED: "quarantined", EntryStatus.ROLLED_BACK: "rolled_back"}[status]
        return sum(getattr(n, field) for n in self.records())


# --- entries ------------------------------------------------------------------------------------
def _entry_background(entry: MemoryEntry) -> QColor | None:
    if entry.status is EntryStatus.QUARANTINED:
        return style.tones().bad_tint
    if entry.status is EntryStatus.ROLLED_BACK:
        return style.tones().neutral_tint
    return None


ENTRY_COLUMNS: tuple[Column[MemoryEntry], ...] = (
    Column("#", lambda e: str(e.id), align=RIGHT, foreground=lambda e: style.tones().muted),
    Column("Key", lambda e: cell(e.key, 60), bold=lambda e: e.active, tooltip=lambda e: e.key),
    Column("Ver", lambda e: f"v{e.version}", align=RIGHT),
    Column("Status", lambda e: status_label(e.status), foreground=lambda e: status_colour(e.status),
           bold=lambda e: True, tooltip=lambda e: e.status_why or status_meaning(e.status)),
    Column("Author", lambda e: cell(e.author, 40), tooltip=lambda e: e.author),
    Column("Trace", lambda e: short_trace(e.trace_id), tooltip=lambda e: e.trace_id,
           header_tooltip="The question (or message) the write belonged to; \"Open trace…\" shows it whole"),
    Column("Written", lambda e: when_text(e.written_at), align=RIGHT,
           tooltip=lambda e: full_time(e.written_at)),
    Column("Score", lambda e: f"{e.screen_score:.2f}", align=RIGHT,
           foreground=lambda e: style.tones().warn if e.screen_score >= 0.3 else None,
           header_tooltip="The gateway's injection score when it was written (0 to 1; 0.5 blocks)"),
    Column("Content", lambda e: cell(e.content, CONTENT_CHARS), tooltip=lambda e: e.content),
)
(ID_COLUMN, KEY_COLUMN, VERSION_COLUMN, STATUS_COLUMN, AUTHOR_COLUMN, TRACE_COLUMN, WRITTEN_COLUMN, SCORE_COLUMN,
 CONTENT_COLUMN) = range(len(ENTRY_COLUMNS))


class EntryModel(RecordTableModel[MemoryEntry]):
    """Every version of one namespace's entries, by key, newest version first."""

    def __init__(self, parent=None) -> None:
        super().__init__(ENTRY_COLUMNS, parent, row_background=_entry_background)

    def set_entries(self, entries: Iterable[MemoryEntry]) -> None:
        self.set_records(sorted(entries, key=entry_order))

    def row_of(self, entry_id: int) -> int:
        return next((at for at, e in enumerate(self.records()) if e.id == entry_id), -1)


# --- snapshots ----------------------------------------------------------------------------------
SNAPSHOT_COLUMNS: tuple[Column[Snapshot], ...] = (
    Column("#", lambda s: str(s.id), align=RIGHT, foreground=lambda s: style.tones().muted),
    Column("Label", lambda s: cell(s.label, 40), tooltip=lambda s: f"{s.label} by {s.created_by}"),
    Column("Taken", lambda s: when_text(s.at), align=RIGHT, tooltip=lambda s: full_time(s.at)),
    Column("Keeps", lambda s: f"≤ #{s.last_entry_id}", align=RIGHT,
           header_tooltip="A rollback to the snapshot keeps the entries up to this id and rolls back the later ones"),
)


class SnapshotModel(RecordTableModel[Snapshot]):
    """One namespace's snapshots, newest first."""

    def __init__(self, parent=None) -> None:
        super().__init__(SNAPSHOT_COLUMNS, parent)


def snapshot_choice(snapshot: Snapshot, entries: Sequence[MemoryEntry]) -> str:
    """A snapshot as the rollback dialog offers it, with what rolling back to it would undo."""
    undone = len(rolled_back_by(entries, snapshot.last_entry_id))
    return (f"#{snapshot.id} {cell(snapshot.label, 30)} · {full_time(snapshot.at)} · keeps ≤ #{snapshot.last_entry_id}"
            f" · rolls back {undone} entr{'y' if undone == 1 else 'ies'}")


def rolled_back_by(entries: Sequence[MemoryEntry], after_entry_id: int) -> list[MemoryEntry]:
    """The entries a rollback that keeps ids ≤ after_entry_id would take out (the store's own rule)."""
    return [e for e in entries if e.id > after_entry_id and e.status is not EntryStatus.ROLLED_BACK]


def first_write_of(entries: Sequence[MemoryEntry], trace_id: str) -> int | None:
    """The id of the first entry `trace_id` wrote among `entries` (one namespace's), or None."""
    ids = [e.id for e in entries if e.trace_id == trace_id]
    return min(ids) if ids else None


def traces_of(entries: Sequence[MemoryEntry]) -> list[str]:
    """The traces that wrote these entries, the latest writer first."""
    return list(dict.fromkeys(e.trace_id for e in sorted(entries, key=lambda e: -e.id)))


# --- spread -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpreadLine:
    """One row of "Who read it?": a read of the entry, or an entry its reader wrote later in that trace."""
    kind: str              # "read" or "wrote"
    at: float
    agent: str
    trace_id: str
    what: str              # for a write: the entry it wrote (key, version, content)


def spread_lines(spread: Spread) -> list[SpreadLine]:
    lines = [SpreadLine("read", r.at, r.reader, r.trace_id, f"read #{spread.entry.id}") for r in spread.reads]
    lines += [SpreadLine("wrote", d.written_at, d.author, d.trace_id,
                         f"#{d.id} {d.key} v{d.version} ({status_label(d.status)}): {d.content}")
              for d in spread.derived]
    return sorted(lines, key=lambda line: line.at)


def spread_summary(spread: Spread) -> str:
    """How often the entry was read since it was written, by whom, in how many traces, and how many entries
    its readers wrote after it in those traces (they may have copied it on)."""
    e = spread.entry
    head = f"Who read #{e.id} ({cell(e.key, 40)} v{e.version})?"
    if not spread.reads:
        return f"{head} No one, since it was written."
    readers = ", ".join(cell(r, 30) for r in spread.readers)
    derived = len(spread.derived)
    later = f"; they wrote {derived} entr{'y' if derived == 1 else 'ies'} after it there" if derived else ""
    return f"{head} {len(spread.reads)} read(s) by {readers} in {len(spread.traces)} trace(s){later}."


SPREAD_COLUMNS: tuple[Column[SpreadLine], ...] = (
    Column("Time", lambda s: when_text(s.at), align=RIGHT, tooltip=lambda s: full_time(s.at)),
    Column("What", lambda s: s.kind, foreground=lambda s: style.tones().bad if s.kind == "wrote" else None,
           bold=lambda s: s.kind == "wrote",
           tooltip=lambda s: "A reader wrote this later in the same trace: it may carry the entry on" if s.kind == "wrote"
           else "The agent read the entry while serving this trace"),
    Column("Agent", lambda s: cell(s.agent, 40), tooltip=lambda s: s.agent),
    Column("Trace", lambda s: short_trace(s.trace_id), tooltip=lambda s: s.trace_id,
           header_tooltip="The trace the read (or write) belonged to; \"Open trace\" shows it whole"),
    Column("Entry written", lambda s: cell(s.what, 120) if s.kind == "wrote" else "",
           tooltip=lambda s: s.what if s.kind == "wrote" else ""),
)


class SpreadModel(RecordTableModel[SpreadLine]):
    def __init__(self, parent=None) -> None:
        super().__init__(SPREAD_COLUMNS, parent)
