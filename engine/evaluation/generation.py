"""Trusted-generation evaluation on HotpotQA: two honest extractive generators and one Byzantine one
per fault profile (plus a clean run of three honest ones) → `adjudicate` → judged rows.

Per question, the context is the question's own paragraphs as chunks (`<qid>/p<i>`, title metadata),
ranked for the question by the dense retriever on the engine's embedder and cut to the top k. The
honest answer is `ExtractiveGenerator`'s; the Byzantine answer comes from the code the agent
processes run (`FaultInjector.corrupt_generation`; omit-best as engine/agents/server.py does it).
Which of the three generator ids lies is drawn per question and profile, so the defence's tie-break
on agent ids favours no one.

Phases, so the timed part measures engine work only: (1) passages and questions are embedded through
the persistent cache; (2) contexts and generations are built; (3) the verifier's own CachedEmbedder
(fresh, in a scratch folder) is warmed on the context sentences, as the engine's is in production;
(4) `adjudicate` runs for every question and profile, each `judge_sync` call timed. A claim that is
no context sentence is a cache miss there and costs a model call, as it would in production.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..agents.extractive import ExtractiveGenerator
from ..agents.faults import FaultInjector
from ..agents.retrievers import DenseRetriever
from ..config import GenerationSettings, RetrievalSettings
from ..corpus import Corpus
from ..errors import InputError
from ..generation.adjudicate import adjudicate
from ..text import content_words, sentences
from ..types import Chunk, ContextChunk, FaultKind, FaultProfile, Generation
from ..verify.sentences import rank_sentences
from ..verify.verifier import EvidenceVerifier
from . import generation_metrics as gm
from .attacks import passage_chunk, seeded
from .data import DEFAULT_HOTPOT, Passage, answer_aliases, read_jsonl

AGENTS = ("gen-a", "gen-b", "gen-c")
DEFAULT_K = 5
EMBED_BATCH = 64


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]          # the gold answer and aliases derivable from it alone
    passages: tuple[Passage, ...]     # the question's own paragraphs (gold = supporting title)
    type: str = ""


def build_questions(rows: Sequence[Mapping[str, Any]], where: str = "HotpotQA sample") -> list[Question]:
    questions = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise InputError(f"{where}: record {number} is not a JSON object")
        for key, kind in (("id", str), ("question", str), ("answer", str), ("context", list)):
            if not isinstance(row.get(key), kind):
                raise InputError(f"{where}: record {number}: key '{key}' missing or not a {kind.__name__}")
        supporting = set(row.get("supporting_titles") or ())
        passages, seen = [], set()
        for i, para in enumerate(row["context"]):
            if not isinstance(para, dict) or not isinstance(para.get("text"), str):
                raise InputError(f"{where}: record {number}: context[{i}] needs a string text")
            key = " ".join(para["text"].split())
            if not key or key in seen:
                continue
            seen.add(key)
            title = str(para.get("title", ""))
            passages.append(Passage(f"{row['id']}/p{i}", title, para["text"], title in supporting))
        if not passages:
            raise InputError(f"{where}: record {number} ({row['id']}): no paragraph text")
        questions.append(Question(row["id"], row["question"], tuple(answer_aliases(row["answer"])),
                                  tuple(passages), str(row.get("type") or "")))
    if not questions:
        raise InputError(f"{where}: no questions in the file")
    return questions


def load_questions(path: Path | None = None) -> list[Question]:
    path = Path(path) if path else DEFAULT_HOTPOT
    return build_questions(read_jsonl(path, "HotpotQA sample (--hotpot)"), str(path))


def parse_profiles(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise InputError("--profiles: name at least one profile")
    for name in names:
        if name in gm.SKIPPED_PROFILES:
            raise InputError(f"--profiles: {name} is not a generation fault: {gm.SKIPPED_PROFILES[name]}")
        if name not in gm.PROFILES:
            raise InputError(f"--profiles: expected some of {', '.join(gm.PROFILES)}, found {name!r}")
    return names


def byzantine_generation(profile: str, question: str, honest: Generation, context: tuple[Chunk, ...],
                         seed: int = 0) -> Generation:
    """The lie a Byzantine generator agent with this fault profile (rate 1) tells."""
    if profile == "omit-best":   # engine/agents/server.py: answer from the second-best sentence
        ranked = rank_sentences(question, context)
        if len(ranked) > 1:
            return ExtractiveGenerator.answer_from(ranked, ranked[1], set(content_words(question)))
        return honest
    kind = FaultKind(profile)
    return FaultInjector(FaultProfile(kind=kind, seed=seed)).corrupt_generation(question, honest, context)


def byzantine_slot(question_id: str, profile: str, seed: int = 0) -> str:
    return seeded("byzantine-generator", seed, question_id, profile).choice(AGENTS)


class TimedVerifier:
    """The Verifier protocol around EvidenceVerifier.judge_sync, timing every call."""

    def __init__(self, inner: EvidenceVerifier) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[str, float]] = []     # (claim, ms) in call order

    async def judge(self, claim: str, evidence, trace_id: str = ""):
        started = time.perf_counter()
        judgement = self.inner.judge_sync(claim, evidence)
        self.calls.append((claim, (time.perf_counter() - started) * 1000))
        return judgement


class _WarmSource:
    """What a scratch CachedEmbedder misses on: the persistent cache while warming, the model after."""

    def __init__(self, persistent, model) -> None:
        self.persistent, self.model = persistent, model
        self.name = model.name
        self.similarity_floor = model.similarity_floor
        self.warming = False

    def embed_passages(self, texts):
        return (self.persistent if self.warming else self.model).embed_passages(texts)

    def embed_query(self, text):
        return self.model.embed_query(text)


class ClaimCache:
    """The verifier's embedder as in production: a CachedEmbedder of its own, warmed on the context
    sentences (vectors taken from the evaluation's persistent cache); a text it has not seen (a claim
    that is no context sentence) then costs a model call, not a hit in a cache a previous run filled."""

    def __init__(self, persistent, model, scratch_dir: Path) -> None:
        from ..verify.embedders import CachedEmbedder
        self._source = _WarmSource(persistent, model)
        self.cached = CachedEmbedder(self._source, Path(scratch_dir))

    def warm(self, texts: Sequence[str]) -> None:
        self._source.warming = True
        try:
            for start in range(0, len(texts), 500):
                self.cached.embed_passages(list(texts[start:start + 500]))
        finally:
            self._source.warming = False
        self._source.model.embed_passages(["warm-up"])    # the model loads now, not inside a timed call

    def close(self) -> None:
        self.cached.close()


@dataclass
class Prepared:
    question: Question
    context: tuple[ContextChunk, ...]
    honest: Generation

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return tuple(c.chunk for c in self.context)


@dataclass
class GenerationResult:
    n_questions: int
    profiles: tuple[str, ...]
    rows: dict[str, list[gm.QuestionRow]]          # profile (and "clean") → rows
    by_profile: dict[str, dict] = field(default_factory=dict)
    clean: dict = field(default_factory=dict)
    baseline: dict[str, dict] = field(default_factory=dict)
    pooled: dict = field(default_factory=dict)
    targets: list[dict] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    embedding: dict[str, dict] = field(default_factory=dict)
    context_sizes: dict[str, int] = field(default_factory=dict)


def _silent(message: str, done: bool = False) -> None:
    pass


class GenerationEvaluation:
    """`embedder` ranks each question's paragraphs (passages and queries); `verifier_embedder` is the
    EvidenceVerifier's and adjudicate's (default: `embedder`), warmed on the context sentences by
    `warm_verifier` (default: embedding them)."""

    def __init__(self, settings: GenerationSettings, embedder, *, verifier_embedder=None,
                 warm_verifier: Callable[[Sequence[str]], None] | None = None, k: int = DEFAULT_K, seed: int = 0,
                 profiles: Sequence[str] = gm.PROFILES, progress: Callable[..., None] | None = None,
                 generator: ExtractiveGenerator | None = None, adjudicator=adjudicate) -> None:
        if k < 1:
            raise InputError(f"--k must be at least 1, found {k}")
        self.settings = settings
        self.embedder = embedder
        self.verifier_embedder = verifier_embedder if verifier_embedder is not None else embedder
        self._warm_verifier = warm_verifier
        self.k = k
        self.seed = seed
        self.profiles = tuple(profiles)
        self.progress = progress or _silent
        self.generator = generator or ExtractiveGenerator()
        self.adjudicator = adjudicator

    # ---- phase 1 ------------------------------------------------------------------------------
    def _warm(self, questions: Sequence[Question]) -> dict:
        from .runner import Evaluation
        kind = RetrievalSettings().embedder
        warmer = Evaluation(RetrievalSettings(embedder=kind), {kind: self.embedder}, progress=self.progress)
        return warmer.warm("retrieval", self.embedder, [p.text for q in questions for p in q.passages],
                           [q.question for q in questions])

    # ---- phase 2 ------------------------------------------------------------------------------
    def prepare(self, question: Question) -> Prepared:
        corpus = Corpus(root=Path("eval") / question.id, chunks=tuple(passage_chunk(p) for p in question.passages))
        ranked = DenseRetriever(corpus, self.embedder).retrieve(question.question, self.k)
        context = tuple(ContextChunk(chunk=c, score=c.score, supported_by=("ret-dense",)) for c in ranked)
        return Prepared(question, context, self.generator.generate(question.question, tuple(ranked)))

    def generations(self, item: Prepared, profile: str) -> tuple[dict[str, Generation], str | None]:
        if profile == gm.CLEAN:
            return {agent: item.honest for agent in AGENTS}, None
        liar = byzantine_slot(item.question.id, profile, self.seed)
        lie = byzantine_generation(profile, item.question.question, item.honest, item.chunks, self.seed)
        return {agent: (lie if agent == liar else item.honest) for agent in AGENTS}, liar

    # ---- phase 4 ------------------------------------------------------------------------------
    def judge_one(self, runner: asyncio.Runner, item: Prepared, profile: str) -> gm.QuestionRow:
        generations, liar = self.generations(item, profile)
        q = item.question
        verifier = TimedVerifier(EvidenceVerifier(self.verifier_embedder, coverage=self.settings.claim_coverage,
                                                  alignment=self.settings.alignment))
        started = time.perf_counter()
        try:
            decision = runner.run(self.adjudicator(q.question, generations, item.context, self.settings, verifier,
                                                   embedder=self.verifier_embedder))
        except Exception as exc:   # the defence is under active development: one failure must not lose a run
            return gm.error_row(q.id, profile, byzantine_agent=liar, honest_answer=item.honest.answer,
                                generations=generations, gold=q.answers, error=f"{type(exc).__name__}: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        return gm.judge(q.id, profile, decision, generations=generations, byzantine_agent=liar,
                        honest_answer=item.honest.answer, context_texts=[c.text for c in item.chunks],
                        gold=q.answers, verify_ms=verifier.calls, adjudicate_ms=elapsed)

    def run(self, questions: Sequence[Question]) -> GenerationResult:
        if not questions:
            raise InputError("no questions to evaluate")
        timings: dict[str, float] = {}
        runs = (gm.CLEAN,) + self.profiles

        started = time.perf_counter()
        self.progress(f"phase 1/4: embedding the paragraphs and questions of {len(questions)} questions", done=True)
        embedding = {"retrieval": self._warm(questions)}
        timings["embed_corpus"] = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        prepared = []
        for i, question in enumerate(questions):
            prepared.append(self.prepare(question))
            self.progress(f"phase 2/4: retrieving and generating, question {i + 1}/{len(questions)}")
        self.progress(f"phase 2/4: {len(questions)} contexts of up to {self.k} chunks and their honest answers "
                      f"({time.perf_counter() - started:.1f} s)", done=True)
        timings["retrieve_generate"] = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        texts = list(dict.fromkeys(s for item in prepared for c in item.chunks for s in sentences(c.text)))
        self.progress(f"phase 3/4: warming the verifier's embedder on {len(texts)} context sentences", done=True)
        # misses of the retrieval embedder's persistent cache: what the model had to compute for the warm-up
        misses_before = getattr(self.embedder, "misses", 0)
        if self._warm_verifier is not None:
            self._warm_verifier(texts)
        else:
            for start in range(0, len(texts), EMBED_BATCH):
                self.verifier_embedder.embed_passages(texts[start:start + EMBED_BATCH])
        seconds = round(time.perf_counter() - started, 2)
        computed = getattr(self.embedder, "misses", 0) - misses_before if self._warm_verifier else None
        embedding["verifier"] = {"model": getattr(self.verifier_embedder, "name", "verifier"), "texts": len(texts),
                                 "computed": computed, "seconds": seconds}
        self.progress(f"phase 3/4: {len(texts)} context sentences in the verifier's cache"
                      f"{'' if computed is None else f', {computed} newly computed'}, {seconds} s", done=True)
        timings["warm_verifier"] = seconds

        started = time.perf_counter()
        rows: dict[str, list[gm.QuestionRow]] = {run: [] for run in runs}
        with asyncio.Runner() as runner:
            self.judge_one(runner, prepared[0], gm.CLEAN)   # untimed: one-off set-up costs are no per-claim time
            for r, run in enumerate(runs):
                for i, item in enumerate(prepared):
                    rows[run].append(self.judge_one(runner, item, run))
                    self.progress(f"phase 4/4: adjudicating [{run}, {r + 1}/{len(runs)}] "
                                  f"question {i + 1}/{len(prepared)}")
        self.progress(f"phase 4/4: done ({time.perf_counter() - started:.1f} s)", done=True)
        timings["adjudicate"] = round(time.perf_counter() - started, 2)

        result = GenerationResult(n_questions=len(questions), profiles=self.profiles, rows=rows,
                                  timings_s=timings, embedding=embedding)
        result.by_profile = {p: gm.aggregate(rows[p]) for p in self.profiles}
        result.clean = gm.aggregate(rows[gm.CLEAN], clean=True)
        result.baseline = {p: gm.aggregate_baseline(rows[p]) for p in self.profiles}
        result.baseline[gm.CLEAN] = gm.aggregate_baseline(rows[gm.CLEAN], clean=True)
        every = [ms for run_rows in rows.values() for r in run_rows for ms in r.verify_ms]
        result.pooled = {"verify_ms_per_claim_p50": gm.percentile(every, 50),
                         "verify_ms_per_claim_p95": gm.percentile(every, 95), "verified_claims": len(every)}
        result.targets = gm.check_targets(result.by_profile, result.clean, result.pooled["verify_ms_per_claim_p50"])
        sizes = [len(item.context) for item in prepared]
        result.context_sizes = {"min": min(sizes), "max": max(sizes),
                                "honest_empty_answers": sum(not item.honest.answer for item in prepared)}
        return result
