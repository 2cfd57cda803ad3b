"""Challenge-response: outcomes as vocabulary, checked by the engine, never changing the verdict."""
from engine.generation.adjudicate import Decision
from engine.generation.challenge import NoReply, challenge
from engine.types import (Candidate, ChallengeOutcome, Chunk, Claim, ClaimCheck, ClaimLabel, Generation, Verdict)
from engine.verify.verifier import EvidenceVerifier

CONTEXT = (Chunk("mars#0", "Phobos and Deimos are the two moons of Mars. Phobos is the larger."),
           Chunk("mars#1", "Asaph Hall discovered both moons in 1877."))


def _candidate(agent: str, supported: bool) -> Candidate:
    claim = Claim("Asaph Hall discovered both moons in 1877.", ("mars#1",))
    check = ClaimCheck(claim, supported, 1.0 if supported else 0.2,
                       label=ClaimLabel.SUPPORTED if supported else ClaimLabel.NOT_ENOUGH)
    return Candidate(agent, Generation(claim.text, claims=(claim,)), (check,), 1.0 if supported else 0.0, (), 0.5)


async def test_each_doubtful_candidate_gets_a_typed_outcome_and_the_verdict_stands():
    honest, liar, mute, silent, stranger = (_candidate(a, s) for a, s in
                                            (("ok", True), ("liar", False), ("mute", False), ("silent", False),
                                             ("stranger", False)))
    asked = []

    async def ask(candidate, check):
        asked.append(candidate.agent_id)
        if candidate.agent_id == "liar":      # a real sentence that does not say the claim
            return "Phobos is the larger.", ["mars#0"]
        if candidate.agent_id == "mute":
            raise NoReply("timeout")
        if candidate.agent_id == "silent":    # a quote found in no chunk it cited
            return "Asaph Hall discovered both moons in 1877.", ["mars#0"]
        return None                           # does not speak the protocol

    decision = Decision(Verdict.ANSWERED, honest, (honest, liar, mute, silent, stranger), "chosen")
    decided, results = await challenge(decision, CONTEXT, ask, EvidenceVerifier())
    outcomes = {c.agent_id: c.challenge_outcome for c in decided.candidates}
    assert outcomes == {"ok": None, "liar": ChallengeOutcome.QUOTE_DOES_NOT_BACK, "mute": ChallengeOutcome.NO_REPLY,
                        "silent": ChallengeOutcome.QUOTE_NOT_CITED, "stranger": ChallengeOutcome.NOT_ASKED}
    assert "ok" not in asked                              # a fully supported candidate is not challenged
    assert decided.verdict is Verdict.ANSWERED and decided.chosen.agent_id == "ok"
    assert all(r.outcome.failed for r in results if r.agent_id in ("liar", "mute", "silent"))
    assert not ChallengeOutcome.NOT_ASKED.failed
    assert next(c for c in decided.candidates if c.agent_id == "liar").challenge.startswith("failed: its quote")


async def test_a_quote_that_backs_the_claim_passes():
    doubtful = _candidate("shy", False)

    async def ask(candidate, check):
        return "Asaph Hall discovered both moons in 1877.", ["mars#1"]

    decided, results = await challenge(Decision(Verdict.ABSTAINED, None, (doubtful,), "weak"), CONTEXT, ask,
                                       EvidenceVerifier())
    assert [r.outcome for r in results] == [ChallengeOutcome.PASSED]
    assert decided.candidates[0].challenge.startswith("passed: showed [mars#1]")
