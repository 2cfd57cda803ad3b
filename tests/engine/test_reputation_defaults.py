"""The shipped reputation defaults (engine/settings/reputation.py, config/engine.toml) against the
behaviours issue #8 sets targets for; the mechanism itself is tested in test_reputation_book.py."""
from __future__ import annotations

import random
import statistics

from engine.config import load_settings
from engine.reputation import (ChangeRejected, Observation, ReputationBook, ReputationChanged, ReputationSettings,
                               StandingState)
from engine.types import RiskTier, Role

S = ReputationSettings()


def test_the_shipped_file_says_what_the_code_defaults_say():
    assert load_settings().reputation == S


def quarantined_after(rate: float, questions: int, seed: int, honest_for: int = 0, start_at_cap: bool = False):
    rng = random.Random(seed)
    book = ReputationBook(S, clock=lambda: 0.0)
    book.register("a", Role.GENERATOR)
    if start_at_cap:
        for i in range(200):
            book.observe(Observation("a", Role.GENERATOR, f"h{i}", RiskTier.MEDIUM, good=1, engine_checked=True))
        assert abs(book.record("a").score - S.score_cap) < 1e-6
    for i in range(questions):
        bad = i >= honest_for and rng.random() < rate
        book.observe(Observation("a", Role.GENERATOR, f"t{i}", RiskTier.MEDIUM, good=int(not bad), bad=int(bad),
                                 engine_checked=True))
        if book.record("a").state is StandingState.QUARANTINED:
            return i + 1
    return None


def test_a_constant_liar_is_quarantined_within_ten_questions_and_a_turned_sleeper_within_fifteen():
    assert quarantined_after(1.0, 50, seed=0) <= 10
    assert quarantined_after(1.0, 50, seed=0, start_at_cap=True) <= 15


def test_an_agent_lying_on_a_fifth_of_questions_is_caught_in_about_fifty():
    caught = [quarantined_after(0.2, 1000, seed) for seed in range(100)]
    assert all(q is not None for q in caught)
    assert statistics.median(caught) <= 55 and sum(q <= 60 for q in caught) >= 55


def test_an_honest_agent_falsely_flagged_on_one_question_in_twenty_is_never_quarantined():
    assert all(quarantined_after(0.05, 1000, seed) is None for seed in range(40))


def test_a_committee_of_five_holds_against_two_colluders_among_the_most_senior():
    book = ReputationBook(S, clock=lambda: 0.0)
    for i, agent in enumerate(("slander-1", "slander-2", "ret-a", "ret-b", "ret-c", "target")):
        book.register(agent, Role.RETRIEVER, first_seen=float(i))
    for i in range(30):
        events = book.observe(Observation("target", Role.RETRIEVER, f"t{i}", RiskTier.HIGH, bad=1,
                                          witnesses=frozenset({"slander-1", "slander-2"})))
        assert [type(e) for e in events] == [ChangeRejected]
    assert book.record("target").score == S.start
    # Three of the five saw it: evidence resting on peers lands.
    [changed] = book.observe(Observation("target", Role.RETRIEVER, "seen", RiskTier.MEDIUM, bad=1,
                                         witnesses=frozenset({"ret-a", "ret-b", "ret-c"})))
    assert isinstance(changed, ReputationChanged) and changed.new_score < changed.old_score
