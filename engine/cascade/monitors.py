"""The three CHARM monitors, each an anomaly score in [0, 1] for one stage boundary.

- SFV checks what the stage states against the consensus pool (evidence several independent
  sources returned), never against one upstream output: a poisoned top passage cannot vouch for
  itself.
- CSCT checks the stage against the trajectory: does a statement contradict a sentence the
  trajectory has already seen (a near-copy with one name or number changed), bring names or
  numbers from nowhere, or drift away from the question and everything before it?
- CPM checks confidence: a stage may not be surer than its upstream and its evidence allow
  (confidence only falls along a chain of evidence), and may not strip the hedges of its source.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..stages.model import StageKind, StageResult, Trajectory
from ..stages.reasoning import conclude
from ..text import content_words, overlap, shorten
from ..types import Chunk, Claim, ClaimLabel
from ..verify.alignment import conflicts, mid_sentence_capitals
from ..verify.verifier import EvidenceVerifier, _word_order_similarity
from ..settings.cascade import CascadeSettings
from ..settings.judge import JudgeSettings
from .statements import Statement, all_sentences, facts, source_sentence, stripped_hedges

QUOTE = 90                 # characters of a statement quoted in a reason
NEAR_COPY = 0.6            # word-order similarity at which a statement restates a sentence (a changed slot contradicts it)
# SFV for a statement the pool neither supports nor refutes: a retrieved passage may well be the only
# one to say something; a conclusion should rest on corroborated evidence.
# A tool's computed sentence is not something any passage states.
NOT_ENOUGH_SCORE = {StageKind.RETRIEVE: 0.5, StageKind.TOOL: 0.0}
NOT_ENOUGH_CONCLUSION = 0.75
_UNASKED = object()


@dataclass(frozen=True)
class Reading:
    score: float
    reasons: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()      # passage ids blamed
    support: float = 1.0                # SFV: weighted share of statements the pool supports
    answers: float = 1.0                # SFV: how far the judge reads the conclusion as its sub-question's answer


# A judge asked from the monitors' worker thread: P(yes) for each candidate as the answer the passages give to
# the question, or None when it could not read (engine.verify.judge.JudgeVerifier.read_sync's first half).
JudgeRead = Callable[[str, Sequence[Chunk], Sequence[str]], Sequence[float] | None]


class Monitors:
    """judge: reads a reasoning stage's conclusion that is not the engine's own reader's (a reasoner agent's,
    or a faulty one) against its sub-question and passages, beside the engine's own conclusion read the same way
    ([judge] answers_at and margin, as for answers); None: the word checks alone."""

    def __init__(self, embedder, settings: CascadeSettings, *, coverage: float = 0.8, alignment: float = 0.55,
                 judge: JudgeRead | None = None, judge_settings: JudgeSettings = JudgeSettings()) -> None:
        self.embedder = embedder
        self.settings = settings
        self.verifier = EvidenceVerifier(embedder, coverage=coverage, alignment=alignment, name="charm-sfv")
        self.judge, self.judge_settings = judge, judge_settings

    # --- SFV -------------------------------------------------------------------------------
    def sfv(self, trajectory: Trajectory, result: StageResult, said: Sequence[Statement]) -> Reading:
        pool = trajectory.pool
        if not said or not pool or result.kind is StageKind.FORMULATE:
            return Reading(0.0)
        worst, reasons, suspects, unsupported = 0.0, [], [], 0.0
        pooled = {c.id for c in pool}
        for st in said:
            judgement = self.verifier.judge_sync(st.text, pool)
            if (judgement.label is ClaimLabel.NOT_ENOUGH and st.text in result.entailed and st.chunk is not None
                    and st.chunk.id in pooled):
                # No quote, but a judge read it as entailed by the corroborated passage it cites: an honest
                # paraphrase (an LLM's own words), not a claim the pool leaves unsupported.
                continue
            if judgement.label is ClaimLabel.REFUTED:
                score = 1.0
                reasons.append(f"SFV: the consensus pool refutes \"{shorten(st.text, QUOTE)}\": {judgement.reason}")
            elif judgement.label is ClaimLabel.NOT_ENOUGH:
                score = NOT_ENOUGH_SCORE.get(result.kind, NOT_ENOUGH_CONCLUSION)
                reasons.append(f"SFV: no corroborated passage says \"{shorten(st.text, QUOTE)}\"")
            else:
                score = 0.0
            if score and st.chunk is not None:
                suspects.append(st.chunk.id)
            worst = max(worst, score * st.weight)
            unsupported += score * st.weight
        support = 1.0 - unsupported / sum(st.weight for st in said)
        answers, why, blamed = self._judged(trajectory, result, said)
        if why:
            worst = max(worst, 1.0)
            reasons.append(why)
            suspects += blamed
        return Reading(round(worst, 3), tuple(reasons), tuple(dict.fromkeys(suspects)), round(support, 3),
                       answers=round(answers, 3))

    def _judged(self, trajectory: Trajectory, result: StageResult, said: Sequence[Statement]) -> tuple[float, str, list]:
        """(how far the conclusion answers its sub-question by the judge's reading, 0..1; why it does not, or "";
        the passages blamed). The cheap check first: a conclusion that is the engine's own reader's is not asked."""
        if self.judge is None or result.kind is not StageKind.REASON or not said:
            return 1.0, "", []
        query = result.inputs[-1] if result.inputs else trajectory.question
        evidence = list(result.evidence) or list(trajectory.pool)
        own = conclude(query, evidence, trajectory.question).claim
        stated = [st for st in said if own is None or st.text != own.text]
        if not stated:
            return 1.0, "", []
        passages = list({c.id: c for c in [*(st.chunk for st in stated if st.chunk is not None),
                                            *(c for c in evidence if own is not None and c.id in own.citations)]}.values())
        candidates = [st.text for st in stated] + ([own.text] if own is not None else [])
        scores = self.judge(query, passages, candidates)
        if not scores:
            return 1.0, "", []
        reference = scores[-1] if own is not None else None
        settings, worst, why, blamed = self.judge_settings, 1.0, "", []
        for st, p in zip(stated, scores):
            below = p < settings.answers_at or (reference is not None and p < reference - settings.margin)
            if not below:
                continue
            share = p / reference if reference else p
            if share < worst:
                worst = share
                beside = f"; the engine's own conclusion reads {reference:.2f}" if reference is not None else ""
                why = (f"SFV: the judge reads \"{shorten(st.text, QUOTE)}\" as not the answer its passages give to "
                       f"\"{shorten(query, QUOTE)}\" (P = {p:.2f}{beside})")
            if st.chunk is not None:
                blamed.append(st.chunk.id)
        return max(0.0, min(1.0, worst)), why, blamed

    # --- CSCT ------------------------------------------------------------------------------
    def csct(self, trajectory: Trajectory, result: StageResult, said: Sequence[Statement]) -> Reading:
        if not said or result.kind is StageKind.FORMULATE:
            return Reading(0.0)
        before = trajectory.upto(result.index)
        touched, pool = trajectory.record, trajectory.pool
        # A retrieved passage's facts are new unless some other passage or stage has them.
        sources = ({st.chunk.text for st in said if st.chunk is not None}
                   if result.kind is StageKind.RETRIEVE else set())
        # The trajectory's record: every passage it has touched (a near-copy beside its original
        # contradicts it) and what earlier stages stated.
        record = all_sentences(touched) + [c.text for s in before.stages for c in s.claims]
        travelling = {c.text for s in trajectory.stages for c in s.evidence}
        known = facts(trajectory.question) | {f for s in before.stages for f in facts(s.output)}
        if result.kind is StageKind.RETRIEVE:
            known |= {f for c in touched if c.text not in sources for f in facts(c.text)}
        else:
            # A conclusion may only use what earlier stages handed on (stage i-1's output is its context).
            known |= {f for s in before.stages for c in (*s.evidence, *s.claims) for f in facts(c.text)}
        pooled = {c.text for c in pool}
        worst, reasons, suspects = 0.0, [], []
        query = result.inputs[-1] if result.inputs else trajectory.question
        consensus = _UNASKED     # what the pool concludes for the query: computed once, when first needed
        for st in said:
            score, why = self._contradiction(st, record, travelling)
            if score < 1.0 and st.chunk is not None and st.chunk.text not in pooled and pool:
                if consensus is _UNASKED:
                    consensus = conclude(query, pool, trajectory.question).claim
                other, reason = _against_consensus(st, consensus, query, trajectory.question)
                if other > score:
                    score, why = other, reason
            # Names or numbers the trajectory has never seen: where did the stage get them? A retrieved
            # passage may bring new facts (that is its job) once another source returned it too.
            own_pooled = st.chunk is not None and st.chunk.text in pooled
            checks_novelty = result.kind is not StageKind.RETRIEVE or not own_pooled
            new = facts(st.text) - known if checks_novelty else set()
            if new and score < 1.0:
                novelty = min(1.0, 0.5 + 0.25 * len(new))
                if novelty > score:
                    score, why = novelty, f"CSCT: names or numbers new to the trajectory: {', '.join(sorted(new)[:4])}"
            if score:
                reasons.append(why)
                if st.chunk is not None:
                    suspects.append(st.chunk.id)
            worst = max(worst, score * st.weight)
        drift = self._drift(trajectory, result)
        if drift > worst:
            worst = drift
            reasons.append(f"CSCT: the stage drifted from the question and the trajectory ({drift:.2f})")
        return Reading(round(worst, 3), tuple(reasons), tuple(dict.fromkeys(suspects)))

    def _contradiction(self, st: Statement, record: list[str], travelling: set[str]) -> tuple[float, str]:
        """1.0 when the statement restates a sentence of a passage it travels with, with a slot changed;
        0.6 when that sentence is only in a passage the trajectory saw and set aside. Only a near-copy
        can contradict it this way, so sentences sharing under half its words are never compared."""
        mine = set(content_words(st.text))
        if not mine:
            return 0.0, ""
        for sentence in record:
            if sentence == st.text or overlap(mine, set(content_words(sentence))) < 0.5:
                continue
            # Two sentences in the same frame about different things ("X is a South Korean boy group",
            # "Y is a South Korean boy group") are no contradiction: only a near-copy is.
            if _word_order_similarity(st.text, sentence, NEAR_COPY) < NEAR_COPY:
                continue
            found = conflicts(st.text, sentence, capitals=mid_sentence_capitals([st.text, sentence]))
            if found:
                travels = any(sentence in text for text in travelling)
                return (1.0 if travels else 0.6,
                        f"CSCT: \"{shorten(st.text, QUOTE)}\" contradicts \"{shorten(sentence, QUOTE)}\": {found[0].describe()}")
        return 0.0, ""

    def _drift(self, trajectory: Trajectory, result: StageResult) -> float:
        """How far a conclusion strays from the question (shared words) and from everything the
        trajectory handed it (cosine to earlier claims and passages, whose vectors are cached)."""
        # Only conclusions can drift; a retrieve stage's output is a list of titles.
        if not result.output.strip() or result.kind in (StageKind.FORMULATE, StageKind.RETRIEVE):
            return 0.0
        asked = overlap(set(content_words(result.output)), set(content_words(trajectory.question)))
        earlier = list(dict.fromkeys([c.text for s in trajectory.stages[:result.index] for c in s.claims] +
                                     [c.text for s in trajectory.stages[:result.index] for c in s.evidence]))
        closest = asked
        if earlier:
            matrix = self._vectors(earlier + [result.output])
            closest = max(closest, float(np.max(matrix[:-1] @ matrix[-1])))
        floor = self.settings.drift_floor
        return round((floor - closest) / floor, 3) if closest < floor else 0.0

    def _vectors(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed_passages(texts))

    # --- CPM -------------------------------------------------------------------------------
    def cpm(self, trajectory: Trajectory, result: StageResult, said: Sequence[Statement], support: float,
            answers: float = 1.0) -> Reading:
        """answers: SFV's judge reading of the conclusion as its sub-question's answer (1.0 when not read): a
        conclusion read as no answer justifies no more confidence than that share."""
        if result.kind is StageKind.FORMULATE:
            return Reading(0.0)
        calibrated = round(self.calibrated(trajectory, result, said) * answers, 3)
        margin = self.settings.confidence_margin
        excess = result.confidence - calibrated
        reasons, score = [], 0.0
        if excess > margin:
            score = min(1.0, (excess - margin) / 0.2)
            reasons.append(f"CPM: confidence {result.confidence:.2f} where its upstream justifies {calibrated:.2f}")
        gap = result.confidence - support
        if gap > 6 * margin:
            # Sure of what the consensus pool does not back (a fresh passage may be the only source: slack).
            value = min(1.0, (gap - 6 * margin) / 0.3)
            score = max(score, value)
            reasons.append(f"CPM: confidence {result.confidence:.2f} while the pool backs {support:.2f}")
        if result.kind is not StageKind.RETRIEVE:
            for st in said:
                dropped = stripped_hedges(source_sentence(st), st.text)
                if dropped:
                    score = max(score, 0.6)
                    reasons.append(f"CPM: hedges dropped from its source: {', '.join(sorted(dropped))}")
                    break
        return Reading(round(score, 3), tuple(reasons), support=calibrated)

    @staticmethod
    def calibrated(trajectory: Trajectory, result: StageResult, said: Sequence[Statement]) -> float:
        """The confidence a stage can pass on: no more than its weakest upstream stage, and for a
        conclusion, times how much of its sub-question its statements and their sources answer."""
        upstream = [s.confidence for s in trajectory.stages[:result.index] if s.kind is not StageKind.FORMULATE]
        ceiling = min(upstream, default=1.0)
        asked = set(content_words(result.inputs[-1])) if result.inputs else set()
        if result.kind is not StageKind.REASON or not asked or not said:
            return round(ceiling, 3)
        answered = {w for st in said for w in content_words(st.text)}
        answered |= {w for st in said if st.chunk is not None for w in content_words(st.chunk.title)}
        return round(ceiling * len(asked & answered) / len(asked), 3)


def _against_consensus(st: Statement, consensus: Claim | None, query: str, question: str) -> tuple[float, str]:
    """A statement from a passage no second source returned, set beside what the corroborated passages
    conclude for the same (sub-)question (`consensus`): if they conclude something else, the trajectory
    is about to rest on the one source that disagrees with the rest."""
    if consensus is None:
        return 0.0, ""
    asked = set(content_words(query)) | set(content_words(question))
    theirs = set(content_words(consensus.text)) - asked
    ours = set(content_words(st.text)) - asked
    if not theirs or not ours or overlap(theirs, ours) >= 0.3:
        return 0.0, ""
    return 1.0, (f"CSCT: rests on one source's \"{shorten(st.text, QUOTE)}\" where the corroborated passages conclude "
                 f"\"{shorten(consensus.text, QUOTE)}\"")
