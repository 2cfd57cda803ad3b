"""Traces out: each question as one OpenTelemetry trace, on the real small fleet, to an in-memory exporter
and to a real OTLP/HTTP receiver on 127.0.0.1."""
from __future__ import annotations

import asyncio
import dataclasses
import http.server
import logging
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine import CallStatus, ConfigError, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.events import AgentCalled, QuestionFailed, QuestionReceived, StageProgressed
from engine.stages.model import StageKind
from engine.telemetry import TelemetrySettings
from engine.types import AgentOutcome, Role

from ..conftest import FAST_SETTINGS, write_fleet

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="traces out need the OpenTelemetry packages")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from engine.telemetry.export import collector_headers  # noqa: E402
from engine.telemetry.timeline import ABANDONED, Timelines  # noqa: E402
from engine.telemetry.traces import QuestionTraces  # noqa: E402

PROJECT = Path(__file__).resolve().parents[2]
# One retriever that always misses its deadline, so one agent call ends in an error.
SLOW_RETRIEVER = """
    [[agents]]
    id = "ret-slow"
    role = "retriever"
    backend = "bm25"
    timeout_s = 0.5
    fault = { kind = "slow", delay_s = 3.0 }
    """
QUESTION = "What are the moons of Mars?"


def in_memory(engine: Engine) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    engine.subscribe(QuestionTraces(TelemetrySettings(enabled=True), SimpleSpanProcessor(memory),
                                    clock=engine.parts.clock).on_event)
    return memory


def every_value(spans) -> list[str]:
    """Every attribute value of every span and span event, as text."""
    values = []
    for span in spans:
        for attributes in [span.attributes, *(e.attributes for e in span.events)]:
            for value in attributes.values():
                values.extend(str(v) for v in (value if isinstance(value, tuple) else (value,)))
        values.append(span.status.description or "")
    return values


async def test_a_question_is_one_trace_of_its_stages_and_agent_calls(tmp_path, db_path, cache_dir):
    engine = Engine(load_fleet(write_fleet(tmp_path, SLOW_RETRIEVER)), load_settings(FAST_SETTINGS), db_path=db_path,
                    cache_dir=cache_dir)
    memory = in_memory(engine)
    async with engine:
        answer = await engine.questions.ask(QUESTION, RiskTier.MEDIUM)
    assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
    spans = memory.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    # One trace, and its id is the Quorum trace id.
    assert {s.context.trace_id for s in spans} == {int(answer.trace_id, 16)}
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "quorum.question" and root.status.status_code is StatusCode.UNSET
    chosen = next(c for c in answer.candidates if c.generation.answer == answer.answer)
    assert dict(root.attributes).items() >= {
        "quorum.trace_id": answer.trace_id, "quorum.tier": "medium", "quorum.verdict": "answered",
        "quorum.answered_by": chosen.agent_id, "quorum.retrievers.asked": 4, "quorum.retrievers.ok": 3,
        "quorum.generators.asked": 3, "quorum.generators.ok": 3}.items()
    assert root.attributes["quorum.tier_reason"] == answer.tier_reason
    if getattr(answer, "participation", None) is not None:     # how many took part, whether a quorum held
        assert root.attributes["quorum.participation.quorum_held"] is answer.participation.quorum_held
        assert root.attributes["quorum.participation.retrievers.failed.timeout"] == 1
    # A span per stage attempt, under the question, in the order they ran, with what each stage said.
    stages = sorted((s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id),
                    key=lambda s: (s.start_time, s.attributes["quorum.stage.index"]))
    assert all(s.name.startswith("quorum.stage.") for s in stages)
    ran = [(s.index, s.attempt, s.kind.value, s.confidence) for s in answer.stages]
    assert [(s.attributes["quorum.stage.index"], s.attributes["quorum.stage.attempt"],
             s.attributes["quorum.stage.kind"], s.attributes["quorum.stage.confidence"]) for s in stages] == ran
    assert [s.name for s in stages] == [f"quorum.stage.{kind}" for _, _, kind, _ in ran]
    assert ran[0][2] == StageKind.FORMULATE.value and ran[-1][2] == StageKind.SYNTHESIZE.value
    assert all(s.start_time <= s.end_time for s in stages)
    # The cascade monitor's scores of each boundary are on its stage.
    scores = {(sc.index, sc.attempt): sc for sc in answer.cascade.scores}
    for stage in stages:
        score = scores[(stage.attributes["quorum.stage.index"], stage.attributes["quorum.stage.attempt"])]
        assert stage.attributes["quorum.cascade.p"] == score.p
        assert stage.attributes["quorum.cascade.fired"] is score.fired
    # A span per agent call, under the stage that made it, with its status; the late one is an error.
    agents = [s for s in spans if s.name.startswith("quorum.agent.")]
    assert sorted((s.attributes["quorum.agent.id"], s.attributes["quorum.agent.status"]) for s in agents) == \
        sorted((a.agent_id, a.status.value) for a in answer.agents)
    for span in agents:
        stage = by_id[span.parent.span_id]
        expected = "retrieve" if span.attributes["quorum.agent.role"] == "retriever" else "synthesize"
        assert stage.attributes["quorum.stage.kind"] == expected
        assert span.name == f"quorum.agent.{span.attributes['quorum.agent.role']}"
        assert stage.start_time <= span.start_time <= span.end_time <= stage.end_time
    slow = next(s for s in agents if s.attributes["quorum.agent.id"] == "ret-slow")
    assert slow.status.status_code is StatusCode.ERROR and slow.status.description == CallStatus.TIMEOUT.value
    assert slow.attributes["error.type"] == "timeout"
    assert all(s.status.status_code is StatusCode.UNSET for s in agents if s is not slow)
    # Nothing anybody wrote leaves: not the question, the answer, a passage, an agent's error text.
    values = every_value(spans)
    untrusted = [QUESTION, answer.answer, *(c.chunk.text[:40] for c in answer.context + answer.excluded),
                 *(a.error for a in answer.agents if a.error)]
    assert untrusted and not [(u, v) for u in untrusted for v in values if u and u in v]


