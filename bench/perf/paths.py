"""`main.py bench`: naive RAG beside Quorum's fast, standard and high paths, on one fleet and one set of questions.

What each path is:
- naive: what a user without Quorum runs: one retriever's top k, handed to one generator, its answer taken.
  Each question goes to the next (retriever, generator) pair of the fleet in turn, so naive is the expectation
  over one agent of each role, not the one known to be honest (DESIGN.md §9). Same agent processes, same
  client (signed requests included), same k and context size as the engine.
- fast, standard, high: Engine.ask at the low, medium and high tiers: the product path, gateway, secure
  retrieval, generation, adjudication, the cascade monitor, the reputation book and the store included, and
  the engine's embeddings of texts it has never seen computed while the question waits.

Each question is asked on every path in a rotating order (no path always goes first and warms the agents'
caches for the others). Latency is wall time per question; per stage it is the engine's own timings
(Answer.timings_ms) and, for every path, the agents' calls (the slowest call of each role, since they run in
parallel). Saturation: `concurrency` questions at once on the standard path until every question is answered
once: questions a second. The embedding cache hit rate counts the engine's passage embeddings during the
timed runs. Memory: resident set of the engine process and of every agent process at the end.
"""
from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from engine.engine import Engine
from engine.errors import InputError
from engine.gateway.envelope import new_trace_id
from engine.stats import quantile
from engine.types import AgentOutcome, CallStatus, JudgeNote, MeaningStatus, RiskTier, Role, Verdict
from engine.answer import Answer

from .measure import rss_mb

PATHS = ("naive", "fast", "standard", "high")
TIER_OF = {"fast": RiskTier.LOW, "standard": RiskTier.MEDIUM, "high": RiskTier.HIGH}
WARMUP_QUESTIONS = 3          # per path, not counted: the agents' and the engine's models and caches come up
TARGET_OVERHEAD = {"fast": 1.2, "standard": 1.5}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    answers: tuple[str, ...]


@dataclass
class PathSamples:
    """What one path measured over the timed questions."""
    wall_ms: list[float] = field(default_factory=list)
    stage_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    correct: int = 0
    answered: int = 0
    failed: int = 0
    judged: list[bool] = field(default_factory=list)         # did the question ask a judge to read its answers
    judge_ms: list[float] = field(default_factory=list)      # the judges' reading, per question that asked
    reading_ms: list[float] = field(default_factory=list)    # the same per text read (candidates and reference)
    not_read: int = 0                                          # questions marked "meaning not read"

    def add(self, wall_ms: float, stages: dict[str, float], answered: bool, correct: bool,
            judge: JudgeNote | None = None) -> None:
        self.wall_ms.append(wall_ms)
        for name, ms in stages.items():
            self.stage_ms[name].append(ms)
        self.answered += answered
        self.correct += correct
        if judge is not None:
            self.judged.append(judge.status is MeaningStatus.READ)
            self.not_read += judge.not_read
            if self.judged[-1]:
                self.judge_ms.append(judge.read_ms)
                self.reading_ms.append(judge.read_ms / max(1, judge.readings))

    def judge_summary(self) -> dict:
        """How often the judge read the answers, what a reading cost, and the latency with and without it."""
        asked = [w for w, j in zip(self.wall_ms, self.judged) if j]
        others = [w for w, j in zip(self.wall_ms, self.judged) if not j]
        return {"asked_share": round(len(asked) / len(self.judged), 3) if self.judged else None,
                "not_read": self.not_read,
                "read_ms_p50": round(quantile(self.judge_ms, 0.5), 1), "read_ms_p95": round(quantile(self.judge_ms, 0.95), 1),
                "per_text_ms_p50": round(quantile(self.reading_ms, 0.5), 1),
                "per_text_ms_p95": round(quantile(self.reading_ms, 0.95), 1),
                "p50_ms_asked": round(quantile(asked, 0.5), 1), "p50_ms_not_asked": round(quantile(others, 0.5), 1)}

    def summary(self) -> dict:
        n = len(self.wall_ms)
        return {"n": n, "p50_ms": round(quantile(self.wall_ms, 0.5), 1), "p95_ms": round(quantile(self.wall_ms, 0.95), 1),
                "judge": self.judge_summary(),
                "mean_ms": round(statistics.fmean(self.wall_ms), 1) if n else 0.0,
                "answered_rate": round(self.answered / n, 3) if n else 0.0,
                "accuracy": round(self.correct / n, 3) if n else 0.0, "failed": self.failed,
                "stages_p50_ms": {name: round(quantile(v, 0.5), 1) for name, v in sorted(self.stage_ms.items())},
                "stages_p95_ms": {name: round(quantile(v, 0.95), 1) for name, v in sorted(self.stage_ms.items())}}


