"""`main.py audit ...`: the audit trail on the SQLite file alone (no fleet is started), like `review`.

    audit verify [--anchors FILE]                  check the whole hash chain, and its anchors
    audit anchor [--anchors FILE]                  anchor the chain's head outside the database (signed)
    audit list   [filters] [--limit N]             newest first, as a plain-text table
    audit export --format csv|jsonl --out FILE [filters] [--limit N] [--operator WHO]

Filters: --trace ID, --actor A, --kind TYPE (or a prefix ending in ".", e.g. "review."), --since and
--until (an ISO date or time, local unless it names a zone, or a duration before now: 90s, 30m, 2h, 7d,
1w). The export is itself recorded in the audit trail, by --operator (default $USER).

Each takes --db PATH. Exit codes: 0 ok, 1 failure (a broken chain, a full disk), 2 bad input (no
database, an unreadable time, a path the export cannot be written to).
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time
from pathlib import Path

from engine.errors import InputError
from engine.untrusted import quoted_cut

from .common import add_db_option, reported, store_of
from .exit_codes import ExitCode

LIST_LIMIT = 100
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_parser(subparsers) -> argparse.ArgumentParser:
    audit = subparsers.add_parser("audit", help="the audit trail: verify the hash chain, list and export events")
    _db(audit)
    actions = audit.add_subparsers(dest="audit_action", required=True, metavar="{verify,anchor,list,export}")
    verify = actions.add_parser("verify", help="check every event against its hash and the one before it, and "
                                               "the chain against its anchors")
    _db(verify)
    _anchors(verify)
    anchor = actions.add_parser("anchor", help="write the chain's head to the anchors file, signed (run it now "
                                               "and then, from cron or a timer: the engine does at start and close)")
    _db(anchor)
    _anchors(anchor)
    listing = actions.add_parser("list", help="events, newest first, as a table")
    _db(listing)
    _filters(listing, LIST_LIMIT)
    export = actions.add_parser("export", help="write events to a CSV or JSON Lines file (the export is audited)")
    _db(export)
    export.add_argument("--format", required=True, choices=["csv", "jsonl"], help="csv or jsonl")
    export.add_argument("--out", required=True, type=Path, metavar="FILE", help="the file to write (replaced whole)")
    export.add_argument("--operator", default=os.environ.get("USER") or "operator",
                        help="who exports: it goes into the audit trail (default: $USER, or \"operator\")")
    _filters(export, None)
    return audit


_db = add_db_option


def _anchors(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--anchors", type=Path, metavar="FILE",
                        help="the anchors file (default: $QUORUM_ANCHORS, or anchors.jsonl in the user data dir; "
                             "its key: $QUORUM_ANCHOR_KEY, or anchor.key in the user config dir)")


def _filters(parser: argparse.ArgumentParser, limit: int | None) -> None:
    parser.add_argument("--trace", metavar="ID", help="only this trace id")
    parser.add_argument("--actor", help="only events by this actor (an agent id, an operator, engine, ...)")
    parser.add_argument("--kind", help='only this event type, or a prefix ending in "." (e.g. "review.")')
    parser.add_argument("--since", metavar="WHEN", help="from this time on: ISO date/time or a duration ago (2h)")
    parser.add_argument("--until", metavar="WHEN", help="before this time: ISO date/time or a duration ago")
    parser.add_argument("--limit", type=int, default=limit, metavar="N",
                        help=f"the newest N matching events (default: {limit or 'all'})")


def run(args: argparse.Namespace) -> int:
    return reported(lambda: _run(args))


def parse_when(text: str, option: str, now: float) -> float:
    """Epoch seconds from an ISO date/time (naive = local time) or a duration before `now`."""
    raw = text.strip()
    duration = _DURATION.fullmatch(raw.lower())
    if duration:
        return now - float(duration.group(1)) * _UNIT_S[duration.group(2)]
    try:
        return datetime.datetime.fromisoformat(raw).timestamp()
    except ValueError:
        raise InputError(f"{option} {text!r}: give an ISO date or time (2024-05-01, 2024-05-01T14:30, "
                         f"2024-05-01T14:30Z) or a duration before now (90s, 30m, 2h, 7d, 1w)") from None


def build_filter(args: argparse.Namespace, now: float | None = None):
    from engine.store.audit_log import AuditFilter
    now = time.time() if now is None else now
    since = parse_when(args.since, "--since", now) if args.since else None
    until = parse_when(args.until, "--until", now) if args.until else None
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit {args.limit}: give a number of at least 1")
    if since is not None and until is not None and since >= until:
        raise InputError(f"--since {args.since!r} is not before --until {args.until!r}")
    return AuditFilter(trace_id=args.trace, actor=args.actor, kind=args.kind, since=since, until=until,
                       limit=args.limit)


def _run(args: argparse.Namespace) -> int:
    from engine.store.anchors import anchor_head, check_anchors, default_anchor_files
    from engine.store.audit_log import AuditLog
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    action = args.audit_action
    filter_ = build_filter(args) if action in ("list", "export") else None   # bad input before any file
    path = store_of(args)
    if not path.exists():
        if action == "list":             # nothing recorded yet: an empty list, and no file created
            print(f"No audit events ({path}: no database here yet)")
            return ExitCode.OK
        if action in ("verify", "anchor"):   # the wording `audit verify` has always had
            print(f"{path}: no database here yet", file=sys.stderr)
            return ExitCode.BAD_INPUT
        raise InputError(f"{path}: no database here yet; nothing to export")
    anchors, key = default_anchor_files()
    anchors = getattr(args, "anchors", None) or anchors
    store = Store(path, MIGRATIONS)
    store.open_sync()
    try:
        log = AuditLog(store)
        if action in ("list", "export") and store.may_write:
            _fold_refusals(store)
        if action == "verify":
            status = log.verify_sync()
            if not status.intact:
                print(f"{path}: {status.message}", file=sys.stderr)
                return ExitCode.FAILURE
            anchored = check_anchors(store, anchors, key)
            if not anchored.intact:
                print(f"{path}: {status.message}, but the anchors in {anchors} disagree: {anchored.message}",
                      file=sys.stderr)
                return ExitCode.FAILURE
            print(f"{path}: {status.message}; {anchored.message} ({anchors})")
            return ExitCode.OK
        if action == "anchor":
            made = anchor_head(store, anchors, key)
            print(f"{path}: no events yet, nothing to anchor" if made is None
                  else f"{path}: anchored event {made.seq} ({made.hash[:16]}) in {anchors}")
            return ExitCode.OK
        if action == "list":
            print(format_table(log.query_sync(filter_), filter_))
            return ExitCode.OK
        result = log.export_sync(filter_, args.format, args.out, args.operator)
    finally:
        store.close_sync()
    print(f"wrote {result.rows} events to {args.out}")
    return ExitCode.OK


def _fold_refusals(store) -> None:
    """The team store's refused writes, into the chain before it is listed or exported, so the trail is whole
    even where no operator's desk runs (engine.store.refusals); a fold that fails leaves them for the next."""
    from engine.errors import StoreError
    from engine.store.refusals import fold_refusals
    try:
        fold_refusals(store)
    except StoreError as exc:
        print(f"note: refused writes not yet in the chain: {exc}", file=sys.stderr)


# --- output -------------------------------------------------------------------------------------
def _when(at: float) -> str:
    try:
        return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):    # a tampered `at`: show the row anyway
        return "?"


def format_table(rows, filter_) -> str:
    """Plain text, one event a line; every text cell is quoted and cut (agents' text is untrusted: no escape
    sequence reaches the terminal, and no line break in a payload draws a line of its own)."""
    if not rows:
        narrowed = any(v is not None for k, v in filter_.as_payload().items() if k != "limit")
        return "No audit events" + (" match" if narrowed else "")
    lines = [f"{'SEQ':>6}  {'TIME':<19}  {'ACTOR':<16}  {'TYPE':<22}  {'TRACE':<32}  PAYLOAD"]
    for row in rows:
        lines.append(f"{row.seq:>6}  {_when(row.at):<19}  {quoted_cut(row.actor, 16):<16}  "
                     f"{quoted_cut(row.type, 22):<22}  {quoted_cut(row.trace_id, 32) or '-':<32}  "
                     f"{quoted_cut(row.payload_json, 100)}")
    if filter_.limit is not None and len(rows) == filter_.limit:
        lines.append(f"(the newest {len(rows)}; --limit N shows more)")
    return "\n".join(lines)
