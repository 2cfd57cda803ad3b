"""The reputation book: scale, liars of every kind against honest agents, decay, probation, operators, restarts."""
from __future__ import annotations

import dataclasses
import json
import math
import random
import statistics

import pytest

from engine.errors import InputError
from engine.reputation import (AgentQuarantined, AgentReleased, AlertRaised, ChangeRejected, EvidenceReason,
                               Observation, ProbationEnded, ReputationBook, ReputationChanged, ReputationSettings,
                               StandingState, as_audit_event)
from engine.alerts.kinds import AlertKind
from engine.reputation.scale import logit, sigmoid
from engine.types import RiskTier, Role

# The numbers these cases were worked out with (the first defaults); test_reputation_defaults.py covers the
# shipped ones.
S = ReputationSettings(up_step=0.045, down_step=0.36, committee_size=3)
DAY = 86400.0
LIE = (EvidenceReason.CLAIM_REFUTED,)
TRUTH = (EvidenceReason.CLAIMS_SUPPORTED, EvidenceReason.ANSWER_CHOSEN)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def book_with(*agents: str, clock: Clock | None = None, settings: ReputationSettings = S) -> ReputationBook:
    book = ReputationBook(settings, clock or Clock())
    for i, agent in enumerate(agents):
        book.register(agent, Role.GENERATOR, first_seen=float(i))
    return book


def checked(agent: str, bad: bool, tier: RiskTier = RiskTier.MEDIUM, trace: str = "t",
            reasons: tuple[EvidenceReason, ...] | None = None) -> Observation:
    """Evidence the engine established itself (its verifier), so no committee is needed."""
    return Observation.from_reasons(agent, Role.GENERATOR, trace, tier, reasons or (LIE if bad else TRUTH),
                                    engine_checked=True)


def questions_until_quarantined(book: ReputationBook, agent: str, lies, limit: int, start: int = 0) -> int | None:
    """Feeds one question at a time (lies(i) says whether question i is a lie); the question that quarantined it."""
    for i in range(start, start + limit):
        book.observe(checked(agent, lies(i), trace=f"q{i}"))
        if book.record(agent).state is StandingState.QUARANTINED:
            return i - start + 1
    return None


# ----- scale --------------------------------------------------------------------------------------------------

def test_the_scale_starts_at_075_caps_at_095_and_bottoms_at_002():
    assert S.l0 == pytest.approx(math.log(3))
    assert sigmoid(S.l_max) == pytest.approx(0.95) and sigmoid(S.l_min) == pytest.approx(0.02)
    book = book_with("gen-a")
    assert book.record("gen-a").score == pytest.approx(0.75)
    for i in range(200):
        book.observe(checked("gen-a", False, RiskTier.HIGH, trace=f"q{i}"))
    assert book.record("gen-a").score == pytest.approx(0.95)      # no unbounded credit


def test_one_step_per_question_scaled_by_tier_and_no_evidence_moves_nothing():
    for tier, factor in ((RiskTier.LOW, 0.5), (RiskTier.MEDIUM, 1.0), (RiskTier.HIGH, 1.5)):
        book = book_with("gen-a")
        # three refuted claims and one supported one in the same question: still one bad question
        book.observe(Observation("gen-a", Role.GENERATOR, "t", tier, good=1, bad=3, engine_checked=True))
        assert logit(book.record("gen-a").score) == pytest.approx(S.l0 - 0.36 * factor)
        book.observe(Observation("gen-a", Role.GENERATOR, "t2", tier, good=5, engine_checked=True))
        assert logit(book.record("gen-a").score) == pytest.approx(S.l0 - 0.36 * factor + 0.045 * factor)
    book = book_with("gen-a")
    assert book.observe(Observation("gen-a", Role.GENERATOR, "t", RiskTier.HIGH, engine_checked=True)) == []
    assert book.record("gen-a").score == pytest.approx(0.75)


def test_settings_refuse_a_committee_smaller_than_three_and_an_unordered_scale():
    with pytest.raises(ValueError, match="committee_size"):
        ReputationSettings(committee_size=2)
    with pytest.raises(ValueError, match="quarantine_floor"):
        ReputationSettings(quarantine_floor=0.5, probation_start=0.45)


# ----- liars and honest agents ----------------------------------------------------------------------------------

