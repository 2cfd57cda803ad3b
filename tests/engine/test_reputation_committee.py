"""Changes resting on peers' outputs need the committee: colluders cannot slander an honest agent."""
from __future__ import annotations

import pytest

from engine.reputation import (AgentQuarantined, ChangeRejected, EvidenceReason, Observation, ReputationBook,
                               ReputationChanged, ReputationSettings, StandingState, committee)
from engine.types import RiskTier, Role

# The numbers these cases were worked out with (the first defaults); test_reputation_defaults.py covers the
# shipped ones.
S = ReputationSettings(up_step=0.045, down_step=0.36, committee_size=3)
VETERANS = ("ver-1", "ver-2", "gen-old")


def fleet() -> ReputationBook:
    """Three long-standing honest generators, then the target, two colluders and a real liar, in that order
    (all generators: a committee is drawn from the subject's peers), and a retriever."""
    book = ReputationBook(S, clock=lambda: 500.0)
    for i, agent in enumerate(("ver-1", "ver-2", "gen-old", "honest", "slander-1", "slander-2", "liar")):
        book.register(agent, Role.GENERATOR, first_seen=float(i))
    book.register("ret-new", Role.RETRIEVER, first_seen=100.0)
    return book


def slander(target: str, trace: str, role: Role = Role.GENERATOR) -> Observation:
    """The colluders say the target's answer contradicts theirs and outvote its claims: only they saw it."""
    return Observation.from_reasons(target, role, trace, RiskTier.HIGH,
                                    (EvidenceReason.CONTRADICTED_BY_CHOSEN, EvidenceReason.CLAIM_REFUTED),
                                    engine_checked=False, witnesses={"slander-1", "slander-2"})


def test_colluders_never_move_an_honest_agent_down_while_the_engine_catches_a_real_liar():
    book = fleet()
    honest_scores = [book.record("honest").score]
    rejected = []
    liar_quarantined_at = None
    for i in range(60):
        events = book.observe(slander("honest", f"q{i}"))
        rejected += [e for e in events if isinstance(e, ChangeRejected)]
        assert not any(isinstance(e, ReputationChanged) for e in events)
        # the honest agent's own good work is checked by the engine and lands
        book.observe(Observation.from_reasons("honest", Role.GENERATOR, f"q{i}", RiskTier.MEDIUM,
                                              (EvidenceReason.CLAIMS_SUPPORTED,), engine_checked=True))
        # the colluders also vouch for each other
        book.observe(Observation.from_reasons("slander-1", Role.GENERATOR, f"q{i}", RiskTier.HIGH,
                                              (EvidenceReason.ANSWER_CHOSEN,), witnesses={"slander-2"}))
        # the liar's refuted claim is the engine's own verifier's finding
        events = book.observe(Observation.from_reasons("liar", Role.GENERATOR, f"q{i}", RiskTier.MEDIUM,
                                                       (EvidenceReason.CLAIM_REFUTED,), engine_checked=True))
        if liar_quarantined_at is None and any(isinstance(e, AgentQuarantined) for e in events):
            liar_quarantined_at = i + 1
        honest_scores.append(book.record("honest").score)

    assert all(b >= a for a, b in zip(honest_scores, honest_scores[1:])), "the honest agent never moved down"
    assert book.record("honest").score == pytest.approx(0.95)
    assert len(rejected) == 60
    assert "0 of 3 committee members (ver-1, ver-2, gen-old)" in rejected[0].why
    assert "slander-1, slander-2" in rejected[0].why and rejected[0].proposed_delta < 0
    assert book.record("slander-1").score == pytest.approx(0.75), "self-vouching does not land either"
    assert liar_quarantined_at == 7
    assert book.record("liar").state is StandingState.QUARANTINED


