"""`eval documents`: the built-in fleet pointed at real documents, as an operator would with `--corpus`.

Three corpora, each its own real fleet (one process per agent on 127.0.0.1) on a fresh database:
- demo: the built-in corpus and the demo questions, the reference for speed;
- packages: the Markdown README of every installed distribution (bench.evaluation.documents_corpus), asked
  "What is <name> for?", judged against the distribution's one-line Summary;
- hotpotqa: the HotpotQA sample's paragraphs, one file per title, asked the sample's questions; the gold answer
  must be in the answer given (the in-memory evaluation, `eval generation`, hands each question its own
  paragraphs; here the fleet's retrievers must find them among all the others').

Each corpus is first indexed into a cache nobody has used (the work of `main.py index`: the engine's passages
and sentences, then the agents' own caches; timed as index_s), the fleet is started on it, and every question is asked twice: the first pass is the cold one (the agents and the
engine meet each query and each claim for the first time), the second the warm one (what a question costs when
its texts were seen before). An answer of the packages is judged two ways, both reported: the share of the
Summary's content words it contains (ok from OVERLAP_OK), and whether of all the Summaries its embedding is
nearest to its own (no threshold to tune). answer_ok: given, and ok by either. markup: the answer carries
Markdown or HTML (MARKUP), which it must never.
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from engine.cli.exit_codes import ExitCode
from engine.stats import quantile
from engine.text import content_words

from .documents_corpus import PackageDoc
from .generation_metrics import contains_gold
from .splits import by_split, split_of

DEFAULT_JSON = Path("reports") / "documents" / "documents.json"
OVERLAP_OK = 0.5                 # half the Summary's content words: "Python HTTP for Humans." → 2 of 3
DEFAULT_HOTPOT_QUESTIONS = 50
# Markdown or HTML left in an answer: a tag, a heading or list marker at a line start, code fences or inline
# code, an image or a link's target, a table rule, emphasis, a drawn file tree.
MARKUP = re.compile(r"<[A-Za-z/!][^>\n]*>|^\s*#{1,6}\s|`|!\[|\]\(|\|\s*:?-{3,}|\*\*|^\s*[-*+]\s|[├└│]",
                    re.MULTILINE)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Ask:
    corpus: str                  # demo | packages | hotpotqa
    id: str
    question: str
    gold: tuple[str, ...]        # answers (demo, hotpotqa) or the Summary (packages)


@dataclass(frozen=True)
class Asked:
    ask: Ask
    run: str                     # cold | warm
    verdict: str
    answer: str
    latency_ms: float
    timings_ms: dict[str, float]
    citations: tuple[str, ...]
    error: str = ""
    blocked_corpus: tuple[str, ...] = ()   # the corpus's own passages the gateway blocked (read as instructions)


@dataclass(frozen=True)
class Judged:
    corpus: str
    id: str
    split: str                             # dev | test, by a hash of the id (bench.evaluation.splits)
    question: str
    gold: str
    verdict: str
    answer: str
    citations: tuple[str, ...]
    cold_ms: float
    warm_ms: float
    markup: bool
    correct: bool | None = None            # demo, hotpotqa: a gold answer in the answer given
    overlap: float | None = None           # packages: share of the Summary's content words in the answer
    similarity: float | None = None        # packages: cosine of answer and Summary
    nearest_own: bool | None = None        # packages: of all Summaries, the answer's nearest is its own
    answer_ok: bool | None = None          # packages: given, and ok by overlap or by nearest Summary
    error: str = ""
    blocked_corpus: tuple[str, ...] = ()   # the corpus's own passages the gateway blocked for this question

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def has_markup(text: str) -> bool:
    return bool(MARKUP.search(text))


def summary_overlap(answer: str, summary: str) -> float:
    wanted = set(content_words(summary))
    return round(len(wanted & set(content_words(answer))) / len(wanted), 3) if wanted else 0.0


# --- asking ------------------------------------------------------------------------------------------------
async def ask_all(engine, asks: Sequence[Ask], run: str, progress: Progress) -> list[Asked]:
    out: list[Asked] = []
    for number, ask in enumerate(asks, start=1):
        started = time.perf_counter()
        try:
            answer = await engine.questions.ask(ask.question)
        except Exception as exc:          # counted and shown, the run goes on
            out.append(Asked(ask, run, "error", "", (time.perf_counter() - started) * 1000, {}, (),
                             f"{type(exc).__name__}: {exc}"))
            continue
        blocked = sorted({f.item for f in (answer.gateway.blocked if answer.gateway else ()) if f.from_corpus})
        out.append(Asked(ask, run, answer.verdict.value, answer.answer, (time.perf_counter() - started) * 1000,
                         {k: float(v) for k, v in answer.timings_ms.items()},
                         tuple(c.chunk_id for c in answer.citations), blocked_corpus=tuple(blocked)))
        if number % 10 == 0 or number == len(asks):
            progress(f"  {ask.corpus} {run}: {number}/{len(asks)} questions, p50 "
                     f"{quantile([a.latency_ms for a in out], 0.5):.0f} ms")
    return out


def index_corpus(folder: Path, fleet, settings, cache_dir: Path, progress: Progress) -> dict[str, Any]:
    """What `main.py index` does (engine.ingest.index, then the agents' caches), into the cache the fleet then
    starts on: files, passages, skipped, seconds."""
    from engine.agents import caches as agent_caches
    from engine.ingest.index import IndexPhase, IndexProgress, Throttled
    from engine.ingest.index import index_corpus as build_index
    from engine.verify.embedders import EMBEDDERS, CachedEmbedder

    def say(step: IndexProgress) -> None:
        if step.phase is IndexPhase.EMBEDDING and step.total:
            progress(f"  indexing {folder.name}: {step.done:,}/{step.total:,} texts, {step.elapsed_s:.0f} s")
    embedder = CachedEmbedder(EMBEDDERS[settings.retrieval.embedder](), cache_dir / "engine")
    try:
        report = build_index(folder, embedder, cache_dir / "engine", on_progress=Throttled(say, interval_s=30.0))
    finally:
        embedder.close()
    began = time.perf_counter()
    agent_work = agent_caches.plan(fleet.agents, report.corpus.chunks)
    agents = agent_caches.fill(agent_work, cache_dir)
    agents_s = time.perf_counter() - began
    return {"files": report.files, "passages": report.passages, "code_passages": report.code_passages,
            "texts": report.texts, "skipped": [dataclasses.asdict(s) for s in report.skipped],
            "agent_cache_texts": sum(a.texts for a in agents),
            "engine_index_s": round(report.elapsed_s, 1), "agents_index_s": round(agents_s, 1),
            "index_s": round(report.elapsed_s + agents_s, 1)}


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


async def run_corpus(name: str, folder: Path, asks: Sequence[Ask], *, fleet_path: Path | None, settings,
                     work: Path, progress: Progress) -> tuple[dict[str, Any], list[Asked], dict[str, np.ndarray]]:
    """Index, start the fleet on the folder, ask every question cold then warm. Returns the index's figures,
    the answers, and (packages) each answer's and Summary's unit embedding by the engine's embedder."""
    from engine.config import load_fleet
    from engine.engine import Engine
    cache = work / f"cache-{name}"             # nobody has used it: the first pass is truly cold
    fleet = load_fleet(fleet_path, corpus_dir=folder)
    index = await asyncio.to_thread(index_corpus, folder, fleet, settings, cache, progress)
    progress(f"{name}: {index['files']} files, {index['passages']} passages indexed in {index['index_s']} s; "
             f"starting the fleet")
    started = time.perf_counter()
    vectors: dict[str, np.ndarray] = {}
    async with Engine(fleet, settings, db_path=work / f"{name}.db", cache_dir=cache) as engine:
        index["fleet_start_s"] = round(time.perf_counter() - started, 1)
        asked = await ask_all(engine, asks, "cold", progress)
        asked += await ask_all(engine, asks, "warm", progress)
        if name == "packages":
            texts = sorted({a.answer for a in asked if a.answer} | {g for a in asks for g in a.gold})
            vectors = dict(zip(texts, _unit(np.asarray(await asyncio.to_thread(engine.parts.embedder.embed_passages,
                                                                               texts)))))
    return index, asked, vectors


# --- judging -----------------------------------------------------------------------------------------------
def judge(asked: Sequence[Asked], vectors: dict[str, np.ndarray] | None = None) -> list[Judged]:
    """One row per question: its warm answer judged (cold and warm latency beside it). vectors: text → unit
    embedding, for the packages' answers and Summaries."""
    by_key: dict[tuple[str, str], dict[str, Asked]] = {}
    for a in asked:
        by_key.setdefault((a.ask.corpus, a.ask.id), {})[a.run] = a
    summaries = sorted({a.ask.gold[0] for a in asked if a.ask.corpus == "packages"})
    rows = []
    for runs in by_key.values():
        warm, cold = runs.get("warm") or runs["cold"], runs.get("cold") or runs["warm"]
        ask, given = warm.ask, warm.verdict == "answered"
        row = Judged(corpus=ask.corpus, id=ask.id, split=split_of(ask.id), question=ask.question, gold=" | ".join(ask.gold),
                     verdict=warm.verdict, answer=warm.answer, citations=warm.citations,
                     cold_ms=round(cold.latency_ms, 1), warm_ms=round(warm.latency_ms, 1),
                     markup=given and has_markup(warm.answer), error=warm.error,
                     blocked_corpus=warm.blocked_corpus)
        if ask.corpus == "packages":
            overlap = summary_overlap(warm.answer, ask.gold[0]) if given else 0.0
            similarity = nearest_own = None
            if given and vectors and warm.answer in vectors and ask.gold[0] in vectors:
                answer_vector = vectors[warm.answer]
                scores = {s: float(np.dot(answer_vector, vectors[s])) for s in summaries if s in vectors}
                similarity = round(scores[ask.gold[0]], 3)
                nearest_own = max(scores, key=scores.get) == ask.gold[0]
            row = dataclasses.replace(row, overlap=overlap, similarity=similarity, nearest_own=nearest_own,
                                      answer_ok=given and (overlap >= OVERLAP_OK or bool(nearest_own)))
        else:
            row = dataclasses.replace(row, correct=given and contains_gold(warm.answer, ask.gold))
        rows.append(row)
    return rows


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summarise_corpus(rows: Sequence[Judged], index: dict[str, Any]) -> dict[str, Any]:
    """The corpus's figures over all its questions, and the judged rates on each split (anything tuned on
    what this evaluation shows is tuned on dev, and test says whether it holds)."""
    out = _rates(rows)
    out["by_split"] = {split: {"n": len(part), **{k: v for k, v in _rates(part).items() if k.endswith("rate")
                                                  or k == "accuracy"}}
                       for split, part in sorted(by_split(rows, lambda r: r.id).items())}
    return out | {k: v for k, v in index.items() if not k.startswith("_")}


def _rates(rows: Sequence[Judged]) -> dict[str, Any]:
    n = len(rows)
    given = [r for r in rows if r.verdict == "answered"]
    cold, warm = [r.cold_ms for r in rows], [r.warm_ms for r in rows]
    out: dict[str, Any] = {
        "n": n, "verdicts": dict(Counter(r.verdict for r in rows)),
        "markup_rate": _share(sum(r.markup for r in rows), n),
        "abstention_rate": _share(n - len(given), n),
        "p50_ms_cold": round(quantile(cold, 0.5), 1), "p95_ms_cold": round(quantile(cold, 0.95), 1),
        "p50_ms_warm": round(quantile(warm, 0.5), 1), "p95_ms_warm": round(quantile(warm, 0.95), 1),
        "errors": sum(bool(r.error) for r in rows),
        # The gateway blocks a document's own text that reads like an instruction ("please cite", "run black"):
        # safe, but the answer loses that passage.
        "corpus_blocked_question_rate": _share(sum(bool(r.blocked_corpus) for r in rows), n),
        "corpus_passages_blocked": sorted({item for r in rows for item in r.blocked_corpus}),
    }
    if rows and rows[0].corpus == "packages":
        judged = [r for r in given if r.similarity is not None]
        out |= {"answer_ok_rate": _share(sum(bool(r.answer_ok) for r in rows), n),
                "overlap_ok_rate": _share(sum((r.overlap or 0) >= OVERLAP_OK for r in rows), n),
                "nearest_summary_rate": _share(sum(bool(r.nearest_own) for r in rows), n),
                "mean_similarity": round(float(np.mean([r.similarity for r in judged])), 3) if judged else None}
    else:
        out["accuracy"] = _share(sum(bool(r.correct) for r in rows), n)
    return out
# --- the run -----------------------------------------------------------------------------------------------
def demo_asks() -> list[Ask]:
    from engine.demo import DEMO_QUESTIONS_PATH
    from .data import read_jsonl
    rows = read_jsonl(DEMO_QUESTIONS_PATH, "demo questions")
    return [Ask("demo", str(row.get("id", n)), row["question"], tuple(row.get("answers") or ()))
            for n, row in enumerate(rows, start=1)]


def package_asks(packages: Sequence[PackageDoc]) -> list[Ask]:
    return [Ask("packages", p.name, p.question, (p.summary,)) for p in packages]


def hotpot_asks(questions) -> list[Ask]:
    return [Ask("hotpotqa", q.id, q.question, q.answers) for q in questions]


async def run_documents(*, fleet_path: Path | None, settings_path: Path | None, hotpot: Path | None,
                        hotpot_questions: int, work: Path, progress: Progress) -> dict[str, Any]:
    from engine.config import PROJECT_ROOT, load_settings
    from .documents_corpus import installed_packages, write_hotpot, write_packages
    from .generation import load_questions
    settings = load_settings(settings_path)
    packages = installed_packages()
    write_packages(work / "packages", packages)
    plan: list[tuple[str, Path, list[Ask]]] = [
        ("demo", PROJECT_ROOT / "resources" / "corpus", demo_asks()),
        ("packages", work / "packages", package_asks(packages)),
    ]
    if hotpot_questions > 0:
        questions = load_questions(hotpot)
        files = write_hotpot(work / "hotpotqa", questions)
        progress(f"hotpotqa: {files} files, one per title, from {len(questions)} questions' paragraphs")
        plan.append(("hotpotqa", work / "hotpotqa", hotpot_asks(questions[:hotpot_questions])))
    result: dict[str, Any] = {}
    rows: list[Judged] = []
    for name, folder, asks in plan:
        progress(f"{name}: {len(asks)} questions on {folder}")
        index, asked, vectors = await run_corpus(name, folder, asks, fleet_path=fleet_path, settings=settings,
                                                 work=work, progress=progress)
        judged = judge(asked, vectors)
        rows += judged
        result[name] = summarise_corpus(judged, index)
    demo_warm = result["demo"]["p50_ms_warm"]
    result["warm_p50_ratio_to_demo"] = {name: round(result[name]["p50_ms_warm"] / demo_warm, 2) if demo_warm else None
                                        for name in result if name != "demo"}
    result["index_s"] = result["packages"]["index_s"]
    result["index_s_by_corpus"] = {name: result[name]["index_s"] for name in ("demo", "packages", "hotpotqa")
                                   if name in result}
    result["targets"] = {"markup_rate": 0.0, "warm_p50_ratio_to_demo": 1.5}
    result["rows"] = [r.to_json() for r in rows]
    return result


def run(args) -> int:
    from engine.errors import InputError
    from .documents_report import print_summary, write_outputs
    if args.hotpot_questions < 0:
        raise InputError(f"--hotpot-questions must be 0 or more (got {args.hotpot_questions})")
    started = time.perf_counter()

    def progress(line: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {line}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="quorum-documents-") as work:
        result = asyncio.run(run_documents(fleet_path=args.fleet, settings_path=args.settings, hotpot=args.hotpot,
                                           hotpot_questions=args.hotpot_questions, work=Path(work),
                                           progress=progress))
    result["seconds"] = round(time.perf_counter() - started, 1)
    paths = write_outputs(result, args.json or DEFAULT_JSON)
    print_summary(result, sys.stdout)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return ExitCode.OK
