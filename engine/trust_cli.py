"""`python main.py agents [--json] | agents quarantine ID --reason R | agents release ID --reason R`.

Works on the SQLite file alone (no fleet is started), like `review`: a running console takes the change
in before its next question. Exit codes: 0 ok, 2 bad input (unknown id, empty reason, wrong state).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from pathlib import Path

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_agents_parser(sub, common) -> None:
    agents = sub.add_parser("agents", help="the reputation book: scores and states; quarantine or release an agent")
    common(agents)
    agents.add_argument("--json", action="store_true", help="print a JSON list")
    actions = agents.add_subparsers(dest="agents_action", metavar="{quarantine,release}")
    for name, what in (("quarantine", "take an agent off all work now"),
                       ("release", "let a quarantined agent back on probation (low-risk work, a capped vote)")):
        action = actions.add_parser(name, help=what)
        common(action)
        action.add_argument("id", help="agent id (see `agents`)")
        action.add_argument("--reason", required=True, help="why: it goes into the audit trail")
        action.add_argument("--operator", default=os.environ.get("USER") or "operator",
                            help="who does it (default: $USER, or \"operator\")")


def run_agents(args: argparse.Namespace, fleet, settings) -> int:
    from .errors import InputError
    try:
        return asyncio.run(_run(args, fleet, settings))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


async def _run(args, fleet, settings) -> int:
    from .engine import default_db_path
    from .errors import InputError
    from .store.db import Store
    from .trust import TrustKeeper
    action = getattr(args, "agents_action", None)
    ids = [a.id for a in fleet.agents]
    if action:
        if not (args.reason or "").strip():
            raise InputError(f"an empty reason: say why {args.id} is {action}d, it goes into the audit trail")
        if args.id not in ids:
            raise InputError(f"no agent {args.id!r} in {fleet.path} (agents: {', '.join(ids)})")
    store = Store(Path(args.db or default_db_path()))
    await store.open()
    try:
        keeper = TrustKeeper(store, settings.reputation)
        await keeper.load((a.id, a.role) for a in fleet.agents)
        if action == "quarantine":
            await keeper.quarantine(args.id, args.reason, args.operator)
        elif action == "release":
            await keeper.release(args.id, args.reason, args.operator)
        records = {r.agent_id: r for r in keeper.book.all()}
    finally:
        await store.aclose()
    if action:
        record = records[args.id]
        print(f"{args.id} is {record.state.value} (score {record.score:.2f}): {record.last_change_why}")
        return EXIT_OK
    rows = [_row(spec, records.get(spec.id)) for spec in fleet.agents]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        _print(rows)
    return EXIT_OK


def _row(spec, record) -> dict:
    return {"id": spec.id, "role": spec.role.value, "enabled": spec.enabled,
            "score": round(record.score, 4) if record else None, "state": record.state.value if record else None,
            "last_change_at": record.last_change_at if record else None,
            "last_change": record.last_change_why if record else ""}


def _print(rows: list[dict]) -> None:
    print(f"{'agent':<16} {'role':<9} {'score':>5}  {'state':<22} last change")
    for r in rows:
        when = datetime.datetime.fromtimestamp(r["last_change_at"]).strftime("%Y-%m-%d %H:%M") \
            if r["last_change_at"] else "-"
        state = r["state"] if r["enabled"] else f"{r['state']} (disabled)"
        print(f"{r['id']:<16} {r['role']:<9} {r['score']:>5.2f}  {state:<22} {when}  {r['last_change'][:70]}")