def load_questions(path: Path, limit: int | None = None) -> list[Question]:
    """JSON Lines with id, question and answers (resources/demo_questions.jsonl's shape)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(Question(str(row["id"]), str(row["question"]), tuple(str(a) for a in row.get("answers", ()))))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}:{n}: not a question record ({exc})") from None
    if not out:
        raise InputError(f"{path}: no questions")
    return out[:limit] if limit else out


def is_correct(answer_text: str, gold: Sequence[str]) -> bool:
    text = answer_text.lower()
    return bool(text) and any(g.lower() in text for g in gold)


def agent_stages(outcomes: Sequence[AgentOutcome]) -> dict[str, float]:
    """The agents' own share: per role, the slowest call (a role's calls run side by side)."""
    slowest: dict[str, float] = {}
    for o in outcomes:
        key = f"agents_{o.role.value}"
        slowest[key] = max(slowest.get(key, 0.0), o.latency_ms)
    return slowest


class PathBench:
    """Runs the paths on a started Engine (its fleet up)."""

    def __init__(self, engine: Engine, progress: Progress = print) -> None:
        self.engine = engine
        self.progress = progress
        self._pair = 0

    def _pairs(self) -> list[tuple]:
        """(retriever view, generator view) pairs among the agents that are up, in fleet order."""
        up = [v for v in self.engine.parts.registry.all() if v.url and v.spec.enabled and not v.stopped]
        retrievers = [v for v in up if v.spec.role is Role.RETRIEVER]
        generators = [v for v in up if v.spec.role is Role.GENERATOR]
        if not retrievers or not generators:
            raise InputError("naive RAG needs one retriever and one generator up; the fleet has "
                             f"{len(retrievers)} and {len(generators)}")
        return [(r, g) for r in retrievers for g in generators]

    async def naive(self, question: str) -> tuple[str, dict[str, float], bool]:
        """(answer, stage timings, ok): one retriever, then one generator, nothing checked."""
        pairs = self._pairs()
        retriever, generator = pairs[self._pair % len(pairs)]
        self._pair += 1
        settings, client, trace_id = self.engine.settings, self.engine.parts.client, new_trace_id()
        started = time.perf_counter()
        try:
            chunks = await asyncio.wait_for(client.retrieve(retriever.spec, retriever.url, question,
                                                            settings.retrieval.k_per_agent, trace_id),
                                            retriever.spec.timeout_s)
            retrieved = time.perf_counter()
            generation = await asyncio.wait_for(client.generate(generator.spec, generator.url, question,
                                                                tuple(chunks[:settings.retrieval.context_k]), trace_id),
                                                generator.spec.timeout_s)
        except Exception:          # a naive user gets nothing when an agent fails: counted, not raised
            return "", {}, False
        done = time.perf_counter()
        return generation.answer, {"agents_retriever": (retrieved - started) * 1000,
                                   "agents_generator": (done - retrieved) * 1000}, True

    async def ask(self, path: str, q: Question) -> tuple[float, dict[str, float], bool, bool, JudgeNote | None]:
        """(wall ms, stages, answered, correct, what the judges did) of one question on one path."""
        started = time.perf_counter()
        if path == "naive":
            text, stages, ok = await self.naive(q.text)
            wall = (time.perf_counter() - started) * 1000
            return wall, stages, ok and bool(text), ok and is_correct(text, q.answers), None
        answer: Answer = await self.engine.questions.ask(q.text, TIER_OF[path])
        wall = (time.perf_counter() - started) * 1000
        stages = {name: float(ms) for name, ms in answer.timings_ms.items()}
        stages.update(agent_stages(a for a in answer.agents if a.status is CallStatus.OK))
        answered = answer.verdict is Verdict.ANSWERED
        return wall, stages, answered, answered and is_correct(answer.answer, q.answers), answer.judge

    async def side_by_side(self, questions: Sequence[Question], rounds: int) -> dict[str, PathSamples]:
        samples = {path: PathSamples() for path in PATHS}
        for q in questions[:WARMUP_QUESTIONS]:
            for path in PATHS:
                await self.ask(path, q)
        self.progress(f"warm-up done ({min(WARMUP_QUESTIONS, len(questions))} questions on every path)")
        total, done = rounds * len(questions), 0
        for r in range(rounds):
            for i, q in enumerate(questions):
                order = PATHS[(i + r) % len(PATHS):] + PATHS[:(i + r) % len(PATHS)]
                for path in order:
                    try:
                        samples[path].add(*await self.ask(path, q))
                    except Exception as exc:      # a question the engine refused: counted, the run goes on
                        samples[path].failed += 1
                        self.progress(f"  {path}: {q.id} failed: {type(exc).__name__}: {exc}")
                done += 1
                if done % 10 == 0 or done == total:
                    line = " · ".join(f"{p} p50 {quantile(samples[p].wall_ms, 0.5):.0f} ms" for p in PATHS)
                    self.progress(f"[{done}/{total}] {line}")
        return samples

    async def saturation(self, path: str, questions: Sequence[Question], concurrency: int) -> dict:
        """Every question once, `concurrency` at a time: questions a second and the latency under load."""
        queue: asyncio.Queue[Question] = asyncio.Queue()
        for q in questions:
            queue.put_nowait(q)
        walls: list[float] = []
        beside = PathSamples()         # the judges' readings while `concurrency` questions run at once
        failed = 0

        async def worker() -> None:
            nonlocal failed
            while True:
                try:
                    q = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    asked = await self.ask(path, q)
                    walls.append(asked[0])
                    beside.add(*asked)
                except Exception:
                    failed += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        return {"path": path, "concurrency": concurrency, "questions": len(walls), "failed": failed,
                "seconds": round(elapsed, 2), "qps": round(len(walls) / elapsed, 2) if elapsed else 0.0,
                "p50_ms": round(quantile(walls, 0.5), 1), "p95_ms": round(quantile(walls, 0.95), 1),
                "judge": beside.judge_summary()}

    def memory(self) -> dict:
        launcher = self.engine.parts.launcher
        agents = {}
        if launcher is not None:
            for agent_id in launcher.urls():
                agents[agent_id] = round(rss_mb(launcher.pid(agent_id)), 1)
        return {"engine_rss_mb": round(rss_mb(), 1), "agents_rss_mb": agents,
                "agents_rss_mb_total": round(sum(agents.values()), 1)}


async def run_paths(engine: Engine, questions: Sequence[Question], *, rounds: int, concurrency: int,
                    progress: Progress = print) -> dict:
    """The whole bench on a started engine; returns the report's JSON (see write_report)."""
    bench = PathBench(engine, progress)
    embedder = engine.parts.embedder
    hits0, misses0 = embedder.hits, embedder.misses
    samples = await bench.side_by_side(questions, rounds)
    hits, misses = embedder.hits - hits0, embedder.misses - misses0
    progress(f"saturation: the standard path, {concurrency} questions at once")
    saturation = {"standard": await bench.saturation("standard", questions, concurrency),
                  "naive": await bench.saturation("naive", questions, concurrency)}
    summaries = {path: samples[path].summary() for path in PATHS}
    naive_p50 = summaries["naive"]["p50_ms"] or float("nan")
    memory = bench.memory()
    result: dict = {path: summaries[path] for path in PATHS}
    result |= {
        "overhead_ratio_fast": round(summaries["fast"]["p50_ms"] / naive_p50, 2),
        "overhead_ratio_standard": round(summaries["standard"]["p50_ms"] / naive_p50, 2),
        "overhead_ratio_high": round(summaries["high"]["p50_ms"] / naive_p50, 2),
        "qps_standard": saturation["standard"]["qps"], "qps_naive": saturation["naive"]["qps"],
        "saturation": saturation,
        "cache_hit_rate": round(hits / (hits + misses), 3) if hits + misses else None,
        "cache_lookups": hits + misses,
        "rss_mb": memory["engine_rss_mb"], "memory": memory,
        "questions": len(questions), "rounds": rounds,
        "fleet": str(engine.fleet.config.path), "machine": {"cpus": _cpus(), "python": platform.python_version()},
        "targets": {f"overhead_ratio_{p}": t for p, t in TARGET_OVERHEAD.items()},
    }
    return result


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
