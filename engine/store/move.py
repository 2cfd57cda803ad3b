"""A desk's SQLite history moved whole into a team store (`main.py store migrate --from FILE.db`).

The source's chain must verify before anything moves, and the destination must hold no records yet: two
histories are never interleaved, since each has its own chain from the genesis hash. Every table moves with
its ids, in the order the schema created them (a parent before the rows that point at it), in one
transaction: a failure leaves the destination as it was. PostgreSQL's identity counters are then set past the
moved ids. The destination's chain is verified against the source's head before anything is committed, and
the move itself is the first event appended after the moved ones ("store.migrated").
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ..errors import InputError, StoreError
from .audit_log import AuditLog
from .db import Store

MIGRATED = "store.migrated"
_BATCH = 1000


@dataclass(frozen=True)
class MoveReport:
    source: str
    destination: str
    rows: dict[str, int]        # table -> rows moved
    events: int                 # audit events moved (the chain verified to this many on both sides)
    head: str                   # the moved chain's last hash, the same on both sides
    audit_seq: int              # the "store.migrated" event


def _tables(source: Store) -> list[str]:
    """The source's tables in the order they were created (SQLite's catalogue keeps that order)."""
    return [r[0] for r in source.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]


def _head(store: Store) -> tuple[int, str]:
    row = store.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, "")


# The reputation book's tables, whose agent_id is the book's name for an agent (engine.reputation.identity).
_BOOK_TABLES = ("trust", "trust_history")


def move_history(source: Store, destination: Store, by: str,
                 progress: Callable[[str, int], None] = lambda table, rows: None,
                 book_names: Mapping[str, str] | None = None) -> MoveReport:
    """Both stores open, on this thread. book_names: agent id -> its name in the team store's reputation book (the
    desk's agents as its engine names them there), so the moved standing stays this desk's agents' own. Raises
    InputError when the source's chain is broken or the destination already holds records, StoreError when a
    write fails (then nothing was moved)."""
    names = dict(book_names or {})
    if not source.sqlite:
        raise InputError(f"{source.path}: the history to move comes from a desk's SQLite file")
    status = AuditLog(source).verify_sync()
    if not status.intact:
        raise InputError(f"{source.path}: {status.message}; a broken chain is not moved (audit verify --db says "
                         "more)")
    tables = _tables(source)
    known = set(_tables_of(destination))
    missing = [t for t in tables if t not in known]
    if missing:
        raise InputError(f"{source.path}: tables {', '.join(missing)} are not in {destination.path}'s schema; "
                         "is this a Quorum database?")
    held = {t: destination.execute(f"SELECT COUNT(*) FROM {t}").scalar_one() for t in tables}
    if any(held.values()):
        busy = ", ".join(f"{t} {n}" for t, n in held.items() if n)
        raise InputError(f"{destination.path} already holds records ({busy}); a history moves only into an empty "
                         "store, so that each chain stays whole")
    events, head = _head(source)

    def copy() -> MoveReport:
        moved: dict[str, int] = {}
        for table in tables:
            result = source.execute(f"SELECT * FROM {table} ORDER BY 1")
            columns = list(result.keys())
            insert = (f"INSERT INTO {table} ({', '.join(columns)}) "
                      f"VALUES ({', '.join('?' for _ in columns)})")
            count = 0
            renamed = columns.index("agent_id") if table in _BOOK_TABLES and names else None
            for rows in iter(lambda: result.fetchmany(_BATCH), []):
                batch = [tuple(r) for r in rows]
                if renamed is not None:
                    batch = [(*r[:renamed], names.get(r[renamed], r[renamed]), *r[renamed + 1:]) for r in batch]
                destination.executemany(insert, batch)
                count += len(rows)
                progress(table, count)
            moved[table] = count
            if not destination.sqlite and "id" in columns:
                # Rows came with their ids: the identity counter starts after the highest one.
                destination.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                    f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)")
        moved_chain = AuditLog(destination).verify_sync()
        if not moved_chain.intact or moved_chain.checked != events or _head(destination) != (events, head):
            raise StoreError(f"{destination.path}: the moved chain does not match the source's ({moved_chain.message}, "
                             f"{events} events at the source); nothing was moved")
        seq = destination.append_audit("", by, MIGRATED, {"from": Path(str(source.path)).name, "events": events,
                                                          "head": head, "rows": moved})
        return MoveReport(str(source.path), str(destination.path), moved, events, head, seq)
    return destination.transaction(copy)


def _tables_of(store: Store) -> list[str]:
    if store.sqlite:
        return _tables(store)
    return [r[0] for r in store.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]
