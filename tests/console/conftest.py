"""Console test fixtures: a qasync loop that pytest-qt can drive, and strictness.

How asyncio runs here: qtbot.waitSignal / waitUntil spin nested Qt event loops, and a qasync
loop's callbacks are Qt timers and socket notifiers, so those nested loops drive asyncio too.
The loop is made the *running* loop without run_forever(): run_forever() would have to be
ended with loop.stop(), which calls QApplication.exit(); outside app.exec() that leaves Qt's
"quit now" flag set (every later nested loop returns at once) and emits aboutToQuit.

Strictness (qutebrowser's rule): any Qt warning or any logged ERROR fails the test.
"""
from __future__ import annotations

import asyncio
import gc
import logging
from pathlib import Path

import pytest

from console.app import make_loop

from engine import Engine, load_fleet, load_settings

HERE = Path(__file__).parent
# Printed by the offscreen platform plugin whenever a top-level window is shown: not our bug.
QT_PLATFORM_NOISE = r"This plugin does not support (propagateSizeHints|raise)\(\)"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(QT_PLATFORM_NOISE))


@pytest.fixture(autouse=True)
def console_settings_in_tmp(tmp_path):
    """QSettings (window layout, theme) go to this test's own folder, never the user's."""
    from PySide6.QtCore import QSettings
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield tmp_path / "settings"


@pytest.fixture(autouse=True)
def fail_on_logged_errors(caplog):
    caplog.set_level(logging.WARNING)
    yield
    errors = [r for when in ("setup", "call") for r in caplog.get_records(when) if r.levelno >= logging.ERROR]
    if errors:
        pytest.fail("errors were logged:\n" + "\n".join(f"{r.name}: {r.getMessage()}" for r in errors))


@pytest.fixture
def qasync_loop(qapp, qtbot):
    loop = make_loop(qapp)
    asyncio.set_event_loop(loop)
    asyncio._set_running_loop(loop)     # see the module docstring for why not run_forever()
    try:
        yield loop
        leftover = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in leftover:
            task.cancel()
        qtbot.waitUntil(lambda: all(t.done() for t in leftover), timeout=10_000)
        assert not leftover, f"tasks were still running when the test ended: {leftover}"
    finally:
        asyncio._set_running_loop(None)
        loop.close()
        asyncio.set_event_loop(None)
        # The loop's timers and the service sit in reference cycles: collect them here, on the main
        # thread. Left to chance, the collector may run in a worker thread of a later test, and Qt then
        # warns "Timers cannot be stopped from another thread", which fails that test.
        gc.collect()


@pytest.fixture
def engine(small_fleet_file, db_path, cache_dir) -> Engine:
    """A real engine on the small test fleet (6 agents, 12 documents, no torch)."""
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    yield engine
    # Safety net only: a failed test must not leave agents behind (tests assert on this themselves).
    for child in engine.parts.launcher._children.values():
        if child.process.poll() is None:
            child.process.kill()
            child.process.wait()
        if child.process.stdout:
            child.process.stdout.close()
