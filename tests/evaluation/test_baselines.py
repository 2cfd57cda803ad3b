"""Baselines on hand-made retriever lists, K-means and ROUGE-L."""
from __future__ import annotations

import numpy as np
import pytest

from bench.evaluation import baselines
from bench.evaluation.textmatch import rouge_l_f1
from engine.types import Chunk
from tests.evaluation.conftest import FILLER, HashEmbedder


def c(name, text=None):
    return Chunk(id=name, text=text or f"passage {name} with some words")


def test_naive_offers_every_retrievers_own_top_k():
    replies = {"r1": [c("a"), c("b"), c("x")], "r2": [c("z")]}
    choices = baselines.naive(replies, 2)
    assert {agent: [x.id for x in chunks] for agent, chunks in choices.items()} == {"r1": ["a", "b"], "r2": ["z"]}


def test_union_ranks_by_count_then_best_rank():
    replies = {"r1": [c("a"), c("b"), c("c")], "r2": [c("b"), c("d")], "r3": [c("d"), c("b"), c("a")]}
    assert [x.id for x in baselines.union(replies, 4)] == ["b", "a", "d", "c"]


def test_union_merges_identical_texts_under_different_ids():
    replies = {"r1": [c("p1", "same poison text here")], "r2": [c("p2", "same poison text here"), c("q")]}
    top = baselines.union(replies, 5)
    assert [x.id for x in top] == ["p1", "q"]


def test_majority_drops_a_chunk_only_one_retriever_returned():
    replies = {"r1": [c("lie"), c("a"), c("b")], "r2": [c("a"), c("b")], "r3": [c("b"), c("a")]}
    assert [x.id for x in baselines.majority(replies, 5)] == ["a", "b"]
    replies["r4"] = [c("lie")]                   # 2 of 4 is not more than half
    assert "lie" not in [x.id for x in baselines.majority(replies, 5)]
    replies["r2"] = [c("lie"), c("a")]           # 3 of 4 is
    assert "lie" in [x.id for x in baselines.majority(replies, 5)]


def test_rouge_l_on_known_strings():
    assert rouge_l_f1("police kill the gunman", "police killed the gunman") == pytest.approx(0.75)
    assert rouge_l_f1("the cat on the mat", "the cat sat on the mat") == pytest.approx(10 / 11)
    assert rouge_l_f1("a b c", "a b c") == 1.0
    assert rouge_l_f1("a b c", "d e f") == 0.0
    assert rouge_l_f1("", "a") == 0.0


def test_kmeans_separates_two_blobs_deterministically():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 0.05, (5, 3)) + [1, 0, 0], rng.normal(0, 0.05, (4, 3)) + [0, 1, 0]])
    labels = baselines.kmeans(x, 2)
    assert len(set(labels[:5])) == 1 and len(set(labels[5:])) == 1 and labels[0] != labels[5]
    assert np.array_equal(labels, baselines.kmeans(x, 2))


def test_trustrag_drops_a_tight_near_duplicate_cluster():
    dupes = [f"Harwick is where the composer Edwin Vale was born in 1901{' indeed' * i}." for i in range(4)]
    honest = [Chunk(f"h{i}", t) for i, t in enumerate(FILLER[:10])]
    replies = {"r1": honest[:4], "r2": [honest[0], honest[1], honest[6], honest[7]],
               "r3": [Chunk(f"p{i}", t) for i, t in enumerate(dupes)] + honest[:1]}
    out = baselines.trustrag(replies, 5, HashEmbedder())
    assert {x.id for x in out.dropped} == {"p0", "p1", "p2", "p3"}      # found in r3's own list
    assert out.per_agent["r3"].cosine > 0.88 and out.per_agent["r3"].rouge > 0.25
    assert out.per_agent["r1"].dropped == [] and out.per_agent["r2"].dropped == []
    assert not {x.id for x in out.context} & {"p0", "p1", "p2", "p3"} and len(out.context) == 5
    pooled = baselines.trustrag_pooled(replies, 5, HashEmbedder())
    assert {x.id for x in pooled.dropped} == {"p0", "p1", "p2", "p3"} and pooled.cosine > 0.88


def test_trustrag_removes_near_duplicate_pairs_inside_loose_clusters_as_its_code_does():
    # FILLER[2:6] holds two pairs with ROUGE-L F1 just over 0.25 and no tight cluster: TrustRAG's
    # group_n_gram_filtering takes out both texts of each pair, honest or not.
    chunks = [Chunk(f"h{i}", t) for i, t in enumerate(FILLER[2:6])]
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4) if rouge_l_f1(FILLER[2 + a], FILLER[2 + b]) > 0.25]
    assert pairs
    out = baselines.trustrag_filter(chunks, HashEmbedder())
    assert out.cosine < 0.88 and {c.id for c in out.dropped} <= {f"h{i}" for pair in pairs for i in pair}
    assert out.dropped and len(out.context) + len(out.dropped) == 4


def test_trustrag_filters_nothing_when_no_two_texts_share_a_quarter_of_their_words():
    chunks = [Chunk(f"h{i}", FILLER[i]) for i in (0, 1, 6, 7)]
    out = baselines.trustrag_filter(chunks, HashEmbedder())
    assert out.context == chunks and out.dropped == []


def test_trustrag_keeps_everything_without_a_tight_cluster():
    honest = [Chunk(f"h{i}", t) for i, t in enumerate(FILLER)]
    replies = {"r1": honest[:6], "r2": honest[6:]}
    out = baselines.trustrag(replies, 5, HashEmbedder())
    assert out.dropped == [] and [x.id for x in out.context] == [x.id for x in baselines.union(replies, 5)]
    pooled = baselines.trustrag_pooled(replies, 5, HashEmbedder()).dropped
    # pooled, the only texts to go are near-duplicate pairs (ROUGE-L over 0.25), never a tight cluster
    assert all(any(rouge_l_f1(c.text, t) > 0.25 for t in FILLER if t != c.text) for c in pooled)
