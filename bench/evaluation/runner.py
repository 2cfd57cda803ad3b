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

from engine.agents.extractive import ExtractiveGenerator
from engine.agents.retrievers import LEXICAL_BACKENDS, DenseRetriever, lexical_retriever
from engine.config import RetrievalSettings
from engine.ingest.corpus import Corpus
from engine.text import content_hash
from engine.errors import InputError
from engine.types import Chunk, RetrievalMode
from . import attacks, baselines, variants
from .attacks import ATTACKS, FORMS, MAX_POISON, MAX_RETRIEVERS, PLACEMENTS
from .data import Case
from .metrics import Row, Seen, Truth, aggregate, expected_row, judge, kept_out_reason, text_key
from .splits import SPLITS, split_of
from .variants import STANDARD, VARIANTS

DEFENCE = "defense"
SPLIT_CHOICES = SPLITS + ("all",)
METHODS = (DEFENCE,) + baselines.BASELINES
MODES = tuple(mode.value for mode in RetrievalMode)
FIXED_TODAY = dt.date(2025, 1, 1)   # freshness is computed against a fixed day, so runs replay exactly
EMBED_BATCH = 64
# The adaptive attacker plants at least two texts, each below the echo threshold to every other: texts that
# far apart make no near-duplicate group whatever echo_min_size is, so a smaller echo size buys it nothing.
ADAPTIVE_TEXTS = 2


