"""Lies built from the passage's own entities: each changes exactly what it says it changed."""
from __future__ import annotations

import random

from bench.evaluation.legacy_lies import legacy_lie
from bench.evaluation.lies import (EntityType, Lie, LieKind, Skip, entities, gold_entity, role_swap, splice,
                                    swap_in_passage, true_irrelevant, with_true_quote, wrong_relevant)
from bench.evaluation.textmatch import contains_answer
from engine.text import sentences
from engine.types import Chunk, Claim, Generation
from engine.verify.verifier import names

PLUTO = Chunk("q/p0", "Pluto was discovered in 1930 by Clyde Tombaugh at the Lowell Observatory in Flagstaff. "
                      "The observatory was founded by Percival Lowell in 1894.", metadata={"title": "Pluto"})
TOMBAUGH = Chunk("q/p1", "Clyde Tombaugh was an American astronomer born in Streator, Illinois. "
                         "He later taught at New Mexico State University.", metadata={"title": "Clyde Tombaugh"})
OTHER = Chunk("q/p2", "The Rose Bowl is a stadium in Pasadena, California, opened in 1922. "
                      "It hosts the annual college football game on New Year's Day.", metadata={"title": "Rose Bowl"})
CONTEXT = (PLUTO, TOMBAUGH, OTHER)
SUPPORTING = frozenset({"q/p0", "q/p1"})
QUESTION = "Who discovered Pluto?"
GOLD = ("Clyde Tombaugh",)
SENTENCE = sentences(PLUTO.text)[0]


def rng() -> random.Random:
    return random.Random(7)


def test_entities_are_typed_and_name_fragments_skipped():
    found = {e.text: e.type for e in entities(PLUTO.text)}
    assert found["1930"] is EntityType.YEAR and found["Clyde Tombaugh"] is EntityType.MULTI_NAME
    assert found["Percival Lowell"] is EntityType.MULTI_NAME
    assert {e.text: e.type for e in entities(TOMBAUGH.text)}["American"] is EntityType.DEMONYM
    assert "Morning" not in {e.text for e in entities("Kingston Morning is an album by Dave Eggar.")}
    assert "July" not in {e.text for e in entities("He was born on 16 July 1966 in Denver.")}
    found = {e.text for e in entities("He earned a PhD at Oxford. It stars Brian Doyle-Murray and Jonathan Katz.")}
    assert "Ph" not in found and "Brian Doyle" not in found and {"Oxford", "Jonathan Katz"} <= found
    assert not {e.text for e in entities("The DC Comics team played in the NCAA Division I season.")}
    assert not {e.text for e in entities('It featured "Talk Dirty to Me" and "That the People Shall Know".')} & {
        "Me", "That"}


def test_swap_in_passage_puts_in_another_entity_of_the_same_type_from_the_cited_passage():
    lie = swap_in_passage(QUESTION, SENTENCE, PLUTO, GOLD, rng())
    assert isinstance(lie, Lie) and lie.kind is LieKind.SWAP_IN_PASSAGE
    (change,) = lie.changes
    assert change.old == "Clyde Tombaugh"                      # the liar goes for the answer
    assert change.new in PLUTO.text and change.new not in SENTENCE and change.new == "Percival Lowell"
    assert lie.text == SENTENCE.replace(change.old, change.new) and "Tombaugh" not in lie.text
    assert lie.generation.claims == (Claim(lie.text, ("q/p0",)),)
    assert lie.planted == (change.new,) and lie.is_false(lie.text) and not lie.is_false(SENTENCE)


def test_swap_in_passage_swaps_numbers_for_numbers():
    chunk = Chunk("c", "The bridge opened in 1932. It was repaired in 1958 and 1977.", metadata={"title": "Bridge"})
    lie = swap_in_passage("When did the bridge open?", "The bridge opened in 1932.", chunk, ("1932",), rng())
    assert isinstance(lie, Lie) and lie.changes[0].old == "1932" and lie.changes[0].new in {"1958", "1977"}


