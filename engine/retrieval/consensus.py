"""Local consensus among retrievers: how much each agent's list agrees with the others', and the
vote weight that follows from its reputation and that agreement."""
from __future__ import annotations

import numpy as np

from ..text import jaccard


def agent_agreement(lists: dict[str, list[int]], vectors: np.ndarray | None) -> dict[str, float]:
    """Mean over the other agents of: half the Jaccard overlap of returned passages, half the cosine
    of the lists' embedding centroids. Colluders agree with each other but not with the rest."""
    agents = list(lists)
    if len(agents) < 2:
        return {a: 1.0 for a in agents}
    centroids = {}
    if vectors is not None and len(vectors):
        for agent, items in lists.items():
            if items:
                c = vectors[items].mean(axis=0)
                centroids[agent] = c / (np.linalg.norm(c) or 1.0)
    agreement = {}
    for a in agents:
        scores = []
        for b in agents:
            if a == b:
                continue
            overlap = jaccard(set(lists[a]), set(lists[b])) if lists[a] or lists[b] else 0.0
            cosine = float(centroids[a] @ centroids[b]) if a in centroids and b in centroids else overlap
            scores.append(0.5 * overlap + 0.5 * max(0.0, cosine))
        agreement[a] = round(sum(scores) / len(scores), 4)
    return agreement


def vote_weights(agents: list[str], reputations: dict[str, float], agreement: dict[str, float]) -> dict[str, float]:
    """Reputation scaled by relative agreement (0.5 for the least agreeing list, 1.0 for the most)."""
    top = max(agreement.values(), default=1.0) or 1.0
    return {a: reputations.get(a, 1.0) * (0.5 + 0.5 * agreement.get(a, top) / top) for a in agents}
