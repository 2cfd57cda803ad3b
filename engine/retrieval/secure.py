"""Secure retrieval: from several retrievers' lists to a safe context, each passage with its reasons.

clean → group identical texts → features (embedding, metadata, consistency, who returned it)
→ anomalies (same-id disputes, edited copies, echo clusters, HDBSCAN density)
→ reputation- and agreement-weighted votes → quorum + evidence → top K.

Counts alone never decide: colluders can be a majority, so a passage also needs its support to
span the fleet's weight (quorum_share), must not be an edited copy, and a cluster of
near-duplicates counts as one voice that independent passages can overrule.
"""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..config import RetrievalSettings
from ..stats import elapsed_ms
from ..text import content_hash
from ..text import content_words, overlap
from ..types import Chunk, ChunkExplanation, ContextChunk, PassageFlag, RetrievalMode, Suspect, SuspectReason
from ..verify.alignment import conflicts
from ..verify.sentences import answer_words, best_sentence
from .anomaly import (LOOKALIKE_BAND, EchoVerdict, density_labels, edited_copies, judge_echo,
                      near_duplicate_groups)
from .clean import Dropped, clean
from .consensus import agent_agreement, vote_weights
from .features import Passage, internally_consistent, metadata_confidence
from .lexical import rouge_links

EXCLUDING_FLAGS = frozenset({PassageFlag.ECHO, PassageFlag.TAMPERED, PassageFlag.DISPUTED})  # its retriever is reported
ANOMALY_FLAGS = EXCLUDING_FLAGS | {PassageFlag.OUTLIER}    # a passage with any of these never enters the context
# Near-duplicates it takes (with half of all retrieved) to be the mainstream: a count of its own, not a
# multiple of echo_min_size, so that counting pairs as echoes does not lower it.
MAINSTREAM_SIZE = 9
OFF_TOPIC = 0.15     # rescaled query similarity below which a lone passage is off the question's topic


@dataclass(frozen=True)
class Position:
    """A claim that a group of passages pushed and the defence kept out of the context."""
    claim: tuple[str, ...]
    answer: str
    chunk_ids: tuple[str, ...]
    agents: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class RetrievalResult:
    """context: the safe context, best first. excluded: every other distinct passage any retriever
    returned, each with its reason (an anomaly flag, below quorum, or an echo's extra copy)."""
    context: tuple[ContextChunk, ...]
    excluded: tuple[ContextChunk, ...]
    dropped: tuple[Dropped, ...]
    suspects: tuple[Suspect, ...]
    positions: tuple[Position, ...]
    agreement: Mapping[str, float]
    mode: RetrievalMode
    fallback: bool
    abstain_reason: str = ""      # set when the evidence conflicts and the defence cannot tell which side is true
    timings_ms: Mapping[str, float] = field(default_factory=dict)


@dataclass
class _Marks:
    """What the anomaly pass found, per passage index."""
    flags: list[set[PassageFlag]]
    notes: list[str]
    redundant: set[int] = field(default_factory=set)      # an echo's extra copies: one voice is enough
    edited_from: dict[int, int] = field(default_factory=dict)   # a tampered copy -> the original it departs from
    positions: list[Position] = field(default_factory=list)
    unanswered: str = ""          # an echo was kept out and nothing independent answers the question


AHEAD_KEPT = 64


