"""Quorum: `python main.py` (console) | ask | fleet up | audit verify|list|export | review | agents | eval |
trace | memory | tools | gateway. Exit codes: 0 ok, 1 failure, 2 bad input."""
from __future__ import annotations

import argparse
import importlib
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def _common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Options every command takes, before or after its name: a subcommand's copy never overwrites a
    value given before the subcommand (`main.py --settings S agents`)."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument("--fleet", type=Path, default=default, help="fleet file (default: config/fleet.toml)")
    parser.add_argument("--settings", type=Path, default=default,
                        help="engine settings file (default: config/engine.toml)")
    parser.add_argument("--corpus", type=Path, default=default,
                        help="folder of your own .md, .txt, .html and .pdf files the built-in agents read")
    parser.add_argument("--db", type=Path, default=default, help="SQLite file (default: user data dir, or $QUORUM_DB)")


# Commands that live beside their engine package: each module has add_parser(sub) and run(args).
COMMAND_MODULES = {
    "trace": "engine.gateway.trace_cli",
    "memory": "engine.memory.cli",
    "tools": "engine.gateway.tools_cli",
    "gateway": "engine.gateway.train_cli",
    "alerts": "engine.alerts.cli",
    "audit": "engine.audit_cli",
    "llm": "engine.llm_cli",
    "index": "engine.index_cli",
    "screenshot": "console.gallery",
}


COMMANDS = frozenset({"ask", "fleet", "review", "agents", "eval", "bench", *COMMAND_MODULES})


def build_parser(commands: bool = True) -> argparse.ArgumentParser:
    """commands=False: the console's options alone. Building every command's parser imports every command's
    module, and the console's window waits on that (it must show within 2 s of start)."""
    parser = argparse.ArgumentParser(prog="quorum", description="Operations console for a fleet of RAG agents that may lie.")
    _common(parser, top=True)
    parser.add_argument("--demo", type=float, metavar="RATE", default=None,
                        help="the console only: feed the demo questions at RATE a second once the fleet is ready "
                             "(0.05 to 20; the Demo traffic switch turns it off)")
    if not commands:
        parser.set_defaults(command=None)
        return parser
    sub = parser.add_subparsers(dest="command")
    ask = sub.add_parser("ask", help="answer one question on the fleet, headless")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--tier", choices=["auto", "low", "medium", "high"], default="auto",
                     help="risk tier; auto (default): the [risk] rules of the engine settings decide")
    _common(ask)
    fleet = sub.add_parser("fleet", help="run the built-in agents")
    fleet.add_argument("action", choices=["up"])
    fleet.add_argument("--unsigned", action="store_true",
                       help="run built-in agents without a configured key unsigned, so other clients on this machine "
                            "(curl, `agents check`) can call them; by default each has a new key for this run only")
    _common(fleet)
    _add_review_parser(sub)
    from engine.trust_cli import add_agents_parser
    add_agents_parser(sub, _common)
    from engine.evaluation.cli import add_eval_parser
    add_eval_parser(sub)
    for module in COMMAND_MODULES.values():
        importlib.import_module(module).add_parser(sub)
    _add_bench_parser(sub)
    return parser


def _add_bench_parser(sub) -> None:
    """bench and bench soak (engine.bench), and bench ui (console.bench_ui, whose Qt loads only when it runs)."""
    from console.bench_ui import add_ui_parser
    from engine.bench.cli import add_parser
    add_ui_parser(add_parser(sub)[1])


def default_operator() -> str:
    return os.environ.get("USER") or "operator"


def _add_review_parser(sub) -> None:
    """review list | approve ID | reject ID: the approval queue, on the database alone (no fleet)."""
    review = sub.add_parser("review", help="the approval queue: list, approve or reject answers waiting for an operator")
    actions = review.add_subparsers(dest="review_action", required=True, metavar="{list,approve,reject}")
    listing = actions.add_parser("list", help="list review items (pending first)")
    listing.add_argument("--status", choices=["pending", "approved", "rejected", "all"], default="pending")
    listing.add_argument("--json", action="store_true", help="print a JSON list")
    listing.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="SQLite file (default: user data dir, or $QUORUM_DB)")
    from engine.review import APPROVE_REASONS, REJECT_REASONS
    for name, reasons in (("approve", APPROVE_REASONS), ("reject", REJECT_REASONS)):
        action = actions.add_parser(name, help=f"{name} a pending item; reasons: {' | '.join(reasons)}")
        action.add_argument("id", help="review item id (see `review list`)")
        action.add_argument("--reason", required=True, help=f"one of: {' | '.join(reasons)}")
        action.add_argument("--note", default="", help='free text; required when the reason is "other"')
        action.add_argument("--operator", default=default_operator(),
                            help="who decides (default: $USER, or \"operator\")")
        action.add_argument("--db", type=Path, default=argparse.SUPPRESS, help="SQLite file (default: user data dir, or $QUORUM_DB)")


