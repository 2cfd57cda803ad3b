"""`python main.py agents [--json] | agents quarantine ID --reason R | agents release ID --reason R`
`| agents schema [--format openapi|jsonschema] [--out FILE] | agents check URL --role R [--timeout S] [--json]`.

The reputation book works on the SQLite file alone (no fleet is started), like `review`: a running console
takes the change in before its next question. Exit codes: 0 ok, 2 bad input (unknown id, empty reason,
wrong state). `schema` prints the agent protocol (engine/agents/schema.py) for agents written elsewhere;
`check` runs the protocol's conformance cases against a live agent: 0 all pass, 1 some fail, 2 bad input.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
from pathlib import Path

from engine.untrusted import quoted, quoted_cut

from .common import add_common_options, default_operator, load_fleet_and_settings, store_of
from .exit_codes import ExitCode


def add_parser(sub) -> None:
    agents = sub.add_parser("agents", help="the reputation book: scores and states; quarantine or release an agent")
    add_common_options(agents)
    agents.add_argument("--json", action="store_true", help="print a JSON list")
    actions = agents.add_subparsers(dest="agents_action", metavar="{quarantine,release,schema,check}")
    for name, what in (("quarantine", "take an agent off all work now"),
                       ("release", "let a quarantined agent back on probation (low-risk work, a capped vote)")):
        action = actions.add_parser(name, help=what)
        add_common_options(action)
        action.add_argument("id", help="agent id (see `agents`)")
        action.add_argument("--reason", required=True, help="why: it goes into the audit trail")
        action.add_argument("--operator", default=default_operator(),
                            help="who does it (default: $USER, or \"operator\")")
    _add_protocol_parsers(actions)


ROLES = ("retriever", "generator", "verifier")


def _add_protocol_parsers(actions) -> None:
    schema = actions.add_parser("schema", help="print the agent protocol as OpenAPI 3.1 (default) or JSON Schema "
                                               "2020-12, for agents written elsewhere")
    schema.add_argument("--format", choices=["openapi", "jsonschema"], default="openapi")
    schema.add_argument("--message", help="jsonschema only: one message's schema (RetrieveRequest, GenerateReply ...)")
    schema.add_argument("--out", type=Path, help="write it to FILE instead of stdout")
    check = actions.add_parser("check", help="run the protocol's conformance cases against a live agent")
    check.add_argument("url", help="the agent's base URL (http://host:port)")
    check.add_argument("--role", required=True, choices=ROLES, help="the role it is checked as")
    check.add_argument("--timeout", type=float, default=10.0, metavar="S",
                       help="seconds each reply may take (default 10)")
    check.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object")
    check.add_argument("--key-env", metavar="VAR", help="a keyed agent: the variable holding its key (hex); requests "
                                                       "are signed and replies checked, as the engine does")
    check.add_argument("--agent-id", default="", help="the id a keyed agent signs as (default: the id its /health "
                                                      "gives)")
    check.add_argument("--ca-file", type=Path, help="https: the CA bundle its certificate is checked against")
    check.add_argument("--judge-model", metavar="MODEL",
                       help="check an OpenAI-compatible server as a judge (a verifier of kind openai-chat serving "
                            "MODEL): log-probabilities and the canaries, not the Quorum protocol")


def run(args: argparse.Namespace) -> int:
    """schema and check need no fleet file and no database; the book's own actions read the fleet file."""
    from engine.errors import InputError
    action = getattr(args, "agents_action", None)
    if action == "schema":
        return run_schema(args)
    if action == "check":
        return run_check(args)
    fleet, settings = load_fleet_and_settings(args)
    try:
        return asyncio.run(_run(args, fleet, settings))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT


async def _run(args, fleet, settings) -> int:
    from engine.errors import InputError
    from engine.schema import MIGRATIONS
    from engine.store.db import Store
    from engine.reputation.keeper import ReputationKeeper
    from .common import cli_book_names
    action = getattr(args, "agents_action", None)
    ids = [a.id for a in fleet.agents]
    if action:
        if not (args.reason or "").strip():
            raise InputError(f"an empty reason: say why {args.id!r} is {action}d, it goes into the audit trail")
        if args.id not in ids:
            raise InputError(f"no agent {args.id!r} in {fleet.path} (agents: {', '.join(ids)})")
    store = Store(store_of(args), MIGRATIONS)
    await store.open()
    try:
        keeper = ReputationKeeper(store, settings.reputation)
        keeper.tables.names = cli_book_names(fleet, store)
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
        print(f"{args.id} is {record.state.value} (score {record.score:.2f}): {quoted(record.last_change_why)}")
        return ExitCode.OK
    rows = [_row(spec, records.get(spec.id)) for spec in fleet.agents]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        _print(rows)
    return ExitCode.OK


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
        print(f"{r['id']:<16} {r['role']:<9} {r['score']:>5.2f}  {state:<22} {when}  "
              f"{quoted_cut(r['last_change'], 70)}")