class SecureRetrieval:
    def __init__(self, settings: RetrievalSettings, embedder=None, today: dt.date | None = None) -> None:
        self.settings = settings
        self.embedder = embedder          # needed for the full mode only
        self.today = today or dt.date.today()
        self._ahead: dict[str, np.ndarray] = {}     # question vectors computed while the retrievers work
        self._ahead_lock = threading.Lock()

    def embed_question(self, question: str) -> None:
        """Computes the question's vector ahead of run() (the pipeline calls it while the retrievers work:
        the model's time then hides behind theirs); run() takes it once."""
        if self.embedder is None:
            return
        vector = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        with self._ahead_lock:
            self._ahead[question] = vector
            while len(self._ahead) > AHEAD_KEPT:       # a question whose run never came
                self._ahead.pop(next(iter(self._ahead)))

    def _question_vector(self, question: str) -> np.ndarray:
        with self._ahead_lock:
            ahead = self._ahead.pop(question, None)
        return ahead if ahead is not None else np.asarray(self.embedder.embed_query(question), dtype=np.float32)

    def run(self, question: str, replies: Mapping[str, tuple[Chunk, ...]], *,
            reputations: Mapping[str, float] | None = None, kinds: Mapping[str, str] | None = None,
            mode: RetrievalMode = RetrievalMode.FULL) -> RetrievalResult:
        s, timings = self.settings, {}
        mode = RetrievalMode(mode)       # a caller's "strict" is the mode too
        started = time.perf_counter()
        reputations, kinds = dict(reputations or {}), dict(kinds or {})
        dropped: list[Dropped] = []
        cleaned = {agent: clean(agent, tuple(chunks), s, dropped) for agent, chunks in replies.items()}
        disputed_keys, tied_keys, id_disputes = self._id_disputes(cleaned, reputations)
        passages, lists = self._group(cleaned)
        timings["clean"] = elapsed_ms(started, 2)

        started = time.perf_counter()
        vectors = query_vec = None
        if mode in (RetrievalMode.FULL, RetrievalMode.STRICT) and passages and self.embedder is not None:
            vectors = np.asarray(self.embedder.embed_passages([p.chunk.text for p in passages]), dtype=np.float32)
            query_vec = self._question_vector(question)
        timings["embed"] = elapsed_ms(started, 2)

        started = time.perf_counter()
        agents = list(cleaned)
        agreement = agent_agreement(lists, vectors)
        weights = vote_weights(agents, reputations, agreement)
        total_weight = sum(weights.values()) or 1.0
        shares = [sum(weights[a] for a in p.agents) / total_weight for p in passages]
        quorum_applies = len(agents) >= 3
        below = [quorum_applies and share < s.quorum_share for share in shares]
        marks = _Marks([set() for _ in passages], ["" for _ in passages])
        for i, p in enumerate(passages):
            if p.key in disputed_keys:
                marks.flags[i].add(PassageFlag.DISPUTED)
                marks.notes[i] = ("another text under the same id has as much support, and nothing settles which "
                                  "is true" if p.key in tied_keys else
                                  "another text under the same id has more support, or states what other "
                                  "passages state")
            if not internally_consistent(p.chunk.text):
                marks.flags[i].add(PassageFlag.INCONSISTENT)
        labels = np.full(len(passages), -1)
        if vectors is not None:
            labels = density_labels(vectors, s.min_cluster_size)
            self._vector_anomalies(question, passages, vectors, query_vec, shares, below, marks,
                                   lone_mirrors=mode is RetrievalMode.STRICT)
        timings["anomaly"] = elapsed_ms(started, 2)

        started = time.perf_counter()
        floor = getattr(self.embedder, "similarity_floor", 0.0)
        scored: list[ContextChunk] = []
        for i, p in enumerate(passages):
            sim = float(vectors[i] @ query_vec) if vectors is not None else 0.0
            lone = vectors is not None and labels[i] == -1
            if lone and below[i] and (sim - floor) / (1.0 - floor) < OFF_TOPIC:
                marks.flags[i].add(PassageFlag.OUTLIER)
                marks.notes[i] = marks.notes[i] or "in no cluster, off the question's topic, and returned by too few retrievers"
            if not marks.notes[i] and below[i]:
                marks.notes[i] = (f"below quorum: returned by {len(p.agents)} of {len(agents)} retrievers "
                                  f"({shares[i]:.0%} of the vote weight)")
            votes = sum(weights[a] / (s.rrf_k + rank) for a, rank in p.returned_by)
            meta = metadata_confidence(p.chunk, self.today)
            agent_kinds = tuple(sorted({kinds.get(a, a) for a in p.agents}))
            # Evidence beyond counts: metadata, corroboration across retriever kinds, self-consistency.
            # Density is no evidence either way here: genuine passages on different entities are often
            # in no cluster; only together with low support and an off-topic text does it mark an outlier.
            evidence = (0.6 + 0.4 * meta) * (1.0 if len(agent_kinds) >= 2 else 0.8)
            if PassageFlag.INCONSISTENT in marks.flags[i]:
                evidence *= 0.5
            explanation = ChunkExplanation(
                votes=round(votes, 5), support_share=round(shares[i], 3), kinds=agent_kinds,
                metadata_confidence=meta, query_similarity=round(sim, 3), cluster=int(labels[i]),
                flags=tuple(sorted(marks.flags[i])), note=marks.notes[i])
            scored.append(ContextChunk(chunk=p.chunk, score=round(votes * evidence, 6), supported_by=p.agents,
                                       disputed_by=tuple(sorted(id_disputes.get((p.chunk.id, p.key), ()))),
                                       explanation=explanation))
        suspects = self._suspects(cleaned, passages, marks, tied_keys, id_disputes)
        context, excluded, fallback = self._select(scored, marks, below, {x.agent_id for x in suspects})
        timings["vote"] = elapsed_ms(started, 2)
        if not context:
            abstain = "every passage returned was kept out" if passages else "no retriever returned a usable passage"
        else:
            abstain = marks.unanswered    # the defence cannot tell whether that one voice is true
        return RetrievalResult(context=context, excluded=excluded, dropped=tuple(dropped), suspects=suspects,
                               positions=tuple(marks.positions), agreement=agreement, mode=mode,
                               fallback=fallback, abstain_reason=abstain, timings_ms=timings)

    # --- steps -----------------------------------------------------------------------------
    @staticmethod
    def _id_disputes(cleaned: Mapping[str, list[Chunk]], reputations: Mapping[str, float]):
        """Same id, different text: the text with strictly more weight behind it wins and the rest are
        disputed; on a tie no text wins (all are disputed), so the order in which retrievers answered
        never decides which text is the honest one."""
        by_id: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        texts: dict[str, str] = {}
        for agent, chunks in cleaned.items():
            for chunk in chunks:
                by_id[chunk.id][content_hash(chunk.text)].append(agent)
                texts[content_hash(chunk.text)] = chunk.text
        disputed_keys: set[str] = set()
        tied_keys: set[str] = set()     # disputed on a tie: nobody can say which sender lied
        id_disputes: dict[tuple[str, str], set[str]] = {}   # (id, text hash) -> agents that sent another text
        for chunk_id, variants in by_id.items():
            if len(variants) > 1:
                weight = {key: sum(reputations.get(a, 1.0) for a in agents) for key, agents in variants.items()}
                ranked = sorted(variants.items(), key=lambda kv: (-weight[kv[0]], kv[0]))
                tied = weight[ranked[0][0]] <= weight[ranked[1][0]]
                if tied and len(ranked) == 2:
                    # Equal support: the text whose changed facts the other passages also state wins.
                    others = " ".join(t for key, t in texts.items() if key not in variants).lower()
                    winner = _corroborated_variant(texts[ranked[0][0]], texts[ranked[1][0]], others)
                    if winner is not None:
                        ranked = ranked if winner == 0 else ranked[::-1]
                        tied = False
                disputed_keys.update(key for key, _ in (ranked if tied else ranked[1:]))
                if tied:
                    tied_keys.update(key for key, _ in ranked)
                for key, _ in ranked:
                    id_disputes[(chunk_id, key)] = {a for other, agents in ranked if other != key for a in agents}
        return disputed_keys, tied_keys, id_disputes

    def _vector_anomalies(self, question: str, passages: list[Passage], vectors: np.ndarray, query_vec: np.ndarray,
                          shares: list[float], below: list[bool], marks: _Marks, lone_mirrors: bool = False) -> None:
        s = self.settings
        # Thresholds are on one scale whatever the model: rescale cosines above its unrelated-text floor.
        floor = getattr(self.embedder, "similarity_floor", 0.0)
        similarity = np.clip((vectors @ vectors.T - floor) / (1.0 - floor), 0.0, 1.0)
        to_question = (vectors @ query_vec - floor) / (1.0 - floor)
        chunks = [p.chunk for p in passages]
        for low, high in edited_copies(chunks, similarity, shares, s.tamper_similarity, below).items():
            marks.flags[low].add(PassageFlag.TAMPERED)
            marks.edited_from[low] = high
            marks.notes[low] = f"a near-copy of [{chunks[high].id}] with different numbers, names or polarity"
        # Edited and disputed copies are not independent voices: they never make up an echo.
        independent = np.array([not (f & {PassageFlag.TAMPERED, PassageFlag.DISPUTED}) for f in marks.flags])
        # Two texts that share long runs of words in order are near-duplicates too, whatever the embedder says
        # (TrustRAG's n-gram test: texts written for one question share its n-grams).
        lexical = rouge_links([c.text for c in chunks], s.echo_rouge)
        linked = np.where(lexical, np.maximum(similarity, s.echo_similarity), similarity)
        groups = near_duplicate_groups(np.where(np.outer(independent, independent), linked, 0.0),
                                       s.echo_similarity, s.echo_min_size)
        claimed: set[int] = set()
        for group in groups:
            if len(group) == 2 and _another_source_and_date(chunks[group[0]], chunks[group[1]]):
                # A pair from two sources written at two dates is two witnesses (news one site reports
                # and another repeats), not one hand's copies: the weakest echo gets the benefit of the
                # doubt a lone mirror's corroboration gets. Three or more are judged whatever their dates.
                continue
            members = set(group)
            claim = set(answer_words(best_sentence(question, [chunks[i] for i in group]), question))
            # Looser copies of the group: look-alikes just below the near-duplicate line that carry its
            # claim. They belong with the group; genuine passages on the same entities do not.
            lookalikes = [i for i in range(len(chunks)) if i not in members and independent[i]
                          and similarity[i, group].max() >= s.echo_similarity - LOOKALIKE_BAND]
            copies = [i for i in lookalikes if claim and overlap(claim, set(content_words(chunks[i].text))) >= 0.5]
            others = [i for i in range(len(chunks)) if i not in members and i not in copies and independent[i]]
            # Near-duplicates are an echo only when they mirror the question more closely than any
            # passage unlike them does: planted texts are written to be retrieved; families of genuine
            # articles (one team's seasons, one author's books) are not.
            unlike = [i for i in others if i not in lookalikes]
            if echo_margin(to_question, group, unlike) <= s.echo_margin:
                continue
            if len(group) >= MAINSTREAM_SIZE and 2 * len(group) >= int(independent.sum()):
                # Half or more of everything retrieved, and MAINSTREAM_SIZE near-duplicates: the
                # mainstream of the sources (web pages repeating one biography), one voice.
                # An attacker must plant that many copies and outnumber the rest to pass as it, and
                # then still counts once. (Six was too few: five planted texts and the honest
                # look-alikes a group gathers reach it.)
                verdict = EchoVerdict(False, "the mainstream of what was retrieved", False, (), "", "")
            else:
                verdict = judge_echo(question, [chunks[i] for i in group],
                                     [chunks[i] for i in others if not marks.flags[i] & ANOMALY_FLAGS],
                                     minority=all(shares[i] < 0.5 for i in group), corroboration=s.corroboration)
            if verdict.keep_out:
                if verdict.unanswered:
                    marks.unanswered = (f"the only passages that answer the question are {verdict.reason}: "
                                        f"'{verdict.cluster_answer[:160]}'")
                for i in group + copies:
                    marks.flags[i].add(PassageFlag.ECHO)
                    marks.notes[i] = f"one of {verdict.reason}" if i in members else \
                        f"a looser copy of an echo: {verdict.reason}"
                claimed.update(group + copies)
                marks.positions.append(Position(
                    claim=verdict.claim, answer=verdict.cluster_answer,
                    chunk_ids=tuple(chunks[i].id for i in group + copies),
                    agents=tuple(sorted({a for i in group + copies for a in passages[i].agents})),
                    reason=verdict.reason))
            else:
                best = max(group, key=lambda i: (shares[i], -i))
                for i in group:
                    if i != best and i not in claimed:
                        marks.redundant.add(i)
                        marks.notes[i] = f"near-duplicate of [{chunks[best].id}]: one voice ({verdict.reason})"

        if lone_mirrors:
            self._lone_mirrors(question, passages, similarity, to_question, independent, claimed, shares, marks)

    def _lone_mirrors(self, question: str, passages: list[Passage], similarity: np.ndarray, to_question: np.ndarray,
                      independent: np.ndarray, claimed: set[int], shares: list[float], marks: _Marks) -> None:
        """One or two planted texts make no cluster, but they share the echo's tell: written to be
        retrieved, they mirror the question far more closely than any independent passage does.
        Such a passage is judged as an echo of one: it stays only if an independent passage
        carries its claim."""
        s = self.settings
        chunks = [p.chunk for p in passages]
        near = s.echo_similarity - LOOKALIKE_BAND
        for i in range(len(passages)):
            if i in claimed or not independent[i] or marks.flags[i] & ANOMALY_FLAGS:
                continue
            unlike = [j for j in range(len(passages)) if j != i and independent[j] and similarity[i, j] < near]
            if not unlike or echo_margin(to_question, [i], unlike) <= s.mirror_margin:
                continue
            # Any passage that is not its near-duplicate may corroborate it (an honest source in other
            # words), and so may a near-duplicate from another source written at another date: planted
            # copies come from one hand at one time.
            others = [chunks[j] for j in range(len(passages)) if j != i and independent[j]
                      and not marks.flags[j] & ANOMALY_FLAGS
                      and (similarity[i, j] < s.echo_similarity or _another_source_and_date(chunks[i], chunks[j]))]
            verdict = judge_echo(question, [chunks[i]], others, minority=shares[i] < 0.5,
                                 corroboration=s.mirror_corroboration)
            if verdict.keep_out:
                marks.flags[i].add(PassageFlag.ECHO)
                marks.notes[i] = f"{verdict.reason}, mirroring the question more closely than any independent passage"
                # The rest of the context may not answer at all: rather than answer from it, abstain and
                # show the kept-out position (strict mode is for answers an operator reviews anyway).
                if not marks.unanswered:
                    marks.unanswered = (f"the passage that answers the question most directly mirrors it and "
                                        f"nothing independent corroborates it: '{verdict.cluster_answer[:160]}'")
                marks.positions.append(Position(
                    claim=verdict.claim, answer=verdict.cluster_answer, chunk_ids=(chunks[i].id,),
                    agents=passages[i].agents, reason=verdict.reason))

    def _select(self, scored: list[ContextChunk], marks: _Marks, below: list[bool],
                suspects: set[str]) -> tuple[tuple[ContextChunk, ...], tuple[ContextChunk, ...], bool]:
        """Top K of the passages with quorum and no anomaly; free places go to clean passages below
        quorum that no suspected agent returned (a passage only one retriever returned, only where
        settings.lone_spares allows); with nothing at quorum, the answer says so (fallback).
        A passage only one retriever returned never outranks one that two or more returned, at quorum or
        not: a single voice needs corroboration before it can push a corroborated passage out (else one
        Byzantine retriever's top pick, or one heavy vote, beats a passage two honest retrievers agree on
        whose vote weight falls short of quorum, and the defence does worse than a plain count)."""
        alone = [len(set(c.supported_by)) < 2 for c in scored]
        order = sorted(range(len(scored)), key=lambda i: (alone[i], below[i], -scored[i].score, scored[i].chunk.id))
        usable = [i for i in order if not (marks.flags[i] & ANOMALY_FLAGS) and i not in marks.redundant]
        allowed = [i for i in usable if not below[i] or (not set(scored[i].supported_by) & suspects
                                                         and (self.settings.lone_spares or not alone[i]))]
        chosen = allowed[:self.settings.context_k]
        fallback = bool(chosen) and all(below[i] for i in chosen)
        picked = set(chosen)
        excluded = tuple(scored[i] for i in order if i not in picked)
        return tuple(scored[i] for i in chosen), excluded, fallback

    @staticmethod
    def _group(cleaned: Mapping[str, list[Chunk]]) -> tuple[list[Passage], dict[str, list[int]]]:
        """Identical texts are one passage, whatever ids they came under."""
        index: dict[str, int] = {}
        returned: list[list[tuple[str, int]]] = []
        ids: list[dict[str, int]] = []
        chunks: list[Chunk] = []
        lists: dict[str, list[int]] = {}
        for agent, items in cleaned.items():
            lists[agent] = []
            for rank, chunk in enumerate(items):
                key = content_hash(chunk.text)
                if key not in index:
                    index[key] = len(chunks)
                    chunks.append(chunk)
                    returned.append([])
                    ids.append(defaultdict(int))
                i = index[key]
                returned[i].append((agent, rank))
                ids[i][chunk.id] += 1
                lists[agent].append(i)
        passages = []
        for key, i in index.items():
            best_id = max(ids[i].items(), key=lambda kv: kv[1])[0]
            chunk = chunks[i] if chunks[i].id == best_id else Chunk(best_id, chunks[i].text, chunks[i].source,
                                                                     chunks[i].score, chunks[i].metadata)
            passages.append(Passage(key=key, chunk=chunk, returned_by=tuple(returned[i])))
        return passages, lists

    @staticmethod
    def _suspects(cleaned: Mapping[str, list[Chunk]], passages: list[Passage], marks: _Marks,
                  tied_keys: set[str] = frozenset(),
                  id_disputes: Mapping[tuple[str, str], set[str]] | None = None) -> tuple[Suspect, ...]:
        """An agent whose top passage, or at least two of its passages, were kept out as anomalies
        that most other agents did not return. A text disputed on a tie blames no one: either
        sender may be the liar. Each suspect names its witnesses: the agents that returned the text
        that won (the other version under the same id, the original a tampered copy departs from)."""
        id_disputes = id_disputes or {}
        bad_by_agent: dict[str, list[tuple[int, set[str]]]] = defaultdict(list)
        witnesses_of: dict[str, set[str]] = defaultdict(set)
        for i, p in enumerate(passages):
            reasons = marks.flags[i] & EXCLUDING_FLAGS
            if p.key in tied_keys:
                reasons -= {PassageFlag.DISPUTED}
            # A poisoned corpus makes honest agents return anomalies too: only a minority's anomaly counts.
            if not reasons or len(p.agents) * 2 >= len(cleaned):
                continue
            seen = set()
            if PassageFlag.DISPUTED in reasons:
                seen |= set(id_disputes.get((p.chunk.id, p.key), ()))
            if PassageFlag.TAMPERED in reasons and i in marks.edited_from:
                seen |= set(passages[marks.edited_from[i]].agents)
            for agent, rank in p.returned_by:
                bad_by_agent[agent].append((rank, reasons))
                witnesses_of[agent] |= seen - {agent}
        suspects = []
        for agent, bad in sorted(bad_by_agent.items()):
            if len(bad) >= 2 or min(rank for rank, _ in bad) == 0:
                flags = set().union(*(reasons for _, reasons in bad))
                kinds = ", ".join(sorted(flags))
                suspects.append(Suspect(agent, f"{len(bad)} of its {len(cleaned[agent])} passages kept out ({kinds})",
                                        tuple(SuspectReason(f.value) for f in sorted(flags)),
                                        tuple(sorted(witnesses_of[agent]))))
        return tuple(suspects)