def test_peer_evidence_lands_when_a_committee_majority_witnessed_it():
    book = fleet()
    obs = Observation.from_reasons("liar", Role.GENERATOR, "t", RiskTier.MEDIUM,
                                   (EvidenceReason.CONTRADICTED_BY_CHOSEN,),
                                   witnesses={"ver-1", "gen-old", "slander-1"})
    [changed] = book.observe(obs)
    assert isinstance(changed, ReputationChanged) and changed.new_score < changed.old_score
    assert changed.confirmed_by == ("ver-1", "gen-old")
    assert "confirmed by 2 of 3 committee members" in changed.why
    one_of_three = Observation.from_reasons("liar", Role.GENERATOR, "t2", RiskTier.MEDIUM,
                                            (EvidenceReason.CONTRADICTED_BY_CHOSEN,), witnesses={"ver-2"})
    [rejected] = book.observe(one_of_three)
    assert isinstance(rejected, ChangeRejected) and "1 of 3" in rejected.why


def test_the_committee_is_the_longest_standing_trusted_agents_other_than_the_subject():
    book = fleet()
    assert committee(book.all(), "honest", S) == VETERANS
    assert committee(book.all(), "ver-1", S) == ("ver-2", "gen-old", "honest")
    book.quarantine("ver-2", "under investigation", "alice", "t")
    assert committee(book.all(), "honest", S) == ("ver-1", "gen-old", "slander-1")
    book.release("ver-2", "cleared", "alice", "t")            # probation: not on the committee yet
    assert "ver-2" not in committee(book.all(), "honest", S)
    for i in range(3):   # three lies: 0.50, still trusted enough to sit on the committee
        book.observe(Observation("gen-old", Role.GENERATOR, f"d{i}", RiskTier.MEDIUM, bad=1, engine_checked=True))
    assert 0.5 < book.record("gen-old").score < 0.51
    assert "gen-old" in committee(book.all(), "honest", S)
    book.observe(Observation("gen-old", Role.GENERATOR, "d3", RiskTier.MEDIUM, bad=1, engine_checked=True))
    assert book.record("gen-old").score < 0.5 and book.record("gen-old").state is StandingState.ACTIVE
    assert committee(book.all(), "honest", S) == ("ver-1", "slander-1", "slander-2")


def test_colluders_who_become_the_majority_of_the_committee_can_confirm_which_is_why_seniority_matters():
    # The documented limit: two of three long-standing members colluding is a majority.
    book = fleet()
    book.quarantine("ver-2", "under investigation", "alice", "t")
    book.quarantine("gen-old", "under investigation", "alice", "t")
    assert committee(book.all(), "honest", S) == ("ver-1", "slander-1", "slander-2")
    [changed] = book.observe(slander("honest", "t"))
    assert isinstance(changed, ReputationChanged) and changed.confirmed_by == ("slander-1", "slander-2")


def test_without_a_committee_of_three_only_the_engines_checks_land():
    book = ReputationBook(S, clock=lambda: 0.0)
    for i, agent in enumerate(("gen-a", "gen-b", "gen-c")):
        book.register(agent, Role.GENERATOR, first_seen=float(i))
    peer = Observation.from_reasons("gen-c", Role.GENERATOR, "t", RiskTier.MEDIUM,
                                    (EvidenceReason.CONTRADICTED_BY_CHOSEN,), witnesses={"gen-a", "gen-b"})
    [rejected] = book.observe(peer)
    assert isinstance(rejected, ChangeRejected)
    assert "no committee can form (2 eligible agents, 3 needed)" in rejected.why
    checked = Observation.from_reasons("gen-c", Role.GENERATOR, "t", RiskTier.MEDIUM,
                                       (EvidenceReason.CLAIM_REFUTED,), engine_checked=True)
    [changed] = book.observe(checked)
    assert isinstance(changed, ReputationChanged) and changed.confirmed_by == ()
    assert book.record("gen-c").score < 0.75


def test_the_committee_is_drawn_from_the_subjects_peers():
    # Generators cannot have witnessed what a retriever returned: retrieval evidence resting on peers needs
    # retrievers, and with no three of them no committee forms.
    book = fleet()
    assert committee(book.all(), "ret-new", S, role=Role.RETRIEVER) == ()
    obs = Observation.from_reasons("ret-new", Role.RETRIEVER, "t", RiskTier.MEDIUM,
                                   (EvidenceReason.KEPT_OUT_DISPUTED,), witnesses={"ver-1", "ver-2", "gen-old"})
    [rejected] = book.observe(obs)
    assert isinstance(rejected, ChangeRejected) and "no committee can form" in rejected.why
