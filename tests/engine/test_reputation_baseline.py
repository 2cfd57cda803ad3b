"""Behaviour against the agent's own history: a sudden change is flagged once and costs trust; a habit is not."""
from __future__ import annotations

import random

import pytest

from engine.errors import InputError
from engine.reputation import (AlertRaised, BehaviourBaseline, BehaviourMetric, BehaviourSample, BehaviourShift,
                               EvidenceReason, ReputationBook, ReputationChanged, ReputationSettings)
from engine.alerts.kinds import AlertKind
from engine.reputation.scale import logit
from engine.types import Role

# The numbers these cases were worked out with (the first defaults); test_reputation_defaults.py covers the
# shipped ones.
S = ReputationSettings(up_step=0.045, down_step=0.36, committee_size=3)


def book() -> ReputationBook:
    b = ReputationBook(S, clock=lambda: 0.0)
    b.register("ret-a", Role.RETRIEVER, first_seen=0.0)
    return b


def steady(rng: random.Random, latency: float = 120.0) -> dict:
    return dict(latency_ms=rng.gauss(latency, latency * 0.08), reply_bytes=int(rng.gauss(2000, 150)), error=False,
                agreement=rng.random() < 0.95)


def feed(b: ReputationBook, samples, start: int = 0) -> list:
    events = []
    for i, sample in enumerate(samples, start):
        events += [(i, e) for e in b.observe_behaviour("ret-a", trace_id=f"q{i}", **sample)]
    return events


def of(events, cls) -> list:
    return [(i, e) for i, e in events if isinstance(e, cls)]


def test_a_sudden_latency_jump_is_flagged_once_with_why_and_costs_half_a_lie():
    rng = random.Random(7)
    b = book()
    assert feed(b, [steady(rng) for _ in range(100)]) == []
    events = feed(b, [steady(rng, latency=2400.0) for _ in range(100)], start=100)
    shifts = of(events, BehaviourShift)
    assert len(shifts) == 1, shifts
    i, shift = shifts[0]
    assert shift.metric == BehaviourMetric.LATENCY.value and 100 <= i < 106    # once half the window has moved
    assert shift.why.startswith("latency 2") and "ms against a usual 1" in shift.why and shift.trace_id == f"q{i}"
    [(_, changed)] = of(events, ReputationChanged)
    assert changed.reasons == (EvidenceReason.BEHAVIOUR_SHIFT,) and shift.why in changed.why
    assert logit(changed.new_score) == pytest.approx(S.l0 - 0.5 * S.down_step)
    [(_, alert)] = of(events, AlertRaised)
    assert alert.kind is AlertKind.BEHAVIOUR_SHIFT and shift.why in alert.message


def test_an_always_slow_sometimes_down_agent_is_never_flagged():
    for seed in range(5):
        rng = random.Random(seed)
        b = book()
        samples = []
        for _ in range(1000):
            if rng.random() < 0.1:        # down: a timeout's latency and no reply
                samples.append(dict(latency_ms=10_000.0, reply_bytes=0, error=True, agreement=None))
            else:                         # slow and erratic (long-tailed), but always so
                samples.append(dict(latency_ms=rng.lognormvariate(7.8, 0.5), reply_bytes=int(rng.gauss(3000, 600)),
                                    error=False, agreement=rng.random() < 0.9))
        events = feed(b, samples)
        assert of(events, BehaviourShift) == [], seed
        assert of(events, ReputationChanged) == [] and b.record("ret-a").score == pytest.approx(0.75)


def test_a_blip_rearms_and_a_later_shift_is_flagged_again():
    rng = random.Random(3)
    b = book()
    samples = [steady(rng) for _ in range(60)] + [steady(rng, 2400.0) for _ in range(8)]
    samples += [steady(rng) for _ in range(20)] + [steady(rng, 2400.0) for _ in range(8)]
    shifts = of(feed(b, samples), BehaviourShift)
    assert [i for i, _ in shifts] == [64, 92]      # the fifth slow call of each blip, before any absorbing


def test_a_lasting_shift_is_absorbed_without_a_second_flag():
    rng = random.Random(5)
    b = book()
    samples = [steady(rng) for _ in range(60)] + [steady(rng, 2400.0) for _ in range(300)]
    assert len(of(feed(b, samples), BehaviourShift)) == 1
    # A noisy rate takes the whole history to absorb: a window that dips meanwhile is not "back to usual".
    for seed in range(30):
        rng = random.Random(seed)
        b = book()
        samples = [steady(rng) for _ in range(60)] + [dict(steady(rng), error=rng.random() < 0.7) for _ in range(200)]
        assert len(of(feed(b, samples), BehaviourShift)) == 1, seed


def test_error_rate_rising_and_agreement_falling_are_shifts_too():
    rng = random.Random(9)
    b = book()
    normal = [steady(rng) for _ in range(60)]
    failing = [dict(steady(rng), error=rng.random() < 0.7) for _ in range(20)]
    shifts = of(feed(b, normal + failing), BehaviourShift)
    assert [s.metric for _, s in shifts] == ["error_rate"]
    assert "error rate" in shifts[0][1].why and "against a usual 0%" in shifts[0][1].why

    b = book()
    disagreeing = [dict(steady(rng), agreement=rng.random() < 0.1) for _ in range(20)]
    shifts = of(feed(b, [steady(rng) for _ in range(60)] + disagreeing), BehaviourShift)
    assert [s.metric for _, s in shifts] == ["agreement"]


def test_several_metrics_at_once_are_one_score_change():
    rng = random.Random(2)
    b = book()
    feed(b, [steady(rng) for _ in range(60)])
    # canned replies: instant and tiny
    events = feed(b, [dict(latency_ms=2.0, reply_bytes=40, error=False, agreement=True) for _ in range(10)], 60)
    assert {s.metric for _, s in of(events, BehaviourShift)} == {"latency", "reply_size"}
    assert len(of(events, ReputationChanged)) == 1


def test_nothing_is_judged_before_the_history_is_long_enough():
    baseline = BehaviourBaseline(S)
    for i in range(S.baseline_min):
        assert baseline.add(BehaviourSample(100.0, 1000, False, True)) == ()
    for i in range(S.baseline_window - 1):        # a jump at once: the window is not complete yet
        assert baseline.add(BehaviourSample(5000.0, 1000, False, True)) == ()
    [shift] = baseline.add(BehaviourSample(5000.0, 1000, False, True))
    assert shift.metric is BehaviourMetric.LATENCY and shift.why == "latency 5000 ms against a usual 100 ms"


def test_agent_down_is_alerted_once_per_run_of_failures():
    b = book()
    down = dict(latency_ms=10_000.0, reply_bytes=0, error=True, agreement=None)
    up = dict(latency_ms=100.0, reply_bytes=1000, error=False, agreement=None)
    events = feed(b, [down] * 6 + [up] + [down] * 3)
    alerts = of(events, AlertRaised)
    assert [(i, a.kind) for i, a in alerts] == [(2, AlertKind.AGENT_DOWN), (9, AlertKind.AGENT_DOWN)]
    assert "failed 3 calls in a row" in alerts[0][1].message
    with pytest.raises(InputError, match="no agent"):
        b.observe_behaviour("ret-x", 1.0, 1, False)