def _another_source_and_date(a: Chunk, b: Chunk) -> bool:
    source_a, source_b = a.metadata.get("source") or a.source, b.metadata.get("source") or b.source
    date_a, date_b = a.metadata.get("date"), b.metadata.get("date")
    return bool(source_a and source_b and date_a and date_b) and source_a != source_b and date_a != date_b


def _corroborated_variant(a: str, b: str, elsewhere: str) -> int | None:
    """0 or 1: the one of two texts under one id whose differing names and numbers appear in other
    passages while the other's do not (a tamperer's new value is stated nowhere else); None when
    that does not settle it."""
    a_to_b, b_to_a = conflicts(a, b), conflicts(b, a)
    if not a_to_b and not b_to_a:
        return None
    a_says = {c.claim_says.lower() for c in a_to_b} | {c.evidence_says.lower() for c in b_to_a}
    b_says = {c.evidence_says.lower() for c in a_to_b} | {c.claim_says.lower() for c in b_to_a}
    a_seen = any(_mentioned(v, elsewhere) for v in a_says - b_says)
    b_seen = any(_mentioned(v, elsewhere) for v in b_says - a_says)
    if a_seen != b_seen:
        return 0 if a_seen else 1
    return None


def _mentioned(value: str, text: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text) is not None


def echo_margin(to_question: np.ndarray, group: list[int], others: list[int]) -> float:
    """Mean question similarity of a group minus the best of the independent passages."""
    best_other = max((float(to_question[i]) for i in others), default=0.0)
    return float(np.mean(to_question[group])) - best_other
