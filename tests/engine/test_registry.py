"""The registry's live statistics per agent (latency median, error rate, last seen over a bounded window),
the slowness rule, the one-word state the Fleet panel shows, and the [limits] keys behind the rule."""
from __future__ import annotations

import dataclasses

import pytest

from engine import AgentState, CallStatus, ConfigError, load_fleet, load_settings
from engine.registry import (STATS_WINDOW, AgentRegistry, CallSample, FleetState, SlowRule, error_rate,
                             median_latency)
from engine.types import AgentOutcome, Role

from ..conftest import write_fleet


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def call(agent_id: str, status: CallStatus = CallStatus.OK, latency_ms: float = 10.0) -> AgentOutcome:
    error = "" if status is CallStatus.OK else f"{status.value} on purpose"
    return AgentOutcome(agent_id, Role.RETRIEVER, status, latency_ms, error)


@pytest.fixture
def registry(tmp_path):
    clock = Clock()
    registry = AgentRegistry(load_fleet(write_fleet(tmp_path)), clock=clock, slow=SlowRule(after_ms=500.0, timeouts=2))
    for view in registry.all():
        registry.set_state(view.spec.id, AgentState.UP, f"http://127.0.0.1:{40000 + len(view.spec.id)}")
    return registry, clock


def test_no_call_yet_means_no_statistics(registry):
    registry, _clock = registry
    view = registry.get("ret-bm25")
    assert (view.latency_p50_ms, view.error_rate, view.recent_calls, view.last_seen) == (None, None, 0, None)
    assert view.status is FleetState.UP and view.slow_reason == ""


def test_median_latency_error_rate_and_last_seen_follow_the_calls(registry):
    registry, clock = registry
    for latency in (30.0, 10.0, 20.0):
        clock.now += 1
        registry.record(call("ret-bm25", latency_ms=latency))
    seen = clock.now
    view = registry.get("ret-bm25")
    assert view.latency_p50_ms == 20.0 and view.error_rate == 0.0 and view.recent_calls == 3
    assert view.last_seen == seen and view.calls == 3 and view.ok_calls == 3

    clock.now += 5
    view = registry.record(call("ret-bm25", CallStatus.MALFORMED, 40.0))
    assert view.error_rate == 0.25                  # 1 of 4 without a usable reply
    assert view.latency_p50_ms == 25.0              # a malformed reply still took its time: (20 + 30) / 2
    assert view.last_seen == seen                   # only a usable reply counts as seen
    assert view.detail == "malformed on purpose"

    # A refused connection measures nothing about speed: counted as an error, not as a latency.
    view = registry.record(call("ret-bm25", CallStatus.DOWN, 0.5))
    assert view.error_rate == 2 / 5 and view.latency_p50_ms == 25.0
    assert view.state is AgentState.DOWN and view.status is FleetState.DOWN
    clock.now += 1
    view = registry.record(call("ret-bm25"))
    assert view.state is AgentState.UP and view.last_seen == clock.now
    assert registry.get("ret-e5").recent_calls == 0           # each agent has its own window


def test_the_window_keeps_only_the_last_calls(registry):
    registry, _clock = registry
    for _ in range(STATS_WINDOW):
        registry.record(call("gen-a", CallStatus.ERROR, 900.0))
    assert registry.get("gen-a").error_rate == 1.0
    for _ in range(STATS_WINDOW):
        view = registry.record(call("gen-a", latency_ms=12.0))
    assert STATS_WINDOW == 50
    assert view.recent_calls == STATS_WINDOW and view.error_rate == 0.0 and view.latency_p50_ms == 12.0
    assert (view.calls, view.ok_calls, view.reliability) == (100, 50, 0.5)    # the lifetime counts go on


def test_an_agent_is_slow_when_its_median_is_above_the_threshold(registry):
    registry, _clock = registry
    registry.record(call("gen-b", latency_ms=400.0))
    view = registry.record(call("gen-b", latency_ms=700.0))
    assert view.latency_p50_ms == 550.0
    assert view.status is FleetState.SLOW
    assert view.slow_reason == "median reply 550 ms over its last 2 calls (slow above 500 ms)"
    for _ in range(3):
        view = registry.record(call("gen-b", latency_ms=50.0))
    assert view.latency_p50_ms == 50.0 and view.status is FleetState.UP and view.slow_reason == ""


def test_an_agent_is_slow_when_its_last_calls_timed_out(registry):
    registry, _clock = registry
    for _ in range(9):
        registry.record(call("gen-b", latency_ms=20.0))
    view = registry.record(call("gen-b", CallStatus.TIMEOUT, 10_000.0))
    assert view.status is FleetState.UP                     # one timeout is not a pattern
    view = registry.record(call("gen-b", CallStatus.TIMEOUT, 10_000.0))
    assert view.latency_p50_ms == 20.0                      # the median alone would not say it
    assert view.status is FleetState.SLOW and view.slow_reason == "its last 2 calls timed out"
    view = registry.record(call("gen-b"))
    assert view.status is FleetState.UP


