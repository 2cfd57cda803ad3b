"""`main.py store migrate --from FILE.db [--db URL] [--operator WHO]`: a desk's SQLite history moved whole into
the team store (--db, $QUORUM_DB or [store] url), its audit chain verified on both sides (engine.store.move).

Exit codes: 0 moved, 1 a write failed (nothing was moved), 2 bad input (no such file, a broken chain, a
destination that already holds records).
"""
from __future__ import annotations

import argparse
import sys

from .common import add_common_options, cli_book_names, default_operator, reported, store_of
from .exit_codes import ExitCode


def add_parser(sub) -> None:
    store = sub.add_parser("store", help="the store: move a desk's SQLite history into a team's PostgreSQL")
    actions = store.add_subparsers(dest="store_action", required=True, metavar="{migrate}")
    migrate = actions.add_parser("migrate", help="move a desk's SQLite file, audit chain and all, into an empty "
                                                 "team store (--db, $QUORUM_DB or [store] url)")
    migrate.add_argument("--from", dest="source", required=True, metavar="FILE.db", help="the desk's SQLite file")
    migrate.add_argument("--operator", default=default_operator(),
                         help="who moves it: it goes into the audit trail (default: $USER, or \"operator\")")
    add_common_options(migrate)


def run(args: argparse.Namespace) -> int:
    return reported(lambda: _migrate(args))


def _migrate(args: argparse.Namespace) -> int:
    from engine.errors import InputError
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine import load_fleet
    from engine.store.move import move_history
    from engine.store.target import Backend, store_target
    source_target = store_target(args.source)
    if source_target.backend is not Backend.SQLITE:
        raise InputError(f"--from {source_target}: give the desk's SQLite file")
    if not source_target.exists():
        raise InputError(f"--from {source_target}: no such file")
    destination_target = store_of(args)
    if destination_target == source_target:
        raise InputError(f"--from {source_target} is also the destination; name the team store with --db")
    source, destination = Store(source_target, MIGRATIONS), Store(destination_target, MIGRATIONS)
    source.open_sync()
    try:
        destination.open_sync()
        try:
            # The desk's agents, named in the team's reputation book as this desk's engine names them there.
            names = cli_book_names(load_fleet(args.fleet), destination).names
            report = move_history(source, destination, args.operator,
                                  progress=lambda table, rows: print(f"\r{table}: {rows} rows", end="",
                                                                     file=sys.stderr, flush=True),
                                  book_names=names)
        finally:
            destination.close_sync()
    finally:
        source.close_sync()
    print("", file=sys.stderr)
    moved = ", ".join(f"{table} {rows}" for table, rows in report.rows.items() if rows)
    print(f"moved {source_target} into {destination_target}: {moved or 'no rows'}")
    print(f"audit chain verified on both sides: {report.events} events, head {report.head[:16] or '-'}; "
          f"the move is event {report.audit_seq}")
    return ExitCode.OK
