"""Demo traffic: the demo questions fed to the engine at a chosen rate, so the defences can be watched at work.

A new operator starts the console on the built-in fleet and, within a minute, sees trust scores move, the
tampering retriever and the swapping generator quarantined and high-risk answers waiting in the approval queue.
DemoTraffic asks the questions of resources/demo_questions.jsonl round-robin, each at its own tier (so the
high-tier ones reach the queue), at `rate` questions a second.

A small machine cannot answer every rate: at most `max_in_flight` questions are asked at once (2 × cores by
default), and a tick that finds the cap reached is skipped and counted, never queued, so nothing piles up
without bound and the achieved rate is asked / elapsed. A judge reads one question at a time for seconds, so a
tick that finds a judge still reading (`busy`) yields: it is skipped and counted too, and demo traffic never
builds a backlog at the judge. stop() stops feeding but cancels no question
mid-answer (aclose() awaits them). A failed question is counted and its error kept in the stats; it is never
raised out. Listeners hear `DemoTrafficChanged` on start and stop and at most once a second while running.

Pure asyncio: the clock and the sleep are injected, so tests run it on a fake clock.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Sequence

from .errors import InputError
from .events import DemoTrafficChanged, Emit
from .types import RiskTier

log = logging.getLogger(__name__)

DEMO_QUESTIONS_PATH = Path(__file__).resolve().parents[1] / "resources" / "demo_questions.jsonl"
RATE_MIN, RATE_MAX = 0.05, 20.0        # questions a second: one every 20 s, up to 20 a second
DEFAULT_RATE = 0.5                     # what the 2-core demo machine answers without skipping (docs/evaluation.md, "The console under load")
EVENT_EVERY_S = 1.0                    # stats events while running, at most this often
ERROR_CHARS = 300                      # of the last failure kept in the stats

Ask = Callable[[str, "RiskTier | None"], Awaitable[object]]


@dataclass(frozen=True)
class DemoQuestion:
    id: str
    question: str
    tier: RiskTier


@dataclass(frozen=True)
class DemoStats:
    asked: int = 0             # questions handed to the engine
    answered: int = 0          # of those, the ones that came back with an answer (abstentions included)
    failed: int = 0            # the ones that raised (the gateway blocked it, no agent answered, ...)
    skipped: int = 0           # ticks that found max_in_flight questions still running
    yielded: int = 0           # ticks that found a judge still reading (never a backlog at the judge)
    in_flight: int = 0
    rate: float = DEFAULT_RATE     # questions a second asked for
    running: bool = False
    max_in_flight: int = 0
    last_error: str = ""       # the latest failure: question id, exception type and message
    limit: int | None = None   # it stops by itself once `asked` reaches this (None: when stopped)

    def line(self) -> str:
        """'12 asked · 11 answered · 1 in flight · 0 skipped' (· N failed when any did; '12/40 asked' while a
        limited round runs)."""
        asked = f"{self.asked}/{self.limit}" if self.limit is not None and self.running else f"{self.asked}"
        parts = [f"{asked} asked", f"{self.answered} answered", f"{self.in_flight} in flight",
                 f"{self.skipped} skipped"]
        if self.yielded:
            parts.append(f"{self.yielded} yielded to the judge")
        if self.failed:
            parts.append(f"{self.failed} failed")
        return " · ".join(parts)


def default_max_in_flight() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:        # not on Linux
        cores = os.cpu_count() or 1
    return 2 * max(cores, 1)


def check_rate(rate: float) -> float:
    """The rate as a float within RATE_MIN..RATE_MAX, or an InputError saying what is allowed."""
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise InputError(f"demo traffic rate {rate!r} is not a number (questions a second, "
                         f"{RATE_MIN:g} to {RATE_MAX:g})") from None
    if not math.isfinite(value) or not RATE_MIN <= value <= RATE_MAX:
        raise InputError(f"demo traffic rate {value:g} questions a second is out of range "
                         f"({RATE_MIN:g} to {RATE_MAX:g})")
    return value


def load_demo_questions(path: Path = DEMO_QUESTIONS_PATH) -> tuple[DemoQuestion, ...]:
    """The demo questions, each with its own tier ("tier" in the file; medium when it has none)."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            questions.append(DemoQuestion(str(row.get("id", number)), str(row["question"]),
                                          RiskTier(row.get("tier", RiskTier.MEDIUM.value))))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: line {number}: not a demo question ({exc})") from None
    if not questions:
        raise InputError(f"{path}: no demo questions")
    return tuple(questions)


