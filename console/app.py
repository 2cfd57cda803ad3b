"""Entry point of the console: QApplication + qasync loop, window first, engine in the background.

Shutdown order when the window is closed (or on SIGINT/SIGTERM): the window refuses the first
close and asks for shutdown; EngineService stops accepting questions, cancels its tasks and
closes the engine (fleet processes stopped, store flushed); only then does the window close and
the loop end, so no agent process outlives the console.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
import logging
import signal
import sys
from pathlib import Path
from typing import Awaitable, Callable

import qasync
from PySide6.QtWidgets import QApplication

from engine import Engine, EngineSettings, FleetConfig, quoted_log_handler

from .main_window import MainWindow
from .service import EngineService, Phase
from .settings import console_settings
from .startup import install_probe
from .style import ThemeChoice, apply_app_style, follow_system

log = logging.getLogger(__name__)

# A scripted run (the screenshot tool) drives the window and returns the exit code.
Script = Callable[[MainWindow, EngineService], Awaitable[int]]

EXIT_OK, EXIT_FAILURE = 0, 1


def run_console(fleet: FleetConfig, settings: EngineSettings, db_path: Path | None = None, *,
                cache_dir: Path | None = None, script: Script | None = None, demo_rate: float | None = None) -> int:
    """demo_rate: start demo traffic at this many questions a second once the fleet is ready (None: off)."""
    if not logging.getLogger().handlers:
        # Log lines quote their message: an agent's text cannot draw a line of its own or repaint the terminal.
        logging.basicConfig(level=logging.INFO,
                            handlers=[quoted_log_handler("%(asctime)s %(levelname)s %(name)s: %(message)s")])
        logging.getLogger("httpx").setLevel(logging.WARNING)     # one INFO line per agent call is noise here
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Quorum")
    apply_app_style(app, theme_choice(console_settings()))
    # The window closes only after shutdown; the loop ends when serve() returns, not before.
    app.setQuitOnLastWindowClosed(False)
    install_probe(app)                # QUORUM_STARTUP_PROBE only (main.py bench ui)
    engine = Engine(fleet, settings, db_path=db_path, cache_dir=cache_dir)   # no I/O yet
    service = EngineService(engine)
    window = MainWindow(service)
    follow_system(app, window.theme_choice)
    if demo_rate is not None:
        service.demo.start_when_ready(demo_rate)
    with asyncio.Runner(loop_factory=lambda: make_loop(app)) as runner:
        try:
            return runner.run(serve(window, service, script))
        except RuntimeError as exc:
            if service.phase is Phase.STOPPED:
                raise
            # Qt's loop was quit from outside (QApplication.quit(), session end) before serve()
            # finished: run the loop once more, just long enough to stop the fleet in order.
            log.warning("the Qt event loop ended early (%s); stopping the engine", exc)
            runner.run(_shutdown(service))
            return EXIT_OK


def theme_choice(settings) -> ThemeChoice:
    from .main_window import THEME_KEY
    try:
        return ThemeChoice(str(settings.value(THEME_KEY, ThemeChoice.SYSTEM.value)))
    except ValueError:
        return ThemeChoice.SYSTEM


def make_loop(app: QApplication) -> qasync.QEventLoop:
    """A qasync loop whose default executor is a plain thread pool: the engine's CPU work
    (embedding, clustering) runs there, and qasync's QThread-based default executor leaves Qt
    timers owned by worker threads behind at shutdown."""
    loop = qasync.QEventLoop(app)
    loop.set_default_executor(ThreadPoolExecutor(max_workers=4, thread_name_prefix="quorum-worker"))
    return loop


async def _shutdown(service: EngineService) -> None:
    await service.shutdown()


async def serve(window: MainWindow, service: EngineService, script: Script | None = None) -> int:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(service.handle_loop_exception)
    previous_hook = sys.excepthook
    sys.excepthook = lambda kind, exc, tb: service.report_error(exc, context="unexpected error in the console")
    close_requested = asyncio.Event()
    window.sig_close_requested.connect(close_requested.set)
    _close_on_signals(loop, window)
    try:
        window.show()                # before any model loads: the operator sees progress at once
        service.start()
        code = await _wait_for_close(close_requested, window, service, script)
        await service.shutdown()
        window.allow_close()
        window.close()
        return code
    finally:
        sys.excepthook = previous_hook
        _stop_closing_on_signals(loop)


async def _wait_for_close(close_requested: asyncio.Event, window: MainWindow, service: EngineService,
                          script: Script | None) -> int:
    if script is None:
        await close_requested.wait()
        return EXIT_OK
    script_task = asyncio.ensure_future(script(window, service))
    closed = asyncio.ensure_future(close_requested.wait())
    await asyncio.wait({script_task, closed}, return_when=asyncio.FIRST_COMPLETED)
    closed.cancel()
    if not script_task.done():       # the operator closed the window first
        script_task.cancel()
        await asyncio.gather(script_task, return_exceptions=True)
        return EXIT_OK
    try:
        return script_task.result()
    except Exception as exc:   # noqa: BLE001 - a failed script is a failed run, not a crash
        service.report_error(exc, context="scripted run failed")
        return EXIT_FAILURE


CLOSING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _close_on_signals(loop: asyncio.AbstractEventLoop, window: MainWindow) -> None:
    """Ctrl-C or SIGTERM closes the window, which takes the same orderly path as a click."""
    for sig in CLOSING_SIGNALS:
        try:
            loop.add_signal_handler(sig, window.close)
        except (NotImplementedError, RuntimeError, ValueError):   # not on this platform / not the main thread
            log.debug("cannot handle %s on this loop", sig)


def _stop_closing_on_signals(loop: asyncio.AbstractEventLoop) -> None:
    for sig in CLOSING_SIGNALS:
        try:
            loop.remove_signal_handler(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
