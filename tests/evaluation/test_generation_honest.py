"""The three honest generators of the generation evaluation: real citations, facts kept, and they differ."""
from __future__ import annotations

import pytest

from bench.evaluation.honest_generators import (Edit, FocusedPassageGenerator, HonestKind, ParaphraseGenerator,
                                                 generate_all, paraphrase)
from engine.text import STOPWORDS, negation_count, numbers, sentences
from engine.types import Chunk

CHUNKS = (
    Chunk("q/p0", "Pluto was discovered by Clyde Tombaugh in 1930 at the Lowell Observatory. The observatory was "
                  "founded by Percival Lowell (an astronomer) in 1894.", metadata={"title": "Pluto"}),
    Chunk("q/p1", "Clyde Tombaugh was an American astronomer born in Streator, Illinois. He did not finish college "
                  "until 1939.", metadata={"title": "Clyde Tombaugh"}),
    Chunk("q/p2", "In 2006, the International Astronomical Union reclassified Pluto as a dwarf planet.",
          metadata={"title": "Dwarf planet"}),
)
QUESTION = "Who discovered Pluto in 1930?"
SOURCES = [
    "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.",
    "In 1994, the band released their debut album.",
    "Ed Wood was directed by Tim Burton.",
    "The bridge was not completed until 1932.",
    "Woodson is a census-designated place (CDP) in Pulaski County, Arkansas, in the United States.",
    "The novel was written by J. R. R. Tolkien.",
    "He did not finish college until 1939.",
    "The film, which was not a success, was released in 1988.",
    "Josey Scott (born Joseph Scott Sappington; May 3, 1972) is the former lead vocalist of the rock band Saliva.",
    "David Yates (born (1963--)08 1963 ) is an English filmmaker.",
]


def name_words(text: str) -> set[str]:
    """Capitalised words but function words ("The", "In") and the paraphraser's lead-in: a name moved to
    the start of the sentence or away from it is still the same name."""
    words = {w.strip(".,;:()\"") for w in text.split()}
    return {w for w in words if w[:1].isupper() and w.lower() not in STOPWORDS and w != "Notably"}


@pytest.mark.parametrize("kind", list(HonestKind))
def test_each_honest_generator_cites_real_chunks(kind):
    gen = generate_all(QUESTION, CHUNKS)[kind]
    ids = {c.id for c in CHUNKS}
    assert gen.answer and gen.claims
    assert all(claim.citations and set(claim.citations) <= ids for claim in gen.claims)


def test_the_quoting_generators_state_only_context_sentences():
    context = {s for c in CHUNKS for s in sentences(c.text)}
    for kind in (HonestKind.EXTRACTIVE, HonestKind.FOCUSED):
        gen = generate_all(QUESTION, CHUNKS)[kind]
        for claim in gen.claims:
            cited = next(c for c in CHUNKS if c.id == claim.citations[0])
            assert claim.text in context and claim.text in cited.text


def test_the_focused_generator_can_pick_a_different_true_sentence():
    question = "Where was the astronomer Clyde Tombaugh born?"
    extractive = generate_all(question, CHUNKS)[HonestKind.EXTRACTIVE]
    focused = FocusedPassageGenerator().generate(question, CHUNKS)
    assert focused.claims[0].citations == ("q/p1",)          # the passage titled with the question's entity
    assert focused.answer in CHUNKS[1].text
    different = FocusedPassageGenerator().generate("Which observatory was founded in 1894?", CHUNKS)
    assert different.answer in " ".join(c.text for c in CHUNKS) and extractive.answer


@pytest.mark.parametrize("source", SOURCES)
def test_a_paraphrase_keeps_numbers_names_and_negations(source):
    p = paraphrase(source)
    assert p.text != source and p.edits
    assert numbers(p.text) == numbers(source)
    assert negation_count(p.text) == negation_count(source)
    # names: none added; none lost but an abbreviation that repeats the name before it ("CDP")
    assert name_words(p.text) <= name_words(source)
    assert name_words(source) - {"CDP"} <= name_words(p.text)


def test_paraphrase_rules():
    assert paraphrase(SOURCES[0]).text.startswith("Scott Derrickson, born July 16, 1966, is an American")
    assert Edit.PARENTHETICAL in paraphrase(SOURCES[0]).edits
    assert paraphrase("Ed Wood was directed by Tim Burton.").text == "Tim Burton directed Ed Wood."
    assert paraphrase("The novel was written by J. R. R. Tolkien.").text == "J. R. R. Tolkien wrote the book."
    assert paraphrase("In 1994, the band released their debut album.").text == \
        "The group issued their first album in 1994."
    assert "(CDP)" not in paraphrase(SOURCES[4]).text and "CDP" not in paraphrase(SOURCES[4]).text
    assert paraphrase("The bridge was not completed until 1932.").edits == (Edit.LEAD_IN,)
    # a semicolon inside brackets must not become a claim boundary; a formula's brackets stay
    assert ";" not in paraphrase("Josey Scott (born Joseph Scott Sappington; May 3, 1972) is a singer.").text
    assert "HOOC-(CHOH)-CHOH" in paraphrase("Thus, their general formula is HOOC-(CHOH)-CHOH.").text


def test_the_paraphrase_generator_restates_the_extractive_sentence_and_cites_its_chunk():
    gens = generate_all(QUESTION, CHUNKS)
    extractive, para = gens[HonestKind.EXTRACTIVE], gens[HonestKind.PARAPHRASE]
    assert para.answer != extractive.answer
    assert [c.citations for c in para.claims] == [c.citations for c in extractive.claims]
    assert para.answer == paraphrase(extractive.answer).text
    assert numbers(para.answer) == numbers(extractive.answer)
    assert isinstance(ParaphraseGenerator().generate("zzz qqq?", CHUNKS).answer, str)


def test_no_answer_when_nothing_matches():
    assert FocusedPassageGenerator().generate("", CHUNKS).answer == ""
    assert FocusedPassageGenerator().generate("Quux frobnicate?", CHUNKS).answer == ""
