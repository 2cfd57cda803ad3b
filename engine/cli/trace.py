"""`main.py trace TRACE_ID`: the whole chain of one question or message — messages with their trust
levels, scans, tool calls, memory reads and writes, model outputs, decisions — indented under their
parents. Everything printed is plain text: what an agent said is quoted (engine.untrusted), never interpreted."""
from __future__ import annotations

import argparse
import datetime
import json
import sys

from engine.untrusted import quoted, quoted_cut

from .common import store_of
from .exit_codes import ExitCode


def add_parser(sub) -> None:
    trace = sub.add_parser("trace", help="print the whole chain of one question or message by its trace id")
    trace.add_argument("trace_id", help="a question's trace id (the answer, alerts and audit show it) or a message's")
    trace.add_argument("--json", action="store_true", help="print the lines as JSON")
    trace.add_argument("--db", type=str, default=argparse.SUPPRESS,
                       help="SQLite file or postgresql://role@host/db URL (default: user data dir, or $QUORUM_DB)")


def _when(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S.%f")[:-3] if at else ""


def format_line(line) -> str:
    who = f"{quoted(line.source)} → {quoted(line.target)}" if line.target else quoted(line.source)
    trust = f" [{quoted(line.trust)}]" if line.trust else ""
    return (f"{_when(line.at):>12}  {'  ' * line.depth}{quoted(line.kind):<12} {who}{trust}  "
            f"{quoted_cut(line.summary, 160)}")


def run(args) -> int:
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.gateway.traces import trace_sync
    path = store_of(args)
    if not path.exists():
        print(f"{path}: no database here yet", file=sys.stderr)
        return ExitCode.BAD_INPUT
    store = Store(path, MIGRATIONS)
    store.open_sync()
    try:
        lines = trace_sync(store, args.trace_id.strip())
    finally:
        store.close_sync()
    if not lines:
        print(f"{path}: no trace {args.trace_id!r} (ids are the 32-hex trace ids the answer, alerts and audit show)",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        print(json.dumps([line.__dict__ for line in lines], ensure_ascii=False, indent=1, default=str))
        return ExitCode.OK
    print(f"trace {quoted(args.trace_id)}: {len(lines)} lines")
    for line in lines:
        print(format_line(line))
    return ExitCode.OK