def test_a_constant_liar_is_quarantined_within_ten_questions_with_an_alert():
    book = book_with("liar")
    events = []
    for i in range(10):
        events += book.observe(checked("liar", True, trace=f"q{i}"))
        if book.record("liar").state is StandingState.QUARANTINED:
            break
    assert i + 1 == 7                       # ln(3) - ln(1/4) = 2.49 log-odds at 0.36 a lie
    quarantined = [e for e in events if isinstance(e, AgentQuarantined)]
    alerts = [e for e in events if isinstance(e, AlertRaised)]
    assert len(quarantined) == 1 and quarantined[0].automatic and quarantined[0].actor == "reputation"
    assert quarantined[0].trace_id == "q6" and quarantined[0].score < 0.2
    assert [a.kind for a in alerts] == [AlertKind.AUTO_QUARANTINE]
    assert book.weight("liar") == 0.0 and book.snapshot()["liar"] == 0.0
    ok, why = book.eligible("liar", RiskTier.LOW)
    assert not ok and "quarantined" in why


def test_an_agent_lying_on_a_fifth_of_questions_falls_below_the_floor_around_sixty():
    # Seeded, many runs: one run proves little, the first-passage time of a random walk spreads widely.
    times = []
    for seed in range(100):
        rng = random.Random(seed)
        lies = [rng.random() < 0.2 for _ in range(400)]
        times.append(questions_until_quarantined(book_with("liar"), "liar", lambda i: lies[i], 400))
    assert all(t is not None for t in times), "every intermittent liar is caught"
    assert statistics.median(times) <= 75          # about 66 with the default steps, at medium risk only
    assert sum(t <= 60 for t in times) >= 35       # "within 60" in roughly half the runs, not all (see report)


def test_an_honest_agent_falsely_flagged_on_five_percent_is_never_quarantined_in_1000_questions():
    for seed in range(20):
        rng = random.Random(1000 + seed)
        book = book_with("honest")
        lowest = 1.0
        for i in range(1000):
            book.observe(checked("honest", rng.random() < 0.05, trace=f"q{i}"))
            lowest = min(lowest, book.record("honest").score)
        assert book.record("honest").state is StandingState.ACTIVE, seed
        assert lowest > 0.5, (seed, lowest)


def test_a_sleeper_honest_for_200_questions_is_quarantined_within_15_of_turning():
    book = book_with("sleeper")
    assert questions_until_quarantined(book, "sleeper", lambda i: False, 200) is None
    assert book.record("sleeper").score == pytest.approx(0.95)
    turned = questions_until_quarantined(book, "sleeper", lambda i: True, 50, start=200)
    assert turned is not None and turned <= 15
    assert turned == 13                     # from the cap: (ln 19 + ln 4) / 0.36 = 12.03


def test_operator_approval_credits_and_rejection_debits_the_agents_behind_an_answer():
    book = book_with("gen-a", "gen-b")
    before = book.record("gen-a").score
    approved = Observation.from_reasons("gen-a", Role.GENERATOR, "t-approved", RiskTier.HIGH,
                                        (EvidenceReason.OPERATOR_APPROVED,), engine_checked=True)
    [changed] = book.observe(approved)
    assert isinstance(changed, ReputationChanged) and changed.new_score > before
    assert logit(changed.new_score) == pytest.approx(S.l0 + 0.045 * 1.5)
    assert changed.reasons == (EvidenceReason.OPERATOR_APPROVED,) and changed.trace_id == "t-approved"
    rejected = Observation.from_reasons("gen-b", Role.GENERATOR, "t-rejected", RiskTier.HIGH,
                                        (EvidenceReason.OPERATOR_REJECTED,), engine_checked=True)
    [changed] = book.observe(rejected)
    assert logit(changed.new_score) == pytest.approx(S.l0 - 0.36 * 1.5)
    assert "operator_rejected" in changed.why and "checked by the engine" in changed.why


def test_a_score_drop_over_one_question_alerts_once():
    # One observation cannot lose 0.15 with the default steps (at most 0.134 at high risk); the operator's
    # later rejection of the same answer adds to the verifier's refutation of it.
    book = book_with("gen-a")
    first = book.observe(checked("gen-a", True, RiskTier.HIGH, trace="t-1"))
    assert not any(isinstance(e, AlertRaised) for e in first)
    second = book.observe(checked("gen-a", True, RiskTier.HIGH, trace="t-1",
                                  reasons=(EvidenceReason.OPERATOR_REJECTED,)))
    [alert] = [e for e in second if isinstance(e, AlertRaised)]
    assert alert.kind is AlertKind.SCORE_DROP and alert.trace_id == "t-1" and "0.75" in alert.message
    third = book.observe(checked("gen-a", True, RiskTier.LOW, trace="t-1"))
    assert not any(isinstance(e, AlertRaised) for e in third)
    fresh = book.observe(checked("gen-a", True, RiskTier.HIGH, trace="t-2"))
    assert not any(isinstance(e, AlertRaised) for e in fresh)


