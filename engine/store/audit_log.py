"""The audit trail as an operator reads it: filter the events, check the hash chain, export them.

`AuditLog` sits on the store (a SQLite file or a team's PostgreSQL) and never writes to the chain except to record an export
("audit.exported", appended in the same transaction that puts the exported file in place). The _sync
methods run on the store's thread (or on a store no event loop uses, as the CLI does); the async ones
hop onto that thread.

What agents wrote is untrusted text: a CSV export defuses cells a spreadsheet would run as a formula,
and a JSON Lines export escapes everything outside ASCII, so no line separator hides inside a line.
"""
from __future__ import annotations

import csv
import datetime
import errno
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Literal, Mapping

from ..errors import AuditChainBroken, InputError, StoreError
from ..untrusted import csv_text
from .db import Store
from .audit import verify_chain

EXPORTED = "audit.exported"
FORMATS = ("csv", "jsonl")
ExportFormat = Literal["csv", "jsonl"]
COLUMNS = ("seq", "at", "at_iso", "trace_id", "actor", "type", "payload", "prev_hash", "hash")
_SELECT = "SELECT seq, trace_id, actor, type, payload, at, hash, prev_hash FROM audit"
# Errors that say the disk failed us, not that the operator named a bad place.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG})


@dataclass(frozen=True)
class AuditRow:
    """One event of the chain. `payload_json` is the stored text (canonical JSON) the hash covers;
    `payload` is it parsed ({"_unreadable": text} if a tampered row no longer parses)."""
    seq: int
    trace_id: str
    actor: str
    type: str
    payload: Mapping[str, Any]
    at: float
    hash: str
    prev_hash: str = ""
    payload_json: str = ""


@dataclass(frozen=True)
class AuditFilter:
    """Which events to show; every field given narrows the result (None or "" = any).

    kind: an exact type ("review.approved"), or a prefix ending in "." ("review." matches every
          review.* event; "agent." every agent.* one).
    since / until: epoch seconds, since <= at < until.
    limit: the newest `limit` matching events; None = all of them (exports).
    """
    trace_id: str | None = None
    actor: str | None = None
    kind: str | None = None
    since: float | None = None
    until: float | None = None
    limit: int | None = 1000

    def __post_init__(self) -> None:
        for name in ("trace_id", "actor", "kind"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InputError(f"audit filter {name}: expected text, got {value!r}")
            if value is not None and not value.strip():
                object.__setattr__(self, name, None)     # a dropdown's "any" arrives as ""
        if self.trace_id is not None:
            object.__setattr__(self, "trace_id", self.trace_id.strip())
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise InputError(f"audit filter {name}: expected a time in epoch seconds, got {value!r}")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise InputError(f"audit filter: since ({_iso(self.since)}) is not before until ({_iso(self.until)})")
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 1):
            raise InputError(f"audit filter limit: expected a whole number of at least 1, got {self.limit!r}")

    def as_payload(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "actor": self.actor, "kind": self.kind, "since": self.since,
                "until": self.until, "limit": self.limit}


@dataclass(frozen=True)
class ChainStatus:
    """The outcome of checking the whole chain; a broken chain is a status, not an exception."""
    intact: bool
    checked: int                  # events whose hash matched, in order, before any break
    broken_at: int | None         # seq of the first event that does not hash (None when intact)
    reason: str

    @property
    def message(self) -> str:
        if self.intact:
            return f"audit chain intact ({self.checked} events)"
        return f"audit chain broken at event {self.broken_at}: {self.reason}"


@dataclass(frozen=True)
class ExportResult:
    path: Path
    rows: int
    format: str
    audit_seq: int = field(default=0)     # the "audit.exported" event that records this export


class AuditLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    # --- async, for the engine and the console ---------------------------------------------
    async def query(self, filter: AuditFilter = AuditFilter()) -> tuple[AuditRow, ...]:
        return await self.store.call(self.query_sync, filter)

    async def actors(self) -> tuple[str, ...]:
        return await self.store.call(self.actors_sync)

    async def kinds(self) -> tuple[str, ...]:
        return await self.store.call(self.kinds_sync)

    async def verify(self) -> ChainStatus:
        return await self.store.call(self.verify_sync)

    async def export(self, filter: AuditFilter, format: ExportFormat, path: Path | str, by: str) -> ExportResult:
        return await self.store.call(self.export_sync, filter, format, path, by)

    # --- reads -----------------------------------------------------------------------------
    def query_sync(self, filter: AuditFilter = AuditFilter()) -> tuple[AuditRow, ...]:
        """Matching events, newest (highest seq) first."""
        where, params = _where(filter, self.store.indexed_by("audit_at"))
        sql = f"{_SELECT}{where} ORDER BY seq DESC"
        if filter.limit is not None:
            sql, params = sql + " LIMIT ?", [*params, filter.limit]
        return tuple(_row(r) for r in self._fetch(sql, params))

    def actors_sync(self) -> tuple[str, ...]:
        return tuple(r[0] for r in self._fetch("SELECT DISTINCT actor FROM audit ORDER BY actor", []))

    def kinds_sync(self) -> tuple[str, ...]:
        return tuple(r[0] for r in self._fetch("SELECT DISTINCT type FROM audit ORDER BY type", []))

    def verify_sync(self) -> ChainStatus:
        """Checks every event in seq order against its hash and the one before it."""
        seen = {"n": 0, "seq": 0}

        def counted(rows: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
            for row in rows:
                seen["n"], seen["seq"] = seen["n"] + 1, row["seq"]
                yield row
        try:
            checked = verify_chain(counted(self.store.query(
                "SELECT seq, trace_id, actor, type, payload, at, prev_hash, hash FROM audit ORDER BY seq")))
        except AuditChainBroken as exc:
            return ChainStatus(False, seen["n"] - 1, exc.seq, exc.args[0].split(": ", 1)[-1])
        except (TypeError, ValueError) as exc:    # a tampered cell no longer hashes at all (text in `at`)
            return ChainStatus(False, seen["n"] - 1, seen["seq"], f"unreadable event ({exc})")
        if not checked:
            return ChainStatus(True, 0, None, "no events yet")
        return ChainStatus(True, checked, None, "every event matches its hash and the event before it")

    def _fetch(self, sql: str, params: list[Any]) -> list[tuple]:
        return self.store.execute(sql, params).fetchall()

    # --- export ----------------------------------------------------------------------------
    def export_sync(self, filter: AuditFilter, format: ExportFormat, path: Path | str, by: str) -> ExportResult:
        """Writes the matching events, oldest first (the chain's order), to `path`, then records the
        export in the chain. The file is written beside `path` and renamed into place in the same
        transaction that appends the "audit.exported" event: either both land or neither does, and a
        failed export leaves whatever was at `path` untouched."""
        if format not in FORMATS:
            raise InputError(f"audit export: format {format!r} is not one of {', '.join(FORMATS)}")
        if not isinstance(by, str) or not by.strip():
            raise InputError("audit export: say who exports (it goes into the audit trail)")
        path = Path(path).expanduser()
        if path.is_dir():
            raise InputError(f"{path}: is a folder; give the export a file name")
        if not path.parent.is_dir():
            raise InputError(f"{path}: the folder {path.parent} does not exist")
        try:   # mkstemp: readable by its owner only (0600), as fits a copy of the audit trail
            fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise _export_error(path, exc) from exc
        tmp, replaced = Path(tmp_name), False

        def land() -> int:
            nonlocal replaced
            seq = self.store.append_audit("", by, EXPORTED, {"format": format, "rows": rows, "file": path.name,
                                                             "filter": filter.as_payload()})
            os.replace(tmp, path)        # inside the transaction: an event only for a file that landed
            replaced = True
            return seq
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                rows = (_write_csv if format == "csv" else _write_jsonl)(out, self._export_rows(filter))
                out.flush()
                os.fsync(out.fileno())
            seq = self.store.transaction(land)
        except OSError as exc:
            raise _export_error(path, exc) from exc
        except StoreError:
            if replaced:                 # the commit failed after the rename: no export without its event
                path.unlink(missing_ok=True)
            raise
        finally:
            tmp.unlink(missing_ok=True)
        return ExportResult(path, rows, format, seq)

    def _export_rows(self, filter: AuditFilter) -> Iterator[AuditRow]:
        where, params = _where(filter, self.store.indexed_by("audit_at"))
        if filter.limit is None:
            sql = f"{_SELECT}{where} ORDER BY seq"
        else:                            # the newest `limit` matches, written oldest first
            sql = f"SELECT * FROM ({_SELECT}{where} ORDER BY seq DESC LIMIT ?) AS newest ORDER BY seq"
            params = [*params, filter.limit]
        result = self.store.execute(sql, params)
        for rows in iter(lambda: result.fetchmany(1000), []):   # in pages: an export may be the whole chain
            for r in rows:
                yield _row(r)


# --- SQL ---------------------------------------------------------------------------------------
def _where(f: AuditFilter, by_time: str = "") -> tuple[str, list[Any]]:
    """The WHERE clause and its parameters. Indexes: audit_trace, audit_actor, audit_type, audit_at
    (by_time: the store's hint to use audit_at, where it takes one)."""
    terms: list[str] = []
    params: list[Any] = []
    if f.trace_id is not None:
        terms.append("trace_id = ?")
        params.append(f.trace_id)
    if f.actor is not None:
        terms.append("actor = ?")
        params.append(f.actor)
    if f.kind is not None:
        if f.kind.endswith("."):
            # A range, not LIKE: it uses audit_type and no character in the prefix is a wildcard.
            terms.append("type >= ? AND type < ?")
            params += [f.kind, f.kind[:-1] + "/"]           # "/" sorts right after "."
        else:
            terms.append("type = ?")
            params.append(f.kind)
    # Time bounds also become seq bounds found on audit_at: walking the chain newest first then stops
    # at the first event older than `since` instead of scanning the whole table. Correct even if the
    # clock ever went backwards: every event with at >= since has seq >= the smallest such seq.
    if f.since is not None:
        terms.append(f"at >= ? AND seq >= coalesce((SELECT min(seq) FROM audit{by_time} WHERE at >= ?), {2 ** 62})")
        params += [f.since, f.since]
    if f.until is not None:
        terms.append(f"at < ? AND seq <= coalesce((SELECT max(seq) FROM audit{by_time} WHERE at < ?), -1)")
        params += [f.until, f.until]
    return (" WHERE " + " AND ".join(terms) if terms else ""), params


def _row(r: tuple) -> AuditRow:
    seq, trace_id, actor, type_, payload_json, at, hash_, prev_hash = r
    try:
        payload = json.loads(payload_json)
    except (TypeError, ValueError):
        payload = None
    if not isinstance(payload, dict):
        payload = {"_unreadable": payload_json}
    try:
        at = float(at)
    except (TypeError, ValueError):      # tampered: show the row anyway; verify() names it
        at = math.nan
    return AuditRow(seq, str(trace_id), str(actor), str(type_), payload, at, str(hash_), str(prev_hash),
                    str(payload_json))


# --- file formats ------------------------------------------------------------------------------
def _iso(at: float) -> str:
    if not math.isfinite(at):
        return ""
    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat(timespec="milliseconds")


def _write_csv(out: IO[str], rows: Iterable[AuditRow]) -> int:
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    count = 0
    for row in rows:
        # seq and at are numbers we format ourselves (repr keeps `at` exact, so the hash can be rechecked). Text
        # cells (csv_text): a bidi override or an escape is written as \u202e / \x1b, never raw, and a cell a
        # spreadsheet would run as a formula (OWASP "CSV injection") is opened with '. In the payload the escapes
        # sit inside JSON strings: the JSON read back is the same, and written canonically it is the hashed text.
        writer.writerow([row.seq, repr(row.at), _iso(row.at)] + [csv_text(text) for text in (
            row.trace_id, row.actor, row.type, row.payload_json, row.prev_hash, row.hash)])
        count += 1
    return count


def _write_jsonl(out: IO[str], rows: Iterable[AuditRow]) -> int:
    count = 0
    for row in rows:
        record = {"seq": row.seq, "at": row.at, "at_iso": _iso(row.at), "trace_id": row.trace_id,
                  "actor": row.actor, "type": row.type, "payload": row.payload, "prev_hash": row.prev_hash,
                  "hash": row.hash}
        # ensure_ascii: U+2028 and friends stay escaped, so a reader splitting on any line break is safe.
        out.write(json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n")
        count += 1
    return count


def _export_error(path: Path, exc: OSError) -> Exception:
    why = exc.strerror or str(exc)
    if exc.errno in _DISK_ERRNOS:
        return StoreError(f"{path}: the export could not be written ({why}); nothing was exported or recorded")
    return InputError(f"{path}: cannot write the export here ({why})")