def _load(args):
    from engine import load_fleet, load_settings
    fleet = load_fleet(args.fleet, corpus_dir=args.corpus.resolve() if args.corpus else None)
    return fleet, load_settings(args.settings)


def _print_answer(answer) -> None:
    """Every text an agent or a document wrote is quoted(): one line each, no escape sequence, no forged line."""
    from engine import Role
    from engine.untrusted import quoted
    print(f"Question : {quoted(answer.question)}")
    print(f"Verdict  : {answer.verdict.value} ({quoted(answer.reason)})")
    print(f"Tier     : {quoted(answer.tier_reason or answer.tier.value)}")
    print(f"Answer   : {quoted(answer.answer) or '-'}")
    for citation in answer.citations:
        print(f"  cites [{quoted(citation.chunk_id)}] {quoted(citation.source)}: {quoted(citation.text[:100])}...")
    if not answer.answer and answer.candidates:
        print("Positions:")
        for cand in answer.candidates:
            print(f"  {quoted(cand.agent_id)} (support {cand.support_rate:.0%}): "
                  f"{quoted(cand.generation.answer[:120])}")
    print(f"Agents   : {answer.agents_ok(Role.RETRIEVER)} retrievers and {answer.agents_ok(Role.GENERATOR)} "
          f"generators answered")
    for agent in answer.agents:
        note = (f"  [{quoted(agent.mode)}]" if agent.mode else "") + (f"  {quoted(agent.error)}" if agent.error else "")
        print(f"  {quoted(agent.agent_id):<16} {agent.role.value:<9} {agent.status.value:<9} {agent.latency_ms:8.1f} ms"
              f"{note}")
    print(f"Trace id : {answer.trace_id}")


def review_json(item) -> dict | None:
    """The `review` key of `ask --json`: null when the answer did not need an operator."""
    if item is None:
        return None
    return {"id": item.id, "status": item.status.value, "why": item.why}


def review_item_json(item) -> dict:
    """One line of `review list --json` (the whole answer stays in the database: see trace_id)."""
    return {"id": item.id, "trace_id": item.trace_id, "question": item.question, "tier": item.tier.value,
            "verdict": item.verdict.value, "answer": item.answer_text, "status": item.status.value, "why": item.why,
            "created_at": item.created_at, "decided_by": item.decided_by or None, "reason": item.reason or None,
            "note": item.note or None, "decided_at": item.decided_at,
            "candidates": [{"agent_id": c.agent_id, "answer": c.answer, "support_rate": c.support_rate}
                           for c in item.candidates_summary]}


def answer_json(answer) -> dict:
    from engine import to_jsonable
    return {
        "trace_id": answer.trace_id,
        "question": answer.question,
        "tier": answer.tier.value,
        "tier_reason": answer.tier_reason,
        "verdict": answer.verdict.value,
        "reason": answer.reason,
        "answer": answer.answer,
        "citations": [to_jsonable(c) for c in answer.citations],
        "agents": [{"id": a.agent_id, "role": a.role.value, "status": a.status.value, "latency_ms": a.latency_ms,
                    "error": a.error, "mode": a.mode} for a in answer.agents],
        "candidates": [{"agent_id": c.agent_id, "answer": c.generation.answer, "support_rate": c.support_rate,
                        "credibility": c.credibility, "consistency": c.consistency, "agreeing": list(c.agreeing),
                        "challenge": c.challenge,
                        "checks": [{"claim": k.claim.text, "supported": k.supported, "label": k.label.value,
                                    "origin": k.origin, "reason": k.reason}
                                   for k in c.checks]} for c in answer.candidates],
        "context": [{"chunk_id": c.chunk.id, "score": c.score, "supported_by": list(c.supported_by),
                     "disputed_by": list(c.disputed_by)} for c in answer.context],
        "timings_ms": dict(answer.timings_ms),
        "stages": stages_json(answer),
        "cascade": cascade_json(answer.cascade),
        "participation": participation_json(answer.participation),
    }


