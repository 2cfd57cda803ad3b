"""Secure retrieval: from several retrievers' lists to a safe context, each passage with its reasons.

clean → group identical texts → features (embedding, metadata, consistency, who returned it)
→ anomalies (HDBSCAN density, echo clusters, edited copies, same-id disputes)
→ reputation- and agreement-weighted votes → quorum + evidence → top K.

Counts alone never decide: colluders can be a majority, so a passage also needs its support to
span the fleet's weight (quorum_share) and must not be an uncorroborated echo or an edited copy.
"""
from __future__ import annotations

import datetime as dt
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..config import RetrievalSettings
from ..corpus import content_hash
from ..types import Chunk, ChunkExplanation, ContextChunk
from .anomaly import density_labels, echo_clusters, edited_copies
from .clean import Dropped, clean
from .consensus import agent_agreement, vote_weights
from .features import Passage, internally_consistent, metadata_confidence

FULL, OPTIMISTIC = "full", "optimistic"
EXCLUDING_FLAGS = ("echo", "tampered", "disputed")


@dataclass(frozen=True)
class Suspect:
    agent_id: str
    reason: str


@dataclass(frozen=True)
class Position:
    """A claim that a group of passages pushed and the defence kept out of the context."""
    claim: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    agents: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class RetrievalResult:
    context: tuple[ContextChunk, ...]
    excluded: tuple[ContextChunk, ...]
    dropped: tuple[Dropped, ...]
    suspects: tuple[Suspect, ...]
    positions: tuple[Position, ...]
    agreement: Mapping[str, float]
    mode: str
    fallback: bool
    abstain_reason: str = ""      # set when the evidence conflicts and the defence cannot tell which side is true
    timings_ms: Mapping[str, float] = field(default_factory=dict)


