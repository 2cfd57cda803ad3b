"""`main.py alerts ...`: operators' alerts on the SQLite file alone (no fleet is started), like `memory`.

    alerts list [--open] [--limit N]                      newest first; muted ones say which silence mutes them
    alerts ack ID [--comment TEXT]                        acknowledge (the first acknowledgement stands)
    alerts silence (--kind K | --agent A) --for 2h --comment TEXT
                                                          mute notification of matching alerts (both: both
                                                          must match); they are still recorded and listed
    alerts silences [--all]                               active silences (--all: expired and ended too)
    alerts unsilence ID                                   end a silence now: its alerts notify again

Each takes --db PATH and --json; changes take --operator (default $USER). Durations: 30m, 2h, 1d, 1h30m
(at most 30 days). Exit codes: 0 ok, 1 failure, 2 bad input (an unknown alert, silence or kind, a bad
duration, an empty comment, a missing database for a change). Text from agents is printed plain: escape
sequences and control characters are removed.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
from typing import TYPE_CHECKING, Any

from engine.alerts.kinds import label_of
from engine.alerts.plain import plain
from engine.alerts.row import AlertRow
from engine.alerts.silences import MAX_SILENCE_S, Silence, format_duration, matches, parse_duration
from engine.errors import InputError
from engine.alerts.kinds import AlertKind
from engine.types import to_jsonable

from .common import action_adder, add_db_option, reported, store_of
from .exit_codes import ExitCode

if TYPE_CHECKING:
    from engine.alerts.book import AlertBook

ACTIONS = ("list", "ack", "silence", "silences", "unsilence")
EMPTY_WITHOUT_DB = ("list", "silences")   # no database yet: an empty answer, and no file created


def add_parser(subparsers) -> argparse.ArgumentParser:
    alerts = subparsers.add_parser("alerts", help="operators' alerts: list, acknowledge, silence a kind or an "
                                                  "agent for a while, end a silence")
    _db(alerts)
    actions = alerts.add_subparsers(dest="alerts_action", required=True, metavar="{" + ",".join(ACTIONS) + "}")
    action = action_adder(actions)

    listing = action("list", "list alerts, newest first")
    listing.add_argument("--open", action="store_true", help="only alerts nobody acknowledged yet")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    ack = action("ack", "acknowledge an alert", change=True)
    ack.add_argument("alert_id", help="alert id (see `alerts list`)")
    ack.add_argument("--comment", default="", help="what was done about it: kept with the alert and audited")
    silence = action("silence", "mute notification of an alert kind or an agent's alerts for a while", change=True)
    silence.add_argument("--kind", choices=[k.value for k in AlertKind], help="alerts of this kind")
    silence.add_argument("--agent", help="alerts about this agent")
    silence.add_argument("--for", dest="duration", required=True, metavar="DURATION",
                         help=f"how long: 30m, 2h, 1d, 1h30m (at most {format_duration(MAX_SILENCE_S)})")
    silence.add_argument("--comment", required=True, help="why: kept with the silence and audited")
    silences = action("silences", "list silences (active ones unless --all)")
    silences.add_argument("--all", action="store_true", help="expired and ended silences too")
    unsilence = action("unsilence", "end a silence now", change=True)
    unsilence.add_argument("silence_id", help="silence id (see `alerts silences`)")
    return alerts


_db = add_db_option


def run(args: argparse.Namespace) -> int:
    return reported(lambda: asyncio.run(_run(args)))


def _check(args: argparse.Namespace) -> float | None:
    """What argparse cannot check, before any file is touched; the silence's duration in seconds."""
    if args.alerts_action == "list" and args.limit < 1:
        raise InputError(f"alerts list: --limit must be at least 1 (got {args.limit})")
    if args.alerts_action != "silence":
        return None
    if not args.kind and not (args.agent or "").strip():
        raise InputError("alerts silence: give --kind, --agent or both")
    if not args.comment.strip():
        raise InputError("alerts silence: --comment is empty (say why, so the next operator knows)")
    return parse_duration(args.duration)


async def _run(args: argparse.Namespace) -> int:
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.alerts.book import AlertBook    # the store and its sqlite driver only when a command runs
    duration = _check(args)
    action = args.alerts_action
    path = store_of(args)
    if not path.exists():
        if action in EMPTY_WITHOUT_DB:
            _show(action, ((), (0, 0)) if action == "list" else ((), 0.0), args)
            return ExitCode.OK
        what = (f"no alert #{args.alert_id}" if action == "ack" else f"no silence #{args.silence_id}"
                if action == "unsilence" else "nothing to silence: Quorum has not run on this file")
        raise InputError(f"{what} ({path}: no database here yet)")
    store = Store(path, MIGRATIONS)
    await store.open()
    try:
        book = AlertBook(store)
        result = await _act(book, args, duration)
    finally:
        await store.aclose()
    _show(action, result, args)
    return ExitCode.OK


