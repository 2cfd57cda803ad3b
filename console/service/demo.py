"""Demo adapter: demo traffic on and off and its rate; its counts come back as sig_changed.

The engine's DemoTraffic (engine/demo.py) does the feeding on the loop; this adapter only switches it and
turns its DemoTrafficChanged events (start, stop, rate, at most one a second while running) into a signal.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal, SignalInstance

from engine import DEFAULT_FLEET, DEFAULT_RATE, DemoStats, DemoTrafficChanged, InputError, RATE_MAX, RATE_MIN

from .core import Adapter

__all__ = ["DEFAULT_RATE", "RATE_MAX", "RATE_MIN", "DemoAdapter", "DemoStats"]


class DemoAdapter(Adapter):
    sig_changed = Signal(object)              # DemoStats: asked, answered, failed, skipped, in flight, rate, running

    def __init__(self, core, ready: SignalInstance | None = None) -> None:
        """ready: the service's sig_ready, for start_when_ready."""
        super().__init__(core)
        self._ready = ready
        self._waiting: tuple[float | None, int | None] | None = None     # start_when_ready's rate and limit

    @property
    def running(self) -> bool:
        return self.stats().running

    def on_demo_fleet(self) -> bool:
        """True when the engine runs the built-in demo fleet (config/fleet.toml): the one fleet where demo
        traffic may start by itself. An operator's own fleet gets none unless asked."""
        path = getattr(self.engine.fleet.config, "path", None)
        return path is not None and Path(path).resolve() == DEFAULT_FLEET.resolve()

    def round_size(self) -> int:
        """How many demo questions one round asks (a limit for start that shows every defence once)."""
        return self.engine.demo.round_size()

    def stats(self) -> DemoStats:
        """The counts now (the engine constructs its demo traffic at once: no I/O, always there)."""
        return self.engine.demo.stats()

    def start(self, rate: float | None = None, limit: int | None = None) -> bool:
        """Starts feeding demo questions (at `rate` questions a second if given; with a limit, it stops by itself
        after that many). False, said on sig_error, when the engine is not ready or the rate is out of range."""
        if not self.core.require_ready("demo traffic cannot start"):
            return False
        return self._call(lambda: self.engine.demo.start(rate, limit=limit))

    def start_when_ready(self, rate: float | None = None, limit: int | None = None) -> None:
        """Starts now if the engine is ready, else as soon as it is (a start that fails later says why)."""
        if self.core.ready or self._ready is None:
            self.start(rate, limit)
            return
        if self._waiting is None:
            self._ready.connect(self._start_waiting)
        self._waiting = (rate, limit)

    def stop(self) -> None:
        """Stops feeding; the questions already asked finish. Safe in any phase (a waiting start is dropped)."""
        self._cancel_waiting()
        self.engine.demo.stop()

    def set_rate(self, rate: float) -> bool:
        """A new rate (RATE_MIN..RATE_MAX questions a second), in force at once if running."""
        if self._waiting is not None:
            self._waiting = (rate, self._waiting[1])
        return self._call(lambda: self.engine.demo.set_rate(rate))

    def on_changed(self, event: DemoTrafficChanged) -> None:
        self.sig_changed.emit(event.stats)

    def _call(self, call) -> bool:
        try:
            call()
        except InputError as exc:        # an out-of-range rate: the operator can correct it
            self.core.report_error(str(exc))
            return False
        return True

    def _start_waiting(self, *_args) -> None:
        waiting = self._waiting
        self._cancel_waiting()
        if waiting is not None:
            self.start(*waiting)

    def _cancel_waiting(self) -> None:
        if self._waiting is not None and self._ready is not None:
            self._ready.disconnect(self._start_waiting)
        self._waiting = None
