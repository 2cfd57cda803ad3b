"""Checks on agent processes, and a served window, for console tests (tests may look inside the engine; the
console may not)."""
from __future__ import annotations

import os
from pathlib import Path

from engine import Engine


def agent_processes_alive(engine: Engine) -> list[str]:
    """Ids of agents whose process is still running (the test may look inside the engine)."""
    return [agent_id for agent_id, child in engine.parts.launcher._children.items() if child.process.poll() is None]


def processes_mentioning(text: str) -> list[int]:
    """Pids of live processes whose command line contains `text` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), "")
        except OSError:
            continue
        if text in cmdline and "zombie" not in state:
            pids.append(int(entry.name))
    return pids


def tooltip_text(tooltip: str) -> str:
    """What the operator reads in a tooltip: Qt renders one that looks like HTML as HTML."""
    from PySide6.QtGui import Qt, QTextDocument      # QtGui's Qt namespace has mightBeRichText
    if not Qt.mightBeRichText(tooltip):
        return tooltip
    document = QTextDocument()
    document.setHtml(tooltip)
    return document.toPlainText()


def serve_window(qtbot, qasync_loop, service, timeout_ms: int = 60_000):
    """The real MainWindow served on `service` until its queue is first read: (window, run task, errors seen)."""
    from console.app import serve
    from console.main_window import MainWindow
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    run = qasync_loop.create_task(serve(window, service))
    qtbot.waitExposed(window)
    with qtbot.waitSignal(service.reviews.sig_loaded, timeout=timeout_ms):
        pass
    return window, run, errors