async def _act(book: "AlertBook", args: argparse.Namespace, duration: float | None) -> Any:
    action = args.alerts_action
    if action == "list":
        return await book.alerts(args.open, args.limit), await book.unacknowledged_counts()
    if action == "ack":
        return await book.acknowledge(args.alert_id, args.operator, args.comment)
    if action == "silence":
        silence = await book.silence(args.kind, args.agent, duration_s=duration, by=args.operator,
                                     comment=args.comment)
        from engine.alerts.book import MAX_LIMIT
        now = book.clock()
        matching = [a for a in await book.alerts(open_only=True, limit=MAX_LIMIT, now=now) if matches(silence, a, now)]
        return silence, len(matching), now
    if action == "silences":
        return await book.silences(active_only=not args.all), book.clock()
    if action == "unsilence":
        return await book.end_silence(args.silence_id, args.operator), book.clock()
    raise InputError(f"unknown alerts action {action!r}")


# --- output -------------------------------------------------------------------------------
def _when(at: float | None) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at is not None else "-"


def alert_lines(alert: AlertRow) -> list[str]:
    if alert.open:
        status = "open" + (f", muted by silence #{alert.silenced_by}" if alert.muted else "")
    else:
        status = f"acknowledged by {plain(alert.acknowledged_by or '', 40)} at {_when(alert.acknowledged_at)}"
    lines = [f"#{alert.id:<5} {alert.severity.value.upper():<8} {label_of(alert.kind):<17} "
             f"{plain(alert.agent_id, 24) or '(engine)':<16} {_when(alert.at)}  {status}",
             f"       {plain(alert.message, 300)}"]
    if alert.ack_comment:
        lines.append(f"       comment: {plain(alert.ack_comment, 300)}")
    if alert.trace_id:
        lines.append(f"       trace {plain(alert.trace_id, 64)}")
    return lines


def silence_line(silence: Silence, now: float) -> list[str]:
    if silence.ended_at is not None and silence.ended_at <= now:
        state = f"ended by {plain(silence.ended_by or '', 40)} at {_when(silence.ended_at)}"
    elif silence.expires_at <= now:
        state = f"expired at {_when(silence.expires_at)}"
    elif silence.created_at > now:
        state = f"starts at {_when(silence.created_at)}"
    else:
        state = f"active until {_when(silence.expires_at)} ({format_duration(silence.expires_at - now)} left)"
    what = " and ".join(([f"kind {silence.kind.value}"] if silence.kind else [])
                        + ([f"agent {plain(silence.agent_id, 40)}"] if silence.agent_id else []))
    return [f"silence #{silence.id:<4} {what:<40} by {plain(silence.created_by, 40)} at {_when(silence.created_at)}; "
            f"{state}",
            f"       {plain(silence.comment, 300)}"]


def _show(action: str, result: Any, args: argparse.Namespace) -> None:
    if args.json:
        data = result[0] if action in ("list", "silence", "silences", "unsilence") else result
        # ASCII: an agent's escape sequence or bidi override stays inert text in a terminal
        print(json.dumps(to_jsonable(data), ensure_ascii=True, indent=2))
        return
    print(_text(action, result, args))


def _text(action: str, result: Any, args: argparse.Namespace) -> str:
    if action == "list":
        alerts, (loud, muted) = result
        if not alerts:
            return "No open alerts" if args.open else "No alerts"
        lines = [line for alert in alerts for line in alert_lines(alert)]
        lines.append(f"{loud + muted} unacknowledged: {loud} notify, {muted} muted by a silence")
        return "\n".join(lines)
    if action == "ack":
        return "\n".join(["Acknowledged:", *alert_lines(result)])
    if action == "silence":
        silence, matching, now = result
        return "\n".join([*silence_line(silence, now),
                          f"{matching} unacknowledged alert(s) muted now; new ones are still recorded and listed"])
    if action == "silences":
        silences, now = result
        if not silences:
            return "No silences" if args.all else "No active silences"
        return "\n".join(line for s in silences for line in silence_line(s, now))
    if action == "unsilence":
        silence, now = result
        return "\n".join(["Ended:", *silence_line(silence, now)])
    return str(result)
