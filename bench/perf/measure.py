"""Small measuring tools shared by the benchmarks: a process's resident memory, open descriptors (quantiles are
engine.stats')."""
from __future__ import annotations

import os
from pathlib import Path


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