# ----- decay --------------------------------------------------------------------------------------------------

def test_decay_halves_the_distance_to_neutral_every_half_life_from_either_side():
    clock = Clock(0.0)
    book = book_with("high", "low", clock=clock)
    for i in range(100):
        book.observe(checked("high", False, trace=f"h{i}"))
    for i in range(4):
        book.observe(checked("low", True, trace=f"l{i}"))
    l_high, l_low = logit(book.record("high").score), logit(book.record("low").score)
    assert l_high == pytest.approx(S.l_max) and l_low == pytest.approx(S.l0 - 4 * 0.36)

    clock.now = 7 * DAY
    events = book.decay()
    assert {e.agent_id for e in events} == {"high", "low"}
    assert all(isinstance(e, ReputationChanged) and e.reasons == () and "decayed" in e.why for e in events)
    assert logit(book.record("high").score) == pytest.approx(S.l0 + (S.l_max - S.l0) / 2)
    assert logit(book.record("low").score) == pytest.approx(S.l0 + (l_low - S.l0) / 2)
    book.decay(21 * DAY)
    assert logit(book.record("high").score) == pytest.approx(S.l0 + (S.l_max - S.l0) / 8)
    assert logit(book.record("low").score) == pytest.approx(S.l0 + (l_low - S.l0) / 8)


def test_small_decay_waits_until_it_adds_up_and_is_not_lost():
    clock = Clock(0.0)
    book = book_with("gen-a", clock=clock)
    for i in range(100):
        book.observe(checked("gen-a", False, trace=f"q{i}"))
    for hour in range(1, 13):
        book.decay(hour * 3600.0)         # an hourly timer: each step alone is below decay_min_change
    assert book.record("gen-a").score == pytest.approx(0.95)
    book.decay(7 * DAY)
    assert logit(book.record("gen-a").score) == pytest.approx(S.l0 + (S.l_max - S.l0) / 2)


def test_pending_decay_is_counted_when_evidence_lands():
    clock = Clock(0.0)
    book = book_with("gen-a", clock=clock)
    for i in range(100):
        book.observe(checked("gen-a", False, trace=f"q{i}"))
    clock.now = 7 * DAY
    [changed] = book.observe(checked("gen-a", True, trace="late"))
    assert changed.old_score == pytest.approx(0.95)
    assert logit(changed.new_score) == pytest.approx(S.l0 + (S.l_max - S.l0) / 2 - 0.36)
    assert "decayed" in changed.why


def test_a_quarantined_agent_decays_in_score_but_not_out_of_quarantine():
    clock = Clock(0.0)
    book = book_with("liar", clock=clock)
    questions_until_quarantined(book, "liar", lambda i: True, 10)
    low = book.record("liar").score
    book.decay(60 * DAY)
    record = book.record("liar")
    assert record.score > 0.7 > low
    assert record.state is StandingState.QUARANTINED
    assert not book.eligible("liar", RiskTier.LOW)[0]


# ----- quarantine, release, probation -------------------------------------------------------------------------

def test_manual_quarantine_and_release_need_a_reason_and_a_known_agent():
    book = book_with("gen-a")
    for reason in ("", "   ", None):
        with pytest.raises(InputError, match="reason is needed to quarantine gen-a"):
            book.quarantine("gen-a", reason, "alice", "t")
    with pytest.raises(InputError, match="no agent 'gen-x'.*known: gen-a"):
        book.quarantine("gen-x", "lied", "alice", "t")
    with pytest.raises(InputError, match="not quarantined"):
        book.release("gen-a", "fixed", "alice", "t")
    book.quarantine("gen-a", "lied on ticket 42", "alice", "t")
    with pytest.raises(InputError, match="already quarantined"):
        book.quarantine("gen-a", "again", "alice", "t")
    with pytest.raises(InputError, match="reason is needed to release gen-a"):
        book.release("gen-a", " ", "alice", "t")
    with pytest.raises(InputError, match="no agent"):
        book.release("gen-x", "fixed", "alice", "t")
    with pytest.raises(InputError, match="no agent"):
        book.record("gen-x")


