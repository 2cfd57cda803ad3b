"""Reading for meaning in adjudication (engine/generation/meaning_check.py), with the real word verifier and a
scripted meaning model at the boundary: the model's scores are given per pair, so each rule is seen on its own.
The trained model itself is tested in test_meaning_model.py."""
import pytest

from engine.config import GenerationSettings
from engine.generation.adjudicate import adjudicate
from engine.generation.meaning_check import hypothesis, read_meaning
from engine.reputation.answer_evidence import observations
from engine.reputation.evidence import EvidenceReason
from engine.settings.meaning import MeaningSettings
from engine.text import aligned_evidence, closest_sentences
from engine.types import CheckReason, Chunk, Claim, ClaimCheck, ClaimLabel, ContextChunk, Generation, Verdict
from engine.verify.verifier import EvidenceVerifier

S = GenerationSettings()
MOONS = "Mars has two small moons, Phobos and Deimos."
FOUND = "They were discovered by Asaph Hall in 1877 at the US Naval Observatory."
OTHER = "Phobos orbits closer to its planet than any other known moon."
CONTEXT = (ContextChunk(Chunk("m#0", f"{MOONS} {FOUND} {OTHER}"), 1.0, ("a", "b")),
           ContextChunk(Chunk("h#0", "Asaph Hall was an American astronomer born in Goshen, Connecticut."), 0.9, ("a",)))
QUESTION = "Who discovered the moons of Mars?"


class ScriptedMeaning:
    """A meaning model whose scores are set per (task, first, second), `default` for the rest; it records what
    it was asked."""
    entails_threshold = 0.5
    answers_threshold = 0.5

    def __init__(self, scores=None, default=0.9):
        self.scores, self.default, self.asked = dict(scores or {}), default, []

    def score(self, task, pairs):
        self.asked += [(task, a, b) for a, b in pairs]
        return [self.scores.get((task, a, b), self.scores.get((task, b), self.default)) for a, b in pairs]


@pytest.fixture(scope="module")
def verifier():
    return EvidenceVerifier(None)       # word overlap: the meaning model is what these tests are about


def gen(answer, *citations):
    return Generation(answer=answer, claims=(Claim(answer, citations),), confidence=0.9)


def test_the_aligned_evidence_is_the_closest_sentence_of_each_cited_passage():
    moons, hall = CONTEXT[0].chunk.text, CONTEXT[1].chunk.text
    assert aligned_evidence("Asaph Hall discovered them in 1877.", [moons]) == FOUND
    assert aligned_evidence("Phobos and Deimos orbit Mars closely.", [moons, moons]) == MOONS    # a passage once
    spliced = "Asaph Hall, an American astronomer born in Goshen, discovered them in 1877."
    assert aligned_evidence(spliced, [moons, hall]) == f"{FOUND} {hall}"                    # one from each source
    assert aligned_evidence("Nothing shared here", [moons, hall]) == ""
    assert closest_sentences("Phobos and Deimos orbit Mars closely.", [moons], limit=2) == f"{MOONS} {OTHER}"


def test_a_fragment_is_read_as_the_answer_to_the_question_and_a_statement_as_itself():
    assert hypothesis(QUESTION, "Asaph Hall") == f"{QUESTION} Asaph Hall"
    assert hypothesis(QUESTION, FOUND) == FOUND


async def test_a_claim_whose_words_match_but_whose_meaning_does_not_loses_its_support(verifier):
    swapped = "They were discovered by the US Naval Observatory in 1877 at Asaph Hall."
    model = ScriptedMeaning({("entails", swapped): 0.1})
    decision = await adjudicate(QUESTION, {"liar": gen(swapped, "m#0")}, CONTEXT, S, verifier, meaning=model)
    check = decision.candidates[0].checks[0]
    assert (check.supported, check.reason_kind, check.entailment) == (False, CheckReason.NOT_ENTAILED, 0.1)
    assert check.premise and "does not entail" in check.reason and decision.verdict is Verdict.ABSTAINED


async def test_a_verbatim_sentence_is_entailed_without_asking_the_model(verifier):
    model = ScriptedMeaning(default=0.0)
    model.scores[("answers", FOUND)] = 0.95
    decision = await adjudicate(QUESTION, {"a": gen(FOUND, "m#0")}, CONTEXT, S, verifier, meaning=model)
    assert decision.verdict is Verdict.ANSWERED and decision.candidates[0].checks[0].entailment == 1.0
    assert [task for task, _, _ in model.asked] == ["answers"]


async def test_a_true_sentence_that_does_not_answer_is_not_given(verifier):
    model = ScriptedMeaning({("answers", OTHER): 0.05})
    decision = await adjudicate(QUESTION, {"x": gen(OTHER, "m#0")}, CONTEXT, S, verifier, meaning=model)
    assert decision.verdict is Verdict.ABSTAINED and "no answer answers the question" in decision.reason
    assert decision.candidates[0].off_topic and decision.candidates[0].relevance == 0.05


async def test_two_colluders_that_do_not_answer_cannot_outvote_the_one_answer_that_does(verifier):
    model = ScriptedMeaning({("answers", OTHER): 0.05, ("answers", FOUND): 0.95})
    decision = await adjudicate(QUESTION, {"c1": gen(OTHER, "m#0"), "c2": gen(OTHER, "m#0"),
                                           "honest": gen(FOUND, "m#0")}, CONTEXT, S, verifier, meaning=model)
    assert decision.verdict is Verdict.ANSWERED and decision.chosen.agent_id == "honest"
    by_agent = {c.agent_id: c for c in decision.candidates}
    assert by_agent["c1"].agreeing == () and by_agent["c1"].off_topic      # agreement only among passing answers
    assert "set aside" in decision.reason