# --- the agent protocol: schema and conformance --------------------------------------------------
def run_schema(args: argparse.Namespace) -> int:
    from engine.agents import schema
    if args.message and args.format != "jsonschema":
        print("error: --message goes with --format jsonschema", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        doc = schema.openapi() if args.format == "openapi" else schema.json_schema(args.message)
    except KeyError:
        print(f"error: no message {args.message!r} (messages: {', '.join(schema.message_names())})", file=sys.stderr)
        return ExitCode.BAD_INPUT
    text = schema.render(doc)
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
            return ExitCode.BAD_INPUT
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return ExitCode.OK




def run_check(args: argparse.Namespace) -> int:
    from urllib.parse import urlparse

    from engine.agents.conformance import run_check as check
    from engine.types import Role
    parsed = urlparse(args.url)
    try:
        port_ok = parsed.port is None or parsed.port > 0
    except ValueError:
        port_ok = False
    if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok or parsed.query:
        print(f"error: expected an agent's base URL like http://127.0.0.1:8001, found {args.url!r}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if not 0 < args.timeout <= 600:
        print(f"error: --timeout must be above 0 and at most 600 seconds, found {args.timeout:g}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    signing = None
    if args.key_env:
        from engine.agents.auth import parse_key
        from engine.agents.conformance import Signing
        text = os.environ.get(args.key_env)
        if not text:
            print(f"error: --key-env {args.key_env}: the variable is not set", file=sys.stderr)
            return ExitCode.BAD_INPUT
        try:
            signing = Signing(parse_key(text), args.agent_id)
        except ValueError as exc:      # says what is wrong with the key, never what it is
            print(f"error: --key-env {args.key_env}: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
    verify = True
    if args.ca_file:
        import ssl
        try:
            verify = ssl.create_default_context(cafile=str(args.ca_file))
        except (OSError, ssl.SSLError) as exc:
            print(f"error: --ca-file {args.ca_file}: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
    as_json = getattr(args, "json", False)
    role = Role(args.role)
    if args.judge_model:
        if role is not Role.VERIFIER:
            print("error: --judge-model checks a judge: give --role verifier", file=sys.stderr)
            return ExitCode.BAD_INPUT
        from engine.agents.conformance import run_judge_check
        if not as_json:
            print(f"Checking {args.url} as a judge serving {quoted(args.judge_model)} (each reply within "
                  f"{args.timeout:g} s)")
        report = asyncio.run(run_judge_check(args.url, args.judge_model, args.timeout,
                                             on_result=None if as_json else _print_case))
        return _report(report, as_json)
    if not as_json:
        print(f"Checking {args.url} as a {role.value} (each reply within {args.timeout:g} s"
              + (", signed requests" if signing else "") + ")")
    report = asyncio.run(check(args.url, role, args.timeout, on_result=None if as_json else _print_case,
                               signing=signing, verify=verify))
    return _report(report, as_json)


def _report(report, as_json: bool) -> int:
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        failing = report.failures
        who = f" ({report.agent_id})" if report.agent_id else ""
        print(f"{len(report.results) - len(failing)} of {len(report.results)} cases pass{quoted(who)}"
              + (f"; failing: {', '.join(r.name for r in failing)}" if failing else ""))
    return ExitCode.OK if report.passed else ExitCode.FAILED_CASES


def _print_case(result) -> None:
    latency = f"{result.latency_ms:>7.0f} ms" if result.latency_ms is not None else " " * 10
    mark = "pass" if result.passed else "FAIL"
    print(f"  {mark}  {result.name:<34} {latency}  {quoted(result.detail)}")
    if not result.passed:
        print(f"        {'':<34} {'':>10}  expected: {result.what}")
