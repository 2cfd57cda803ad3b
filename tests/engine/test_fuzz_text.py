"""Fuzzing the sentence splitter and the claim parser: any text splits into stripped, non-empty pieces that
are quoted from it verbatim (the challenge checks `quote in chunk.text`, so a sentence the extractive
generator quotes must be a substring of its chunk), and any generation yields claims to check."""
import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.agents.extractive import ExtractiveGenerator
from engine.generation.claims import MIN_WORDS, atomic_claims, claims_to_check
from engine.text import content_words, coverage, negation_count, numbers, sentences, shorten
from engine.types import Chunk, Claim, Generation
from engine.verify.sentences import rank_sentences

from .fuzz_strategies import TEXT_CHAR, WEIRD, texts

FUZZ = settings(max_examples=200, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
PROSE = ["Mr. Smith", "went to", "Washington.", "He", "arrived", "at 3 p.m.", "on 4 July 1776!", "Was it", "1,000.5",
         "km?", "(see", "Fig. 2)", '"Yes," she said.', "It isn't", "not", "true;", "no", "e.g.", "U.S.", "...", "—",
         "Phobos", "and", "Deimos", "orbit", "Mars", "\n", "\t", "  ", "İstanbul", "ﬁne", "¿Qué?", "日本語。", "١٢٣"]
prose = st.one_of(texts(TEXT_CHAR, 300),
                  st.lists(st.one_of(st.sampled_from(PROSE), st.sampled_from(WEIRD)), max_size=40).map(" ".join))


@FUZZ
@given(prose)
def test_sentences_are_stripped_non_empty_verbatim_pieces_in_order(text):
    found = sentences(text)
    at = 0
    for sentence in found:
        assert sentence and sentence == sentence.strip()
        at = text.index(sentence, at) + len(sentence)      # verbatim, and in the order they appear


@FUZZ
@given(prose)
def test_atomic_claims_are_verbatim_pieces_with_content(text):
    for piece in atomic_claims(text):
        assert piece in text and piece == piece.strip()
        assert len(content_words(piece)) >= MIN_WORDS


claims = st.builds(Claim, prose, st.lists(st.text(TEXT_CHAR, max_size=8), max_size=3).map(tuple))


@FUZZ
@given(st.builds(Generation, answer=prose, claims=st.lists(claims, max_size=4).map(tuple),
                 confidence=st.floats(0, 1)))
def test_claims_to_check_takes_any_generation(gen):
    checked = claims_to_check(gen)
    assert [c for c, origin in checked if origin == "declared"] == list(gen.claims)   # declared first, all kept
    cited = {cid for claim in gen.claims for cid in claim.citations}
    for claim, origin in checked[len(gen.claims):]:
        assert origin == "split" and claim.text in gen.answer and set(claim.citations) == cited


metadata = st.fixed_dictionaries({}, optional={
    "title": prose,
    "date": st.one_of(st.dates().map(str), st.sampled_from(["2001-05-01", "2019-07-12", "2020-02-30", "yesterday",
                                                             "", "2019"]), st.integers()),
    "authority": st.one_of(st.sampled_from([0.9, 0.95, 0.5]), st.floats(allow_nan=True, allow_infinity=True),
                           st.integers(-(10 ** 30), 10 ** 30),
                           st.text(max_size=4), st.none()),
    "position": st.one_of(st.integers(), st.none(), st.text(max_size=3))})
facts = st.lists(st.sampled_from(["The bridge", "is", "was", "1,200", "1,350", "metres", "long", "in", "2001.",
                                  "2019.", "The population", "of", "Oslo", "709,000", "717,710", "."]), max_size=12)
# One fact at several dates with other figures: what sends the generator down its dated-conflict path.
dated_fact = st.builds("The population of Oslo is {} people in the city centre.".format,
                       st.sampled_from(["709,000", "717,710", "699,827", "1e3", "0", "709,000 and 717,710"]))
chunks = st.builds(Chunk, st.sampled_from(["a#0", "b#0", "c#1", "a#0 "]),
                   st.one_of(prose, facts.map(" ".join), dated_fact), metadata=metadata)
dated_chunks = st.builds(Chunk, st.sampled_from(["a#0", "b#0", "c#1"]), dated_fact, metadata=st.fixed_dictionaries(
    {"date": st.sampled_from(["2001-05-01", "2019-07-12", "2024-01-31", "2001-05-01", "2019-07-12", "2020-02-30"]),
     "authority": st.sampled_from([0.9, 0.95, 0.9, 0.5, 0.2, math.nan, math.inf, -1, "high", None, True])}))
contexts = st.one_of(st.lists(chunks, max_size=5),
                     st.lists(dated_chunks, min_size=2, max_size=3, unique_by=lambda c: c.id))
questions = st.one_of(prose, st.sampled_from(["How long is the bridge?", "How many people live in Oslo?",
                                               "How many metres long was it in 2019?"]))


@FUZZ
@given(questions, st.lists(chunks, max_size=4))
def test_ranked_sentences_are_quotable_from_their_chunk(query, context):
    by_id = {}
    for chunk in context:
        by_id.setdefault(chunk.id, []).append(chunk.text)
    ranked = rank_sentences(query, context)
    assert all(math.isfinite(s.score) for s in ranked)
    assert [s.score for s in ranked] == sorted((s.score for s in ranked), reverse=True)
    assert all(any(s.text in text for text in by_id[s.chunk_id]) for s in ranked)


CONFLICT = [Chunk("a#0", "The population of Oslo is 709,000 people in the city centre.",
                  metadata={"date": "2001-05-01", "authority": 0.9}),
            Chunk("b#0", "The population of Oslo is 717,710 people in the city centre.",
                  metadata={"date": "2019-07-12", "authority": math.nan}),
            Chunk("c#1", "The population of Oslo is 699,827 people in the city centre.",
                  metadata={"date": "2024-01-31", "authority": 0.95})]


@FUZZ
@example("How many people live in Oslo?", CONFLICT)              # the dated-conflict path, NaN authority and all
@given(questions, contexts)
def test_the_extractive_generator_answers_anything_with_quotable_claims(query, context):
    gen = ExtractiveGenerator().generate(query, tuple(context))
    assert 0.0 <= gen.confidence <= 1.0
    texts_by_id = {}
    for chunk in context:
        texts_by_id.setdefault(chunk.id, []).append(chunk.text)
    for claim in gen.claims:
        assert claim.citations and all(c in texts_by_id for c in claim.citations)


@FUZZ
@given(prose, prose, st.integers(1, 200))
def test_the_small_text_helpers_take_anything(a, b, limit):
    assert 0.0 <= coverage(a, b) <= 1.0
    assert negation_count(a) >= 0 and isinstance(numbers(a), set)
    short = shorten(a, limit)
    assert len(short) <= limit and "\n" not in short