def participation_json(part) -> dict | None:
    """Per role: asked, answered, failed by status, needed, unavailable, held; and quorum_held (engine.participation)."""
    from engine import to_jsonable
    from engine.participation import summary
    if part is None:
        return None
    return {"retrievers": to_jsonable(part.retrievers), "generators": to_jsonable(part.generators),
            "quorum_held": part.quorum_held, "summary": summary(part)}


def stages_json(answer) -> list[dict]:
    """Each stage the question went through, with the cascade monitor's scores at its boundary."""
    scores = {}
    for score in (answer.cascade.scores if answer.cascade else ()):
        scores[(score.index, score.attempt)] = score
    out = []
    for stage in answer.stages:
        score = scores.get((stage.index, stage.attempt))
        out.append({"index": stage.index, "stage": stage.kind.value, "hop": stage.hop, "attempt": stage.attempt,
                    "output": stage.output, "confidence": stage.confidence, "agents": list(stage.agents),
                    "evidence": [c.id for c in stage.evidence], "elapsed_ms": stage.elapsed_ms, "note": stage.note,
                    "scores": None if score is None else {
                        "sfv": score.a_sfv, "csct": score.a_csct, "cpm": score.a_cpm, "p": score.p,
                        "fired": score.fired, "type": score.cascade_type.value if score.cascade_type else None,
                        "reasons": list(score.reasons)}})
    return out


def cascade_json(cascade) -> dict | None:
    if cascade is None:
        return None
    return {"fired": cascade.fired, "stage": cascade.stage,
            "type": cascade.cascade_type.value if cascade.cascade_type else None,
            "mitigation": cascade.mitigation.value, "resolved": cascade.resolved, "reason": cascade.reason}


async def _ask(args) -> int:
    from engine import Engine, RiskTier
    from engine.pipeline import screen_question
    from engine.untrusted import quoted
    fleet, settings = _load(args)
    screen_question(args.question, settings.limits.max_question_chars)   # fail before starting any agent
    engine = Engine(fleet, settings, db_path=args.db)
    if not args.json:
        print("Starting the fleet...", file=sys.stderr)
    async with engine:
        answer = await engine.ask(args.question, None if args.tier == "auto" else RiskTier(args.tier))
        item = await engine.review_item_for(answer.trace_id)
    if args.json:
        print(json.dumps({**answer_json(answer), "review": review_json(item)}, ensure_ascii=False, indent=2))
    else:
        _print_answer(answer)
        if item is not None:
            print(f"Escalated: review item #{item.id} ({quoted(item.why)})")
    return EXIT_OK


async def _fleet_up(args) -> int:
    from engine import AgentState, Engine
    from engine.untrusted import quoted
    fleet, settings = _load(args)

    from engine.events import AgentChanged

    def show(event) -> None:
        if isinstance(event, AgentChanged):
            view = event.view
            if view.state in (AgentState.UP, AgentState.DOWN):    # detail: the tail of the agent's own log
                print(f"{view.spec.id:<16} {view.state.value:<5} {quoted(view.url or view.detail)}", flush=True)

    engine = Engine(fleet, settings, db_path=args.db, per_run_keys=not args.unsigned)
    engine.subscribe(show)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with engine:
        keyed = sorted(a.id for a in fleet.agents if a.builtin and a.enabled and a.id in engine.keyring)
        if keyed:
            print(f"Signed with keys for this run only (other clients get 401; --unsigned serves them without): "
                  f"{', '.join(keyed)}", flush=True)
        print("Fleet is up; Ctrl-C stops it.", flush=True)
        await stop.wait()
    print("Fleet stopped.")
    return EXIT_OK


def _review(args) -> int:
    from engine import InputError, default_db_path
    from engine.review import allowed_reasons_text
    path = Path(args.db or default_db_path())
    approve = args.review_action == "approve"
    try:
        return asyncio.run(_review_run(args, path))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.review_action in ("approve", "reject"):
            print(f"allowed reasons to {args.review_action}: {allowed_reasons_text(approve)}", file=sys.stderr)
        return EXIT_BAD_INPUT


