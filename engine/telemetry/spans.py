"""A finished timeline as OpenTelemetry spans: the question, each stage attempt under it, each agent call
under the stage that was running when it returned. Imports OpenTelemetry: only telemetry that is on loads it.

The Quorum trace id (uuid4 hex, 128 bits) is the OpenTelemetry trace id, so one id finds the question in
the console, `main.py trace` and Jaeger, Tempo or Langfuse alike.
"""
from __future__ import annotations

import hashlib
import re
import threading

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

from .timeline import AgentCall, Note, StageAttempt, Timeline, score_attributes

_HEX_ID = re.compile(r"^[0-9a-f]{32}$")


def otel_trace_id(trace_id: str) -> int:
    """The trace id itself when it is 32 hex digits (every id the engine makes); otherwise (a caller's own
    id) 128 bits of its SHA-256, and the span's quorum.trace_id attribute keeps the original."""
    if _HEX_ID.match(trace_id) and int(trace_id, 16):
        return int(trace_id, 16)
    return int(hashlib.sha256(trace_id.encode("utf-8")).hexdigest()[:32], 16) or 1


class QuestionIds(IdGenerator):
    """Random span ids; the trace id of a root span is the one `next_trace` names (the question's)."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._local = threading.local()

    def next_trace(self, trace_id: int) -> None:
        self._local.trace_id = trace_id

    def generate_span_id(self) -> int:
        return self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        trace_id, self._local.trace_id = getattr(self._local, "trace_id", None), None
        return trace_id if trace_id is not None else self._random.generate_trace_id()

    def is_trace_id_random(self) -> bool:
        return False      # the engine's are uuid4, a caller's may not be


def emit_timeline(tracer: Tracer, ids: QuestionIds, timeline: Timeline) -> int:
    """Starts and ends every span of the question with the times its events carried; the spans made."""
    end = timeline.ended_at if timeline.ended_at is not None else timeline.started_at
    ids.next_trace(otel_trace_id(timeline.trace_id))
    root = tracer.start_span("quorum.question", context=Context(), kind=SpanKind.SERVER,
                             attributes=_clean(timeline.attributes), start_time=_ns(timeline.started_at))
    if timeline.error:
        root.set_status(Status(StatusCode.ERROR, timeline.error))
    under_root = trace.set_span_in_context(root, Context())
    made = 1
    for stage in timeline.stages:
        made += _stage_span(tracer, under_root, stage, timeline, end)
    for call in timeline.calls:
        made += _agent_span(tracer, under_root, call, timeline.started_at)
    _add_notes(root, timeline.notes)
    root.end(end_time=_ns(max(end, timeline.started_at)))
    return made


def _stage_span(tracer: Tracer, parent, stage: StageAttempt, timeline: Timeline, question_end: float) -> int:
    attributes = {"quorum.stage.index": stage.index, "quorum.stage.attempt": stage.attempt,
                  "quorum.stage.total": stage.total, "quorum.stage.kind": stage.kind,
                  "quorum.stage.confidence": stage.confidence, "quorum.stage.elapsed_ms": stage.elapsed_ms}
    if stage.score is not None:
        attributes |= score_attributes(stage.score)
    started = max(stage.started_at, timeline.started_at)
    span = tracer.start_span(f"quorum.stage.{stage.kind or 'unfinished'}", context=parent,
                             attributes=_clean(attributes), start_time=_ns(started))
    if stage.ended_at is None:
        span.set_status(Status(StatusCode.ERROR, f"the question ended ({timeline.error or 'answered'}) "
                                                 "before this stage did"))
    under = trace.set_span_in_context(span, Context())
    made = 1
    for call in stage.calls:
        made += _agent_span(tracer, under, call, started)
    _add_notes(span, stage.notes)
    span.end(end_time=_ns(max(stage.ended_at if stage.ended_at is not None else question_end, started)))
    return made


def _agent_span(tracer: Tracer, parent, call: AgentCall, not_before: float) -> int:
    started = max(call.ended_at - call.latency_ms / 1000, not_before)
    span = tracer.start_span(f"quorum.agent.{call.role}", context=parent, kind=SpanKind.CLIENT,
                             attributes=_clean({"quorum.agent.id": call.agent_id, "quorum.agent.role": call.role,
                                                "quorum.agent.status": call.status,
                                                "quorum.agent.latency_ms": call.latency_ms,
                                                "quorum.agent.items": call.items,
                                                "error.type": None if call.ok else call.status}),
                             start_time=_ns(started))
    if not call.ok:
        # The status, not the error text: that may quote the agent's reply.
        span.set_status(Status(StatusCode.ERROR, call.status))
    span.end(end_time=_ns(max(call.ended_at, started)))
    return 1


def _add_notes(span, notes: list[Note]) -> None:
    for note in notes:
        span.add_event(note.name, _clean(note.attributes), timestamp=_ns(note.at))


def _clean(attributes: dict) -> dict:
    """OpenTelemetry takes no None values."""
    return {k: v for k, v in attributes.items() if v is not None}


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)
