"""Small statistics the engine, the console and the benchmarks share (no dependency beyond the standard library)."""
from __future__ import annotations

import math
from typing import Sequence


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank (the ceil(q·n)-th smallest); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
