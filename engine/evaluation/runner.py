"""One evaluation run: a fleet of real retriever classes per case → Byzantine edits → the defence
(SecureRetrieval, public surface only) and the baselines on the very same lists → judged rows.

Work is done in phases so the timed part measures engine work only: (1) every passage and query is
embedded up front, once per model, through one cache per model; (2) every case's retriever lists are
built; (3) the texts the lists contain (tampered copies included) are embedded for the defence's
embedder; (4) the defence and the baselines run, timed, with every embedding a cache hit.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..agents.extractive import ExtractiveGenerator
from ..agents.retrievers import BM25Retriever, DenseRetriever
from ..config import RetrievalSettings
from ..corpus import Corpus, content_hash
from ..errors import InputError
from ..types import Chunk
from . import attacks, baselines
from .attacks import ATTACKS, FORMS
from .data import Case
from .metrics import Row, Truth, aggregate, judge, text_key

DEFENCE = "defense"
METHODS = (DEFENCE,) + baselines.BASELINES
MODES = ("full", "optimistic")
FIXED_TODAY = dt.date(2025, 1, 1)   # freshness is computed against a fixed day, so runs replay exactly
EMBED_BATCH = 64


@dataclass(frozen=True)
class RunConfig:
    attack: str = "agent"
    collude: bool = False
    retrievers: int = 4
    byzantine: int | None = None      # None: 1 for agent/tamper/omit, 0 for none/corpus
    k: int = 5
    forms: tuple[str, ...] = FORMS
    mode: str = "full"

    def resolved(self) -> "RunConfig":
        byz = self.byzantine
        if byz is None:
            byz = 1 if self.attack in ("agent", "tamper", "omit") else 0
        return dataclasses.replace(self, byzantine=byz)

    def validate(self) -> "RunConfig":
        cfg = self.resolved()
        if cfg.attack not in ATTACKS:
            raise InputError(f"--attack: expected one of {', '.join(ATTACKS)}, found {cfg.attack!r}")
        if cfg.mode not in MODES:
            raise InputError(f"--mode: expected one of {', '.join(MODES)}, found {cfg.mode!r}")
        bad_forms = [f for f in cfg.forms if f not in FORMS]
        if bad_forms or not cfg.forms:
            raise InputError(f"--form: expected prefixed, bare or both, found {', '.join(bad_forms) or 'nothing'}")
        if cfg.retrievers < 1:
            raise InputError(f"--retrievers must be at least 1, found {cfg.retrievers}")
        if cfg.k < 1:
            raise InputError(f"--k must be at least 1, found {cfg.k}")
        if not 0 <= cfg.byzantine < cfg.retrievers:
            raise InputError(f"--byzantine must be between 0 and retrievers - 1 = {cfg.retrievers - 1} "
                             f"(the first retriever stays honest), found {cfg.byzantine}")
        if cfg.attack in ("agent", "tamper", "omit") and cfg.byzantine == 0:
            raise InputError(f"--attack {cfg.attack} needs at least one Byzantine retriever (--byzantine >= 1)")
        if cfg.attack == "none" and cfg.byzantine:
            raise InputError("--attack none has no Byzantine behaviour: --byzantine must be 0")
        return cfg

    @property
    def uses_poison(self) -> bool:
        return self.attack in ("agent", "corpus")


class Progress:
    """One status line on stderr: rewritten in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, stream=None, every_s: float = 5.0) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s
        self._last = 0.0

    def __call__(self, message: str, done: bool = False) -> None:
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\033[K" + message + ("\n" if done else ""))
            self.stream.flush()
        elif done or now - self._last >= self.every_s:
            self.stream.write(message + "\n")
            self.stream.flush()
            self._last = now


def _silent(message: str, done: bool = False) -> None:
    pass


class CachedQueries:
    """Forwards passages to a CachedEmbedder and keeps query vectors too (memory + SQLite), so a
    repeated run loads no model at all and the timed defence never waits for a query embedding."""

    def __init__(self, inner, cache_dir: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self._path = Path(cache_dir) / f"queries-{inner.name}.sqlite"
        self._memo: dict[str, np.ndarray] = {}
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        key = content_hash(text)
        if key in self._memo:
            return self._memo[key]
        with self._lock:
            if self._db is None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self._path, check_same_thread=False)
                self._db.execute("CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, dim INTEGER, vec BLOB)")
            found = self._db.execute("SELECT dim, vec FROM vectors WHERE hash = ?", (key,)).fetchone()
        if found:
            vector = np.frombuffer(found[1], dtype=np.float32, count=found[0])
        else:
            vector = np.asarray(self.inner.embed_query(text), dtype=np.float32).reshape(-1)
            with self._lock, self._db:
                self._db.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                 (key, int(vector.shape[0]), vector.tobytes()))
        self._memo[key] = vector
        return vector

    @property
    def hits(self) -> int:
        return getattr(self.inner, "hits", 0)

    @property
    def misses(self) -> int:
        return getattr(self.inner, "misses", 0)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        if hasattr(self.inner, "close"):
            self.inner.close()


