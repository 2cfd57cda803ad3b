"""Demo traffic (engine/demo.py) on a fake clock: the rate, the cap on questions in flight and the skipped
ticks, stop and aclose, failures counted, the stats events; then once on the real small fleet."""
from __future__ import annotations

import asyncio
import heapq
import itertools
import math

import pytest

from engine import Engine, InputError, RiskTier, load_fleet, load_settings
from engine.demo import (DEMO_QUESTIONS_PATH, EVENT_EVERY_S, DemoQuestion, DemoStats, DemoTraffic,
                         load_demo_questions)
from engine.events import DemoTrafficChanged

QUESTIONS = (DemoQuestion("q1", "What are the moons of Mars?", RiskTier.LOW),
             DemoQuestion("q2", "Should I invest in a Mars mission?", RiskTier.HIGH),
             DemoQuestion("q3", "How long is a day on Venus?", RiskTier.MEDIUM))


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


class FakeTime:
    """A clock that moves only when the test advances it; sleepers wake in order of their deadline."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future]] = []
        self._order = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(seconds, 0.0), next(self._order), future))
        await future

    async def advance(self, seconds: float) -> None:
        target = self.now + seconds
        await settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            wake_at, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake_at)
            if not future.done():
                future.set_result(None)
            await settle()
        self.now = target
        await settle()


class FakeEngine:
    """ask() takes `answer_s` on the fake clock; questions named in `failing` raise."""

    def __init__(self, time: FakeTime, answer_s: float = 0.1, failing: tuple[str, ...] = ()) -> None:
        self.time = time
        self.answer_s = answer_s
        self.failing = failing
        self.asked: list[tuple[str, RiskTier | None]] = []
        self.events: list[DemoTrafficChanged] = []
        self.event_times: list[float] = []

    async def ask(self, question: str, tier: RiskTier | None = None) -> str:
        self.asked.append((question, tier))
        await self.time.sleep(self.answer_s)
        if question in self.failing:
            raise InputError("the gateway blocked the question")
        return "an answer"

    def emit(self, event: object) -> None:
        assert isinstance(event, DemoTrafficChanged)
        self.events.append(event)
        self.event_times.append(self.time.now)


async def close(demo: DemoTraffic, time: FakeTime) -> None:
    """aclose() on the fake clock: it waits for the questions in flight, so time must move meanwhile."""
    closing = asyncio.ensure_future(demo.aclose())
    for _ in range(100):
        await time.advance(1.0)
        if closing.done():
            break
    await closing


def traffic(engine: FakeEngine, *, rate: float = 1.0, max_in_flight: int = 4) -> DemoTraffic:
    return DemoTraffic(engine.ask, engine.emit, questions=QUESTIONS, max_in_flight=max_in_flight, rate=rate,
                       clock=engine.time.clock, sleep=engine.time.sleep, stamp=engine.time.clock)


async def test_questions_are_asked_at_the_rate_round_robin_each_at_its_own_tier():
    time = FakeTime()
    engine = FakeEngine(time)
    demo = traffic(engine, rate=2.0)
    demo.start()
    await time.advance(10.0)
    stats = demo.stats()
    # Ticks at 0, 0.5, ..., 10.0: the first question at once, then one every half second.
    assert stats.asked == len(engine.asked) == 21
    assert stats.answered == 20 and stats.in_flight == 1 and stats.skipped == 0 and stats.failed == 0
    expected = [(q.question, q.tier) for q in itertools.islice(itertools.cycle(QUESTIONS), 21)]
    assert engine.asked == expected
    await close(demo, time)
    assert demo.stats() == DemoStats(21, 21, 0, 0, 0, 0, 2.0, False, 4, "", None)


async def test_a_tick_that_finds_the_judge_reading_yields_and_no_backlog_builds_at_the_judge():
    """Each question holds the judge for 5 s: at 2 a second, the demo asks one, then yields until it is read."""
    time = FakeTime()
    engine = FakeEngine(time, answer_s=5.0)
    demo = DemoTraffic(engine.ask, engine.emit, questions=QUESTIONS, max_in_flight=4, rate=2.0, clock=time.clock,
                       sleep=time.sleep, stamp=time.clock, busy=lambda: bool(demo.stats().in_flight))
    demo.start()
    await time.advance(10.0)
    stats = demo.stats()
    assert stats.in_flight <= 1 and stats.asked == 3 and stats.yielded >= 15 and stats.skipped == 0   # at 0, 5 and 10 s
    assert "yielded to the judge" in stats.line()
    await close(demo, time)


async def test_the_first_question_is_asked_at_once_on_a_clock_that_moves_between_reads():
    time = FakeTime()
    engine = FakeEngine(time)

    def creeping() -> float:               # a real clock never reads the same twice
        time.now += 1e-6
        return time.now
    demo = DemoTraffic(engine.ask, engine.emit, questions=QUESTIONS, max_in_flight=4, rate=1.0, clock=creeping,
                       sleep=time.sleep, stamp=time.clock)
    demo.start()
    await time.advance(0.01)
    assert demo.stats().asked == 1
    await time.advance(3.0)
    assert demo.stats().asked == 4
    await close(demo, time)


async def test_a_tick_with_the_cap_reached_is_skipped_and_counted_never_queued():
    time = FakeTime()
    engine = FakeEngine(time, answer_s=10.0)
    demo = traffic(engine, rate=1.0, max_in_flight=2)
    demo.start()
    await time.advance(5.0)            # ticks at 0..5: two asked, four found both still answering
    stats = demo.stats()
    assert (stats.asked, stats.in_flight, stats.skipped, stats.answered) == (2, 2, 4, 0)
    await time.advance(5.5)            # t = 10.5: the first answered at 10, and the tick at 10 asked again
    stats = demo.stats()
    assert (stats.asked, stats.in_flight, stats.skipped, stats.answered) == (3, 2, 8, 1)
    assert len(engine.asked) == stats.asked       # nothing waits behind the cap
    await close(demo, time)
    assert demo.stats().in_flight == 0 and demo.stats().answered == 3


async def test_stop_stops_feeding_but_lets_questions_finish_and_start_stop_are_idempotent():
    time = FakeTime()
    engine = FakeEngine(time, answer_s=3.0)
    demo = traffic(engine, rate=1.0)
    first = demo.start()
    assert demo.start() == first and first.running       # a second start changes nothing
    await time.advance(1.5)                               # asked at 0 and 1, both still answering
    stopped = demo.stop()
    assert not stopped.running and stopped.in_flight == 2 and stopped.asked == 2
    assert demo.stop() == stopped
    await time.advance(10.0)
    stats = demo.stats()
    assert (stats.asked, stats.answered, stats.in_flight) == (2, 2, 0)       # answered, nothing new asked

    # aclose waits for questions in flight (on a fake clock: the test moves it while aclose waits).
    demo.start()
    await time.advance(0.5)
    closing = asyncio.ensure_future(demo.aclose())
    await settle()
    assert not closing.done() and demo.stats().in_flight == 1
    await time.advance(3.0)
    await closing
    assert demo.stats().in_flight == 0 and demo.stats().answered == 3 and not demo.running


async def test_every_failure_is_counted_and_kept_never_raised_and_the_traffic_goes_on():
    time = FakeTime()
    engine = FakeEngine(time, failing=(QUESTIONS[1].question,))
    demo = traffic(engine, rate=1.0)
    demo.start()
    await time.advance(5.5)              # q1 q2 q3 q1 q2 q3: q2 failed twice
    stats = demo.stats()
    assert stats.asked == 6 and stats.failed == 2 and stats.answered == 4 and demo.running
    assert stats.last_error == "q2: InputError: the gateway blocked the question"
    assert stats.line() == "6 asked · 4 answered · 0 in flight · 0 skipped · 2 failed"
    await close(demo, time)


async def test_events_on_start_and_stop_and_at_most_once_a_second_while_running():
    time = FakeTime()
    engine = FakeEngine(time, answer_s=0.05)
    demo = traffic(engine, rate=10.0)
    demo.start()
    assert engine.events[0].stats.running and engine.events[0].stats.asked == 0 and engine.event_times == [0.0]
    await time.advance(10.0)
    running = [t for e, t in zip(engine.events, engine.event_times) if e.stats.running]
    assert all(b - a >= EVENT_EVERY_S - 1e-9 for a, b in zip(running, running[1:]))
    assert 9 <= len(running) <= 12                      # about one a second, not one per question
    demo.stop()
    last = engine.events[-1]
    assert not last.stats.running and last.at == time.now
    # The answers that land after the stop are reported too (they are few: at most the cap).
    await time.advance(1.0)
    assert engine.events[-1].stats.in_flight == 0 and engine.events[-1].stats.answered == demo.stats().asked
    assert engine.events[-1].stats == demo.stats()


async def test_answers_at_a_slow_rate_are_reported_within_a_second():
    time = FakeTime()
    engine = FakeEngine(time, answer_s=0.5)
    demo = traffic(engine, rate=0.05)              # one question every 20 s
    demo.start()
    await time.advance(2.0)
    assert engine.events[-1].stats.answered == 1 and engine.event_times[-1] <= 1.5
    await close(demo, time)


async def test_the_rate_is_checked_and_a_new_rate_applies_at_once():
    time = FakeTime()
    engine = FakeEngine(time)
    demo = traffic(engine, rate=0.05)
    for bad in (0, 0.01, 25, math.nan, math.inf, "fast", None):
        with pytest.raises(InputError):
            demo.set_rate(bad)                     # type: ignore[arg-type]
    with pytest.raises(InputError):
        traffic(engine, rate=0.0)
    with pytest.raises(InputError):
        demo.start(rate=30)
    assert not demo.running and demo.rate == 0.05
    demo.start()
    await time.advance(5.0)
    assert demo.stats().asked == 1                 # the next one is 20 s away
    demo.set_rate(5.0)
    await time.advance(0.01)
    assert demo.stats().asked == 2                 # more than one new interval since the last: now
    await time.advance(1.0)
    assert demo.stats().asked == 7 and demo.stats().rate == 5.0
    assert engine.events[-1].stats.rate == 5.0
    await close(demo, time)


async def test_a_limited_round_stops_by_itself_once_asked_and_its_answers_still_come_in():
    time = FakeTime()
    engine = FakeEngine(time, answer_s=2.5)
    demo = traffic(engine, rate=1.0)
    demo.start(limit=3)
    await settle()
    assert demo.stats().line() == "1/3 asked · 0 answered · 1 in flight · 0 skipped"
    await time.advance(2.5)
    stats = demo.stats()
    assert stats.asked == 3 and not stats.running and stats.in_flight == 2 and not engine.events[-1].stats.running
    await time.advance(10.0)
    assert demo.stats().answered == 3 and demo.stats().asked == 3
    assert demo.stats().line() == "3 asked · 3 answered · 0 in flight · 0 skipped"
    with pytest.raises(InputError):
        demo.start(limit=0)
    demo.start()                                   # no limit this time
    await time.advance(5.0)
    assert demo.running and demo.stats().asked > 6 and demo.stats().limit is None
    await close(demo, time)


def test_the_demo_questions_file_has_every_tier():
    questions = load_demo_questions(DEMO_QUESTIONS_PATH)
    assert len(questions) >= 40
    assert DemoTraffic(lambda q, t: None, lambda e: None).round_size() == len(questions)
    assert {q.tier for q in questions} == set(RiskTier)
    assert len({q.id for q in questions}) == len(questions)


def test_a_broken_questions_file_names_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "Q?", "tier": "low"}\n{"id": "b", "tier": "urgent"}\n')
    with pytest.raises(InputError, match="line 2"):
        load_demo_questions(path)


async def test_the_engine_feeds_the_fleet_and_aclose_waits_for_the_demo_questions(small_fleet_file, db_path,
                                                                                   cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    assert not db_path.exists() and engine.demo.stats() == DemoStats(max_in_flight=engine.demo.max_in_flight)
    events: list[DemoTrafficChanged] = []
    engine.subscribe(lambda e: events.append(e) if isinstance(e, DemoTrafficChanged) else None)
    async with engine:
        engine.demo.start(rate=4.0)
        for _ in range(600):
            if engine.demo.stats().answered + engine.demo.stats().failed >= 3:
                break
            await asyncio.sleep(0.05)
    stats = engine.demo.stats()          # aclose stopped it and waited for every question in flight
    assert not stats.running and stats.in_flight == 0
    assert stats.answered >= 3 and stats.answered + stats.failed == stats.asked, stats.last_error
    assert events[0].stats.running and not events[-1].stats.running
    assert events[-1].stats == stats
