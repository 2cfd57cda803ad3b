"""Trusted-generation evaluation on HotpotQA: three different honest generators, liars that build
their lies from the cited passage's own entities, `adjudicate`, answers judged against the gold answer.

Per question, the context is the question's own paragraphs as chunks (`<qid>/p<i>`, title metadata),
ranked for the question by the dense retriever on the engine's embedder and cut to the top k. The
honest generators are bench.evaluation.honest_generators' three (extractive, focused-passage,
paraphrase); a profile (bench.evaluation.generation_profiles) says which lie (bench.evaluation.lies)
how many generators tell, beside how many honest ones (drawn per question from the three kinds), and
the generator ids are shuffled per question and profile, so adjudicate's tie-break favours no one.
The clean run is the three honest generators. A question a lie cannot be made for (no second name of
that type in the passage, say) is skipped for that profile and counted.

Phases, so the timed part measures engine work only: (1) passages and questions are embedded through
the persistent cache; (2) contexts, honest generations and lies are built; (3) the verifier's own
CachedEmbedder (fresh, in a scratch folder) is warmed on the context sentences, as the engine's is in
production; (4) `adjudicate` runs for every question and profile, each `judge_sync` call timed. A
claim that is no context sentence (a paraphrase, a lie) is a cache miss there and costs a model call.

Challenge-response (engine/generation/challenge.py, asked by the pipeline) runs after adjudicate, only for
candidates with an unsupported claim, and only annotates them: it never changes the verdict. The
evaluation calls adjudicate alone, as the brief requires, and replays the challenge beside it for the
challenge-liar profile (`replay_challenge`), reporting what it would have said.
"""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.agents.retrievers import DenseRetriever
from engine.config import GenerationSettings, RetrievalSettings
from engine.ingest.corpus import Corpus
from engine.errors import InputError
from engine.generation.adjudicate import Decision, adjudicate
from engine.text import sentences
from engine.types import Chunk, ContextChunk, Generation
from engine.verify.sentences import rank_sentences
from engine.verify.verifier import EvidenceVerifier
from . import generation_metrics as gm
from .attacks import passage_chunk, seeded
from .data import DEFAULT_HOTPOT, Passage, answer_aliases, read_jsonl
from .generation_profiles import CLEAN, HEADLINE, Profile
from .honest_generators import HonestKind, generate_all, paraphrase
from .legacy_lies import legacy_lie
from .llm_lies import Rewriter, llm_rewrite
from .lies import (Lie, LieKind, Skip, role_swap, splice, swap_in_passage, true_irrelevant, with_true_quote,
                   wrong_relevant)
from .splits import split_of

AGENTS = ("gen-a", "gen-b", "gen-c")
LIAR = gm.LIAR
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


@dataclass(frozen=True)
class Prepared:
    question: Question
    context: tuple[ContextChunk, ...]
    honest: Mapping[HonestKind, Generation]

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return tuple(c.chunk for c in self.context)

    @property
    def supporting(self) -> frozenset[str]:
        """Chunk ids of the passages HotpotQA marks as supporting the answer."""
        return frozenset(p.id for p in self.question.passages if p.gold)

    @property
    def split(self) -> str:
        return split_of(self.question.id)


@dataclass(frozen=True)
class Fleet:
    """Who answers one question under one profile: agent id -> generation, and who is what."""
    generations: Mapping[str, Generation]
    roles: Mapping[str, str]          # agent id -> an HonestKind value or LIAR
    lie: Lie | None = None

    @property
    def liars(self) -> frozenset[str]:
        return frozenset(a for a, role in self.roles.items() if role == LIAR)


def make_lie(profile: Profile, item: Prepared, seed: int = 0, rewriter: Rewriter | None = None) -> Lie | Skip:
    """The lie of this profile for this question, built from the honest extractive answer's sentence
    (llm-rewrite: the wrong-relevant lie, rewritten by `rewriter`)."""
    q, kind = item.question, profile.lie
    honest = item.honest[HonestKind.EXTRACTIVE]
    if kind.legacy:
        return legacy_lie(kind, q.question, honest, item.chunks, seed)
    if not honest.claims or not honest.claims[0].citations:
        return Skip(kind, "the honest extractive generator found no answer sentence")
    sentence, chunk_id = honest.claims[0].text, honest.claims[0].citations[0]
    chunk = next(c for c in item.chunks if c.id == chunk_id)
    rng = seeded("lie", seed, q.id, kind.value)
    if kind is LieKind.SWAP_IN_PASSAGE:
        lie = swap_in_passage(q.question, sentence, chunk, q.answers, rng)
    elif kind is LieKind.ROLE_SWAP:
        lie = role_swap(q.question, sentence, chunk)
    elif kind is LieKind.SPLICE:
        lie = splice(q.question, sentence, chunk, item.chunks)
    elif kind is LieKind.TRUE_IRRELEVANT:
        lie = true_irrelevant(q.question, item.chunks, item.supporting, q.answers,
                              [c.text for g in item.honest.values() for c in g.claims] +
                              [g.answer for g in item.honest.values()])
    else:
        lie = wrong_relevant(q.question, sentence, chunk_id, item.chunks, item.supporting, q.answers, rng,
                             comparison=q.type == "comparison")
        if kind is LieKind.LLM_REWRITE:
            lie = llm_rewrite(lie, q.answers, rewriter)
    if isinstance(lie, Lie) and profile.quote_on_challenge:
        lie = with_true_quote(lie)
    return lie


