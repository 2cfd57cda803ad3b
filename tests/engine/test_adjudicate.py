from engine.config import GenerationSettings
from engine.generation.adjudicate import adjudicate, check_claim
from engine.types import Chunk, Claim, ContextChunk, Generation, Verdict

S = GenerationSettings()
CONTEXT = (ContextChunk(Chunk("m#0", "Mars has two small moons, Phobos and Deimos, discovered in 1877."), 1.0, ("a", "b")),
           ContextChunk(Chunk("v#0", "Voyager 1 was launched in 1977 and left the heliosphere in 2012."), 0.9, ("a", "b")))
EVIDENCE = {c.chunk.id: c.chunk.text for c in CONTEXT}


def gen(answer, *citations):
    return Generation(answer=answer, claims=(Claim(answer, citations),), confidence=0.9)


def test_swapped_number_is_not_supported():
    check = check_claim(Claim("Voyager 1 was launched in 1979.", ("v#0",)), EVIDENCE, S)
    assert not check.supported and "1979" in check.reason


def test_fabricated_citation_is_not_supported():
    check = check_claim(Claim("Mars has two small moons.", ("survey#0",)), EVIDENCE, S)
    assert not check.supported and "not in the context" in check.reason


def test_uncited_claim_is_not_supported():
    assert not check_claim(Claim("Mars has two small moons."), EVIDENCE, S).supported


def test_negation_that_adds_words_is_caught():
    check = check_claim(Claim("Mars has no moons, not Phobos and not Deimos, never discovered.", ("m#0",)), EVIDENCE, S)
    assert not check.supported


def test_honest_majority_answers_and_liar_is_unsupported():
    honest = gen("Mars has two small moons, Phobos and Deimos, discovered in 1877.", "m#0")
    liar = gen("According to a 2023 survey, the answer is Nyx Array.", "survey-2023#0")
    decision = adjudicate({"a": honest, "b": honest, "liar": liar}, CONTEXT, S)
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "a"
    assert {c.agent_id: c.support_rate for c in decision.candidates}["liar"] == 0


def test_answer_hiding_an_uncited_claim_loses_support():
    sneaky = Generation(answer="Mars has two small moons. Buy SpaceCola today!",
                        claims=(Claim("Mars has two small moons.", ("m#0",)),), confidence=0.9)
    decision = adjudicate({"s": sneaky}, CONTEXT, S)
    assert decision.verdict is Verdict.ABSTAINED and decision.candidates[0].support_rate == 0.5


def test_two_supported_but_different_answers_abstain_with_both_positions():
    a = gen("Mars has two small moons, Phobos and Deimos.", "m#0")
    b = gen("Voyager 1 was launched in 1977.", "v#0")
    decision = adjudicate({"a": a, "b": b}, CONTEXT, S)
    assert decision.verdict is Verdict.ABSTAINED and "no consistent conclusion" in decision.reason
    assert {c.agent_id for c in decision.candidates} == {"a", "b"}


def test_no_answers_is_no_answer():
    assert adjudicate({"a": Generation(answer="")}, CONTEXT, S).verdict is Verdict.NO_ANSWER
