"""Demo traffic in the console: the adapter (service.demo) and the controls widget, on a fake engine whose
`demo` is either a recording stand-in or the real engine.demo.DemoTraffic over the fake engine's ask; then the
slow `main.py bench ui` run on the real demo fleet."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.panels.demo_controls import OFF_TEXT, DemoControls
from console.service import EngineService
from engine import RiskTier
from engine.demo import RATE_MAX, RATE_MIN, DemoQuestion, DemoStats, DemoTraffic, check_rate
from engine.events import DemoTrafficChanged

from .answers import make_answer
from .fakes import FakeEngine, fake_service

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class RecordingDemo:
    """engine.demo's surface: records calls, checks rates as the real one does, and announces every change
    through the fake engine's listeners (DemoTrafficChanged), as the real one does on start, stop and rate."""

    def __init__(self, engine: "DemoEngine") -> None:
        self._engine = engine
        self.calls: list[tuple] = []
        self._stats = DemoStats(max_in_flight=4)

    def stats(self) -> DemoStats:
        return self._stats

    def start(self, rate: float | None = None, *, limit: int | None = None) -> DemoStats:
        self.calls.append(("start", rate) if limit is None else ("start", rate, limit))
        if rate is not None:
            check_rate(rate)
        return self._change(running=True, rate=self._stats.rate if rate is None else rate, limit=limit)

    def stop(self) -> DemoStats:
        self.calls.append(("stop",))
        return self._change(running=False) if self._stats.running else self._stats

    def set_rate(self, rate: float) -> DemoStats:
        self.calls.append(("set_rate", rate))
        return self._change(rate=check_rate(rate))

    def progress(self, **counts) -> None:
        """What the engine reports while it runs (at most once a second)."""
        self._change(**counts)

    def _change(self, **fields) -> DemoStats:
        self._stats = dataclasses.replace(self._stats, **fields)
        self._engine.emit(DemoTrafficChanged(self._stats, self._engine.clock()))
        return self._stats


