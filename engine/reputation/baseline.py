"""Each agent's behaviour against its own history: a sudden change is a hint even when its outputs look fine.

The last `baseline_window` samples are compared with the samples before them (up to `baseline_size` in all):
- latency and reply size, on a log scale (they vary by factors and have long tails): the window's median
  beyond `shift_sigmas` robust standard deviations (1.4826 x MAD) of the history's median, either way (faster
  can mean canned replies). Failed calls are left out of both, since their latency is a timeout and their
  size is nothing: they count in the error rate instead.
- error rate rising, agreement rate falling, by more than `shift_rate`, and only if that many failures (or
  disagreements) in the window are as unlikely under the usual rate as `shift_sigmas` standard deviations
  (binomial tail), so a flaky agent's unlucky window is not a shift. The usual rate is the history's or the
  lifetime's, whichever is kinder: forty calls can miss a 10% habit by chance, a lifetime cannot.
A shifted metric is reported once. It is watched again when its window is back near what was usual before
the shift, or once the history holds only calls made since (the baseline absorbed it) and the window agrees
with that. An agent that is always slow or often down has that in its history, so it is never flagged for it.
"""
from __future__ import annotations

import enum
import math
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Callable

from ..settings.reputation import ReputationSettings

MAD_TO_SD = 1.4826     # MAD of a normal distribution times this is its standard deviation
REARM = 0.5            # "back to usual" is within half the shift threshold, so noise near it is not a new shift
_NORMAL = statistics.NormalDist()


class BehaviourMetric(str, enum.Enum):
    LATENCY = "latency"
    REPLY_SIZE = "reply_size"
    ERROR_RATE = "error_rate"
    AGREEMENT = "agreement"


@dataclass(frozen=True)
class BehaviourSample:
    latency_ms: float
    reply_bytes: int
    error: bool
    agreement: bool | None = None          # None: nothing to agree with on this question


@dataclass(frozen=True)
class Shift:
    metric: BehaviourMetric
    why: str


@dataclass(frozen=True)
class _Usual:
    """What a metric usually is: a level (median) with the move that makes a shift, or a rate with its
    sample count (for smoothing)."""
    value: float
    scale: float


@dataclass
class _Watch:
    flagged: _Usual | None = None          # what was usual when it shifted; None: armed
    since: int = 0                         # samples since it was flagged


_VALUES: dict[BehaviourMetric, Callable[[list[BehaviourSample]], list]] = {
    BehaviourMetric.LATENCY: lambda ss: [s.latency_ms for s in ss if not s.error],
    BehaviourMetric.REPLY_SIZE: lambda ss: [float(s.reply_bytes) for s in ss if not s.error],
    BehaviourMetric.ERROR_RATE: lambda ss: [s.error for s in ss],
    BehaviourMetric.AGREEMENT: lambda ss: [s.agreement for s in ss if s.agreement is not None],
}
_LEVELS = {BehaviourMetric.LATENCY: ("latency", "ms"), BehaviourMetric.REPLY_SIZE: ("reply size", "bytes")}
_RATES = {BehaviourMetric.ERROR_RATE: ("error rate", True), BehaviourMetric.AGREEMENT: ("agreement rate", False)}


class BehaviourBaseline:
    def __init__(self, settings: ReputationSettings) -> None:
        self._s = settings
        self._samples: deque[BehaviourSample] = deque(maxlen=settings.baseline_size)
        self._watch = {metric: _Watch() for metric in BehaviourMetric}
        self._lifetime = {metric: [0, 0] for metric in _RATES}   # [true, all] per rate metric

    def __len__(self) -> int:
        return len(self._samples)

    def add(self, sample: BehaviourSample) -> tuple[Shift, ...]:
        """Adds a sample; returns the shifts it completes (each metric at most once per shift)."""
        self._samples.append(sample)
        for metric, counts in self._lifetime.items():
            for value in _VALUES[metric]([sample]):
                counts[0] += value
                counts[1] += 1
        for watch in self._watch.values():
            watch.since += 1
        w = self._s.baseline_window
        if len(self._samples) < w + self._s.baseline_min:
            return ()
        samples = list(self._samples)
        history, window = samples[:-w], samples[-w:]
        found: list[Shift] = []
        for metric, watch in self._watch.items():
            past, now = _VALUES[metric](history), _VALUES[metric](window)
            if len(past) < self._s.baseline_min or len(now) < w // 2:
                continue                   # too few samples of that kind to tell: the watch stays as it is
            usual = self._usual(metric, past, now)
            severity, why = self._severity(metric, usual, now)
            if watch.flagged is None:
                if severity > 1:
                    found.append(Shift(metric, why))
                    watch.flagged, watch.since = usual, 0
                continue
            back = self._severity(metric, watch.flagged, now)[0] <= REARM
            absorbed = watch.since >= len(history) and severity <= REARM
            if back or absorbed:
                watch.flagged = None
        return tuple(found)

    def _usual(self, metric: BehaviourMetric, past: list, now: list) -> _Usual:
        if metric in _LEVELS:
            logs = _logs(past)
            median = statistics.median(logs)
            mad = statistics.median(abs(x - median) for x in logs)
            # On a log scale the spread floor is a share of the usual value: 0.05 is about 5%.
            spread = max(MAD_TO_SD * mad, self._s.shift_spread_floor)
            return _Usual(median, self._s.shift_sigmas * spread)
        rising = _RATES[metric][1]
        true, total = self._lifetime[metric]
        true, total = true - sum(now), total - len(now)         # the lifetime up to the window
        recent, longrun = sum(past) / len(past), true / total
        return _Usual(max(recent, longrun) if rising else min(recent, longrun), len(past))

    def _severity(self, metric: BehaviourMetric, usual: _Usual, now: list) -> tuple[float, str]:
        """How far the window is from usual, over the shift threshold (above 1: a shift), and why."""
        if metric in _LEVELS:
            name, unit = _LEVELS[metric]
            # The window's median, not its mean: one slow reply is not a change in behaviour.
            logs = _logs(now)
            level = statistics.median(logs)
            severity = abs(level - usual.value) / usual.scale
            # Say what it is now: the window's calls beyond the threshold, not a blend with the usual ones.
            up = level > usual.value
            moved = [x for x in logs if abs(x - usual.value) > usual.scale and (x > usual.value) == up]
            shown = math.expm1(statistics.median(moved) if moved else level)
            return severity, f"{name} {shown:.0f} {unit} against a usual {math.expm1(usual.value):.0f} {unit}"
        name, rising = _RATES[metric]
        rate = sum(now) / len(now)
        moved = rate - usual.value if rising else usual.value - rate
        # The binomial tail of that many failures (disagreements) at the usual rate, smoothed so a clean
        # record is not a rate of exactly 0, as a number of standard deviations.
        p = (usual.value * usual.scale + 1) / (usual.scale + 2)
        p, hits = (p, sum(now)) if rising else (1 - p, len(now) - sum(now))
        tail = sum(math.comb(len(now), k) * p ** k * (1 - p) ** (len(now) - k) for k in range(hits, len(now) + 1))
        sigmas = -_NORMAL.inv_cdf(min(max(tail, 1e-300), 1 - 1e-12))
        severity = min(moved / self._s.shift_rate, sigmas / self._s.shift_sigmas)
        return severity, f"{name} {rate:.0%} over the last {len(now)} calls against a usual {usual.value:.0%}"


def _logs(values: list[float]) -> list[float]:
    """Latency and size vary by factors and have long tails: judged on a log scale they are near normal."""
    return [math.log1p(max(x, 0.0)) for x in values]
