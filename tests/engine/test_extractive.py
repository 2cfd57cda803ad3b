"""The extractive generator answers with a sentence, or with two of one passage that belong together."""
from __future__ import annotations

from engine.agents.extractive import ExtractiveGenerator, joinable
from engine.generation.claims import claims_to_check
from engine.types import Chunk

GEN = ExtractiveGenerator()


def test_a_sentence_that_points_back_is_answered_with_the_one_before_it():
    chunk = Chunk("ada#0", "Ada Lovelace was an English mathematician. She wrote the first program for the "
                           "Analytical Engine.")
    gen = GEN.generate("Who wrote the first program for the Analytical Engine?", (chunk,))
    assert gen.answer == ("Ada Lovelace was an English mathematician. She wrote the first program for the "
                          "Analytical Engine.")
    # The best sentence stays the first claim; its neighbour is a claim of its own, citing the same chunk.
    assert [c.text for c in gen.claims] == ["She wrote the first program for the Analytical Engine.",
                                            "Ada Lovelace was an English mathematician."]
    assert all(c.citations == ("ada#0",) for c in gen.claims)
    assert any('opens with "She"' in r for r in gen.reasoning)
    assert gen.reasoning[-1] == "The answer is those two sentences, quoted from the context."
    # Every sentence of the answer is a declared claim: nothing is left for the engine to split out.
    assert [origin for _, origin in claims_to_check(gen)] == ["declared", "declared"]


def test_the_next_sentence_joins_when_it_carries_the_question_words_the_best_one_lacks():
    chunk = Chunk("tromeo#0", "Tromeo and Juliet is a 1996 comedy film from Troma Entertainment. The screenplay "
                              "was written by James Gunn and Lloyd Kaufman. Troma is based in New York.")
    gen = GEN.generate("Which 1996 comedy film from Troma had a screenplay by James Gunn?", (chunk,))
    assert gen.answer == ("Tromeo and Juliet is a 1996 comedy film from Troma Entertainment. The screenplay was "
                          "written by James Gunn and Lloyd Kaufman.")
    assert any("carries question words it lacks (gunn, james, screenplay)" in r for r in gen.reasoning)


def test_a_short_sentence_brings_the_one_before_it():
    tower = Chunk("tower#0", "The Eiffel Tower stands on the Champ de Mars in Paris. Koechlin designed it.",
                  metadata={"title": "Eiffel Tower"})
    other = Chunk("iron#0", "The Eiffel Tower is made of wrought iron.")
    gen = GEN.generate("Who designed the Eiffel Tower?", (tower, other))
    assert gen.answer == "The Eiffel Tower stands on the Champ de Mars in Paris. Koechlin designed it."
    assert gen.claims[0].text == "Koechlin designed it."
    assert any("It is short (2 content words)" in r for r in gen.reasoning)


def test_a_sentence_that_stands_alone_is_the_whole_answer():
    chunk = Chunk("ada#0", "Ada Lovelace was an English mathematician. She was born in London in 1815.")
    gen = GEN.generate("What was the nationality of the mathematician Ada Lovelace?", (chunk,))
    assert gen.answer == "Ada Lovelace was an English mathematician."
    assert [c.text for c in gen.claims] == [gen.answer]
    assert gen.reasoning[-1] == "The answer is that sentence, quoted from the context."


def test_never_joins_across_passages():
    first = Chunk("a#0", "Ada Lovelace was an English mathematician.")
    second = Chunk("a#1", "She wrote the first program for the Analytical Engine.")
    gen = GEN.generate("Who wrote the first program for the Analytical Engine?", (first, second))
    assert gen.answer == "She wrote the first program for the Analytical Engine."
    assert [c.citations for c in gen.claims] == [("a#1",)]


def test_table_rows_are_never_joined():
    # Ingestion reads a table's rows as "Header: cell; Header: cell." sentences of a prose passage.
    rows = Chunk("tools#0", "Tool: Borealis; Licence: GPL. Tool: Cirrus; Language: Rust.")
    gen = GEN.generate("Which licence has the Borealis tool written in Rust?", (rows,))
    assert gen.answer == "Tool: Borealis; Licence: GPL."


def test_headings_table_rows_and_markup_are_not_joinable():
    assert joinable("She wrote the first program.")
    assert not joinable("Installation")                         # a heading-like fragment
    assert not joinable("Tool: Atlas; Licence: MIT.")           # a table row read as text
    assert not joinable("# Usage of the tool.")                 # markup
    assert not joinable("See below.\nThen run it.")             # two blocks


def test_a_sentence_that_announces_what_follows_or_a_fragment_is_never_the_answer():
    from engine.agents.extractive import stands_alone
    assert not stands_alone("To install Hypothesis:") and not stands_alone("Narwhals.")
    assert stands_alone("Hypothesis is a library for property-based testing.")
    announce = Chunk("hyp#install-0", "To install Hypothesis:", metadata={"doc_id": "hyp", "position": 0})
    prose = Chunk("hyp#install-1", "Hypothesis is easy to install with pip on every platform.",
                  metadata={"doc_id": "hyp", "position": 1})
    gen = ExtractiveGenerator().generate("How do I install Hypothesis?", (announce, prose))
    assert gen.answer == "Hypothesis is easy to install with pip on every platform."


def test_a_document_s_earlier_passage_answers_when_both_share_the_same_question_words():
    testing = Chunk("fsspec#develop-0", "fsspec uses GitHub Actions for CI.", metadata={"doc_id": "fsspec", "position": 5})
    lead = Chunk("fsspec#0", "Filesystem Spec (fsspec) is a project to provide a unified pythonic interface to all "
                             "kinds of file systems.", metadata={"doc_id": "fsspec", "position": 0})
    other = Chunk("s3fs#0", "s3fs builds on fsspec.", metadata={"doc_id": "s3fs", "position": 0})
    gen = ExtractiveGenerator().generate("What is fsspec for?", (testing, other, lead))
    assert gen.claims[0].citations == ("fsspec#0",)
    # Another document's passage keeps its place: position counts only within a document.
    gen = ExtractiveGenerator().generate("What is fsspec for?", (other, testing, lead))
    assert gen.claims[0].citations == ("s3fs#0",)


def test_the_word_naming_the_kind_of_value_asked_for_does_not_pick_the_sentence():
    # "year" in "In what year ..." names the kind of answer; a sentence saying "a year" is no nearer the launch.
    news = Chunk("news#0", "The spacecraft, launched in 1977, crossed into interstellar space in 2012, but it took "
                           "scientists more than a year to confirm it.",
                 metadata={"title": "Voyager 1 Has Left the Solar Bubble"})
    book = Chunk("book#0", "Voyager 1 was launched by NASA in 1977 to study Jupiter and Saturn.",
                 metadata={"title": "Voyager 1"})
    gen = GEN.generate("In what year was Voyager 1 launched?", (news, book))
    assert gen.answer == "Voyager 1 was launched by NASA in 1977 to study Jupiter and Saturn."
    # A question that does not ask for a year keeps the word as a topic.
    gen = GEN.generate("How long did scientists take to confirm the crossing, about a year?", (news, book))
    assert gen.claims[0].citations == ("news#0",)