def test_swap_in_passage_skips_when_the_passage_has_no_second_entity_of_the_type():
    chunk = Chunk("c", "The composer Edwin Vale wrote three symphonies.", metadata={"title": "Vale"})
    skip = swap_in_passage("Who wrote three symphonies?", chunk.text, chunk, ("Edwin Vale",), rng())
    assert isinstance(skip, Skip) and "no second name or number" in skip.reason


def test_role_swap_exchanges_two_names_and_keeps_the_name_set():
    lie = role_swap(QUESTION, SENTENCE, PLUTO)
    assert isinstance(lie, Lie) and lie.text != SENTENCE
    assert names(lie.text) == names(SENTENCE)
    a, b = lie.changes[0].old, lie.changes[0].new
    assert lie.changes[1].old == b and lie.changes[1].new == a
    assert lie.text.index(b) < lie.text.index(a) and SENTENCE.index(a) < SENTENCE.index(b)
    assert lie.is_false(lie.text)
    skip = role_swap("Who?", "It was built by Vale.", PLUTO)
    assert isinstance(skip, Skip) and "fewer than two" in skip.reason


def test_true_irrelevant_is_a_verbatim_sentence_of_a_non_supporting_passage_without_the_gold_answer():
    lie = true_irrelevant(QUESTION, CONTEXT, SUPPORTING, GOLD, [SENTENCE])
    assert isinstance(lie, Lie) and lie.kind is LieKind.TRUE_IRRELEVANT
    cited = lie.generation.claims[0].citations
    assert cited == (lie.chunk_id,) and lie.chunk_id not in SUPPORTING
    assert lie.text in sentences(next(c for c in CONTEXT if c.id == lie.chunk_id).text)
    assert not any(contains_answer(lie.text, g) for g in GOLD)
    assert not lie.is_false(lie.text) and lie.changes == () and lie.planted == ()
    skip = true_irrelevant(QUESTION, CONTEXT, frozenset(c.id for c in CONTEXT), GOLD, [])
    assert isinstance(skip, Skip)


def test_wrong_relevant_states_another_candidate_in_the_relevant_sentence():
    lie = wrong_relevant(QUESTION, SENTENCE, "q/p0", CONTEXT, SUPPORTING, GOLD, rng())
    assert isinstance(lie, Lie) and lie.kind is LieKind.WRONG_RELEVANT
    assert lie.generation.claims[0].citations == ("q/p0",) and lie.chunk_id in SUPPORTING
    assert not any(contains_answer(lie.text, g) for g in GOLD)
    (change,) = lie.changes
    assert change.old == "Clyde Tombaugh" and change.new in lie.text
    assert change.new in " ".join(c.text for c in CONTEXT) or change.new in {c.title for c in CONTEXT}
    assert lie.is_false(lie.text)


def test_wrong_relevant_takes_the_other_option_of_a_comparison_question():
    question = "Who is older, Clyde Tombaugh or Percival Lowell?"
    lie = wrong_relevant(question, SENTENCE, "q/p0", CONTEXT, SUPPORTING, ("Percival Lowell",), rng(),
                         comparison=True)
    assert isinstance(lie, Lie) and lie.changes[0].new == "Clyde Tombaugh"


def test_wrong_relevant_skips_yes_no_and_unstated_answers():
    assert isinstance(wrong_relevant(QUESTION, SENTENCE, "q/p0", CONTEXT, SUPPORTING, ("yes",), rng()), Skip)
    assert isinstance(wrong_relevant(QUESTION, SENTENCE, "q/p0", CONTEXT, SUPPORTING, ("Gerard Kuiper",), rng()),
                      Skip)
    assert gold_entity("3,677 seated").text == "3,677" and gold_entity("keyboard function keys") is None


def test_the_challenge_liar_quotes_the_real_sentence():
    lie = with_true_quote(swap_in_passage(QUESTION, SENTENCE, PLUTO, GOLD, rng()))
    assert SENTENCE in lie.generation.reasoning[0] and lie.text != SENTENCE and lie.is_false(lie.text)


