"""Small statistics the engine, the console and the benchmarks share (no dependency beyond the standard library)."""
from __future__ import annotations

import math
import time
from typing import Sequence


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank (the ceil(q·n)-th smallest); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def elapsed_ms(started: float, digits: int = 1) -> float:
    """Milliseconds since `started` (a time.perf_counter() reading), rounded."""
    return round((time.perf_counter() - started) * 1000, digits)
