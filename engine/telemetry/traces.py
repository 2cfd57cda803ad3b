"""The engine listener that sends each question as one OpenTelemetry trace (Engine.subscribe).

Events are gathered per question (timeline.py) and the spans made when its last event arrives, so the
listener does a few dictionary updates per event on the engine's loop; the exporter sends from its own
thread. Nothing here may raise into the engine: a fault is logged once and that question's trace lost.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from ..settings.telemetry import TelemetrySettings
from .spans import QuestionIds, emit_timeline
from .timeline import Timelines

log = logging.getLogger(__name__)
SHUTDOWN_S = 15.0      # closing waits at most this for the last batch (an export attempt is export_timeout_s)


class QuestionTraces:
    """processor: the SDK's BatchSpanProcessor over an OTLP exporter (export.otlp_processor), or in tests a
    SimpleSpanProcessor over an InMemorySpanExporter. It has its own TracerProvider: the process's global
    one (an embedding application's) is left alone."""

    def __init__(self, settings: TelemetrySettings, processor: SpanProcessor,
                 clock: Callable[[], float] = time.time) -> None:
        self.ids = QuestionIds()
        self.provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service_name}),
                                       id_generator=self.ids, shutdown_on_exit=False)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("quorum.engine")
        self.timelines = Timelines(settings.question_timeout_s)
        self.clock = clock
        self.sent = 0                 # questions sent (each one trace)
        self._faulted = False
        self._closed = False

    def on_event(self, event: object) -> None:
        """Engine listener: called on the engine's loop for every event."""
        if self._closed:
            return
        try:
            for timeline in self.timelines.feed(event):
                emit_timeline(self.tracer, self.ids, timeline)
                self.sent += 1
        except Exception:      # noqa: BLE001 - a trace is not worth a question
            if not self._faulted:
                log.exception("a question's trace could not be built; it is not exported")
            self._faulted = True

    def close_open(self) -> None:
        """Questions still open leave as abandoned, now (before the exporter's last flush)."""
        if self._closed:
            return
        self._closed = True
        for timeline in self.timelines.close(self.clock()):
            try:
                emit_timeline(self.tracer, self.ids, timeline)
                self.sent += 1
            except Exception:  # noqa: BLE001
                log.exception("a question's trace could not be built; it is not exported")

    async def aclose(self) -> None:
        """Sends what is left and stops the exporter (on a worker thread: the last batch may take a while)."""
        self.close_open()
        await asyncio.to_thread(self.shutdown)

    def shutdown(self) -> None:
        self.close_open()
        self.provider.force_flush(int(SHUTDOWN_S * 1000))
        self.provider.shutdown()
