"""Small measuring tools shared by the benchmarks: quantiles, a process's resident memory, open descriptors."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Sequence


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank (the ceil(q·n)-th smallest); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process in MB (Linux /proc; 0 where it cannot be read: the process has gone)."""
    try:
        status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid: int | None = None) -> int:
    """Open file descriptors of a process (Linux /proc; -1 where it cannot be read)."""
    try:
        return len(os.listdir(f"/proc/{pid or os.getpid()}/fd"))
    except OSError:
        return -1


def processes_naming(marker: str) -> list[int]:
    """Processes whose command line names `marker` (a run's fleet file: its agents and flap sleepers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