def test_legacy_lies_are_false_where_the_fault_rewrote_a_claim():
    honest = Generation(SENTENCE, claims=(Claim(SENTENCE, ("q/p0",)),))
    tamper = legacy_lie(LieKind.TAMPER, QUESTION, honest, CONTEXT)
    assert tamper.is_false(tamper.text) and not tamper.is_false(SENTENCE)
    bias = legacy_lie(LieKind.BIAS, QUESTION, honest, CONTEXT)
    assert not bias.is_false(SENTENCE) and bias.is_false(bias.generation.claims[-1].text)
    omit = legacy_lie(LieKind.OMIT_BEST, QUESTION, honest, CONTEXT)
    assert not omit.is_false(omit.text)


def test_a_splice_joins_the_answer_sentences_start_to_another_passages_end_and_cites_both():
    lie = splice(QUESTION, SENTENCE, PLUTO, CONTEXT)
    assert isinstance(lie, Lie) and lie.kind is LieKind.SPLICE
    claim = lie.generation.claims[0]
    assert claim.citations[0] == PLUTO.id and claim.citations[1] != PLUTO.id
    head, tail = lie.text.split(" ", 1)[0], lie.planted[0]
    assert SENTENCE.startswith(head) and lie.text.endswith(tail) and tail not in PLUTO.text
    other = next(c for c in CONTEXT if c.id == claim.citations[1])
    assert tail.rstrip(".") in other.text and lie.text not in PLUTO.text + " " + other.text
    assert lie.is_false(lie.text) and not lie.is_false(SENTENCE)


def test_no_splice_without_a_second_passage():
    assert isinstance(splice(QUESTION, SENTENCE, PLUTO, (PLUTO,)), Skip)


# --- lies an LLM writes (the model at its boundary: a scripted rewriter) ---------------------------------------
class ScriptedRewriter:
    name = "scripted"

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    def rewrite(self, sentence):
        self.asked.append(sentence)
        return self.reply(sentence) if callable(self.reply) else self.reply


def _wrong():
    lie = wrong_relevant(QUESTION, SENTENCE, PLUTO.id, CONTEXT, SUPPORTING, GOLD, rng())
    assert isinstance(lie, Lie)
    return lie


def test_an_llm_rewrite_keeps_the_planted_value_and_cites_the_same_chunk():
    from bench.evaluation.llm_lies import llm_rewrite
    wrong = _wrong()
    planted = wrong.planted[0]
    writer = ScriptedRewriter(f'Rewritten sentence: "In 1930, {planted} found Pluto while at Flagstaff\'s Lowell '
                              f'Observatory."\nI kept every name.')
    lie = llm_rewrite(wrong, GOLD, writer)
    assert isinstance(lie, Lie) and lie.kind is LieKind.LLM_REWRITE and writer.asked == [wrong.text]
    assert lie.text == f"In 1930, {planted} found Pluto while at Flagstaff's Lowell Observatory."
    assert lie.generation.claims[0].citations == (PLUTO.id,) and lie.planted == wrong.planted
    assert lie.is_false(lie.text) and not lie.is_false(SENTENCE)


def test_a_rewrite_that_is_no_lie_or_no_rewrite_is_skipped_with_the_reason():
    from bench.evaluation.llm_lies import llm_rewrite
    wrong = _wrong()
    cases = {"Pluto was found in 1930 at Flagstaff.": "dropped the planted value",
             f"{wrong.planted[0]} and Clyde Tombaugh found Pluto in 1930.": "states the gold answer",
             wrong.text: "did not rewrite", "": "did not rewrite",
             f"{wrong.planted[0]} found Pluto. " * 20: "more than a rewrite"}
    for reply, reason in cases.items():
        skip = llm_rewrite(wrong, GOLD, ScriptedRewriter(reply))
        assert isinstance(skip, Skip) and skip.kind is LieKind.LLM_REWRITE and reason in skip.reason, reply
    assert "make llm" in llm_rewrite(wrong, GOLD, None).reason
    no_lie = Skip(LieKind.WRONG_RELEVANT, "no context sentence states the gold answer")
    assert llm_rewrite(no_lie, GOLD, ScriptedRewriter("x")).reason == no_lie.reason