def test_standing_wins_over_up_and_slow_and_the_process_wins_over_standing(registry):
    registry, _clock = registry
    for _ in range(2):
        registry.record(call("gen-liar", CallStatus.TIMEOUT, 10_000.0))
    assert registry.get("gen-liar").status is FleetState.SLOW
    view = registry.set_trust("gen-liar", 0.12, "quarantined")
    assert view.status is FleetState.QUARANTINED and view.slow_reason        # still measured, not shown first
    assert registry.set_trust("gen-liar", 0.45, "probation").status is FleetState.PROBATION
    registry.set_trust("gen-liar", 0.12, "quarantined")
    assert registry.set_state("gen-liar", AgentState.DOWN, detail="exited").status is FleetState.DOWN
    assert registry.set_state("gen-liar", AgentState.STARTING).status is FleetState.STARTING
    view = registry.get("gen-liar")
    assert dataclasses.replace(view, state=AgentState.DISABLED).status is FleetState.DISABLED
    assert dataclasses.replace(view, state=AgentState.UP, trust_state="active", slow_reason="").status is FleetState.UP


def test_a_stopped_agent_stays_stopped_until_its_process_is_reported_again(registry):
    registry, _clock = registry
    view = registry.mark_stopped("ret-e5", "stopped by tester")
    assert (view.state, view.status, view.url, view.detail) == (AgentState.DOWN, FleetState.STOPPED, "",
                                                                  "stopped by tester")
    assert "ret-e5" not in [v.spec.id for v in registry.eligible(Role.RETRIEVER)]
    # Replies from before the stop, recorded after it, neither revive it nor hide why it is down.
    view = registry.record(call("ret-e5"))
    assert view.status is FleetState.STOPPED and view.state is AgentState.DOWN and view.detail == "stopped by tester"
    view = registry.record(call("ret-e5", CallStatus.DOWN, 1.0))
    assert view.status is FleetState.STOPPED and view.detail == "stopped by tester"
    assert registry.set_state("ret-e5", AgentState.STARTING, detail="pid 7").status is FleetState.STARTING
    view = registry.set_state("ret-e5", AgentState.UP, "http://127.0.0.1:45678")
    assert view.status is FleetState.UP and view.url == "http://127.0.0.1:45678" and not view.stopped


def test_the_statistics_helpers_on_their_own():
    samples = [CallSample(CallStatus.OK, 10.0), CallSample(CallStatus.DOWN, 1.0), CallSample(CallStatus.TIMEOUT, 90.0)]
    assert median_latency(samples) == 50.0
    assert error_rate(samples) == pytest.approx(2 / 3)
    assert median_latency([]) is None and error_rate([]) is None
    assert median_latency([CallSample(CallStatus.DOWN, 1.0)]) is None
    assert SlowRule(after_ms=100.0, timeouts=1).why_slow([CallSample(CallStatus.TIMEOUT, 5.0)]) == \
        "its last call timed out"
    assert SlowRule().why_slow([]) == ""


# --- [limits] slow_after_ms and slow_after_timeouts ---------------------------------------------------

def settings_file(tmp_path, limits: str):
    path = tmp_path / "engine.toml"
    path.write_text(f"version = 1\n[limits]\n{limits}\n", encoding="utf-8")
    return path


def test_the_slowness_rule_comes_from_the_settings(tmp_path):
    defaults = load_settings()
    assert (defaults.limits.slow_after_ms, defaults.limits.slow_after_timeouts) == (2000.0, 3)
    settings = load_settings(settings_file(tmp_path, "slow_after_ms = 750\nslow_after_timeouts = 1"))
    assert SlowRule.from_limits(settings.limits) == SlowRule(after_ms=750.0, timeouts=1)


@pytest.mark.parametrize(("line", "key", "says"), [
    ("slow_after_ms = 0", "limits.slow_after_ms", "must be positive, found 0"),
    ("slow_after_ms = -5.0", "limits.slow_after_ms", "must not be negative"),
    ("slow_after_ms = \"fast\"", "limits.slow_after_ms", "expected float"),
    ("slow_after_timeouts = 0", "limits.slow_after_timeouts", "must be at least 1, found 0"),
    ("slow_after_timeouts = 1.5", "limits.slow_after_timeouts", "expected int"),
    ("slow_after = 100", "limits.slow_after", "unknown key"),
])
def test_a_bad_slowness_key_is_an_error_naming_file_and_key(tmp_path, line, key, says):
    path = settings_file(tmp_path, line)
    with pytest.raises(ConfigError) as raised:
        load_settings(path)
    message = str(raised.value)
    assert str(path) in message and key in message and says in message