async def test_a_cancelled_question_ends_its_trace_with_errors(tmp_path, db_path, cache_dir):
    slow = SLOW_RETRIEVER.replace("timeout_s = 0.5", "timeout_s = 10.0")
    engine = Engine(load_fleet(write_fleet(tmp_path, slow)), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir)
    memory = in_memory(engine)
    retrieving = asyncio.Event()
    engine.subscribe(lambda e: retrieving.set() if isinstance(e, StageProgressed) and e.index == 1 else None)
    async with engine:
        task = asyncio.create_task(engine.questions.ask(QUESTION))
        await asyncio.wait_for(retrieving.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    spans = memory.get_finished_spans()
    [root] = [s for s in spans if s.parent is None]
    assert root.status.status_code is StatusCode.ERROR and root.status.description == "CancelledError"
    assert root.attributes["error.type"] == "CancelledError"
    unfinished = [s for s in spans if s.name == "quorum.stage.unfinished"]
    assert len(unfinished) == 1 and unfinished[0].status.status_code is StatusCode.ERROR
    assert unfinished[0].attributes["quorum.stage.index"] == 1
    assert [s.name for s in spans if s.name.startswith("quorum.stage.") and s not in unfinished] == \
        ["quorum.stage.formulate"]


def _traces(timeout_s: float = 300.0) -> tuple[QuestionTraces, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    return QuestionTraces(TelemetrySettings(enabled=True, question_timeout_s=timeout_s),
                          SimpleSpanProcessor(memory)), memory


def test_a_question_whose_events_stop_is_sent_as_abandoned_after_the_timeout():
    traces, memory = _traces(timeout_s=60.0)
    traces.on_event(QuestionReceived("a" * 32, "q", RiskTier.LOW, "low risk chosen by the operator", 100.0))
    traces.on_event(StageProgressed("a" * 32, 0, 3, 0, None, 0.0, None, 100.5))
    traces.on_event(QuestionReceived("b" * 32, "q", RiskTier.LOW, "", 150.0))
    assert memory.get_finished_spans() == () and len(traces.timelines) == 2
    traces.on_event(AgentCalled(AgentOutcome("r", Role.RETRIEVER, CallStatus.OK, 5.0), "b" * 32, 161.0))
    [stage, root] = memory.get_finished_spans()      # a's: 60 s without an event; b was heard from at 161
    assert root.name == "quorum.question" and root.context.trace_id == int("a" * 32, 16)
    assert root.status.status_code is StatusCode.ERROR and root.status.description == ABANDONED
    assert stage.status.status_code is StatusCode.ERROR and stage.parent.span_id == root.context.span_id
    assert len(traces.timelines) == 1
    traces.shutdown()                                 # closing sends what is still open, as abandoned
    assert {s.context.trace_id for s in memory.get_finished_spans()} == {int("a" * 32, 16), int("b" * 32, 16)}
    assert len(traces.timelines) == 0


def test_questions_followed_at_once_are_bounded():
    timelines = Timelines(timeout_s=1e9, max_open=3)
    done = []
    for n in range(5):
        done += timelines.feed(QuestionReceived(f"{n:032x}", "q", RiskTier.LOW, "", float(n)))
    assert len(timelines) == 3 and [t.trace_id for t in done] == [f"{0:032x}", f"{1:032x}"]
    assert all(t.error == ABANDONED for t in done)


def test_a_question_blocked_before_it_ran_is_a_trace_of_its_own_with_an_error():
    traces, memory = _traces()
    traces.on_event(QuestionFailed("c" * 32, "QuestionBlocked", "the gateway blocked: Ignore all previous", 10.0, 10.2))
    [root] = memory.get_finished_spans()
    assert root.status.status_code is StatusCode.ERROR and root.status.description == "QuestionBlocked"
    assert "Ignore" not in " ".join(every_value([root]))


def test_a_caller_trace_id_that_is_not_hex_still_makes_a_valid_trace():
    traces, memory = _traces()
    traces.on_event(QuestionFailed("q1", "InputError", "", 1.0, 2.0))
    [root] = memory.get_finished_spans()
    assert root.context.trace_id != 0 and root.attributes["quorum.trace_id"] == "q1"


def test_the_tier_reason_says_which_rule_without_quoting_the_question():
    traces, memory = _traces()
    traces.on_event(QuestionReceived("d" * 32, "What dosage of my-secret-drug?", RiskTier.HIGH,
                                     'high risk: rule "medical" matched "dosage of my-secret-drug"', 1.0))
    traces.shutdown()
    [root] = memory.get_finished_spans()
    assert root.attributes["quorum.tier_reason"] == 'high risk: rule "medical"'


def test_disabled_telemetry_imports_nothing_of_opentelemetry():
    code = ("import sys\n"
            "from engine import Engine, load_settings\n"
            "from engine.telemetry import start_telemetry\n"
            "settings = load_settings()\n"
            "assert not settings.telemetry.enabled\n"
            "assert start_telemetry(settings.telemetry) is None\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("lines, key", [
    ('enable = true', "telemetry.enable"),
    ('enabled = "yes"', "telemetry.enabled"),
    ('otlp_endpoint = "ftp://collector/v1/traces"', "telemetry.otlp_endpoint"),
    ('otlp_endpoint = "http://127.0.0.1:99999/v1/traces"', "telemetry.otlp_endpoint"),
    ('otlp_endpoint = "https://user:pw@tempo.example/v1/traces"', "telemetry.otlp_endpoint"),
    ('service_name = " "', "telemetry.service_name"),
    ('headers_env = "NOT A NAME"', "telemetry.headers_env"),
    ('headers_env = "QUORUM_OTLP_HEADERS"\notlp_endpoint = "http://tempo.example:4318/v1/traces"',
     "telemetry.headers_env"),
    ('export_timeout_s = 0', "telemetry.export_timeout_s"),
    ('question_timeout_s = -5', "telemetry.question_timeout_s"),
])
def test_a_bad_telemetry_setting_is_a_config_error_naming_the_key(tmp_path, lines, key):
    path = tmp_path / "engine.toml"
    path.write_text(f"version = 1\n[telemetry]\n{lines}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert info.value.key == key and info.value.file == str(path)


def test_an_https_collector_may_take_headers_and_they_come_from_the_environment(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text('version = 1\n[telemetry]\nenabled = true\nheaders_env = "Q_HEADERS"\n'
                    'otlp_endpoint = "https://tempo.example/v1/traces"\n')
    settings = load_settings(path).telemetry
    assert settings.enabled and settings.headers_env == "Q_HEADERS"
    assert collector_headers(settings, {"Q_HEADERS": "Authorization=Bearer%20s3cret, x-scope-orgid=ops"}) == \
        {"authorization": "Bearer s3cret", "x-scope-orgid": "ops"}
    with pytest.raises(ConfigError) as missing:
        collector_headers(settings, {})
    assert missing.value.key == "Q_HEADERS"
    with pytest.raises(ConfigError) as malformed:
        collector_headers(settings, {"Q_HEADERS": "s3cret-with-no-name"})
    assert "s3cret" not in str(malformed.value)


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: records each POST /v1/traces (headers and protobuf body)."""
    received: list[tuple[str, dict, bytes]]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def collector():
    received: list = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", received
    server.shutdown()
    server.server_close()
    thread.join()


def _engine(tmp_path, db_path, cache_dir, **telemetry) -> Engine:
    settings = dataclasses.replace(load_settings(FAST_SETTINGS), telemetry=TelemetrySettings(enabled=True, **telemetry))
    return Engine(load_fleet(write_fleet(tmp_path)), settings, db_path=db_path, cache_dir=cache_dir)


async def test_spans_reach_a_real_otlp_http_receiver(tmp_path, db_path, cache_dir, collector, monkeypatch, caplog):
    endpoint, received = collector
    monkeypatch.setenv("QUORUM_TEST_OTLP_HEADERS", "authorization=Bearer%20t0ken-9f2")
    caplog.set_level(logging.DEBUG)
    engine = _engine(tmp_path, db_path, cache_dir, otlp_endpoint=endpoint, service_name="quorum-test",
                     headers_env="QUORUM_TEST_OTLP_HEADERS")
    async with engine:
        answer = await engine.questions.ask(QUESTION)
    assert received, "the exporter sent nothing"
    spans, services = [], set()
    for path, headers, body in received:
        assert path == "/v1/traces" and headers["content-type"] == "application/x-protobuf"
        assert headers["authorization"] == "Bearer t0ken-9f2"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            spans += [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert services == {"quorum-test"}
    assert {s.trace_id.hex() for s in spans} == {answer.trace_id}
    names = {s.name for s in spans}
    assert {"quorum.question", "quorum.stage.formulate", "quorum.stage.retrieve", "quorum.stage.synthesize",
            "quorum.agent.retriever", "quorum.agent.generator"} <= names
    [root] = [s for s in spans if not s.parent_span_id]
    assert root.name == "quorum.question"
    # The collector's key is never in the log.
    assert not [r for r in caplog.records if "t0ken-9f2" in r.getMessage()]


async def test_an_unreachable_collector_neither_fails_questions_nor_floods_the_log(tmp_path, db_path, cache_dir,
                                                                                   caplog):
    with socket.socket() as probe:      # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    caplog.set_level(logging.WARNING)
    engine = _engine(tmp_path, db_path, cache_dir, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces",
                     export_timeout_s=0.5)
    async with engine:
        first = await engine.questions.ask(QUESTION)
        await asyncio.to_thread(engine.telemetry.provider.force_flush)     # the collector is found to be down
        second = await engine.questions.ask("Which planet is closest to the Sun?")
        await asyncio.to_thread(engine.telemetry.provider.force_flush)
        exporter = engine.telemetry.provider._active_span_processor._span_processors[0].span_exporter
        assert exporter.failing and exporter.dropped > 0
    assert first.verdict is Verdict.ANSWERED and second.verdict is Verdict.ANSWERED
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "not reaching" in warnings[0].getMessage()
    assert warnings[0].name == "engine.telemetry.export"


def test_a_cascade_rerun_is_a_second_attempt_with_its_own_scores():
    from engine.cascade.types import StageScore
    from engine.events import CascadeScored
    traces, memory = _traces()
    trace_id = "e" * 32
    at = iter(float(n) for n in range(100))
    traces.on_event(QuestionReceived(trace_id, "q", RiskTier.HIGH, "", next(at)))
    for index, attempt, kind, p in [(0, 0, StageKind.FORMULATE, 0.0), (1, 0, StageKind.RETRIEVE, 0.9),
                                    (1, 1, StageKind.RETRIEVE, 0.1), (2, 1, StageKind.SYNTHESIZE, 0.2)]:
        traces.on_event(StageProgressed(trace_id, index, 3, attempt, None, 0.0, None, next(at)))
        traces.on_event(StageProgressed(trace_id, index, 3, attempt, kind, 1000.0, 0.5, next(at)))
        traces.on_event(CascadeScored(StageScore(index, kind, 0, 0.0, 0.0, 0.0, p, p > 0.5, attempt=attempt),
                                      trace_id, next(at)))
    traces.on_event(QuestionFailed(trace_id, "StoreError", "disk full", 0.0, next(at)))
    stages = sorted((s for s in memory.get_finished_spans() if s.name.startswith("quorum.stage.")),
                    key=lambda s: s.start_time)
    assert [(s.name, s.attributes["quorum.stage.attempt"], s.attributes["quorum.cascade.p"],
             s.attributes["quorum.cascade.fired"]) for s in stages] == [
        ("quorum.stage.formulate", 0, 0.0, False), ("quorum.stage.retrieve", 0, 0.9, True),
        ("quorum.stage.retrieve", 1, 0.1, False), ("quorum.stage.synthesize", 1, 0.2, False)]
    [root] = [s for s in memory.get_finished_spans() if s.parent is None]
    assert root.status.description == "StoreError" and "disk full" not in every_value([root])


def test_a_collector_that_refuses_is_one_warning_then_a_pause_then_a_note_when_it_takes_spans_again(caplog):
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from engine.telemetry.export import QuietExporter

    class Collector(SpanExporter):         # the OTLP exporter's side of the wire, scripted
        def __init__(self):
            self.results, self.calls = [], 0

        def export(self, spans):
            self.calls += 1
            logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").error(
                "Failed to export spans batch code: 401, reason: Unauthorized")
            return self.results.pop(0)

        def shutdown(self):
            pass

    now = [0.0]
    inner = Collector()
    quiet = QuietExporter(inner, "https://tempo.example/v1/traces", clock=lambda: now[0], pause_s=30.0)
    caplog.set_level(logging.INFO)
    try:
        inner.results = [SpanExportResult.FAILURE, SpanExportResult.FAILURE, SpanExportResult.SUCCESS]
        assert quiet.export([1, 2]) is SpanExportResult.FAILURE
        now[0] = 10.0
        assert quiet.export([3]) is SpanExportResult.FAILURE and inner.calls == 1     # paused: not even tried
        now[0] = 31.0
        assert quiet.export([4]) is SpanExportResult.FAILURE and inner.calls == 2     # tried again: still refused
        now[0] = 62.0
        assert quiet.export([5]) is SpanExportResult.SUCCESS and not quiet.failing
    finally:
        quiet.shutdown()
    mine = [r for r in caplog.records if r.name == "engine.telemetry.export"]
    assert [r.levelno for r in mine] == [logging.WARNING, logging.INFO]
    assert "401" in mine[0].getMessage() and "4 span(s) were dropped" in mine[1].getMessage()
    # The SDK's own line per batch stayed off the application's log.
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert logging.getLogger("opentelemetry.exporter").propagate      # and speaks again once it is shut down