class DemoEngine(FakeEngine):
    def __init__(self, *args, real_demo: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        questions = (DemoQuestion("d1", "What are the moons of Mars?", RiskTier.LOW),
                     DemoQuestion("d2", "Should I invest in a probe to Mars?", RiskTier.HIGH))
        self.demo = DemoTraffic(self.ask, self.emit, questions=questions, max_in_flight=2, rate=RATE_MAX) \
            if real_demo else RecordingDemo(self)

    async def aclose(self) -> None:
        if isinstance(self.demo, DemoTraffic):       # as the engine does: demo traffic first, its questions answered
            await self.demo.aclose()
        await super().aclose()


def controls(qtbot, service: EngineService) -> DemoControls:
    widget = DemoControls(service, rate=1.5)
    qtbot.addWidget(widget)
    return widget


# --- the adapter ---------------------------------------------------------------------------------

def test_the_adapter_switches_the_engines_demo_traffic_and_routes_its_stats(qtbot, qasync_loop):
    session = fake_service(qtbot, DemoEngine())
    service, demo = session.service, session.engine.demo
    changes: list[DemoStats] = []
    service.demo.sig_changed.connect(changes.append)
    assert not service.demo.running and service.demo.stats() == demo.stats()

    assert service.demo.start(2.0)
    assert demo.calls == [("start", 2.0)] and changes[-1].running and changes[-1].rate == 2.0
    assert service.demo.set_rate(0.5) and changes[-1].rate == 0.5
    demo.progress(asked=3, answered=2, in_flight=1)
    assert changes[-1].line() == "3 asked · 2 answered · 1 in flight · 0 skipped"
    service.demo.stop()
    assert not changes[-1].running and not service.demo.running
    assert session.errors == []

    # A rate out of range is refused and said (sig_error), never raised into Qt.
    assert not service.demo.set_rate(RATE_MAX * 2)
    assert not service.demo.start(0.0)
    assert len(session.errors) == 2 and "out of range" in session.errors[0]
    assert not service.demo.running


def test_demo_traffic_waits_for_the_fleet_start_when_ready_starts_it_then(qtbot, qasync_loop):
    engine = DemoEngine()
    service = EngineService(engine)           # type: ignore[arg-type]
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    assert not service.demo.start(1.0)
    assert errors == ["demo traffic cannot start while the engine is idle"] and engine.demo.calls == []

    service.demo.start_when_ready(1.25, limit=40)      # one round of the demo questions, say
    service.demo.set_rate(0.75)               # the rate the operator chose meanwhile is the one it starts at
    with qtbot.waitSignal(service.sig_ready, timeout=5_000):
        service.start()
    assert engine.demo.calls[-1] == ("start", 0.75, 40) and service.demo.running

    service.demo.stop()
    service.demo.start_when_ready()           # ready already: at once, at the engine's rate
    assert engine.demo.calls[-1] == ("start", None) and service.demo.running
    with qtbot.waitSignal(service.sig_stopped, timeout=5_000):
        service.shutdown()


# --- the controls --------------------------------------------------------------------------------

def test_the_switch_starts_and_stops_at_the_chosen_rate_and_the_line_counts(qtbot, qasync_loop):
    session = fake_service(qtbot, DemoEngine())
    service, demo = session.service, session.engine.demo
    widget = controls(qtbot, service)
    assert widget.switch.isEnabled() and not widget.switch.isChecked() and widget.line.text() == OFF_TEXT
    assert widget.line.textFormat().name == "PlainText"
    assert (widget.rate.minimum(), widget.rate.maximum(), widget.rate_value()) == (RATE_MIN, RATE_MAX, 1.5)

    switched, running = [], []
    widget.sig_switched.connect(switched.append)
    widget.sig_running_changed.connect(running.append)
    widget.switch.click()
    assert switched == running == [True]
    assert demo.calls == [("start", 1.5)] and widget.is_running() and widget.switch.isChecked()
    assert widget.line.text() == "0 asked · 0 answered · 0 in flight · 0 skipped"

    demo.progress(asked=12, answered=11, in_flight=1, failed=1, last_error="d2: AgentTimeout: <b>slow</b>")
    assert widget.line.text() == "12 asked · 11 answered · 1 in flight · 0 skipped · 1 failed"
    assert "&lt;b&gt;slow&lt;/b&gt;" in widget.line.toolTip()          # agent text, shown literally

    widget.rate.setValue(4.0)                                           # running: applies at once
    assert demo.calls[-1] == ("set_rate", 4.0)

    with qtbot.waitSignal(widget.sig_switched) as switched:
        widget.set_running(False)                                       # what the demo.toggle action does
    assert switched.args == [False] and demo.calls[-1] == ("stop",) and not widget.is_running()
    assert widget.line.text().startswith("12 asked")                    # the last counts stay readable
    widget.set_running(False)                                           # the same state again: nothing
    assert demo.calls[-1] == ("stop",) and len([c for c in demo.calls if c == ("stop",)]) == 1
    widget.rate.setValue(2.0)                                           # stopped: only remembered
    assert demo.calls[-1] == ("stop",) and widget.rate_value() == 2.0
    assert session.errors == []


def test_a_stop_the_operator_did_not_make_unchecks_the_switch_without_saying_switched(qtbot, qasync_loop):
    session = fake_service(qtbot, DemoEngine())
    service, demo = session.service, session.engine.demo
    widget = controls(qtbot, service)
    switched: list[bool] = []
    widget.sig_switched.connect(switched.append)
    service.demo.start(3.0)                                   # another hand (start_when_ready, the CLI flag)
    assert widget.switch.isChecked() and widget.rate_value() == 3.0 and switched == []
    with qtbot.waitSignal(widget.sig_running_changed) as changed:
        demo.stop()                                           # the engine stops it (shutdown)
    assert changed.args == [False] and not widget.switch.isChecked() and switched == []


def test_before_the_fleet_is_ready_the_switch_is_off_and_a_start_is_refused(qtbot, qasync_loop):
    engine = DemoEngine()
    service = EngineService(engine)           # type: ignore[arg-type]
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    widget = controls(qtbot, service)
    assert not widget.switch.isEnabled() and "once the fleet is ready" in widget.switch.toolTip()
    widget.set_running(True)
    assert not widget.switch.isChecked() and not widget.is_running() and engine.demo.calls == []
    assert errors == ["demo traffic cannot start while the engine is idle"]
    with qtbot.waitSignal(service.sig_ready, timeout=5_000):
        service.start()
    assert widget.switch.isEnabled()
    with qtbot.waitSignal(service.sig_stopping, timeout=5_000):
        service.shutdown()
    assert not widget.switch.isEnabled()
    qtbot.waitUntil(lambda: service.phase.value == "stopped", timeout=5_000)


def test_real_demo_traffic_on_the_fake_engine_reaches_the_line(qtbot, qasync_loop):
    engine = DemoEngine(real_demo=True, answers=[make_answer(trace_id=f"t{n}") for n in range(200)])
    session = fake_service(qtbot, engine)
    widget = controls(qtbot, session.service)
    assert session.service.demo.round_size() == 2
    widget.rate.setValue(RATE_MAX)
    widget.switch.click()
    qtbot.waitUntil(lambda: engine.demo.stats().answered >= 6, timeout=10_000)
    asked = [args[:2] for args in engine.called("ask")]
    assert asked[:2] == [("What are the moons of Mars?", RiskTier.LOW),
                         ("Should I invest in a probe to Mars?", RiskTier.HIGH)]      # each at its own tier
    qtbot.waitUntil(lambda: widget.line.text().split(" asked")[0] not in ("", "0"), timeout=5_000)
    widget.set_running(False)
    with qtbot.waitSignal(session.service.sig_stopped, timeout=10_000):
        session.service.shutdown()
    stats = engine.demo.stats()
    assert not stats.running and stats.in_flight == 0 and stats.failed == 0
    assert widget.line.text() == stats.line() and not widget.switch.isChecked()
    assert session.errors == []


# --- on the real small fleet ----------------------------------------------------------------------

def test_demo_traffic_started_before_the_fleet_runs_once_it_is_ready_and_closing_waits_for_it(qtbot, qasync_loop,
                                                                                              engine):
    from console.app import serve
    from console.main_window import MainWindow
    from .helpers import agent_processes_alive

    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    enqueued = []
    service.reviews.sig_changed.connect(enqueued.append)
    service.demo.start_when_ready(4.0)              # what `main.py --demo 4` does
    run = qasync_loop.create_task(serve(window, service))
    with qtbot.waitSignal(service.sig_ready, timeout=60_000):
        pass
    assert service.demo.running and engine.demo.rate == 4.0
    # The demo questions run at their own tiers: a high-risk answer waits in the approval queue.
    qtbot.waitUntil(lambda: engine.demo.stats().answered >= 2 and bool(enqueued), timeout=60_000)
    window.close()                                  # stops the traffic, waits for its questions, stops the fleet
    qtbot.waitUntil(run.done, timeout=30_000)
    stats = engine.demo.stats()
    assert run.result() == 0 and not stats.running and stats.in_flight == 0
    assert stats.answered + stats.failed == stats.asked and agent_processes_alive(engine) == []
    assert errors == [], errors


def test_only_the_built_in_fleet_is_the_demo_fleet(qtbot, tmp_path, small_fleet_file):
    from engine import Engine, load_fleet, load_settings
    built_in = EngineService(Engine(load_fleet(), load_settings(), db_path=tmp_path / "a.db"))    # no I/O yet
    own = EngineService(Engine(load_fleet(small_fleet_file), load_settings(), db_path=tmp_path / "b.db"))
    assert built_in.demo.on_demo_fleet() and not own.demo.on_demo_fleet()
    assert not EngineService(DemoEngine()).demo.on_demo_fleet()         # type: ignore[arg-type]
    assert not (tmp_path / "a.db").exists()


def test_a_demo_rate_out_of_range_is_bad_input_before_any_window(tmp_path):
    result = subprocess.run([sys.executable, "main.py", "--demo", "50"], cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=60, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 2 and "out of range (0.05 to 20)" in result.stderr


# --- the benchmark -------------------------------------------------------------------------------

@pytest.mark.slow
def test_bench_ui_writes_its_figures(tmp_path):
    """`main.py bench ui --seconds 10` on the demo fleet: the JSON's keys and sane values (no thresholds)."""
    out = tmp_path / "ui.json"
    result = subprocess.run([sys.executable, "main.py", "bench", "ui", "--seconds", "10", "--rate", "5",
                             "--json", str(out)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert {"stall_p50_ms", "stall_p99_ms", "stall_max_ms", "window_shown_s"} <= set(figures)
    assert 0 <= figures["stall_p50_ms"] <= figures["stall_p99_ms"] <= figures["stall_max_ms"]
    assert 0 < figures["window_shown_s"] < figures["fleet_ready_s"]
    assert figures["heartbeats"] > 0 and figures["asked"] > 0 and figures["answered"] > 0
    assert figures["asked"] >= figures["answered"] + figures["failed"]
    assert 0 < figures["achieved_rate"] <= 5 * 1.2
    assert "[" in result.stdout and "stalls" in result.stdout                 # progress while it ran
    assert out.with_suffix(".md").read_text().startswith("# Console responsiveness")
