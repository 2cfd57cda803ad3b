"""`main.py bench team`: several desks on one PostgreSQL store, each with a scripted operator, for minutes.

    main.py bench team [--minutes 5] [--rate 1] [--desks 3] [--high-every 5] [--db URL] [--write-minutes 1]
                       [--agents 5] [--json PATH]

The agents are the real built-in agent apps served by one helper process, as `bench soak` serves them
(bench.perf.soak_agents: 4 BM25/TF-IDF retrievers and 1 extractive generator by default, and no judge: the judge
is an agent of the default fleet, so a fleet without one has it off). Each desk is a process of its own
(bench.perf.team_desk): an Engine on the store, pointed at those agents as external ones, asking the demo
questions at --rate on the low tier (the fast path), every --high-every-th on the high tier so the approval queue
has items, while its scripted operator claims and decides the queue's items, whichever desk asked them.
[review] quorum_high is 1: every desk signs in as one role, and one decision per item makes each decision one
event to follow.

The store is never an operator's records: the run gets a schema of its own (bench_team_<pid>_<n>) in the
database --db names (default the local team store, postgresql://quorum@127.0.0.1:5432/quorum), put first on
the search path by the URL's options, and dropped at the end. Change announcements name their schema, so desks
on the database's other schemas do not hear the run. The desks' audit anchors go to a temporary file, not the
user's.

Phases: the team (--desks desks for --minutes); then, with --write-minutes above 0, one desk alone on a schema
of its own and one desk alone on a temporary SQLite file, for the write latency of one engine on each.

Figures (bench.perf.team_figures, from the desks' JSON lines, kept beside the report as PATH.lines.jsonl, and the
store read afterwards):
- questions recorded: rows of `questions` and audit question.decided events in the store;
- events lost: answers and decisions a desk was told were written that the store does not hold, row and audit
  event both (target 0);
- the audit chain verified (AuditLog.verify_sync), and the anchors the desks wrote at start and close;
- propagation: for each decision and each other desk, from the decision (the store's stamp inside its
  transaction) to that desk reading it after a StoreChanged (p50, p99, max, and pairs never seen; target p99
  ≤ 1 s). It includes the engine's coalescing of changes (engine.STORE_QUIET_S, 0.2 s) and the read queued
  behind the desk's own writes on its store's thread;
- write latency: each transaction of a desk's store, BEGIN to COMMIT on the store's thread (the desk wraps
  Store._transaction; the engine's code is unchanged), desk 1's in the team run, and one desk alone on each
  store.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from engine.cli.exit_codes import ExitCode

from .team_figures import (TARGET_EVENTS_LOST, TARGET_PROPAGATION_P99_S, RecordTail, StoredFacts, counts,
                           lost_writes, progress_line, propagation, write_latency)

DEFAULT_TEAM_DB = "postgresql://quorum@127.0.0.1:5432/quorum"
READY_TIMEOUT_S = 300.0     # the desks' engines start together on a small machine: models load three at once
SETTLE_S = 5.0              # after the last question: operators decide what still waits
WATCH_S = 3.0               # then every desk goes on reading decisions this long
GO_DELAY_S = 1.0            # from "go" to the first question, the same moment at every desk
PROGRESS_EVERY_S = 10.0
EXIT_GRACE_S = 120.0        # a desk that has not closed this long after its plan ended is killed
_schemas = itertools.count(1)


def add_team_parser(kinds, default_json: Path) -> argparse.ArgumentParser:
    team = kinds.add_parser("team", help="desks on one PostgreSQL store with scripted operators: questions "
                                         "recorded, events lost, the chain, decision propagation, write latency")
    team.add_argument("--minutes", type=float, default=5.0, help="how long the desks ask and decide (default 5)")
    team.add_argument("--rate", type=float, default=1.0, help="questions a second at each desk (default 1)")
    team.add_argument("--desks", type=int, default=3, help="engines on the store (default 3)")
    team.add_argument("--high-every", type=int, default=5,
                      help="every Nth question on the high tier, to the approval queue (default 5; 0: none)")
    # SUPPRESS: a --db given before `bench` (main.py's own) is not overwritten by this copy's default.
    team.add_argument("--db", default=argparse.SUPPRESS, metavar="URL",
                      help="the PostgreSQL database to run in, in a schema of the run's own that is dropped after "
                           f"(default {DEFAULT_TEAM_DB})")
    team.add_argument("--write-minutes", type=float, default=1.0,
                      help="then one desk alone on PostgreSQL and on SQLite this long, for the write latency of one "
                           "engine on each (default 1; 0: skip)")
    team.add_argument("--agents", type=int, default=5, help="agents in the fleet (default 5: 4 retrievers, 1 generator)")
    team.add_argument("--json", type=Path, default=default_json, metavar="PATH", dest="team_json",
                      help="the JSON; .md beside it")
    return team


def check_args(args) -> None:
    from engine.demo import check_rate
    if args.desks < 2:
        raise ValueError("--desks must be at least 2 (a decision has to reach another desk)")
    if args.minutes <= 0 or args.write_minutes < 0:
        raise ValueError("--minutes must be positive and --write-minutes at least 0")
    if args.high_every < 0:
        raise ValueError("--high-every must be 0 (no high tier) or more")
    if args.agents < 3:
        raise ValueError("--agents must be at least 3 (the low tier takes 2 retrievers and 1 generator)")
    check_rate(args.rate)


def run_team(args) -> int:
    from engine.errors import ConfigError, InputError, QuorumError
    try:
        check_args(args)
        return _team(args)
    except (InputError, ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except QuorumError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILURE


# --- the store: a schema of the run's own ------------------------------------------------------------------
def with_search_path(url: str, schema: str) -> str:
    """The URL with the schema first on the search path (libpq's options), whatever options it had."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) | {"options": f"-csearch_path={schema}"}
    return urlunsplit(parts._replace(query=urlencode(query)))


def team_database(url: str):
    """The --db URL as a PostgreSQL target, reached once now: a clear error if it is not there."""
    import psycopg

    from engine.errors import InputError, StoreError
    from engine.store.target import store_target
    target = store_target(url)
    if not target.shared:
        raise InputError(f"--db {url}: bench team runs on PostgreSQL; give a postgresql:// URL")
    try:
        psycopg.connect(target.libpq_url, connect_timeout=5).close()
    except psycopg.Error as exc:
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StoreError(f"PostgreSQL at {target.shown} cannot be reached ({said}); run `make db` to start the local "
                         "team store, or name another with --db") from None
    return target


@contextlib.contextmanager
def throwaway_schema(target) -> Iterator[tuple[str, str]]:
    """(schema, URL of the store in it): a new schema, dropped with everything in it when the block ends."""
    import psycopg
    schema = f"bench_team_{os.getpid()}_{next(_schemas)}"
    with psycopg.connect(target.libpq_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema, with_search_path(target.url, schema)
    finally:
        with psycopg.connect(target.libpq_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def stored_facts(db: str, anchors: Path, key: Path) -> StoredFacts:
    """What the store holds once every desk has closed, and whether its chain and anchors hold."""
    from engine.schema import MIGRATIONS
    from engine.store.anchors import check_anchors
    from engine.store.audit_log import AuditLog
    from engine.store.db import Store
    store = Store(db, MIGRATIONS)
    store.open_sync()
    try:
        def column(sql: str) -> frozenset:
            return frozenset(r[0] for r in store.execute(sql))
        decision_events = set()
        for actor, type_, payload in store.execute(
                "SELECT actor, type, payload FROM audit WHERE type IN ('review.approved', 'review.rejected')"):
            decision_events.add((int(json.loads(payload)["id"]), actor, type_.split(".", 1)[1]))
        chain = AuditLog(store).verify_sync()
        held = check_anchors(store, anchors, key)
        return StoredFacts(
            question_traces=column("SELECT trace_id FROM questions"),
            decided_traces=column("SELECT trace_id FROM audit WHERE type = 'question.decided'"),
            decisions={int(i): (s, d) for i, s, d in store.execute(
                "SELECT id, status, decided_by FROM approvals WHERE status <> 'pending'")},
            decision_events=frozenset(decision_events),
            pending=int(store.execute("SELECT count(*) FROM approvals WHERE status = 'pending'").scalar_one()),
            audit_events=int(store.execute("SELECT count(*) FROM audit").scalar_one()),
            chain_intact=chain.intact, chain_message=chain.message, anchors=held.message,
            extra={"questions_rows": int(store.execute("SELECT count(*) FROM questions").scalar_one()),
                   "review_joins": int(store.execute("SELECT count(*) FROM review_joins").scalar_one())})
    finally:
        store.close_sync()


# --- one phase: desks started, sent off together, watched, checked -------------------------------------------
@dataclasses.dataclass(frozen=True)
class Phase:
    name: str          # "team", "postgresql_alone", "sqlite_alone"
    db: str            # the store the desks open (URL or SQLite file)
    shown: str         # how the report names it (no schema in a URL, which holds no secret anyway)
    desks: int
    minutes: float


@dataclasses.dataclass(frozen=True)
class PhaseRun:
    phase: Phase
    records: tuple[dict, ...]
    facts: StoredFacts
    seconds: float


@dataclasses.dataclass(frozen=True)
class Desk:
    number: int
    process: subprocess.Popen
    out: Path
    log: Path


def start_desks(phase: Phase, fleet: Path, work: Path, args) -> list[Desk]:
    env = {**os.environ, "QUORUM_ANCHORS": str(work / "anchors.jsonl"), "QUORUM_ANCHOR_KEY": str(work / "anchor.key")}
    from engine.config import PROJECT_ROOT
    desks = []
    for number in range(1, phase.desks + 1):
        out, log = work / f"{phase.name}-desk{number}.jsonl", work / f"{phase.name}-desk{number}.log"
        command = [sys.executable, "-m", "bench.perf.team_desk", "--desk", str(number), "--desks", str(phase.desks),
                   "--db", phase.db, "--fleet", str(fleet), "--out", str(out), "--rate", str(args.rate),
                   "--high-every", str(args.high_every)]
        if getattr(args, "settings", None):
            command += ["--settings", str(args.settings)]
        with log.open("w") as err:
            process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=err, text=True)
        desks.append(Desk(number, process, out, log))
    return desks


def await_ready(desks: Sequence[Desk], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Returns once every desk said it is ready; a desk that dies or stays silent past the deadline fails the run."""
    from engine.errors import FleetError
    from .team_desk import READY_PREFIX
    deadline = threading.Timer(timeout_s, lambda: [d.process.kill() for d in desks])
    deadline.start()
    try:
        for desk in desks:
            assert desk.process.stdout is not None
            if not any(line.startswith(READY_PREFIX) for line in desk.process.stdout):
                raise FleetError(f"desk {desk.number} did not start within {timeout_s:g} s: {tail(desk.log)}")
    finally:
        deadline.cancel()


def tail(path: Path, lines: int = 5) -> str:
    try:
        said = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(said[-lines:]) or "(its log is empty)"


def plan_for(minutes: float, now: float) -> dict:
    start = now + GO_DELAY_S
    ask_until = start + minutes * 60
    return {"start": start, "ask_until": ask_until, "decide_until": ask_until + SETTLE_S,
            "watch_until": ask_until + SETTLE_S + WATCH_S}


def send_off(desks: Sequence[Desk], plan: dict) -> None:
    for desk in desks:
        assert desk.process.stdin is not None
        desk.process.stdin.write("go " + json.dumps(plan) + "\n")
        desk.process.stdin.close()


def follow(desks: Sequence[Desk], plan: dict) -> list[dict]:
    """Every desk's lines until all have exited, a progress line every PROGRESS_EVERY_S; a desk still running
    EXIT_GRACE_S after the plan ended is killed."""
    tails = [RecordTail(d.out) for d in desks]
    records: list[dict] = []
    next_line = plan["start"] + PROGRESS_EVERY_S
    kill_at = plan["watch_until"] + EXIT_GRACE_S
    while any(d.process.poll() is None for d in desks):
        time.sleep(0.2)
        if time.time() >= next_line:
            records += [r for t in tails for r in t.read_new()]
            print("  " + progress_line(records, time.time() - plan["start"]), flush=True)
            next_line += PROGRESS_EVERY_S
        if time.time() >= kill_at:
            for desk in desks:
                if desk.process.poll() is None:
                    desk.process.kill()
    return records + [r for t in tails for r in t.read_new()]


def stop_all(desks: Sequence[Desk]) -> None:
    for desk in desks:
        if desk.process.poll() is None:
            desk.process.kill()
        desk.process.wait()
        if desk.process.stdout is not None:
            desk.process.stdout.close()


def run_phase(phase: Phase, fleet: Path, work: Path, args) -> PhaseRun:
    from engine.errors import FleetError
    print(f"team [{phase.name}]: starting {phase.desks} desk(s) on {phase.shown}", flush=True)
    started = time.time()
    desks = start_desks(phase, fleet, work, args)
    try:
        await_ready(desks)
        print(f"team [{phase.name}]: desks up in {time.time() - started:.0f} s; {phase.minutes:g} min at "
              f"{args.rate:g} question/s a desk", flush=True)
        plan = plan_for(phase.minutes, time.time())
        send_off(desks, plan)
        records = follow(desks, plan)
    finally:
        stop_all(desks)
    failed = [d for d in desks if d.process.returncode != 0]
    if failed:
        raise FleetError("; ".join(f"desk {d.number} ended with {d.process.returncode}: {tail(d.log)}" for d in failed))
    facts = stored_facts(phase.db, work / "anchors.jsonl", work / "anchor.key")
    return PhaseRun(phase, tuple(records), facts, round(time.time() - started, 1))


# --- the run --------------------------------------------------------------------------------------------
def _team(args) -> int:
    from engine import load_fleet
    from engine.config import PROJECT_ROOT
    from engine.store.anchors import anchor_key
    from .report import write_json
    from .soak import engine_fleet, fleet_files, start_host
    target = team_database(getattr(args, "db", None) or DEFAULT_TEAM_DB)
    corpus = (getattr(args, "corpus", None) or PROJECT_ROOT / "resources" / "corpus").resolve()
    with tempfile.TemporaryDirectory(prefix="quorum-team-") as tmp_name:
        work = Path(tmp_name)
        anchor_key(work / "anchor.key")     # made before the desks start: three making it at once would race
        host_fleet = load_fleet(fleet_files(work, args.agents, corpus))
        print(f"team: starting {len(host_fleet.agents)} agents on 127.0.0.1 in one host process", flush=True)
        host, ports = start_host(host_fleet.path, work / "cache", work / "soak-agents.log")
        try:
            fleet = engine_fleet(work, host_fleet, ports)
            runs = [_postgres_phase("team", target, args.desks, args.minutes, fleet, work, args)]
            if args.write_minutes > 0:
                runs.append(_postgres_phase("postgresql_alone", target, 1, args.write_minutes, fleet, work, args))
                sqlite = Phase("sqlite_alone", str(work / "team-sqlite.db"), "a temporary SQLite file", 1,
                               args.write_minutes)
                runs.append(run_phase(sqlite, fleet, work, args))
        finally:
            host.kill()
            host.wait()
            if host.stdout is not None:      # start_host reads its ready line from there
                host.stdout.close()
    command = "python main.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    result = summarise(runs, args, command)
    path = write_json(args.team_json, result)
    lines = write_lines(path.with_name(path.stem + ".lines.jsonl"), runs)
    md = write_team_report(path, result)
    print()
    print(md.read_text(encoding="utf-8"))
    print(f"wrote {path}, {md.name} and {lines.name}")
    return ExitCode.OK


def write_lines(path: Path, runs: Sequence[PhaseRun]) -> Path:
    """Every desk's lines, each with its phase: the figures can be computed again from them."""
    with path.open("w", encoding="utf-8") as out:
        for run in runs:
            for record in run.records:
                out.write(json.dumps({"phase": run.phase.name, **record}, separators=(",", ":")) + "\n")
    return path


def _postgres_phase(name: str, target, desks: int, minutes: float, fleet: Path, work: Path, args) -> PhaseRun:
    with throwaway_schema(target) as (schema, url):
        return run_phase(Phase(name, url, f"{target.shown} (schema {schema}, dropped after)", desks, minutes),
                         fleet, work, args)


def phase_summary(run: PhaseRun) -> dict:
    records, facts = run.records, run.facts
    lost = lost_writes(records, facts)
    figures = counts(records)
    return {
        "store": run.phase.shown, "desks": run.phase.desks, "minutes": run.phase.minutes, "seconds": run.seconds,
        **figures,
        "achieved_rate": round(figures["asked"] / (run.phase.minutes * 60), 2),
        "questions_recorded": facts.extra.get("questions_rows", len(facts.question_traces)),
        "question_events": len(facts.decided_traces),
        "review_joins": facts.extra.get("review_joins", 0),
        "pending_left": facts.pending,
        "events_lost": lost.count,
        "lost_questions": list(lost.questions), "lost_decisions": list(lost.decisions),
        "audit_events": facts.audit_events,
        "chain": {"intact": facts.chain_intact, "message": facts.chain_message, "anchors": facts.anchors},
        "propagation_s": propagation(records).summary(),
        "writes_ms_desk1": write_latency(records, desk=1),
        "writes_ms_all": write_latency(records),
    }


def summarise(runs: Sequence[PhaseRun], args, command: str) -> dict:
    phases = {run.phase.name: phase_summary(run) for run in runs}
    write_rows = {"postgresql_team_desk1": phases["team"]["writes_ms_desk1"]}
    for name in ("postgresql_alone", "sqlite_alone"):
        if name in phases:
            write_rows[name] = phases[name]["writes_ms_desk1"]
    return {
        "command": command, "desks": args.desks, "rate_per_desk": args.rate, "minutes": args.minutes,
        "high_every": args.high_every, "agents": args.agents, "write_minutes": args.write_minutes,
        "machine": {"cpus": os.cpu_count()},
        "phases": phases,
        "write_latency_ms": {k: {f: v[f] for f in ("n", "p50", "p99", "max")} for k, v in write_rows.items()},
        "targets": {"events_lost": TARGET_EVENTS_LOST, "propagation_p99_s": TARGET_PROPAGATION_P99_S},
    }


WRITE_ROW_NAMES = {"postgresql_team_desk1": "PostgreSQL, desk 1 of the team run",
                   "postgresql_alone": "PostgreSQL, one desk alone", "sqlite_alone": "SQLite file, one desk alone"}


def write_team_report(json_path: Path, result: dict) -> Path:
    team = result["phases"]["team"]
    lag = team["propagation_s"]
    chain = team["chain"]
    lines = [
        "# Team store: desks on one PostgreSQL store",
        "",
        f"Command: `{result['command']}` · {result['desks']} desks, each asking at {result['rate_per_desk']:g}/s for "
        f"{result['minutes']:g} min (every {result['high_every']}th question on the high tier, the rest on the fast "
        f"low tier), judge off, {result['agents']} agents in one host process · {result['machine']['cpus']} CPUs",
        "",
        f"- questions: asked {team['asked']} (achieved {team['achieved_rate']}/s in all), answered {team['answered']}, "
        f"failed {team['failed']}, skipped {team['skipped']}; answer p50 {team['answer_ms']['p50']:.0f} ms, p99 "
        f"{team['answer_ms']['p99']:.0f} ms",
        f"- questions recorded in the store: {team['questions_recorded']} rows, {team['question_events']} "
        "question.decided audit events",
        f"- decisions: {team['decisions']} ({team['approved']} approved, {team['rejected']} rejected); claims another "
        f"desk got to first: {team['refused_claims']}, decisions refused: {team['refused_decisions']}; left pending: "
        f"{team['pending_left']}",
        f"- events lost: {team['events_lost']} (target {result['targets']['events_lost']})",
        f"- audit chain: {chain['message']}; anchors: {chain['anchors']}",
        f"- a decision to its appearance at another desk: p50 {lag['p50']:.2f} s, p99 {lag['p99']:.2f} s, max "
        f"{lag['max']:.2f} s over {lag['n']} (decision, desk) pairs; never seen {lag['never_seen']} (target p99 ≤ "
        f"{result['targets']['propagation_p99_s']:g} s: {'met' if lag['met'] else 'not met'})",
        "",
        "Write transactions of one engine's store (BEGIN to COMMIT on its store thread), ms:",
        "",
        "| store | transactions | p50 | p99 | max |",
        "|---|---|---|---|---|",
    ]
    for key, row in result["write_latency_ms"].items():
        lines.append(f"| {WRITE_ROW_NAMES.get(key, key)} | {row['n']} | {row['p50']:.1f} | {row['p99']:.1f} | "
                     f"{row['max']:.1f} |")
    for name in ("postgresql_alone", "sqlite_alone"):
        if name in result["phases"]:
            alone = result["phases"][name]
            lines.append(f"\n{WRITE_ROW_NAMES[name]}: {alone['minutes']:g} min, answered {alone['answered']}, "
                         f"decisions {alone['decisions']}, events lost {alone['events_lost']}, {alone['chain']['message']}.")
    md = json_path.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md