@dataclass(frozen=True)
class RunConfig:
    attack: str = "agent"
    collude: bool = False
    retrievers: int = 4
    byzantine: int | None = None      # None: 1 for agent/tamper/omit, 0 for none/corpus
    k: int = 5
    forms: tuple[str, ...] = FORMS
    mode: RetrievalMode = RetrievalMode.FULL
    variant: str = STANDARD
    poison_count: int | None = None   # None: all of a case's poison texts (PoisonedRAG: 5)
    placement: str = "random"         # which agents lie: drawn per case, or the last F ("last")
    split: str = "all"                # which cases run: dev, test or all (metrics are reported per split anyway)

    def resolved(self) -> "RunConfig":
        byz = self.byzantine
        if byz is None:
            byz = 1 if self.attack in ("agent", "tamper", "omit") else 0
        forms = self.forms
        if VARIANTS.get(self.variant) and VARIANTS[self.variant].rewrites_text:
            forms = ("bare",)   # a question prefix would put back the mirroring the rewrite takes out
        return dataclasses.replace(self, byzantine=byz, forms=forms)

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
        if cfg.retrievers > MAX_RETRIEVERS:
            raise InputError(f"--retrievers: at most {MAX_RETRIEVERS} (one per distinct retriever model: "
                             f"{', '.join(attacks.KIND_CYCLE)}), found {cfg.retrievers}")
        if cfg.variant not in VARIANTS:
            raise InputError(f"--variant: expected one of {', '.join(VARIANTS)}, found {cfg.variant!r}")
        if cfg.attack not in VARIANTS[cfg.variant].attacks:
            raise InputError(f"--variant {cfg.variant} applies to --attack "
                             f"{' or '.join(VARIANTS[cfg.variant].attacks)}, not {cfg.attack}")
        if cfg.poison_count is not None and not 1 <= cfg.poison_count <= MAX_POISON:
            raise InputError(f"--poison-count must be between 1 and {MAX_POISON}, found {cfg.poison_count}")
        if cfg.placement not in PLACEMENTS:
            raise InputError(f"--placement: expected one of {', '.join(PLACEMENTS)}, found {cfg.placement!r}")
        if cfg.split not in SPLIT_CHOICES:
            raise InputError(f"--split: expected one of {', '.join(SPLIT_CHOICES)}, found {cfg.split!r}")
        if cfg.k < 1:
            raise InputError(f"--k must be at least 1, found {cfg.k}")
        if not 0 <= cfg.byzantine < cfg.retrievers:
            raise InputError(f"--byzantine must be between 0 and retrievers - 1 = {cfg.retrievers - 1} "
                             f"(at least one retriever is honest), found {cfg.byzantine}")
        if cfg.attack in ("agent", "tamper", "omit") and cfg.byzantine == 0:
            raise InputError(f"--attack {cfg.attack} needs at least one Byzantine retriever (--byzantine >= 1)")
        if cfg.attack == "none" and cfg.byzantine:
            raise InputError("--attack none has no Byzantine behaviour: --byzantine must be 0")
        return cfg

    @property
    def uses_poison(self) -> bool:
        return self.attack in ("agent", "corpus")

    @property
    def tamper_mode(self) -> str:
        return {"tamper-new-id": "new-id", "name-swap": "name-swap"}.get(self.variant, "same-id")


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
        # The defence rescales cosines above this floor: without it an e5 defence would see raw cosines.
        self.similarity_floor = getattr(inner, "similarity_floor", 0.0)
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
    from engine.verify.embedders import EMBEDDERS, CachedEmbedder
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
    split_metrics: dict[str, dict[str, dict[str, dict]]] = field(default_factory=dict)   # split → form → method
    split_sizes: dict[str, int] = field(default_factory=dict)
    poison_similarity: dict[str, float | None] = field(default_factory=dict)   # form → mean pairwise cosine
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
        self._poison: dict[tuple[str, str, RunConfig], list[str]] = {}
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

    def poison_texts(self, case: Case, config: RunConfig, form: str) -> list[str]:
        """The attack texts of one case in one form: the first poison_count published texts, rewritten by
        the variant (adaptive asks the defence's own embedder, as an attacker with the code could)."""
        key = (case.id, form, config)
        if key not in self._poison:
            bare = list(case.poison[:config.poison_count or len(case.poison)])
            rng = attacks.seeded(case.id, "variant", config.variant)
            if config.variant == "paraphrased":
                bare = [variants.paraphrase(t, case.question, case.incorrect_answer, rng) for t in bare]
            elif config.variant == "no-mirror":
                bare = [variants.no_mirror(t, case.question, case.incorrect_answer, i) for i, t in enumerate(bare)]
            elif config.variant == "adaptive":
                bare = variants.adaptive(bare, case.question, case.incorrect_answer,
                                         variants.honest_sentences([p.text for p in case.own_passages]),
                                         max(ADAPTIVE_TEXTS, self.settings.echo_min_size - 1), self.settings.echo_similarity,
                                         self._similarity, rng)
            self._poison[key] = [attacks.poison_text(case.question, t, form) for t in bare]
        return self._poison[key]

    def _similarity(self, a: str, b: str) -> float:
        """Cosine under the defence's embedder, rescaled above its floor as engine/retrieval does."""
        embedder = self.embedders[self.settings.embedder]
        x, y = np.asarray(embedder.embed_passages([a, b]), dtype=np.float64)
        floor = getattr(embedder, "similarity_floor", 0.0)
        cosine = float(x @ y / ((np.linalg.norm(x) * np.linalg.norm(y)) or 1.0))
        return (cosine - floor) / (1.0 - floor)

    def _corpus(self, case: Case, config: RunConfig, form: str) -> Corpus:
        chunks = [attacks.passage_chunk(p) for p in case.passages]
        if config.attack == "corpus":
            chunks += attacks.corpus_poison(case, self.poison_texts(case, config, form))
        return Corpus(root=Path("eval") / case.id, chunks=tuple(chunks))

    def _retriever(self, kind: str, corpus: Corpus):
        if kind in LEXICAL_BACKENDS:
            return lexical_retriever(kind, corpus)
        return DenseRetriever(corpus, self.embedders[kind])

    # ---- phase 2: retriever lists ----------------------------------------------------------
    def prepare(self, case: Case, config: RunConfig, form: str) -> Prepared:
        s = self.settings
        corpus = self._corpus(case, config, form)
        gold_ids = {p.id for p in case.gold_passages}
        originals = {c.id: c.text for c in corpus.chunks}
        fleet = attacks.fleet(config.retrievers)
        byzantine = attacks.byzantine_agents(case.id, [a for a, _ in fleet], config.byzantine, config.placement)
        replies: dict[str, tuple[Chunk, ...]] = {}
        attack_texts: set[str] = set()
        if config.uses_poison:
            attack_texts.update(self.poison_texts(case, config, form))
        for agent, kind in fleet:
            honest = self._retriever(kind, corpus).retrieve(case.question, s.k_per_agent + len(gold_ids))
            if agent not in byzantine:
                chunks = honest[:s.k_per_agent]
            elif config.attack in ("agent", "corpus"):
                pushed = attacks.agent_poison(case, self.poison_texts(case, config, form), agent, config.collude)
                if config.variant == "random-rank":
                    chunks = attacks.place_at_random(pushed, honest, s.k_per_agent,
                                                     attacks.seeded(case.id, "rank", agent, form))
                else:
                    chunks = attacks.push_first(pushed, honest, s.k_per_agent)
            elif config.attack == "tamper":
                chunks = attacks.tampered(honest[:s.k_per_agent], agent, case.id, config.tamper_mode)
                attack_texts.update(c.text for c in chunks if c.text not in originals.values())
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
        from engine.retrieval.secure import SecureRetrieval
        return SecureRetrieval(settings, self.embedders[settings.embedder], today=FIXED_TODAY)

    def _warm_up(self, defence, prepared: Prepared, config: RunConfig) -> None:
        """One untimed call first: the first HDBSCAN call pays one-off set-up costs that are not
        per-question engine time."""
        try:
            defence.run(prepared.case.question, prepared.replies, kinds=prepared.kinds, mode=config.mode)
        except Exception:
            pass   # judge_all records the error on the timed call

    def judge_all(self, prepared: Prepared, defence, config: RunConfig,
                  methods: Sequence[str] = METHODS) -> dict[str, Row]:
        case, truth, replies = prepared.case, prepared.truth, prepared.replies
        rows: dict[str, Row] = {}
        byzantine = prepared.byzantine
        started = time.perf_counter()
        try:
            result = defence.run(case.question, replies, kinds=prepared.kinds, mode=config.mode)
        except Exception as exc:   # the defence is under active development: one failure must not lose a run
            rows[DEFENCE] = judge(case.id, DEFENCE, truth, [], error=f"{type(exc).__name__}: {exc}",
                                  overhead_ms=round((time.perf_counter() - started) * 1000, 3), byzantine=byzantine)
        else:
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            reason = getattr(result, "abstain_reason", "") or ""
            suspects = {s.agent_id for s in result.suspects}
            full = len(result.context) >= config.k
            seen, excluded = [], []
            for item, in_context in [(c, True) for c in result.context] + [(c, False) for c in result.excluded]:
                flags = tuple(f.value for f in item.explanation.flags) if item.explanation else ()
                note = item.explanation.note if item.explanation else ""
                why = kept_out_reason(flags, note, in_context=in_context and not reason, context_full=full,
                                      from_suspect=bool(set(getattr(item, "supported_by", ())) & suspects),
                                      abstained=bool(reason))
                seen.append(Seen(item.chunk, flags, why))
                if not in_context:
                    excluded.append({"id": item.chunk.id, "flags": list(flags), "attack": truth.is_attack(item.chunk),
                                     "note": note, "false_positive": bool(why) and not truth.is_attack(item.chunk),
                                     "why": why})
            detail = {
                "abstain_reason": reason,
                "fallback": getattr(result, "fallback", None),
                "context_flags": [[c.chunk.id, [f.value for f in c.explanation.flags] if c.explanation else []]
                                  for c in result.context],
                "excluded": excluded,
                "suspects": [[s.agent_id, s.reason] for s in result.suspects],
                "positions": len(result.positions),
                "timings_ms": dict(getattr(result, "timings_ms", {}) or {}),
            }
            rows[DEFENCE] = judge(case.id, DEFENCE, truth, [c.chunk for c in result.context],
                                  abstained=bool(reason) or not result.context, overhead_ms=elapsed,
                                  generator=self.generator, seen=seen, detail=detail,
                                  suspects=suspects, byzantine=byzantine)
        k = config.k
        for name in (m for m in baselines.BASELINES if m in methods):
            started = time.perf_counter()
            detail = {}
            if name == "naive":
                choices = []
                for agent, context in baselines.naive(replies, k).items():
                    row = judge(case.id, name, truth, context, generator=self.generator, detail={"agent": agent},
                                byzantine=byzantine)
                    choices.append(row)
                rows[name] = expected_row(choices, name)
                rows[name].overhead_ms = round((time.perf_counter() - started) * 1000 / max(1, len(choices)), 3)
                continue
            if name == "trustrag":
                outcome = baselines.trustrag(replies, k, self.embedders[self.settings.embedder])
                context = outcome.context
                detail = {"dropped": [c.id for c in outcome.dropped],
                          "cluster_cosine": {a: _num(r.cosine) for a, r in outcome.per_agent.items()},
                          "cluster_rouge_l": {a: _num(r.rouge) for a, r in outcome.per_agent.items()}}
            elif name == "trustrag-pooled":
                pooled = baselines.trustrag_pooled(replies, k, self.embedders[self.settings.embedder])
                context = pooled.context
                detail = {"dropped": [c.id for c in pooled.dropped], "cluster_cosine": _num(pooled.cosine),
                          "cluster_rouge_l": _num(pooled.rouge)}
            else:
                context = getattr(baselines, name)(replies, k)
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            rows[name] = judge(case.id, name, truth, context, overhead_ms=elapsed, generator=self.generator,
                               detail=detail, byzantine=byzantine)
        return rows

    # ---- the whole run ---------------------------------------------------------------------
    def run(self, cases: Sequence[Case], config: RunConfig) -> RunResult:
        return self.judge_run(self.prepare_run(cases, config))

    def prepare_run(self, cases: Sequence[Case], config: RunConfig) -> "PreparedRun":
        """Phases 1-3: everything that does not depend on the defence's thresholds, so that a sweep
        judges the very same retriever lists under each setting."""
        config = config.validate()
        if config.split != "all":
            cases = [c for c in cases if split_of(c.id) == config.split]
        if not cases:
            raise InputError("no cases to evaluate" + (f" in --split {config.split}" if config.split != "all" else ""))
        self._poison.clear()
        timings: dict[str, float] = {}
        embedding: dict[str, dict] = {}
        form_applies = config.uses_poison
        forms = config.forms if form_applies else config.forms[:1]
        settings = dataclasses.replace(self.settings, context_k=config.k)
        questions = [c.question for c in cases]

        started = time.perf_counter()
        self.progress(f"phase 1/4: embedding passages and questions for {len(cases)} cases", done=True)
        fleet_kinds = [k for k in dict.fromkeys(self._fleet_kinds(config)) if k not in LEXICAL_BACKENDS]
        for kind in dict.fromkeys(fleet_kinds + [settings.embedder]):
            texts = [p.text for c in cases for p in c.passages]
            if config.uses_poison:
                texts += [t for c in cases for f in forms for t in self.poison_texts(c, config, f)]
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
        poison_similarity: dict[str, float | None] = {}
        if config.uses_poison:
            embedder = self.embedders[settings.embedder]
            for form in forms:
                poison_similarity[form] = _mean_pairwise_cosine(
                    embedder, [self.poison_texts(c, config, form) for c in cases])
        return PreparedRun(cases=tuple(cases), config=config, forms=tuple(forms), form_applies=form_applies,
                           prepared=prepared, settings=settings, timings_s=timings, embedding=embedding,
                           poison_similarity=poison_similarity)

    def judge_run(self, run: "PreparedRun", settings: RetrievalSettings | None = None,
                  methods: Sequence[str] = METHODS) -> RunResult:
        """Phase 4: the defence (under `settings`, default the run's own) and the named baselines on
        the prepared lists, judged and aggregated per form and per split."""
        config, cases, forms = run.config, run.cases, run.forms
        settings = dataclasses.replace(settings, context_k=config.k) if settings is not None else run.settings
        if settings.embedder != run.settings.embedder:
            raise InputError("a sweep may not change the defence's embedder: the lists were embedded for "
                             f"{run.settings.embedder!r}")
        timings = dict(run.timings_s)
        started = time.perf_counter()
        defence = self._defence(settings)
        self._warm_up(defence, run.prepared[forms[0]][0], config)
        rows: dict[str, dict[str, list[Row]]] = {}
        for form in forms:
            rows[form] = {m: [] for m in methods}
            for i, item in enumerate(run.prepared[form]):
                for method, row in self.judge_all(item, defence, config, methods).items():
                    rows[form][method].append(row)
                self.progress(f"phase 4/4: {'defence and baselines' if len(methods) > 1 else 'defence'} "
                              f"[{form if run.form_applies else 'no poison'}] case {i + 1}/{len(cases)}")
        self.progress(f"phase 4/4: done ({time.perf_counter() - started:.1f} s)", done=True)
        timings["methods"] = round(time.perf_counter() - started, 2)
        if not run.form_applies:   # no poison text in play: the forms are the same run
            rows = {form: rows[forms[0]] for form in config.forms}
        result = RunResult(config=config, n_questions=len(cases), form_applies=run.form_applies, rows=rows,
                           timings_s=timings, embedding=dict(run.embedding),
                           poison_similarity=dict(run.poison_similarity))
        scope = {"attack_answers": config.uses_poison and all(c.answers_apply for c in cases),
                 "accuracy": all(c.answers_apply for c in cases)}
        result.metrics = {form: {m: aggregate(r, defence=(m == DEFENCE), **scope) for m, r in by_method.items()}
                          for form, by_method in rows.items()}
        for split in SPLITS:
            ids = {c.id for c in cases if split_of(c.id) == split}
            if not ids:
                continue
            result.split_sizes[split] = len(ids)
            result.split_metrics[split] = {
                form: {m: aggregate([x for x in r if x.id in ids], defence=(m == DEFENCE), **scope)
                       for m, r in by_method.items()} for form, by_method in rows.items()}
        return result


@dataclass(frozen=True)
class PreparedRun:
    """Phases 1-3 of a run: the cases, the retriever lists per form, and what embedding them cost."""
    cases: tuple[Case, ...]
    config: RunConfig
    forms: tuple[str, ...]
    form_applies: bool
    prepared: Mapping[str, list[Prepared]]
    settings: RetrievalSettings
    timings_s: Mapping[str, float]
    embedding: Mapping[str, dict]
    poison_similarity: Mapping[str, float | None]


def _mean_pairwise_cosine(embedder, groups: Sequence[Sequence[str]]) -> float | None:
    """Mean over cases of the mean pairwise cosine of a case's attack texts (how much they echo)."""
    means = []
    for texts in groups:
        if len(texts) < 2:
            continue
        v = np.asarray(embedder.embed_passages(list(texts)), dtype=np.float64)
        v = v / np.where(np.linalg.norm(v, axis=1, keepdims=True) == 0, 1.0, np.linalg.norm(v, axis=1, keepdims=True))
        sim = v @ v.T
        n = len(texts)
        means.append((sim.sum() - np.trace(sim)) / (n * (n - 1)))
    return round(float(np.mean(means)), 4) if means else None


def _num(value: float):
    return None if value != value else value   # NaN → null