def build_fleet(item: Prepared, profile: Profile | None, seed: int = 0, rewriter: Rewriter | None = None) -> Fleet | Skip:
    """The clean fleet (profile None: the three honest kinds), or the profile's liars beside honest
    generators drawn from the three kinds; ids shuffled per question and profile."""
    name = profile.name if profile else CLEAN
    rng = seeded("fleet", seed, item.question.id, name)
    if profile is None:
        members = [(kind.value, item.honest[kind]) for kind in HonestKind]
        lie = None
    else:
        lie = make_lie(profile, item, seed, rewriter)
        if isinstance(lie, Skip):
            return lie
        honest = rng.sample(list(HonestKind), profile.honest)
        members = [(LIAR, lie.generation)] * profile.liars + [(kind.value, item.honest[kind]) for kind in honest]
    agents = rng.sample(AGENTS, len(members))
    return Fleet({a: gen for a, (_, gen) in zip(agents, members)}, {a: role for a, (role, _) in zip(agents, members)},
                 lie)


def replay_challenge(decision: Decision, fleet: Fleet, context: tuple[Chunk, ...],
                     verifier: EvidenceVerifier) -> dict[str, str]:
    """What engine/generation/challenge.py would record (it never changes the verdict): each candidate
    with an unsupported claim shows a quote; an honest agent shows the context sentence closest to the
    claim (engine/agents/server.py), the liar shows the real sentence its lie was made from."""
    evidence = {c.id: c for c in context}
    outcomes = {}
    for cand in decision.candidates:
        doubtful = next((k for k in cand.checks if not k.supported), None)
        if doubtful is None:
            continue
        if fleet.roles.get(cand.agent_id) == LIAR and fleet.lie is not None:
            quote, cited = fleet.lie.source, fleet.lie.chunk_id
        else:
            ranked = rank_sentences(doubtful.claim.text, context)
            quote, cited = (ranked[0].text, ranked[0].chunk_id) if ranked else ("", "")
        if cited not in evidence or not quote or quote not in evidence[cited].text:
            outcomes[cand.agent_id] = "failed: the quote it showed is not in the chunks it cited"
            continue
        judgement = verifier.judge_sync(doubtful.claim.text, [Chunk(cited, quote)])
        outcomes[cand.agent_id] = ("passed" if judgement.label.value == "supported" else "failed") + \
            f": showed [{cited}] ({judgement.reason})"
    return outcomes


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
        from engine.verify.embedders import CachedEmbedder
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
class GenerationResult:
    n_questions: int
    profiles: tuple[Profile, ...]
    rows: dict[str, list[gm.QuestionRow]]          # profile name (and "clean") -> rows
    skips: dict[str, list[gm.SkipRow]] = field(default_factory=dict)
    by_profile: dict[str, dict] = field(default_factory=dict)
    clean: dict = field(default_factory=dict)
    baseline: dict[str, dict] = field(default_factory=dict)
    splits: dict[str, dict] = field(default_factory=dict)   # dev|test -> the same shape as the whole run
    pooled: dict = field(default_factory=dict)
    targets: list[dict] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    embedding: dict[str, dict] = field(default_factory=dict)
    context_sizes: dict[str, Any] = field(default_factory=dict)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)


def _silent(message: str, done: bool = False) -> None:
    pass


