"""How long the console took to show its window, measured from the process's own start.

The window must be shown within 2 s of start while the models still load (issue #11). `main.py bench ui`
starts the console as an operator does (`main.py --fleet F`) with `QUORUM_STARTUP_PROBE=FILE` in its
environment: the console then writes {"window_shown_s": …, "from": …} to FILE at the main window's first
paint, and carries on as usual. Without the variable nothing is measured or written.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QMainWindow

PROBE_ENV = "QUORUM_STARTUP_PROBE"
_IMPORTED_AT = time.perf_counter()


def process_started_at() -> tuple[float, str]:
    """The process's start on the perf_counter clock, and what it was measured from (Linux /proc; elsewhere
    this module's import, which comes later and so says less than the truth)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = float(stat[stat.rindex(")") + 2:].split()[19])       # field 22: starttime
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        now = time.perf_counter()
        return now - (uptime - start_ticks / os.sysconf("SC_CLK_TCK")), "process start"
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED_AT, "import of console.startup"


class FirstPaint(QObject):
    """Notes the first paint of a main window (an app-wide event filter that removes itself)."""

    def __init__(self, app: QApplication, on_paint) -> None:
        super().__init__(app)
        self._app, self._on_paint = app, on_paint
        app.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:       # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint and isinstance(obj, QMainWindow):
            self._app.removeEventFilter(self)
            self._on_paint(time.perf_counter())
        return False


def install_probe(app: QApplication) -> FirstPaint | None:
    """When QUORUM_STARTUP_PROBE names a file, writes the window's time to it at the first paint."""
    target = os.environ.get(PROBE_ENV, "").strip()
    if not target:
        return None
    started, measured_from = process_started_at()

    def write(painted_at: float) -> None:
        Path(target).write_text(json.dumps({"window_shown_s": round(painted_at - started, 3),
                                            "from": measured_from}) + "\n", encoding="utf-8")
    return FirstPaint(app, write)