def test_probation_flow_from_manual_quarantine_to_active():
    clock = Clock()
    book = book_with("gen-a", clock=clock)
    [quarantined] = book.quarantine("gen-a", "  lied on   ticket 42 ", "alice", "t-q")
    assert quarantined == AgentQuarantined("gen-a", 0.75, "lied on ticket 42", "alice", "t-q", clock.now, False)
    assert book.record("gen-a").last_change_why == "quarantined by alice: lied on ticket 42"
    assert book.weight("gen-a") == 0.0
    assert all(not book.eligible("gen-a", tier)[0] for tier in RiskTier)

    events = book.release("gen-a", "model redeployed", "bob", "t-r")
    assert events == [AgentReleased("gen-a", "model redeployed", "bob", "t-r", clock.now)]   # 0.75 > 0.45: no reset
    record = book.record("gen-a")
    assert record.state is StandingState.PROBATION and record.score == pytest.approx(0.75)
    assert book.weight("gen-a") == 0.5 and book.snapshot() == {"gen-a": 0.5}
    assert book.eligible("gen-a", RiskTier.LOW)[0]
    ok, why = book.eligible("gen-a", RiskTier.MEDIUM)
    assert not ok and "probation" in why
    assert not book.eligible("gen-a", RiskTier.HIGH)[0]

    for i in range(10):
        book.observe(checked("gen-a", False, RiskTier.LOW, trace=f"a{i}"))
    book.observe(checked("gen-a", True, RiskTier.LOW, trace="slip"))        # a bad question restarts the count
    assert book.record("gen-a").good_streak == 0
    ended = []
    for i in range(30):
        events = book.observe(checked("gen-a", False, RiskTier.LOW, trace=f"b{i}"))
        ended += [e for e in events if isinstance(e, ProbationEnded)]
        if ended:
            break
    assert i + 1 == 20 and ended[0].trace_id == "b19"
    record = book.record("gen-a")
    assert record.state is StandingState.ACTIVE and record.score >= 0.75
    assert book.weight("gen-a") == pytest.approx(record.score)
    assert book.eligible("gen-a", RiskTier.HIGH)[0]


def test_a_released_liar_restarts_at_045_and_must_earn_its_way_back():
    book = book_with("liar")
    questions_until_quarantined(book, "liar", lambda i: True, 10)
    events = book.release("liar", "repaired", "alice", "t-r")
    [changed] = [e for e in events if isinstance(e, ReputationChanged)]
    assert changed.new_score == pytest.approx(0.45) and changed.old_score < 0.2
    assert book.weight("liar") == pytest.approx(0.45)        # probation caps the weight, never raises it
    for n in range(1, 200):
        events = book.observe(checked("liar", False, RiskTier.LOW, trace=f"q{n}"))
        if any(isinstance(e, ProbationEnded) for e in events):
            break
    assert n == 58       # (ln 3 - logit 0.45) / (0.045 x 0.5): back to the start score, low-risk work only


def test_a_probation_agent_that_lies_again_goes_back_to_quarantine():
    book = book_with("liar")
    questions_until_quarantined(book, "liar", lambda i: True, 10)
    book.release("liar", "repaired", "alice", "t-r")
    events = []
    for i in range(20):
        events += book.observe(checked("liar", True, RiskTier.LOW, trace=f"q{i}"))
        if book.record("liar").state is StandingState.QUARANTINED:
            break
    assert i + 1 == 7
    assert any(isinstance(e, AgentQuarantined) and e.automatic for e in events)
    assert any(isinstance(e, AlertRaised) and e.kind is AlertKind.AUTO_QUARANTINE for e in events)


def test_high_risk_work_needs_a_score_of_060():
    book = book_with("gen-a")
    for i in range(2):
        book.observe(checked("gen-a", True, trace=f"q{i}"))
    assert book.record("gen-a").score == pytest.approx(sigmoid(S.l0 - 0.72))   # 0.59
    ok, why = book.eligible("gen-a", RiskTier.HIGH)
    assert not ok and "0.59" in why and "0.60" in why
    assert book.eligible("gen-a", RiskTier.MEDIUM) == (True, "active, score 0.59")