class DemoTraffic:
    """start(rate) / stop() / set_rate(rate) / aclose(); stats() at any time. Constructing does no I/O."""

    def __init__(self, ask: Ask, emit: Emit, *, questions: Sequence[DemoQuestion] | None = None,
                 questions_path: Path = DEMO_QUESTIONS_PATH, max_in_flight: int | None = None,
                 rate: float = DEFAULT_RATE, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 stamp: Callable[[], float] = time.time, busy: Callable[[], bool] = lambda: False) -> None:
        """ask: the engine's ask(question, tier); emit: where DemoTrafficChanged goes; clock and sleep pace
        the ticks (monotonic seconds); stamp dates the events (the engine's clock); busy: whether a judge is
        reading now (a tick then yields)."""
        self._ask = ask
        self._emit = emit
        self._questions: tuple[DemoQuestion, ...] | None = tuple(questions) if questions is not None else None
        self._questions_path = questions_path
        self.max_in_flight = max_in_flight if max_in_flight is not None else default_max_in_flight()
        if self.max_in_flight < 1:
            raise InputError(f"demo traffic needs at least one question in flight, not {self.max_in_flight}")
        self._rate = check_rate(rate)
        self._clock, self._sleep, self._stamp, self._busy = clock, sleep, stamp, busy
        self._running = False
        self._ticker: asyncio.Task | None = None
        self._retired: set[asyncio.Task] = set()   # tickers cancelled by a rate change, until they finish
        self._limit: int | None = None
        self._in_flight: set[asyncio.Task] = set()
        self._next = 0                         # the next question, round-robin
        self._last_tick_at: float | None = None    # clock of the last tick; None: the next one is due now
        self._asked = self._answered = self._failed = self._skipped = self._yielded = 0
        self._last_error = ""
        self._last_failure = ""                # the latest failure without its question, for the log
        self._last_event_at: float | None = None   # clock of the last stats event while running
        self._dirty = False                    # stats changed since that event

    # --- control ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._running

    @property
    def rate(self) -> float:
        return self._rate

    def start(self, rate: float | None = None, *, limit: int | None = None) -> DemoStats:
        """Starts feeding (the first question at once), at `rate` if given; with a limit, it stops by itself
        after asking that many more (one round of the demo questions shows every defence once). Already
        running: only the rate changes. Needs a running asyncio loop; a rate out of range is an InputError."""
        if self._running:
            return self.stats() if rate is None else self.set_rate(rate)
        if limit is not None and limit < 1:
            raise InputError(f"a demo traffic limit must be at least one question, not {limit}")
        if rate is not None:
            self._rate = check_rate(rate)      # announced with the start, below
        self._limit = None if limit is None else self._asked + limit
        if self._questions is None:
            self._questions = load_demo_questions(self._questions_path)
        self._running = True
        self._last_tick_at = None
        self._start_ticker()
        self._announce()
        return self.stats()

    def stop(self) -> DemoStats:
        """Stops feeding; questions already asked run to their answer. Idempotent."""
        if not self._running:
            return self.stats()
        self._running = False
        self._stop_ticker()
        self._announce()
        return self.stats()

    def set_rate(self, rate: float) -> DemoStats:
        """A new rate, in force at once: the next question comes one new interval after the last one (or now)."""
        value = check_rate(rate)
        if value == self._rate:
            return self.stats()
        self._rate = value
        if self._running:
            self._stop_ticker()         # it may be asleep until the old rate's next tick
            self._start_ticker()
            self._dirty = True
        else:
            self._announce()
        return self.stats()

    async def aclose(self) -> None:
        """Stops feeding and waits for the questions still being answered."""
        self.stop()
        tickers = [t for t in (self._ticker, *self._retired) if t is not None]
        if tickers:
            await asyncio.gather(*tickers, return_exceptions=True)
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    def round_size(self) -> int:
        """How many questions one round asks: every demo question once."""
        if self._questions is None:
            self._questions = load_demo_questions(self._questions_path)
        return len(self._questions)

    def stats(self) -> DemoStats:
        return DemoStats(self._asked, self._answered, self._failed, self._skipped, self._yielded,
                         len(self._in_flight), self._rate, self._running, self.max_in_flight, self._last_error,
                         self._limit)

    # --- the ticker --------------------------------------------------------------------------
    def _start_ticker(self) -> None:
        self._ticker = asyncio.get_running_loop().create_task(self._run(), name="demo.traffic")

    def _stop_ticker(self) -> None:
        ticker = self._ticker
        if ticker is not None and not ticker.done():
            ticker.cancel()              # it only ever waits in sleep: no question is cut short
            self._retired.add(ticker)
            ticker.add_done_callback(self._retired.discard)

    def _due(self, now: float) -> float:
        return now if self._last_tick_at is None else self._last_tick_at + 1.0 / self._rate

    async def _run(self) -> None:
        while self._running:
            now = self._clock()
            due = self._due(now)
            if now >= due:
                self._tick()
                # Paced from the schedule, not from when the tick ran; but a loop that fell a whole interval
                # behind starts afresh rather than bursting to catch up.
                self._last_tick_at = due if now - due < 1.0 / self._rate else now
                due = self._due(now)
            self._maybe_announce(now)
            # Awake at least once a second: answers that came back meanwhile are reported within one.
            wake = min(due, now + EVENT_EVERY_S)
            if self._dirty and self._last_event_at is not None:
                wake = min(wake, self._last_event_at + EVENT_EVERY_S)
            await self._sleep(max(wake - self._clock(), 0.0))

    def _tick(self) -> None:
        if len(self._in_flight) >= self.max_in_flight:
            self._skipped += 1
            self._dirty = True
            return
        if self._in_flight and self._busy():
            self._yielded += 1
            self._dirty = True
            return
        questions = self._questions or ()
        question = questions[self._next % len(questions)]
        self._next += 1
        self._asked += 1
        self._dirty = True
        task = asyncio.get_running_loop().create_task(self._answer(question), name=f"demo.ask.{question.id}")
        self._in_flight.add(task)
        if self._limit is not None and self._asked >= self._limit:
            self.stop()                  # the round is asked; its answers still come in

    async def _answer(self, question: DemoQuestion) -> None:
        try:
            await self._ask(question.question, question.tier)
            self._answered += 1
        except asyncio.CancelledError:
            self._failed += 1
            self._last_error = f"{question.id}: cancelled"
            raise
        except Exception as exc:   # noqa: BLE001 - one question's failure is counted, never raised out
            self._failed += 1
            error = f"{type(exc).__name__}: {exc}"
            # Once per kind of failure: a fleet that is down would otherwise log several lines a second.
            (log.debug if error == self._last_failure else log.warning)("demo question %s failed: %s", question.id,
                                                                        error)
            self._last_failure = error
            self._last_error = f"{question.id}: {error}"[:ERROR_CHARS]
        finally:
            self._in_flight.discard(asyncio.current_task())
            self._dirty = True
            if not self._running:
                self._announce()     # stopped: no ticker to report the last answers, and they are few

    # --- events ------------------------------------------------------------------------------
    def _maybe_announce(self, now: float) -> None:
        if self._dirty and (self._last_event_at is None or now - self._last_event_at >= EVENT_EVERY_S):
            self._announce()

    def _announce(self) -> None:
        self._dirty = False
        self._last_event_at = self._clock()
        try:
            self._emit(DemoTrafficChanged(self.stats(), self._stamp()))
        except Exception:   # noqa: BLE001 - a listener's failure must not stop the traffic
            log.exception("a listener failed on DemoTrafficChanged")
