"""Spans out over OTLP/HTTP (protobuf) to a collector: Jaeger, Grafana Tempo, Langfuse, an OTel Collector.

The SDK's batch processor sends from its own thread, so a question never waits for the collector. When
the collector is down or refuses, its batches are dropped: one warning says so, with why, and for
`PAUSE_S` after a failure batches are dropped without trying (a collector that is gone costs the engine
nothing, and closing it does not wait out retries). The OTLP exporter's own log lines (one per batch)
are kept off the application's log.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Mapping, Sequence
from urllib.parse import unquote

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ..errors import ConfigError
from ..settings.telemetry import TelemetrySettings

log = logging.getLogger(__name__)
PAUSE_S = 30.0
_SDK_EXPORT_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk._shared_internal")


def otlp_processor(settings: TelemetrySettings, environ: Mapping[str, str] | None = None) -> BatchSpanProcessor:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    headers = collector_headers(settings, os.environ if environ is None else environ)
    exporter = OTLPSpanExporter(endpoint=settings.otlp_endpoint, headers=headers, timeout=settings.export_timeout_s)
    return BatchSpanProcessor(QuietExporter(exporter, settings.otlp_endpoint))


def collector_headers(settings: TelemetrySettings, environ: Mapping[str, str]) -> dict[str, str]:
    """`key=value,key2=value2` (values URL-encoded, as OTEL_EXPORTER_OTLP_HEADERS) from the variable that
    headers_env names. A ConfigError names the variable and the entry's position, never a value."""
    if not settings.headers_env:
        return {}
    text = environ.get(settings.headers_env)
    if text is None:
        raise ConfigError("environment", settings.headers_env, "not set ([telemetry] headers_env names it for "
                                                               "the collector's headers)")
    headers = {}
    for position, entry in enumerate(text.split(","), start=1):
        if not entry.strip():
            continue
        name, equals, value = entry.partition("=")
        name = unquote(name).strip().lower()
        if not equals or not name or any(c.isspace() for c in name):
            raise ConfigError("environment", settings.headers_env, f"entry {position} is not name=value")
        headers[name] = unquote(value).strip()
    return headers


class QuietExporter(SpanExporter):
    """Wraps the OTLP exporter: one warning when the collector stops taking spans (and a note when it takes
    them again) instead of the SDK's line per batch; a pause after each failure."""

    def __init__(self, inner: SpanExporter, endpoint: str, *, clock=time.monotonic, pause_s: float = PAUSE_S) -> None:
        self.inner, self.endpoint, self.clock, self.pause_s = inner, endpoint, clock, pause_s
        self.failing = False
        self.dropped = 0                  # spans dropped since the collector stopped taking them
        self._paused_until = 0.0
        self._why = _FirstWords()
        self._lock = threading.Lock()
        _quiet_sdk_logs(self._why, True)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self._why is None:         # shut down
                return SpanExportResult.FAILURE
            if self.failing and self.clock() < self._paused_until:
                self.dropped += len(spans)
                return SpanExportResult.FAILURE
            self._why.first = ""
            try:
                result = self.inner.export(spans)
            except Exception as exc:       # noqa: BLE001 - an exporter bug must not kill the batch thread
                self._why.first = self._why.first or f"{type(exc).__name__}: {exc}"[:300]
                result = SpanExportResult.FAILURE
            if result is SpanExportResult.SUCCESS:
                if self.failing:
                    log.info("traces reach %s again (%d span(s) were dropped meanwhile)", self.endpoint, self.dropped)
                self.failing, self.dropped = False, 0
                return result
            if not self.failing:
                log.warning("traces are not reaching %s (%s); they are dropped until it takes them again",
                            self.endpoint, self._why.first or "no reason given")
            self.failing = True
            self.dropped += len(spans)
            self._paused_until = self.clock() + self.pause_s
            return result

    def shutdown(self) -> None:
        with self._lock:
            if self._why is None:
                return
            self.inner.shutdown()
            _quiet_sdk_logs(self._why, False)
            self._why = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


_quieted: list[logging.Handler] = []     # one per exporter alive: the SDK's loggers speak again after the last


def _quiet_sdk_logs(handler: logging.Handler, on: bool) -> None:
    (_quieted.append if on else _quieted.remove)(handler)
    for name in _SDK_EXPORT_LOGGERS:
        sdk_log = logging.getLogger(name)
        (sdk_log.addHandler if on else sdk_log.removeHandler)(handler)
        sdk_log.propagate = not _quieted


class _FirstWords(logging.Handler):
    """Keeps the SDK's first complaint of an export (a status code, a refused connection) for the warning."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.first = ""

    def emit(self, record: logging.LogRecord) -> None:
        if self.first:
            return
        try:
            self.first = record.getMessage()[:300]
        except Exception:      # noqa: BLE001 - a bad log record must not break an export
            self.first = str(record.msg)[:300]
