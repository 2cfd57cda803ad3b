"""Competing positions in the context (engine/generation/positions.py): another passage that answers the question
with another value stops the engine from picking; it abstains and names both. The real word verifier and claim
comparison, a scripted meaning model at the boundary."""
import pytest

from engine.config import GenerationSettings
from engine.generation.adjudicate import adjudicate
from engine.generation.positions import competing_positions
from engine.settings.meaning import MeaningSettings
from engine.types import Chunk, Claim, ContextChunk, Generation, Verdict
from engine.verify.verifier import EvidenceVerifier

from .test_meaning_check import ScriptedMeaning

S = GenerationSettings()
ON = MeaningSettings(enabled=True, competing_positions=True)
QUESTION = "Who discovered the moons of Mars?"
TRUE = "The two small moons of Mars, Phobos and Deimos, were discovered in August by the American astronomer Asaph Hall."
PLANTED = "The two small moons of Mars, Phobos and Deimos, were discovered in August by the American astronomer Johannes Kepler."
SAME = "In August the American astronomer Asaph Hall discovered the two small moons of Mars, Phobos and Deimos."
ASIDE = "The moons of Mars are small and shaped like potatoes."


def context(*texts):
    return tuple(ContextChunk(Chunk(f"c{i}", text), 1.0 - i / 10, ("r1",)) for i, text in enumerate(texts))


def gen(answer, cited):
    return Generation(answer=answer, claims=(Claim(answer, (cited,)),), confidence=0.9)


@pytest.fixture(scope="module")
def verifier():
    return EvidenceVerifier(None)


async def test_a_passage_answering_with_another_value_makes_the_engine_abstain_and_name_both(verifier):
    ctx = context(PLANTED, TRUE)
    decision = await adjudicate(QUESTION, {"a": gen(PLANTED, "c0"), "b": gen(PLANTED, "c0")}, ctx, S, verifier,
                                meaning=ScriptedMeaning(default=0.9), meaning_settings=ON)
    assert decision.verdict is Verdict.ABSTAINED
    assert "different values" in decision.reason and "[c0]" in decision.reason and "[c1]" in decision.reason
    assert "Asaph Hall" in decision.reason and "Johannes Kepler" in decision.reason


async def test_without_the_rule_or_without_the_model_the_same_answer_is_given(verifier):
    ctx = context(PLANTED, TRUE)
    generations = {"a": gen(PLANTED, "c0")}
    off = MeaningSettings(enabled=True)         # the rule ships off
    for kwargs in ({}, {"meaning": ScriptedMeaning(default=0.9), "meaning_settings": off}):
        decision = await adjudicate(QUESTION, generations, ctx, S, verifier, **kwargs)
        assert decision.verdict is Verdict.ANSWERED, kwargs


async def test_a_passage_that_states_the_same_value_or_does_not_answer_does_not_compete(verifier):
    model = ScriptedMeaning({("answers", ASIDE): 0.05}, default=0.9)
    decision = await adjudicate(QUESTION, {"a": gen(TRUE, "c0")}, context(TRUE, SAME, ASIDE), S, verifier,
                                meaning=model, meaning_settings=ON)
    assert decision.verdict is Verdict.ANSWERED, decision.reason


async def test_a_competing_sentence_must_answer_by_the_models_threshold():
    ctx = [c.chunk for c in context(TRUE, PLANTED)]
    low = ScriptedMeaning({("answers", PLANTED): 0.3})
    assert await competing_positions(QUESTION, [TRUE], ["c0"], ctx, low, 0.5) is None
    found = await competing_positions(QUESTION, [TRUE], ["c0"], ctx, ScriptedMeaning({("answers", PLANTED): 0.8}), 0.5)
    assert found is not None and [(p.chunk_id, p.relevance) for p in found.others] == [("c1", 0.8)]
    # Only the passages the chosen answer does not cite are read.
    assert await competing_positions(QUESTION, [TRUE], ["c0", "c1"], ctx, low, 0.0) is None
