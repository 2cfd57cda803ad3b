"""Honest sources of different dates that give different values: the newer authoritative one is
preferred and the disagreement is said, by the extractive generator and by adjudication."""
from __future__ import annotations

from engine.agents.extractive import ExtractiveGenerator
from engine.config import GenerationSettings
from engine.generation.adjudicate import adjudicate
from engine.types import Chunk, Claim, ContextChunk, Generation, Verdict
from engine.verify.dated import dated_conflict
from engine.verify.verifier import EvidenceVerifier

QUESTION = "How many known moons does Saturn have?"
OLD = Chunk("news-2023#0", "In May 2023 astronomers counted 146 known moons of Saturn in total.", "News Weekly", 1.0,
            {"date": "2023-05-18", "authority": 0.68})
NEW = Chunk("news-2025#0", "In March 2025 astronomers counted 274 known moons of Saturn in total.", "Digest", 1.0,
            {"date": "2025-03-12", "authority": 0.62})
BLOG = Chunk("blog#0", "Saturn has 18 known moons, says an old blog post.", "Blog", 1.0,
             {"date": "2026-01-01", "authority": 0.3})


def test_the_newest_authoritative_statement_is_preferred_and_the_older_named():
    conflict = dated_conflict(QUESTION, [OLD, NEW, BLOG])
    assert conflict is not None and conflict.newer.chunk_id == "news-2025#0"
    assert [s.chunk_id for s in conflict.older] == ["news-2023#0"]   # the newer blog is not authoritative
    assert "146" in conflict.describe() and "274" in conflict.describe()


def test_same_values_or_no_dates_are_no_conflict():
    same = Chunk("other#0", "Astronomers counted 274 known moons of Saturn by 2024.", "x", 1.0, {"date": "2024-01-01"})
    assert dated_conflict(QUESTION, [NEW, same]) is None
    undated = Chunk("undated#0", OLD.text, "x", 1.0, {})
    assert dated_conflict(QUESTION, [undated, Chunk("u2#0", NEW.text, "x", 1.0, {})]) is None


def test_the_extractive_generator_answers_from_the_newer_source():
    generation = ExtractiveGenerator().generate(QUESTION, (OLD, NEW))
    assert "274" in generation.answer and generation.claims[0].citations == ("news-2025#0",)
    assert "sources differ" in generation.reasoning[-1]


async def test_adjudication_prefers_the_answer_from_the_newer_source_and_says_why():
    context = tuple(ContextChunk(c, 0.9, ("a", "b")) for c in (OLD, NEW))
    old = Generation(answer=OLD.text, claims=(Claim(OLD.text, (OLD.id,)),), confidence=0.9)
    new = Generation(answer=NEW.text, claims=(Claim(NEW.text, (NEW.id,)),), confidence=0.9)
    decision = await adjudicate(QUESTION, {"a": old, "b": old, "c": new}, context, GenerationSettings(),
                                EvidenceVerifier())
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "c"
    assert "sources differ" in decision.reason and "news-2023#0" in decision.reason


def test_only_a_question_for_a_number_or_date_is_settled_by_date():
    who = Chunk("kuiper#0", "The first Kuiper belt object apart from Pluto was discovered in 1992 by David Jewitt.",
                "x", 1.0, {"date": "2012-08-30", "authority": 0.7})
    pluto = Chunk("pluto#0", "Pluto was discovered on 18 February 1930 by Clyde Tombaugh.", "x", 1.0,
                  {"date": "2005-02-18", "authority": 0.7})
    assert dated_conflict("Who discovered Pluto?", [pluto, who]) is None
    # a date question, but the two sentences state different facts (two discoveries)
    assert dated_conflict("When was Pluto discovered?", [pluto, who]) is None


def test_a_more_precise_date_is_no_other_value():
    precise = Chunk("landing#0", "The Huygens probe landed on Titan on 14 January 2005 after leaving Cassini.", "x", 1.0,
                    {"date": "2005-02-01", "authority": 0.9})
    summary = Chunk("cassini#0", "Cassini carried the Huygens probe, which landed on Titan in January 2005.", "x", 1.0,
                    {"date": "2017-09-20", "authority": 0.9})
    assert dated_conflict("When did the Huygens probe land on Titan?", [precise, summary]) is None