class GenerationEvaluation:
    """`embedder` ranks each question's paragraphs (passages and queries); `verifier_embedder` is the
    EvidenceVerifier's and adjudicate's (default: `embedder`), warmed on the context sentences by
    `warm_verifier` (default: embedding them)."""

    def __init__(self, settings: GenerationSettings, embedder, *, verifier_embedder=None,
                 warm_verifier: Callable[[Sequence[str]], None] | None = None, k: int = DEFAULT_K, seed: int = 0,
                 profiles: Sequence[Profile] = HEADLINE, progress: Callable[..., None] | None = None,
                 adjudicator=adjudicate, rewriter: Rewriter | None = None) -> None:
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
        self.adjudicator = adjudicator
        self.rewriter = rewriter                    # the LLM that writes the llm-rewrite lies (None: skipped)

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
        return Prepared(question, context, generate_all(question.question, tuple(ranked)))

    # ---- phase 4 ------------------------------------------------------------------------------
    def judge_one(self, runner: asyncio.Runner, item: Prepared, profile: Profile | None) -> gm.QuestionRow | gm.SkipRow:
        q = item.question
        name = profile.name if profile else CLEAN
        fleet = build_fleet(item, profile, self.seed, self.rewriter)
        if isinstance(fleet, Skip):
            return gm.SkipRow(q.id, item.split, name, fleet.reason)
        inner = EvidenceVerifier(self.verifier_embedder, coverage=self.settings.claim_coverage,
                                 alignment=self.settings.alignment)
        verifier = TimedVerifier(inner)
        facts = gm.QuestionFacts(q.id, item.split, name, tuple(q.answers), fleet.generations, fleet.roles,
                                 fleet.lie, {c.id: c.text for c in item.chunks},
                                 item.honest[HonestKind.EXTRACTIVE].answer)
        started = time.perf_counter()
        try:
            decision = runner.run(self.adjudicator(q.question, dict(fleet.generations), item.context, self.settings,
                                                   verifier, embedder=self.verifier_embedder))
        except Exception as exc:   # the defence is under active development: one failure must not lose a run
            return gm.error_row(facts, f"{type(exc).__name__}: {exc}")
        elapsed = (time.perf_counter() - started) * 1000
        challenge = (replay_challenge(decision, fleet, item.chunks, inner)
                     if profile is not None and profile.quote_on_challenge else {})
        return gm.judge(facts, decision, verify_ms=verifier.calls, adjudicate_ms=elapsed, challenge=challenge)

    def run(self, questions: Sequence[Question]) -> GenerationResult:
        if not questions:
            raise InputError("no questions to evaluate")
        timings: dict[str, float] = {}
        runs: tuple[Profile | None, ...] = (None,) + self.profiles

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
        names = [CLEAN] + [p.name for p in self.profiles]
        rows: dict[str, list[gm.QuestionRow]] = {name: [] for name in names}
        skips: dict[str, list[gm.SkipRow]] = {name: [] for name in names}
        with asyncio.Runner() as runner:
            self.judge_one(runner, prepared[0], None)   # untimed: one-off set-up costs are no per-claim time
            for r, (name, profile) in enumerate(zip(names, runs)):
                for i, item in enumerate(prepared):
                    row = self.judge_one(runner, item, profile)
                    (skips if isinstance(row, gm.SkipRow) else rows)[name].append(row)
                    self.progress(f"phase 4/4: adjudicating [{name}, {r + 1}/{len(runs)}] "
                                  f"question {i + 1}/{len(prepared)}")
        self.progress(f"phase 4/4: done ({time.perf_counter() - started:.1f} s)", done=True)
        timings["adjudicate"] = round(time.perf_counter() - started, 2)

        result = GenerationResult(n_questions=len(questions), profiles=self.profiles, rows=rows, skips=skips,
                                  timings_s=timings, embedding=embedding)
        whole = gm.summarise(rows, skips, self.profiles)
        result.by_profile, result.clean, result.baseline = whole["by_profile"], whole["clean"], whole["baseline"]
        result.splits = gm.summarise_splits(rows, skips, self.profiles)
        every = [ms for run_rows in rows.values() for r in run_rows for ms in r.verify_ms]
        result.pooled = {"verify_ms_per_claim_p50": gm.percentile(every, 50),
                         "verify_ms_per_claim_p95": gm.percentile(every, 95), "verified_claims": len(every)}
        result.targets = [{**t, "split": split} for split, part in result.splits.items() for t in part["targets"]]
        sizes = [len(item.context) for item in prepared]
        quoted = [text for text in (item.honest[HonestKind.EXTRACTIVE].answer for item in prepared) if text]
        result.context_sizes = {
            "min": min(sizes), "max": max(sizes),
            "honest_empty_answers": {k.value: sum(not item.honest[k].answer for item in prepared) for k in HonestKind},
            "paraphrase_edits": dict(sorted(Counter(edit.value for text in quoted
                                                    for edit in paraphrase(text).edits).items())),
            "focused_differs_from_extractive": sum(item.honest[HonestKind.FOCUSED].answer
                                                   != item.honest[HonestKind.EXTRACTIVE].answer for item in prepared),
        }
        return result
