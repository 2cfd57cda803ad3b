"""What a stage states, as sentences the monitors can check: a retrieve stage's statements are the
sentences of its top passages that answer its sub-question; other stages state their claims."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..stages.model import StageKind, StageResult
from ..text import numbers, sentences
from ..types import Chunk
from ..verify.sentences import rank_sentences
from ..verify.verifier import names

TOP_PASSAGES = 3           # a retrieve stage's passages the next stage leans on most
RANK_WEIGHT = (1.0, 0.6, 0.4)
HEDGES = frozenset("""about approximately around reportedly allegedly possibly probably perhaps likely may might
estimated roughly nearly almost some suggests suggested believed thought claimed rumoured rumored""".split())
_WORDS = re.compile(r"[A-Za-z']+")


@dataclass(frozen=True)
class Statement:
    text: str
    chunk: Chunk | None        # the passage it comes from or cites (None: it cites nothing the stage holds)
    weight: float              # how much the next stage leans on it (rank of its passage)


def statements(result: StageResult) -> list[Statement]:
    # A tool computes from conclusions the monitors already checked at their own stages; what it (or a
    # claim citing its computed passage) says is checked by recomputing, not against documents.
    if result.kind is StageKind.TOOL:
        return []
    if result.kind is StageKind.RETRIEVE:
        query = result.inputs[-1] if result.inputs else ""
        out = []
        for rank, chunk in enumerate(result.evidence[:TOP_PASSAGES]):
            ranked = rank_sentences(query, [chunk])
            if ranked:
                out.append(Statement(ranked[0].text, chunk, RANK_WEIGHT[rank]))
        return out
    by_id = {c.id: c for c in result.evidence}
    out = []
    for claim in result.claims:
        cited = next((by_id[c] for c in claim.citations if c in by_id), None)
        if claim.text.strip() and not (cited is not None and cited.metadata.get("computed")):
            out.append(Statement(claim.text, cited, 1.0))
    return out


def facts(text: str) -> set[str]:
    """The names and numbers a text states (what a cascade swaps)."""
    return {n.lower() for n in names(text)} | numbers(text)


def hedges(text: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(text)} & HEDGES


HEDGED_REACH = 2           # words after a hedge that it qualifies ("about 464", "reportedly grossed")


def stripped_hedges(source: str, statement: str) -> set[str]:
    """Hedges of the source sentence that the statement drops while it still states what they qualify (the
    words just after each): "Sinister grossed 87 million" from "Sinister reportedly grossed 87 million". A
    statement that leaves the hedged part out altogether ("Venus is the hottest planet" from "... at about 464
    °C") strips nothing."""
    said = {w.lower() for w in re.findall(r"[A-Za-z0-9']+", statement)}
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9']+", source)]
    out = set()
    for i, word in enumerate(words):
        if word in HEDGES and word not in said and set(words[i + 1:i + 1 + HEDGED_REACH]) & said - HEDGES:
            out.add(word)
    return out


def source_sentence(statement: Statement) -> str:
    """The sentence of its cited passage that a claim restates (for the hedges it may have dropped)."""
    if statement.chunk is None:
        return ""
    ranked = rank_sentences(statement.text, [statement.chunk])
    return ranked[0].text if ranked else ""


def all_sentences(chunks) -> list[str]:
    return list(dict.fromkeys(s for c in chunks for s in sentences(c.text)))