class SecureRetrieval:
    def __init__(self, settings: RetrievalSettings, embedder=None, today: dt.date | None = None) -> None:
        self.settings = settings
        self.embedder = embedder          # needed for the full mode only
        self.today = today or dt.date.today()

    def run(self, question: str, replies: Mapping[str, tuple[Chunk, ...]], *,
            reputations: Mapping[str, float] | None = None, kinds: Mapping[str, str] | None = None,
            mode: str = FULL) -> RetrievalResult:
        s, timings = self.settings, {}
        started = time.perf_counter()
        reputations = dict(reputations or {})
        kinds = dict(kinds or {})
        dropped: list[Dropped] = []
        cleaned = {agent: clean(agent, tuple(chunks), s, dropped) for agent, chunks in replies.items()}

        # Same id, different text: the text with more weight behind it wins; the rest are disputed.
        by_id: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for agent, chunks in cleaned.items():
            for chunk in chunks:
                by_id[chunk.id][content_hash(chunk.text)].append(agent)
        disputed_keys: dict[str, tuple[str, ...]] = {}
        id_disputes: dict[str, set[str]] = defaultdict(set)
        for chunk_id, variants in by_id.items():
            if len(variants) > 1:
                ranked = sorted(variants.items(), key=lambda kv: -sum(reputations.get(a, 1.0) for a in kv[1]))
                for key, agents in ranked[1:]:
                    disputed_keys[key] = tuple(agents)
                id_disputes[chunk_id].update(a for _, agents in ranked[1:] for a in agents)

        passages, lists = self._group(cleaned)
        timings["clean"] = _ms(started)

        started = time.perf_counter()
        vectors = query_vec = None
        if mode == FULL and passages and self.embedder is not None:
            vectors = np.asarray(self.embedder.embed_passages([p.chunk.text for p in passages]), dtype=np.float32)
            query_vec = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        timings["embed"] = _ms(started)

        started = time.perf_counter()
        agents = list(cleaned)
        agreement = agent_agreement(lists, vectors)
        weights = vote_weights(agents, reputations, agreement)
        total_weight = sum(weights.values()) or 1.0
        support = [sum(weights[a] for a in p.agents) for p in passages]
        flags: list[set[str]] = [set() for _ in passages]
        notes: list[str] = ["" for _ in passages]
        labels = np.full(len(passages), -1)
        positions: list[Position] = []
        for i, p in enumerate(passages):
            if p.key in disputed_keys:
                flags[i].add("disputed")
                notes[i] = "another text under the same id has more support"
            if not internally_consistent(p.chunk.text):
                flags[i].add("inconsistent")
        if vectors is not None:
            # Thresholds are on one scale whatever the model: rescale cosines above its unrelated-text floor.
            floor = getattr(self.embedder, "similarity_floor", 0.0)
            similarity = np.clip((vectors @ vectors.T - floor) / (1.0 - floor), 0.0, 1.0)
            labels = density_labels(vectors, s.min_cluster_size)
            for low, high in edited_copies(passages, similarity, support, s.tamper_similarity).items():
                flags[low].add("tampered")
                notes[low] = f"a near-copy of [{passages[high].chunk.id}] with different numbers, names or polarity"
            # Edited and disputed copies are not independent voices: they never make up an echo.
            independent = np.array([not (f & {"tampered", "disputed"}) for f in flags])
            echo_similarity = np.where(np.outer(independent, independent), similarity, 0.0)
            for cluster in echo_clusters(passages, echo_similarity, question, threshold=s.echo_similarity,
                                         core_share=s.echo_core_share, corroboration=s.corroboration,
                                         min_size=s.echo_min_size):
                if cluster.corroborated:
                    continue
                for i in cluster.members:
                    flags[i].add("echo")
                    notes[i] = (f"one of {len(cluster.members)} near-duplicates pushing "
                                f"'{' '.join(cluster.claim[:6])}' that no independent passage corroborates")
                positions.append(Position(
                    claim=cluster.claim, chunk_ids=tuple(passages[i].chunk.id for i in cluster.members),
                    agents=tuple(sorted({a for i in cluster.members for a in passages[i].agents})),
                    reason=f"{len(cluster.members)} near-duplicate passages, corroboration {cluster.corroboration:.0%}"))
        timings["anomaly"] = _ms(started)

        started = time.perf_counter()
        quorum_applies = len(agents) >= 3
        scored: list[tuple[float, bool, ContextChunk]] = []
        for i, p in enumerate(passages):
            share = support[i] / total_weight
            if labels[i] == -1 and share < s.quorum_share and vectors is not None and quorum_applies:
                flags[i].add("outlier")
            votes = sum(weights[a] / (s.rrf_k + rank) for a, rank in p.returned_by)
            meta = metadata_confidence(p.chunk, self.today)
            agent_kinds = tuple(sorted({kinds.get(a, a) for a in p.agents}))
            evidence = (0.6 + 0.4 * meta) * (1.0 if len(agent_kinds) >= 2 else 0.8)
            if "inconsistent" in flags[i]:
                evidence *= 0.5
            sim = float(vectors[i] @ query_vec) if vectors is not None else 0.0
            explanation = ChunkExplanation(
                votes=round(votes, 5), support_share=round(share, 3), kinds=agent_kinds,
                metadata_confidence=meta, query_similarity=round(sim, 3), cluster=int(labels[i]),
                flags=tuple(sorted(flags[i])), note=notes[i])
            context_chunk = ContextChunk(chunk=p.chunk, score=round(votes * evidence, 6), supported_by=p.agents,
                                         disputed_by=tuple(sorted(id_disputes.get(p.chunk.id, ()))),
                                         explanation=explanation)
            excluded = bool(flags[i] & set(EXCLUDING_FLAGS))
            eligible = not excluded and (not quorum_applies or share >= s.quorum_share)
            scored.append((0.0 if excluded else 1.0, eligible, context_chunk))
        scored.sort(key=lambda item: (-item[2].score, item[2].chunk.id))
        eligible = [c for keep, ok, c in scored if ok]
        fallback = not eligible
        if fallback:
            eligible = [c for keep, ok, c in scored if keep]
        context = tuple(eligible[:s.context_k])
        excluded_chunks = tuple(c for keep, ok, c in scored if not keep)
        suspects = self._suspects(cleaned, passages, flags)
        timings["vote"] = _ms(started)
        return RetrievalResult(context=context, excluded=excluded_chunks, dropped=tuple(dropped),
                               suspects=suspects, positions=tuple(positions), agreement=agreement,
                               mode=mode, fallback=fallback, timings_ms=timings)

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
    def _suspects(cleaned: Mapping[str, list[Chunk]], passages: list[Passage], flags: list[set[str]]) -> tuple[Suspect, ...]:
        """An agent whose top passage, or at least two of its passages, were kept out as anomalies
        that most other agents did not return."""
        bad_by_agent: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for i, p in enumerate(passages):
            reasons = flags[i] & set(EXCLUDING_FLAGS)
            # A poisoned corpus makes honest agents return anomalies too: only a minority's anomaly counts.
            if not reasons or len(p.agents) * 2 >= len(cleaned):
                continue
            for agent, rank in p.returned_by:
                bad_by_agent[agent].append((rank, "/".join(sorted(reasons))))
        suspects = []
        for agent, bad in sorted(bad_by_agent.items()):
            if len(bad) >= 2 or min(rank for rank, _ in bad) == 0:
                kinds = ", ".join(sorted({why for _, why in bad}))
                suspects.append(Suspect(agent, f"{len(bad)} of its {len(cleaned[agent])} passages kept out ({kinds})"))
        return tuple(suspects)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