async def _review_run(args, path: Path) -> int:
    from engine import InputError
    from engine.review import ReviewQueue
    from engine import load_settings
    from engine.reputation.answer_evidence import DecidedAnswer
    from engine.review import check_decision
    from engine.store.db import Store
    from engine.trust import TrustKeeper
    if args.review_action != "list":
        check_decision(args.review_action == "approve", args.reason, args.note)   # before touching any file
    if not path.is_file():
        if args.review_action == "list":       # nothing asked yet: an empty queue, and no file created
            print("[]" if args.json else f"No review items ({path}: no database here yet)")
            return EXIT_OK
        raise InputError(f"review item #{args.id} does not exist ({path}: no database here yet)")
    store = Store(path)
    await store.open()
    try:
        queue = ReviewQueue(store)
        if args.review_action == "list":
            items = await queue.items(args.status, limit=None)
            _print_review_items(items, args.status, args.json)
            return EXIT_OK
        item = await queue.decide(args.id, args.review_action == "approve", args.operator, args.reason, args.note)
        # The agents behind the answer gain or lose by the decision, as they do when it is made in the console.
        keeper = TrustKeeper(store, load_settings(getattr(args, "settings", None)).reputation)
        await keeper.load(())
        await keeper.after_decision(DecidedAnswer.from_payload(item.payload), args.review_action == "approve")
    finally:
        await store.aclose()
    print(f"Review item #{item.id} {decision_line(item)}")
    return EXIT_OK


def decision_line(item) -> str:
    """`by whom: reason — note`, each quoted: the note is free text and may hold a line break."""
    from engine.untrusted import quoted
    note = f" — {quoted(item.note)}" if item.note else ""
    return f"{item.status.value} by {quoted(item.decided_by)}: {quoted(item.reason)}{note}"


def _print_review_items(items, status: str, as_json: bool) -> None:
    import datetime

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
        if not item.pending:
            print(f"      {decision_line(item)}")


def _eval(args, from_command_line: bool) -> int:
    if from_command_line and os.environ.get("PYTHONHASHSEED") is None:
        # Python salts set order per process, and a few ties in the evaluations follow it: with a fixed
        # seed, running an evaluation again gives the same figures.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    from engine.evaluation.cli import run_eval
    return run_eval(args)


def wants_console(argv: list[str]) -> bool:
    """No command named (and no help asked): the console. A flag's value that happens to be a command's name
    only costs the full parser, which then sees it right."""
    return not any(a in COMMANDS or a in ("-h", "--help") for a in argv)


def guard_output() -> None:
    """Whatever a command prints or logs, no escape sequence reaches the terminal raw (TerminalStream) and a log
    line carries its message quoted: a line break in an agent's text cannot draw a line of its own."""
    import logging

    from engine.untrusted import QuotedFormatter, guard_terminal
    guard_terminal()
    if logging.lastResort is not None:      # the handler a command's warnings go to (no logging configured)
        logging.lastResort.setFormatter(QuotedFormatter())


def main(argv: list[str] | None = None) -> int:
    guard_output()
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(commands=not wants_console(words)).parse_args(argv)
    from engine import ConfigError, InputError, QuorumError
    try:
        if args.command == "ask":
            return asyncio.run(_ask(args))
        if args.command == "fleet":
            return asyncio.run(_fleet_up(args))
        if args.command == "review":
            return _review(args)
        if args.command == "agents":
            from engine.trust_cli import PROTOCOL_ACTIONS, run_agents
            if getattr(args, "agents_action", None) in PROTOCOL_ACTIONS:    # schema, check: no fleet file needed
                return run_agents(args, None, None)
            return run_agents(args, *_load(args))
        if args.command == "eval":
            return _eval(args, from_command_line=argv is None)
        if args.command == "bench":
            module = "console.bench_ui" if args.bench_kind == "ui" else "engine.bench.cli"
            return importlib.import_module(module).run(args)
        if args.command in COMMAND_MODULES:
            return importlib.import_module(COMMAND_MODULES[args.command]).run(args)
        from console.app import run_console
        fleet, settings = _load(args)
        if args.demo is not None:
            from engine.demo import check_rate
            check_rate(args.demo)                  # a bad rate is bad input, before any window opens
        return run_console(fleet, settings, db_path=args.db, demo_rate=args.demo)
    except (ConfigError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except QuorumError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
