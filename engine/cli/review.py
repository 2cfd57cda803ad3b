"""`main.py review list [--status S] [--json] | review claim ID | review unclaim ID | review approve ID --reason R |
review reject ID --reason R`: the approval queue, on the database alone (no fleet is started). A claim holds a
pending item for its operator for 15 minutes, so a team does not review one answer twice. A decision moves the reputation of the agents behind
the answer, as it does in the console.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TYPE_CHECKING

from .common import add_db_option, default_operator, store_of
from .exit_codes import ExitCode

if TYPE_CHECKING:
    from engine.store.target import StoreTarget


def add_parser(sub) -> None:
    """review list | approve ID | reject ID: the approval queue, on the database alone (no fleet)."""
    review = sub.add_parser("review", help="the approval queue: list, approve or reject answers waiting for an operator")
    actions = review.add_subparsers(dest="review_action", required=True,
                                    metavar="{list,shift,claim,unclaim,approve,reject}")
    listing = actions.add_parser("list", help="list review items (pending first)")
    listing.add_argument("--status", choices=["pending", "approved", "rejected", "all"], default="pending")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    add_db_option(listing)
    shift = actions.add_parser("shift", help="each reviewer's decisions, approvals toward a quorum and holds over "
                                             "the last hours (default [review] shift_h)")
    shift.add_argument("--hours", type=float, default=None, help="how far back (default [review] shift_h, 8)")
    shift.add_argument("--json", action="store_true", help="print a JSON list, a reviewer a line")
    add_db_option(shift)
    for name, what in (("claim", "hold a pending item for 15 minutes, so nobody else decides it meanwhile"),
                       ("unclaim", "let go of your claim on an item")):
        action = actions.add_parser(name, help=what)
        action.add_argument("id", help="review item id (see `review list`)")
        action.add_argument("--operator", default=default_operator(),
                            help="who claims (default: $USER, or \"operator\"; on a team store: the role signed in)")
        add_db_option(action)
    from engine.review import APPROVE_REASONS, REJECT_REASONS
    for name, reasons in (("approve", APPROVE_REASONS), ("reject", REJECT_REASONS)):
        action = actions.add_parser(name, help=f"{name} a pending item; reasons: {' | '.join(reasons)}")
        action.add_argument("id", help="review item id (see `review list`)")
        action.add_argument("--reason", required=True, help=f"one of: {' | '.join(reasons)}")
        action.add_argument("--note", default="", help='free text; required when the reason is "other"')
        action.add_argument("--operator", default=default_operator(),
                            help="who decides (default: $USER, or \"operator\")")
        add_db_option(action)


def run(args) -> int:
    from engine import InputError
    from engine.review import allowed_reasons_text
    path = store_of(args)
    approve = args.review_action == "approve"
    try:
        return asyncio.run(_review_run(args, path))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.review_action in ("approve", "reject"):
            print(f"allowed reasons to {args.review_action}: {allowed_reasons_text(approve)}", file=sys.stderr)
        return ExitCode.BAD_INPUT


async def _review_run(args, path: StoreTarget) -> int:
    from engine import InputError
    from engine.review import ReviewQueue
    from engine import load_settings
    from engine.reputation.answer_evidence import DecidedAnswer
    from engine.review import check_decision
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.reputation.keeper import ReputationKeeper
    if args.review_action in ("approve", "reject"):
        check_decision(args.review_action == "approve", args.reason, args.note)   # before touching any file
    if not path.exists():
        if args.review_action in ("list", "shift"):     # nothing asked yet: an empty queue, and no file created
            print("[]" if args.json else f"No review items ({path}: no database here yet)")
            return ExitCode.OK
        raise InputError(f"review item #{args.id} does not exist ({path}: no database here yet)")
    settings = load_settings(getattr(args, "settings", None))
    store = Store(path, MIGRATIONS)
    await store.open()
    try:
        queue = ReviewQueue(store, settings.review)
        if args.review_action == "list":
            items = await queue.items(args.status, limit=None)
            print_review_items(items, args.status, args.json)
            return ExitCode.OK
        if args.review_action == "shift":
            print_shift(await queue.shift(args.hours), args.json)
            return ExitCode.OK
        if args.review_action in ("claim", "unclaim"):
            from engine.review.queue import clock_time
            item = await getattr(queue, args.review_action)(args.id, args.operator)
            print(f"Review item #{item.id} " + (f"claimed by {item.claimed_by} until {clock_time(item.claimed_until)}"
                                                if item.claimed_by else "is free to claim"))
            return ExitCode.OK
        item = await queue.decide(args.id, args.review_action == "approve", args.operator, args.reason, args.note)
        if item.pending:            # counted toward the item's quorum of approvals; it still waits
            print(f"Review item #{item.id}: approval {len(item.approvals)} of {item.quorum} counted "
                  f"({', '.join(item.approvals)}); it waits for another operator")
            return ExitCode.OK
        # The agents behind the answer gain or lose by the decision, as they do when it is made in the console.
        keeper = ReputationKeeper(store, settings.reputation)
        if store.target.shared:         # the book names this desk's agents as its engine does
            from engine import load_fleet
            from .common import cli_book_names
            keeper.tables.names = cli_book_names(load_fleet(getattr(args, "fleet", None)), store)
        await keeper.load(())
        await keeper.after_decision(DecidedAnswer.from_payload(item.payload), args.review_action == "approve")
    finally:
        await store.aclose()
    print(f"Review item #{item.id} {decision_line(item)}")
    return ExitCode.OK


def print_shift(tally, as_json: bool) -> None:
    """A reviewer a line (names quoted: a role's name is the operator's to choose), or JSON."""
    import dataclasses
    import json
    from engine.untrusted import quoted
    if as_json:
        print(json.dumps([dataclasses.asdict(r) for r in tally.reviewers], indent=2))
        return
    print(f"Last {tally.hours:g} h:" if tally.reviewers else f"Last {tally.hours:g} h: no decisions, approvals or holds")
    for reviewer in tally.reviewers:
        print("  " + quoted(reviewer.operator) + reviewer.text()[len(reviewer.operator):])


def decision_line(item) -> str:
    """`by whom: reason — note`, each quoted: the note is free text and may hold a line break."""
    from engine.untrusted import quoted
    note = f" — {quoted(item.note)}" if item.note else ""
    return f"{item.status.value} by {quoted(item.decided_by)}: {quoted(item.reason)}{note}"


def review_item_json(item) -> dict:
    """One line of `review list --json` (the whole answer stays in the database: see trace_id)."""
    return {"id": item.id, "trace_id": item.trace_id, "question": item.question, "tier": item.tier.value,
            "verdict": item.verdict.value, "answer": item.answer_text, "status": item.status.value, "why": item.why,
            "created_at": item.created_at, "decided_by": item.decided_by or None, "reason": item.reason or None,
            "note": item.note or None, "decided_at": item.decided_at, "claimed_by": item.claimed_by or None,
            "claimed_until": item.claimed_until, "due_at": item.due_at,
            "candidates": [{"agent_id": c.agent_id, "answer": c.answer, "support_rate": c.support_rate}
                           for c in item.candidates_summary]}


def print_review_items(items, status: str, as_json: bool) -> None:
    import datetime

    from engine.review.queue import clock_time

    from engine.untrusted import quoted
    if as_json:
        print(json.dumps([review_item_json(i) for i in items], ensure_ascii=False, indent=2))
        return
    if not items:
        print("No review items" + ("" if status == "all" else f" {status}"))
        return
    for item in items:
        created = datetime.datetime.fromtimestamp(item.created_at).strftime("%Y-%m-%d %H:%M")
        answer = quoted(item.answer_text[:110]) if item.answer_text else f"({item.verdict.value})"
        print(f"#{item.id:<4} {item.status.value:<8} {item.tier.value:<6} {created}  {quoted(item.question)}")
        print(f"      answer: {answer}")
        print(f"      why   : {quoted(item.why)}")
        if item.asked_times > 1:
            print(f"      asked : {item.asked_times} times while it waited (one decision for all)")
        if not item.pending:
            print(f"      {decision_line(item)}")
        elif item.claimed_by:
            print(f"      claim : {quoted(item.claimed_by)} until {clock_time(item.claimed_until)} (free after that)")
        if item.pending and item.due_at is not None:
            late = time.time() - item.due_at
            print(f"      due   : {'OVERDUE since' if late > 0 else 'by'} {clock_time(item.due_at)} "
                  f"({int(abs(late) // 60)} min {'ago' if late > 0 else 'from now'})")
