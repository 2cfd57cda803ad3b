"""`main.py memory ...`: agents' memory on the SQLite file alone (no fleet is started), like `review`.

    memory list [--namespace NS] [--all]          active entries (--all: every version)
    memory history NS KEY                         every version of one key
    memory snapshot (NS | --all) [--label L]      mark a namespace's state (or every namespace's)
    memory snapshots [NS]                         snapshots, newest first
    memory rollback NS (--snapshot ID | --before-trace TRACE_ID) --reason R
    memory quarantine ENTRY_ID --reason R         never read again until released
    memory release ENTRY_ID --reason R
    memory spread ENTRY_ID                        who read it, in which traces, and what they wrote next
    memory rescan [--namespace NS]                active entries the current screen no longer lets through

Each takes --db PATH and --json; changes take --operator (default $USER). Exit codes: 0 ok, 1 failure,
2 bad input (an unknown entry or snapshot id, an empty reason, a missing database for a change). What agents
wrote (keys, contents) and what operators typed (reasons, labels) is printed quoted (engine.untrusted).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
from typing import Any

from engine.errors import InputError
from engine.types import to_jsonable
from engine.untrusted import quoted, quoted_cut

from .common import action_adder, add_db_option, reported, store_of
from .exit_codes import ExitCode

EMPTY_WITHOUT_DB = ("list", "history", "snapshots", "rescan")   # no database yet: an empty answer
RESCAN_SCANNERS = ("invisible", "patterns")   # the cheap scanners: no model to load for a CLI check


def add_parser(subparsers) -> argparse.ArgumentParser:
    memory = subparsers.add_parser("memory", help="agents' memory: entries, versions, snapshots, rollback, "
                                                  "quarantine, spread of a bad entry, rescan")
    _db(memory)
    actions = memory.add_subparsers(dest="memory_action", required=True,
                                    metavar="{list,history,snapshot,snapshots,rollback,quarantine,release,spread,rescan}")
    action = action_adder(actions)

    listing = action("list", "list active entries")
    listing.add_argument("--namespace", help="only this agent's namespace")
    listing.add_argument("--all", action="store_true", help="every version, not only the active ones")
    history = action("history", "every version of one key")
    history.add_argument("namespace")
    history.add_argument("key")
    snapshot = action("snapshot", "mark a namespace's state to roll back to", change=True)
    snapshot.add_argument("namespace", nargs="?", help="the agent's namespace (or --all)")
    snapshot.add_argument("--all", action="store_true", help="every namespace")
    snapshot.add_argument("--label", default="manual", help="a name for it (default: manual)")
    snapshots = action("snapshots", "list snapshots, newest first")
    snapshots.add_argument("namespace", nargs="?")
    rollback = action("rollback", "roll one namespace back; other namespaces do not change", change=True)
    rollback.add_argument("namespace")
    point = rollback.add_mutually_exclusive_group(required=True)
    point.add_argument("--snapshot", metavar="ID", help="to this snapshot (see `memory snapshots`)")
    point.add_argument("--before-trace", metavar="TRACE_ID", help="to just before the first entry this trace wrote")
    rollback.add_argument("--reason", required=True, help="why: it goes into the audit trail")
    for name, what in (("quarantine", "take an entry out of memory"), ("release", "put a quarantined entry back")):
        parser = action(name, what, change=True)
        parser.add_argument("entry_id", help="entry id (see `memory list --all`)")
        parser.add_argument("--reason", required=True, help="why: it goes into the audit trail")
    spread = action("spread", "who read an entry, in which traces, and what they wrote next")
    spread.add_argument("entry_id")
    rescan = action("rescan", "re-screen active entries (invisible + patterns scanners)")
    rescan.add_argument("--namespace", help="only this agent's namespace")
    return memory


_db = add_db_option


def run(args: argparse.Namespace) -> int:
    return reported(lambda: asyncio.run(_run(args)))


def _check(args: argparse.Namespace) -> None:
    """Argument combinations argparse cannot express; checked before any file is touched."""
    if args.memory_action == "snapshot" and bool(args.namespace) == bool(args.all):
        raise InputError("memory snapshot: give a namespace or --all (one of them)")


async def _run(args: argparse.Namespace) -> int:
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.memory.store import MemoryStore
    _check(args)
    action = args.memory_action
    path = store_of(args)
    if not path.exists():
        if action in EMPTY_WITHOUT_DB:   # nothing written yet: empty, and no file created
            _show(action, (), args.json, args)
            return ExitCode.OK
        what = f"memory entry #{args.entry_id} does not exist" if action in ("spread", "quarantine", "release") \
            else "there is no memory to change"
        raise InputError(f"{what} ({path}: no database here yet)")
    store = Store(path, MIGRATIONS)
    await store.open()
    try:
        memory = MemoryStore(store, _rescan_screen() if action == "rescan" else None)
        result = await _act(memory, args)
    finally:
        await store.aclose()
    _show(action, result, args.json, args)
    return ExitCode.OK


def _rescan_screen():
    from engine.gateway.build import build_gateway
    from engine.settings.gateway import GatewaySettings
    return build_gateway(GatewaySettings(scanners=RESCAN_SCANNERS)).screen


async def _act(memory, args: argparse.Namespace) -> Any:
    action = args.memory_action
    if action == "list":
        return await memory.entries(args.namespace, include_inactive=args.all)
    if action == "history":
        return await memory.history(args.namespace, args.key)
    if action == "snapshot":
        if args.all:
            return await memory.snapshot_all(args.label, args.operator)
        return (await memory.snapshot(args.namespace, args.label, args.operator),)
    if action == "snapshots":
        return await memory.snapshots(args.namespace)
    if action == "rollback":
        if args.snapshot is not None:
            snapshots = {s.id: s for s in await memory.snapshots(args.namespace)}
            snapshot_id = _snapshot_of(args.snapshot, args.namespace, snapshots)
            return await memory.rollback_to_snapshot(snapshot_id, args.operator, args.reason)
        return await memory.rollback_before_trace(args.namespace, args.before_trace, args.operator, args.reason)
    if action == "quarantine":
        return await memory.quarantine(args.entry_id, args.operator, args.reason)
    if action == "release":
        return await memory.release(args.entry_id, args.operator, args.reason)
    if action == "spread":
        return await memory.spread(args.entry_id)
    if action == "rescan":
        return await memory.rescan(args.namespace)
    raise InputError(f"unknown memory action {action!r}")


def _snapshot_of(snapshot_id: str, namespace: str, snapshots: dict) -> int:
    """The CLI names the namespace too: refuse a snapshot of another one rather than roll that back."""
    from engine.ids import row_id
    number = row_id(snapshot_id, "memory snapshot")
    if number not in snapshots:
        raise InputError(f"memory snapshot #{number} is not a snapshot of {namespace!r} "
                         f"(see `memory snapshots {namespace}`)")
    return number


# --- output -------------------------------------------------------------------------------
def _when(at: float | None) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at is not None else "-"


def _entry_line(e, why: bool = False) -> str:
    line = (f"#{e.id:<5} {_name(e)} v{e.version:<3} {e.status.value:<11} {_when(e.written_at)}  "
            f"score {e.screen_score:.2f}  {quoted_cut(e.content, 80)}")
    return f"{line}\n       {quoted(e.status_why)}" if why and e.status_why else line


def _name(e) -> str:
    return f"{quoted(e.namespace)}/{quoted(e.key)}"


def _show(action: str, result: Any, as_json: bool, args: argparse.Namespace) -> None:
    if as_json:
        data = to_jsonable(result)
        if action == "spread":
            data |= {"readers": list(result.readers), "traces": list(result.traces)}
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return
    print(_text(action, result, args))


def _text(action: str, result: Any, args: argparse.Namespace) -> str:
    if action in ("list", "history"):
        if not result:
            return "No memory entries" + (f" for {quoted(args.namespace)}" if getattr(args, "namespace", None) else "")
        return "\n".join(_entry_line(e, why=action == "history" or args.all) for e in result)
    if action in ("snapshot", "snapshots"):
        if not result:
            return "No snapshots" if action == "snapshots" else "No namespace has entries; nothing to snapshot"
        return "\n".join(f"snapshot #{s.id:<4} {quoted(s.namespace):<16} {quoted(s.label):<12} {_when(s.at)}  "
                         f"up to entry #{s.last_entry_id}  by {quoted(s.created_by)}" for s in result)
    if action == "rollback":
        point = (f"snapshot #{result.snapshot_id}" if result.snapshot_id
                 else f"before trace {quoted(result.before_trace)}")
        undone = ", ".join(f"#{i}" for i in result.rolled_back) or "nothing (no later entries)"
        restored = ", ".join(f"#{i}" for i in result.restored) or "none"
        return (f"Rolled {quoted(result.namespace)} back to {point} (entries up to #{result.after_entry_id} kept)\n"
                f"  rolled back  : {undone}\n  active again : {restored}")
    if action in ("quarantine", "release"):
        e, active = result.entry, result.active
        now = f"#{active.id} (v{active.version}) is the active version" if active else "the key has no active version"
        return f"Entry #{e.id} {_name(e)} v{e.version} is {e.status.value}: {quoted(e.status_why)}\n  {now}"
    if action == "spread":
        e = result.entry
        lines = [f"Entry #{e.id} {_name(e)} v{e.version} ({e.status.value}), written by {quoted(e.author)} "
                 f"in trace {quoted(e.trace_id)} at {_when(e.written_at)}",
                 f"Read {len(result.reads)} time(s) by {len(result.readers)} reader(s) in {len(result.traces)} trace(s)"]
        lines += [f"  {_when(r.at)}  {quoted(r.reader):<16} trace {quoted(r.trace_id)}" for r in result.reads]
        if result.derived:
            lines.append("Written by those readers later in the same traces:")
            lines += [f"  {_entry_line(d)}" for d in result.derived]
        return "\n".join(lines)
    if action == "rescan":
        if not result:
            return f"Every active entry passes the screen ({', '.join(RESCAN_SCANNERS)})"
        lines = [f"{len(result)} active " + ("entry no longer passes" if len(result) == 1 else
                                             "entries no longer pass") + " the screen:"]
        for hit in result:
            lines.append(f"{_entry_line(hit.entry)}\n       {hit.action.value} (score {hit.score:.2f})")
            lines += [f"       {quoted(line)}" for line in hit.evidence]
        return "\n".join(lines)
    return str(result)