def test_registration_is_idempotent_and_guards_roles():
    book = book_with("gen-a")
    book.observe(checked("gen-a", True))
    again = book.register("gen-a", Role.GENERATOR, first_seen=99.0)
    assert again.first_seen == 0.0 and again.score < 0.75       # a restart's re-registration keeps the record
    with pytest.raises(InputError, match="registered as a generator"):
        book.register("gen-a", Role.RETRIEVER)
    with pytest.raises(InputError, match="non-empty id"):
        book.register(" ", Role.RETRIEVER)
    with pytest.raises(InputError, match="says retriever"):
        book.observe(Observation("gen-a", Role.RETRIEVER, "t", RiskTier.LOW, good=1, engine_checked=True))


# ----- restart ------------------------------------------------------------------------------------------------

def _script(book: ReputationBook, clock: Clock, seed: int, part: int) -> list:
    """A deterministic mix of everything that moves a book; returns every event."""
    rng = random.Random(seed)
    events: list = []
    agents = [a.agent_id for a in book.all()]
    for i in range(150):
        clock.now += rng.choice((1.0, 60.0, 3600.0, DAY))
        agent = rng.choice(agents)
        record = book.record(agent)
        roll = rng.random()
        if roll < 0.02 and record.state is not StandingState.QUARANTINED:
            events += book.quarantine(agent, "operator doubt", "alice", f"p{part}-{i}")
        elif roll < 0.06 and record.state is StandingState.QUARANTINED:
            events += book.release(agent, "second chance", "bob", f"p{part}-{i}")
        elif roll < 0.10:
            events += book.decay()
        else:
            bad = rng.random() < (0.5 if agent == "liar" else 0.05)
            witnesses = frozenset(rng.sample(agents, 3))
            obs = Observation.from_reasons(agent, Role.GENERATOR, f"p{part}-{i}", rng.choice(list(RiskTier)),
                                           LIE if bad else TRUTH, engine_checked=rng.random() < 0.5,
                                           witnesses=witnesses)
            events += book.observe(obs)
    return events


def test_a_saved_and_reloaded_book_continues_identically():
    clock = Clock(0.0)
    book = book_with("v1", "v2", "v3", "gen-a", "gen-b", "liar", clock=clock)
    _script(book, clock, seed=1, part=1)
    rows = json.loads(json.dumps(book.to_rows()))            # as the store would keep them
    assert set(rows[0]) == {"agent_id", "role", "log_odds", "state", "first_seen", "last_change_at",
                            "last_change_why", "good_streak"}

    reloaded_clock = Clock(clock.now)
    reloaded = ReputationBook(S, reloaded_clock)
    reloaded.load(rows)
    assert reloaded.all() == book.all()
    start = clock.now
    original_events = _script(book, clock, seed=2, part=2)
    reloaded_events = _script(reloaded, reloaded_clock, seed=2, part=2)
    assert reloaded_events == original_events and len(original_events) > 100
    assert reloaded.all() == book.all() and reloaded.to_rows() == book.to_rows()
    assert clock.now > start
    kinds = {type(e) for e in original_events}
    assert {ReputationChanged, ChangeRejected} <= kinds


def test_load_names_a_bad_row():
    book = book_with("gen-a")
    rows = book.to_rows()
    with pytest.raises(InputError, match="row 0 is missing log_odds"):
        ReputationBook(S).load([{k: v for k, v in rows[0].items() if k != "log_odds"}])
    with pytest.raises(InputError, match="row 0 \\(gen-a\\)"):
        ReputationBook(S).load([dict(rows[0], state="asleep")])
    with pytest.raises(InputError, match="appears twice"):
        ReputationBook(S).load(rows + rows)


def test_events_become_audit_events_with_plain_payloads():
    book = book_with("liar")
    events = []
    for i in range(7):
        events += book.observe(checked("liar", True, trace=f"q{i}"))
    audit = [as_audit_event(e) for e in events]
    assert [a.kind for a in audit[-3:]] == ["reputation.changed", "reputation.quarantined", "reputation.alert"]
    assert audit[-1].payload["kind"] == "auto_quarantine" and audit[-3].payload["reasons"] == ["claim_refuted"]
    assert all(a.trace_id == "q6" for a in audit[-3:])
    json.dumps([a.payload for a in audit])
    assert all(dataclasses.is_dataclass(e) and e.__dataclass_params__.frozen for e in events)
