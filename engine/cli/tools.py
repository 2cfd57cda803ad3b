"""`python main.py tools list-pending | approve ID --reason R | reject ID --reason R | matrix`.

Works on the SQLite file and the permission matrix alone (no fleet is started), like `review`: a running
console sees the decision on its next look at the queue. Every action takes --db PATH (default: the
user data dir, or $QUORUM_DB) and --json. Exit codes: 0 ok, 2 bad input (unknown id, empty reason, a
call that is not pending, a broken config file).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import store_of
from .exit_codes import ExitCode

if TYPE_CHECKING:
    from engine.store.target import StoreTarget
DB_HELP = "SQLite file or postgresql://role@host/db URL (default: user data dir, or $QUORUM_DB)"


def _options(parser: argparse.ArgumentParser, *, permissions: bool = False) -> None:
    # SUPPRESS: a value given before the command (`main.py --db X tools ...`) is not overwritten.
    parser.add_argument("--db", type=str, default=argparse.SUPPRESS, help=DB_HELP)
    parser.add_argument("--json", action="store_true", help="print JSON")
    if permissions:
        parser.add_argument("--permissions", type=Path, default=None,
                            help="permission matrix file (default: config/permissions.toml)")
        parser.add_argument("--fleet", type=Path, default=argparse.SUPPRESS,
                            help="fleet file whose agent ids the matrix is checked against "
                                 "(default: config/fleet.toml)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    tools = subparsers.add_parser("tools", help="agents' tool calls: the permission matrix, and outward actions "
                                                "waiting for an operator")
    actions = tools.add_subparsers(dest="tools_action", required=True,
                                   metavar="{list-pending,approve,reject,matrix}")
    listing = actions.add_parser("list-pending", help="tool calls waiting for an operator, oldest first")
    _options(listing)
    for name, what in (("approve", "run a pending tool call (send_email: written to the outbox, never sent)"),
                       ("reject", "drop a pending tool call; nothing runs")):
        action = actions.add_parser(name, help=what)
        action.add_argument("id", help="tool call id (see `tools list-pending`)")
        action.add_argument("--reason", required=True, help="why: it goes into the audit trail")
        action.add_argument("--operator", default=os.environ.get("USER") or "operator",
                            help="who decides (default: $USER, or \"operator\")")
        _options(action, permissions=name == "approve")
    matrix = actions.add_parser("matrix", help="print the permission matrix as a table")
    _options(matrix, permissions=True)
    return tools


def run(args: argparse.Namespace) -> int:
    from engine.errors import ConfigError, InputError
    try:
        return asyncio.run(_run(args))
    except (InputError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


def _db_path(args) -> StoreTarget:
    return store_of(args)


def _load_matrix(args):
    from engine.config import load_fleet
    from engine.gateway.permissions_config import load_permissions
    fleet = load_fleet(getattr(args, "fleet", None))
    return load_permissions(args.permissions, known_agents=[a.id for a in fleet.agents]), fleet


async def _run(args) -> int:
    from engine.errors import InputError
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.gateway.permissions import PermissionMatrix
    from engine.gateway.tools import ToolBroker
    action = args.tools_action
    if action == "matrix":
        matrix, fleet = _load_matrix(args)
        counts = await _counts(_db_path(args))
        _print_matrix(matrix, fleet, counts, args.json)
        return ExitCode.OK
    if action in ("approve", "reject"):
        if not (args.reason or "").strip():
            raise InputError(f"an empty reason: say why tool call {args.id} is {action}d, it goes into the audit trail")
    matrix = _load_matrix(args)[0] if action == "approve" else PermissionMatrix()
    path = _db_path(args)
    if not path.exists():
        if action == "list-pending":       # nothing asked yet: an empty queue, and no file created
            print("[]" if args.json else f"No pending tool calls ({path}: no database here yet)")
            return ExitCode.OK
        raise InputError(f"tool call #{args.id} does not exist ({path}: no database here yet)")
    store = Store(path, MIGRATIONS)
    await store.open()
    try:
        broker = ToolBroker(matrix, store, None)
        if action == "list-pending":
            calls = await broker.pending()
            _print_calls(calls, args.json)
            return ExitCode.OK
        decide = broker.approve if action == "approve" else broker.reject
        result = await decide(args.id, args.operator, args.reason)
    finally:
        await store.aclose()
    if args.json:
        from engine.types import to_jsonable
        print(json.dumps(to_jsonable(result), ensure_ascii=False, indent=2))
    else:
        from engine.untrusted import quoted
        done = f" — {quoted(result.result)}" if result.result else ""
        print(f"Tool call #{result.call_id} ({quoted(result.tool)} by {quoted(result.agent_id)}) {quoted(result.why)}"
              f"{done}")
    return ExitCode.OK


async def _counts(path: StoreTarget) -> dict[str, dict[str, int]]:
    """Tool calls per agent and status, when the database exists (the matrix is shown either way)."""
    if not path.exists():
        return {}
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    store = Store(path, MIGRATIONS)
    await store.open()
    try:
        rows = await store.call(lambda: store.execute(
            "SELECT agent_id, status, COUNT(*) FROM tool_calls GROUP BY agent_id, status").fetchall())
    finally:
        await store.aclose()
    out: dict[str, dict[str, int]] = {}
    for agent, status, n in rows:
        out.setdefault(agent, {})[status] = n
    return out


def _call_json(call) -> dict[str, Any]:
    from engine.types import to_jsonable
    return to_jsonable(call)


def _print_calls(calls, as_json: bool) -> None:
    """The tool, its parameters (names and values both come from the agent) and why, each quoted and cut."""
    from engine.untrusted import quoted, quoted_cut
    if as_json:
        print(json.dumps([_call_json(c) for c in calls], ensure_ascii=False, indent=2))
        return
    if not calls:
        print("No pending tool calls")
        return
    for call in calls:
        at = datetime.datetime.fromtimestamp(call.at).strftime("%Y-%m-%d %H:%M")
        print(f"#{call.id:<4} {quoted(call.tool):<12} {quoted(call.agent_id):<16} {at}  trace {quoted(call.trace_id)}")
        for key, value in call.params.items():
            print(f"      {quoted_cut(str(key), 40):<8}: {quoted_cut(str(value), 111)}")
        print(f"      why     : {quoted(call.why)}")


def _print_matrix(matrix, fleet, counts: dict, as_json: bool) -> None:
    from engine.types import to_jsonable
    from engine.gateway.permissions import expand_targets
    roles = {a.id: a.role for a in fleet.agents}
    if as_json:
        data = to_jsonable(matrix)
        for agent in data["agents"]:
            agent["sends_to"] = list(expand_targets(agent["can_send_to"], roles))
            agent["calls"] = counts.get(agent["agent_id"], {})
        data["not_in_matrix"] = [a for a in roles if matrix.get(a) is None]
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    print(f"Permission matrix: {matrix.source} (default deny: what is not listed is refused)")
    print()
    header = f"{'agent':<16} {'role':<10} {'tools':<52} {'memory':<7} {'approval':<9} can send to"
    print(header)
    print("-" * len(header))
    for agent in matrix.agents:
        role = roles[agent.agent_id].value if agent.agent_id in roles else "?"
        tools = ", ".join(agent.allowed_tools) or "-"
        targets = ", ".join(agent.can_send_to) or "-"
        expanded = expand_targets(agent.can_send_to, roles)
        if any(t.startswith("role:") for t in agent.can_send_to) and expanded:
            targets += f"  ({', '.join(expanded)})"
        print(f"{agent.agent_id:<16} {role:<10} {tools:<52} {agent.memory_access.value:<7} "
              f"{'yes' if agent.approval_mode else 'no':<9} {targets}")
        if counts.get(agent.agent_id):
            print(f"{'':<16} calls: " + ", ".join(f"{n} {s}" for s, n in sorted(counts[agent.agent_id].items())))
    missing = [a for a in roles if matrix.get(a) is None]
    if missing:
        print(f"\nNot in the matrix (may do nothing): {', '.join(missing)}")
    strangers = sorted(set(counts) - {a.agent_id for a in matrix.agents})
    for agent in strangers:
        print(f"Calls from {agent} (not in the matrix): " +
              ", ".join(f"{n} {s}" for s, n in sorted(counts[agent].items())))
    t, x = matrix.tools, matrix.external_input
    print()
    print(f"send_email : domains {', '.join(t.send_email.allowed_domains) or 'none'}; subject ≤ "
          f"{t.send_email.max_subject_chars}, body ≤ {t.send_email.max_body_chars} characters; outward")
    print(f"sql_query  : read-only; tables {', '.join(t.sql_query.tables) or 'none'}; ≤ {t.sql_query.max_rows} rows, "
          f"{t.sql_query.timeout_s:g} s")
    print(f"message    : ≤ {t.message.max_chars} characters, screened")
    print(f"memory     : own namespace only (no shared pool); key ≤ {t.memory.max_key_chars}, "
          f"entry ≤ {t.memory.max_content_chars} characters")
    print(f"external   : trust {x.trust.value}, sanitise {'on' if x.sanitise else 'off'}, "
          f"cut at {x.max_length} characters")