async def test_without_the_model_the_same_colluders_win_as_before(verifier):
    decision = await adjudicate(QUESTION, {"c1": gen(OTHER, "m#0"), "c2": gen(OTHER, "m#0"),
                                           "honest": gen(FOUND, "m#0")}, CONTEXT, S, verifier)
    assert decision.chosen is None or decision.chosen.agent_id != "honest"


async def test_lift_supports_a_paraphrase_the_words_missed_and_never_a_refuted_claim():
    checks = {"llm": (ClaimCheck(Claim("Asaph Hall", ("m#0",)), False, 0.5, "only half its words",
                                 ClaimLabel.NOT_ENOUGH),
                      ClaimCheck(Claim("Asaph Hall found them in 1878.", ("m#0",)), False, 0.8, "numbers differ",
                                 ClaimLabel.REFUTED))}
    model = ScriptedMeaning(default=0.97)
    passages = {"m#0": CONTEXT[0].chunk.text}
    lifted = await read_meaning(QUESTION, {"llm": "Asaph Hall"}, checks, passages, model, MeaningSettings(lift=0.9))
    first, second = lifted.checks["llm"]
    assert first.supported and first.reason_kind is CheckReason.ENTAILED and second.label is ClaimLabel.REFUTED
    assert ("entails", FOUND, f"{QUESTION} Asaph Hall") in model.asked        # the fragment, read as an answer
    assert all(b != "Asaph Hall found them in 1878." for _, _, b in model.asked)  # refuted: not read at all
    unlifted = await read_meaning(QUESTION, {"llm": "Asaph Hall"}, checks, passages, model, MeaningSettings())
    assert not unlifted.checks["llm"][0].supported


async def test_the_settings_thresholds_override_the_models(verifier):
    model = ScriptedMeaning(default=0.7)
    strict = MeaningSettings(answers_threshold=0.8)
    decision = await adjudicate(QUESTION, {"a": gen(FOUND, "m#0")}, CONTEXT, S, verifier, meaning=model,
                                meaning_settings=strict)
    assert decision.verdict is Verdict.ABSTAINED and decision.candidates[0].off_topic


async def test_an_answer_that_does_not_answer_and_a_claim_not_entailed_count_against_the_generator(verifier):
    from engine.answer import Answer
    from engine.types import AgentOutcome, CallStatus, RiskTier, Role
    swapped = "They were discovered by the US Naval Observatory in 1877 at Asaph Hall."
    model = ScriptedMeaning({("answers", OTHER): 0.05, ("entails", swapped): 0.1})
    decision = await adjudicate(QUESTION, {"off": gen(OTHER, "m#0"), "swap": gen(swapped, "m#0"),
                                           "honest": gen(FOUND, "m#0")}, CONTEXT, S, verifier, meaning=model)
    assert decision.chosen.agent_id == "honest"
    agents = tuple(AgentOutcome(a, Role.GENERATOR, CallStatus.OK, 10.0) for a in ("off", "swap", "honest"))
    answer = Answer("t1", QUESTION, RiskTier.MEDIUM, decision.verdict, FOUND, "", (), agents, CONTEXT,
                    decision.candidates, {}, 0.0)
    reasons = {o.agent_id: set(o.reasons) for o in observations(answer)}
    assert reasons["off"] == {EvidenceReason.ANSWER_OFF_TOPIC}
    assert reasons["swap"] == {EvidenceReason.CLAIM_NOT_ENTAILED}
    assert reasons["honest"] == {EvidenceReason.CLAIMS_SUPPORTED, EvidenceReason.ANSWER_CHOSEN}


async def test_not_answering_counts_against_no_one_when_no_answer_beside_it_answered(verifier):
    from engine.answer import Answer
    from engine.types import AgentOutcome, CallStatus, RiskTier, Role
    model = ScriptedMeaning({("answers", OTHER): 0.05, ("answers", FOUND): 0.1})     # the model misreads both
    decision = await adjudicate(QUESTION, {"a": gen(OTHER, "m#0"), "b": gen(FOUND, "m#0")}, CONTEXT, S, verifier,
                                meaning=model)
    assert decision.verdict is Verdict.ABSTAINED and all(c.off_topic for c in decision.candidates)
    agents = tuple(AgentOutcome(a, Role.GENERATOR, CallStatus.OK, 10.0) for a in ("a", "b"))
    answer = Answer("t2", QUESTION, RiskTier.MEDIUM, decision.verdict, "", "", (), agents, CONTEXT,
                    decision.candidates, {}, 0.0)
    assert all(EvidenceReason.ANSWER_OFF_TOPIC not in o.reasons for o in observations(answer))


async def test_an_answer_far_below_the_best_answers_relevance_is_set_aside_when_relative_is_set(verifier):
    model = ScriptedMeaning({("answers", OTHER): 0.6, ("answers", FOUND): 0.99})
    fleet = {"c1": gen(OTHER, "m#0"), "c2": gen(OTHER, "m#0"), "honest": gen(FOUND, "m#0")}
    plain = await adjudicate(QUESTION, fleet, CONTEXT, S, verifier, meaning=model)
    assert not any(c.off_topic for c in plain.candidates)       # both above the threshold of 0.5
    relative = await adjudicate(QUESTION, fleet, CONTEXT, S, verifier, meaning=model,
                                meaning_settings=MeaningSettings(relative=0.7))
    assert relative.chosen.agent_id == "honest" and {c.agent_id for c in relative.candidates if c.off_topic} == {"c1", "c2"}
