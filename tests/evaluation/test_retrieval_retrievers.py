"""The cheap lexical retrievers that make a five-model fleet: TF-IDF cosine and title-weighted BM25."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.evaluation.attacks import make_chunk
from engine.agents.retrievers import BM25Retriever, TfidfRetriever, build_retriever, ngrams
from engine.config import BUILTIN_BACKENDS
from engine.ingest.corpus import Corpus
from engine.types import Role

DOCS = [
    ("Olympus Mons", "The tallest volcano of the solar system rises 22 km above the plain of Mars."),
    ("Mauna Kea", "A dormant volcano on Hawaii whose summit hosts several observatories."),
    ("Rice farming", "Rice farming floods the fields every spring in the river delta."),
    ("Volcano", "Volcano is a word from the Roman god Vulcan; volcanoes erupt lava and ash."),
]


def corpus():
    return Corpus(root=Path("t"), chunks=tuple(make_chunk(f"d{i}", text, title) for i, (title, text) in enumerate(DOCS)))


def test_ngrams_are_content_word_unigrams_and_bigrams():
    assert ngrams("The tallest volcano erupts") == ["tallest", "volcano", "erupts", "tallest volcano",
                                                    "volcano erupts"]


def test_tfidf_rows_are_unit_length_and_rank_by_shared_terms():
    retriever = TfidfRetriever(corpus())
    assert np.allclose(np.linalg.norm(retriever.matrix, axis=1), 1.0, atol=1e-5)
    top = retriever.retrieve("rice fields in the delta", 2)
    assert top[0].id == "d2" and len(top) == 1            # passages sharing no term are not returned
    assert retriever.retrieve("the of and", 3) == []


def test_tfidf_uses_bigrams():
    retriever = TfidfRetriever(corpus())
    scores = {c.id: c.score for c in retriever.retrieve("tallest volcano", 4)}
    assert max(scores, key=scores.get) == "d0"


def test_title_weighted_bm25_ranks_the_passage_named_for_the_entity_higher():
    plain = [c.id for c in BM25Retriever(corpus()).retrieve("Olympus Mons volcano", 4)]
    boosted = BM25Retriever(corpus(), title_boost=3).retrieve("Olympus Mons volcano", 4)
    assert boosted[0].id == "d0" and plain[0] == "d0"
    assert boosted[0].score > BM25Retriever(corpus()).retrieve("Olympus Mons volcano", 4)[0].score


def test_new_kinds_are_fleet_backends(tmp_path):
    for backend in ("tfidf", "bm25-title"):
        assert backend in BUILTIN_BACKENDS[Role.RETRIEVER]
        assert build_retriever(backend, corpus(), tmp_path).retrieve("volcano", 2)
