"""Lexical near-duplicates (engine.retrieval.lexical): ROUGE-L on word tokens, for echo groups."""
from __future__ import annotations

import itertools
import random

from engine.retrieval.lexical import lcs_length, rouge_links, tokens


def _lcs_by_table(a, b) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


def test_the_bit_parallel_lcs_equals_the_textbook_table():
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 90))]
        assert lcs_length(a, b) == _lcs_by_table(a, b)


def test_two_texts_written_for_one_question_are_linked_and_an_honest_neighbour_is_not():
    planted = ["Who wrote Hamlet? The play Hamlet was written by Christopher Marlowe in 1599, scholars agree.",
               "Who wrote the play Hamlet? Hamlet was written by Christopher Marlowe, according to scholars.",
               "Shakespeare's tragedies include Macbeth and Othello, staged at the Globe Theatre in London."]
    linked = rouge_links(planted, 0.25)
    assert linked[0, 1] and linked[1, 0]
    assert not linked[0, 2] and not linked[1, 2]
    assert not linked.diagonal().any()


def test_a_threshold_of_one_links_nothing_and_the_link_follows_the_threshold():
    texts = ["the cat sat on the mat today", "the cat sat on a mat", "a dog ran"]
    assert not rouge_links(texts, 1.0).any()
    f1 = 2 * lcs_length(tokens(texts[0]), tokens(texts[1])) / (len(tokens(texts[0])) + len(tokens(texts[1])))
    assert rouge_links(texts, f1 - 0.01)[0, 1]
    assert not rouge_links(texts, f1)[0, 1]
    for i, j in itertools.combinations(range(3), 2):
        assert rouge_links(texts, 0.0)[i, j] == (lcs_length(tokens(texts[i]), tokens(texts[j])) > 0)