def real_embedders(kinds: Sequence[str], cache_dir: Path) -> dict[str, CachedQueries]:
    """One CachedEmbedder per model (models load lazily, on the first cache miss)."""
    from ..verify.embedders import EMBEDDERS, CachedEmbedder
    return {kind: CachedQueries(CachedEmbedder(EMBEDDERS[kind](), Path(cache_dir)), Path(cache_dir))
            for kind in dict.fromkeys(kinds) if kind in EMBEDDERS}


@dataclass
class Prepared:
    """One case under one form: the lists every retriever returned, and what is true about them."""
    case: Case
    replies: dict[str, tuple[Chunk, ...]]
    kinds: dict[str, str]
    truth: Truth
    byzantine: tuple[str, ...]


@dataclass
class RunResult:
    config: RunConfig
    n_questions: int
    form_applies: bool
    rows: dict[str, dict[str, list[Row]]]              # form → method → rows
    metrics: dict[str, dict[str, dict]] = field(default_factory=dict)
    timings_s: dict[str, float] = field(default_factory=dict)
    embedding: dict[str, dict] = field(default_factory=dict)


class Evaluation:
    def __init__(self, settings: RetrievalSettings, embedders: Mapping[str, object], *,
                 progress: Callable[..., None] | None = None, generator: ExtractiveGenerator | None = None,
                 defence_factory: Callable[..., object] | None = None) -> None:
        self.settings = settings
        self.embedders = dict(embedders)
        self.progress = progress or _silent
        self.generator = generator or ExtractiveGenerator()
        self._defence_factory = defence_factory
        if settings.embedder not in self.embedders:
            raise InputError(f"no embedder for the defence's model {settings.embedder!r}")

    # ---- phase 1: embeddings -------------------------------------------------------------
    def warm(self, label: str, embedder, texts: Sequence[str], queries: Sequence[str] = ()) -> dict:
        texts = list(dict.fromkeys(texts))
        queries = list(dict.fromkeys(queries))
        started = time.perf_counter()
        misses_before = getattr(embedder, "misses", 0)
        name = getattr(embedder, "name", label)
        for start in range(0, len(texts), EMBED_BATCH):
            embedder.embed_passages(texts[start:start + EMBED_BATCH])
            done = min(start + EMBED_BATCH, len(texts))
            self.progress(f"  embedding {name}: {done}/{len(texts)} passages ({100 * done // max(1, len(texts))}%), "
                          f"{time.perf_counter() - started:.0f} s")
        for i, query in enumerate(queries):
            embedder.embed_query(query)
            self.progress(f"  embedding {name}: {i + 1}/{len(queries)} questions")
        seconds = round(time.perf_counter() - started, 2)
        computed = getattr(embedder, "misses", 0) - misses_before
        self.progress(f"  embedding {name}: {len(texts)} passages, {computed} newly computed, {seconds} s", done=True)
        return {"model": name, "texts": len(texts), "computed": computed, "seconds": seconds}

    @staticmethod
    def _fleet_kinds(config: RunConfig) -> list[str]:
        return [kind for _, kind in attacks.fleet(config.retrievers)]

    def _corpus(self, case: Case, config: RunConfig, form: str) -> Corpus:
        chunks = [attacks.passage_chunk(p) for p in case.passages]
        if config.attack == "corpus":
            chunks += attacks.corpus_poison(case, form)
        return Corpus(root=Path("eval") / case.id, chunks=tuple(chunks))

    # ---- phase 2: retriever lists ----------------------------------------------------------
    def prepare(self, case: Case, config: RunConfig, form: str) -> Prepared:
        s = self.settings
        corpus = self._corpus(case, config, form)
        gold_ids = {p.id for p in case.gold_passages}
        originals = {c.id: c.text for c in corpus.chunks}
        fleet = attacks.fleet(config.retrievers)
        byzantine = tuple(agent for agent, _ in fleet[len(fleet) - config.byzantine:]) if config.byzantine else ()
        replies: dict[str, tuple[Chunk, ...]] = {}
        attack_texts: set[str] = set()
        if config.uses_poison:
            attack_texts.update(attacks.poison_texts(case, form))
        for agent, kind in fleet:
            if kind == "bm25":
                retriever = BM25Retriever(corpus)
            else:
                retriever = DenseRetriever(corpus, self.embedders[kind])
            honest = retriever.retrieve(case.question, s.k_per_agent + len(gold_ids))
            if agent not in byzantine:
                chunks = honest[:s.k_per_agent]
            elif config.attack in ("agent", "corpus"):
                chunks = attacks.push_first(attacks.agent_poison(case, form, agent, config.collude), honest,
                                            s.k_per_agent)
            elif config.attack == "tamper":
                chunks = attacks.tampered(honest[:s.k_per_agent], agent, case.id)
                attack_texts.update(c.text for c in chunks if c.text != originals.get(c.id))
            elif config.attack == "omit":
                chunks = attacks.omitted(honest, gold_ids, s.k_per_agent)
            else:
                chunks = honest[:s.k_per_agent]
            replies[agent] = tuple(chunks)
        truth = Truth(question=case.question, correct_answers=case.correct_answers,
                      incorrect_answer=case.incorrect_answer,
                      attack_keys=frozenset(text_key(t) for t in attack_texts),
                      gold_keys=frozenset(text_key(p.text) for p in case.gold_passages))
        return Prepared(case, replies, dict(fleet), truth, byzantine)

    # ---- phase 4: methods ------------------------------------------------------------------
    def _defence(self, settings: RetrievalSettings):
        if self._defence_factory is not None:
            return self._defence_factory(settings, self.embedders[settings.embedder])
        from ..retrieval.secure import SecureRetrieval
        return SecureRetrieval(settings, self.embedders[settings.embedder], today=FIXED_TODAY)

    def _warm_up(self, defence, prepared: Prepared, config: RunConfig) -> None:
        """One untimed call first: the first HDBSCAN call pays one-off set-up costs that are not
        per-question engine time."""
        try:
            defence.run(prepared.case.question, prepared.replies, kinds=prepared.kinds, mode=config.mode)
        except Exception:
            pass   # judge_all records the error on the timed call

    def judge_all(self, prepared: Prepared, defence, config: RunConfig) -> dict[str, Row]:
        case, truth, replies = prepared.case, prepared.truth, prepared.replies
        rows: dict[str, Row] = {}
        started = time.perf_counter()
        try:
            result = defence.run(case.question, replies, kinds=prepared.kinds, mode=config.mode)
        except Exception as exc:   # the defence is under active development: one failure must not lose a run
            rows[DEFENCE] = judge(case.id, DEFENCE, truth, [], error=f"{type(exc).__name__}: {exc}",
                                  overhead_ms=round((time.perf_counter() - started) * 1000, 3))
        else:
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            reason = getattr(result, "abstain_reason", "") or ""
            seen = [(c.chunk, tuple(c.explanation.flags) if c.explanation else ())
                    for c in tuple(result.context) + tuple(result.excluded)]
            detail = {
                "abstain_reason": reason,
                "fallback": getattr(result, "fallback", None),
                "context_flags": [[c.chunk.id, list(c.explanation.flags) if c.explanation else []]
                                  for c in result.context],
                "excluded": [[c.chunk.id, list(c.explanation.flags) if c.explanation else [],
                              truth.is_attack(c.chunk)] for c in result.excluded],
                "suspects": [[s.agent_id, s.reason] for s in result.suspects],
                "byzantine": list(prepared.byzantine),
                "positions": len(result.positions),
                "timings_ms": dict(getattr(result, "timings_ms", {}) or {}),
            }
            rows[DEFENCE] = judge(case.id, DEFENCE, truth, [c.chunk for c in result.context],
                                  abstained=bool(reason) or not result.context, overhead_ms=elapsed,
                                  generator=self.generator, seen=seen, detail=detail,
                                  suspects=[s.agent_id for s in result.suspects], byzantine=prepared.byzantine)
        k = config.k
        for name in baselines.BASELINES:
            started = time.perf_counter()
            detail = {}
            if name == "trustrag":
                outcome = baselines.trustrag(replies, k, self.embedders[self.settings.embedder])
                context = outcome.context
                detail = {"dropped": [c.id for c in outcome.dropped], "cluster_cosine": _num(outcome.cosine),
                          "cluster_rouge_l": _num(outcome.rouge)}
            else:
                context = getattr(baselines, name)(replies, k)
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            rows[name] = judge(case.id, name, truth, context, overhead_ms=elapsed, generator=self.generator,
                               detail=detail)
        return rows

    # ---- the whole run ---------------------------------------------------------------------
    def run(self, cases: Sequence[Case], config: RunConfig) -> RunResult:
        config = config.validate()
        if not cases:
            raise InputError("no cases to evaluate")
        timings: dict[str, float] = {}
        embedding: dict[str, dict] = {}
        form_applies = config.uses_poison
        forms = config.forms if form_applies else config.forms[:1]
        settings = dataclasses.replace(self.settings, context_k=config.k)
        questions = [c.question for c in cases]

        started = time.perf_counter()
        self.progress(f"phase 1/4: embedding passages and questions for {len(cases)} cases", done=True)
        fleet_kinds = [k for k in dict.fromkeys(self._fleet_kinds(config)) if k != "bm25"]
        for kind in dict.fromkeys(fleet_kinds + [settings.embedder]):
            texts = [p.text for c in cases for p in c.passages]
            if config.uses_poison:
                texts += [t for c in cases for f in forms for t in attacks.poison_texts(c, f)]
            embedding[kind] = self.warm(kind, self.embedders[kind], texts, questions)
        timings["embed_corpus"] = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        prepared: dict[str, list[Prepared]] = {}
        for form in forms:
            prepared[form] = []
            for i, case in enumerate(cases):
                prepared[form].append(self.prepare(case, config, form))
                self.progress(f"phase 2/4: retrieving [{form if form_applies else 'no poison'}] "
                              f"case {i + 1}/{len(cases)}")
        self.progress(f"phase 2/4: {len(cases)} cases retrieved by {config.retrievers} retrievers "
                      f"({time.perf_counter() - started:.1f} s)", done=True)
        timings["retrieve"] = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        reply_texts = [c.text for form in forms for p in prepared[form] for chunks in p.replies.values()
                       for c in chunks]
        self.progress("phase 3/4: embedding the retrieved texts for the defence", done=True)
        embedding["defence"] = self.warm(settings.embedder, self.embedders[settings.embedder], reply_texts, questions)
        timings["embed_replies"] = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        defence = self._defence(settings)
        self._warm_up(defence, prepared[forms[0]][0], config)
        rows: dict[str, dict[str, list[Row]]] = {}
        for form in forms:
            rows[form] = {m: [] for m in METHODS}
            for i, item in enumerate(prepared[form]):
                for method, row in self.judge_all(item, defence, config).items():
                    rows[form][method].append(row)
                self.progress(f"phase 4/4: defence and baselines [{form if form_applies else 'no poison'}] "
                              f"case {i + 1}/{len(cases)}")
        self.progress(f"phase 4/4: done ({time.perf_counter() - started:.1f} s)", done=True)
        timings["methods"] = round(time.perf_counter() - started, 2)
        if not form_applies:   # no poison text in play: the forms are the same run
            rows = {form: rows[forms[0]] for form in config.forms}
        result = RunResult(config=config, n_questions=len(cases), form_applies=form_applies, rows=rows,
                           timings_s=timings, embedding=embedding)
        result.metrics = {form: {m: aggregate(r, defence=(m == DEFENCE)) for m, r in by_method.items()}
                          for form, by_method in rows.items()}
        return result


def _num(value: float):
    return None if value != value else value   # NaN → null
