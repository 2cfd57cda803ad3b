"""The installed PySide6 must not drain None/True/False (6.12.0 does on Python 3.11: pyproject pins <6.12).

Run in a subprocess: a drained singleton aborts the whole interpreter, not just one test."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]

BUSY_QT_SCRIPT = """
import {guard}
from PySide6.QtCore import QObject, Signal

class Emitter(QObject):
    sig = Signal(bool)

emitter, received = Emitter(), []
emitter.sig.connect(received.append)
for _ in range(100_000):        # far more than None/True/False have references in a fresh interpreter
    emitter.setObjectName("x")
    emitter.sig.emit(True)
    received.clear()
print("survived")
"""


def run(guard: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BUSY_QT_SCRIPT.format(guard=guard)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_busy_qt_process_that_imports_the_console_survives_and_exits_cleanly():
    result = run("console")
    assert (result.returncode, result.stdout.strip()) == (0, "survived"), result.stderr[-1500:]
