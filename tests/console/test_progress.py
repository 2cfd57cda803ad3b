"""The question's live progress: the strip follows the operator's own question stage by stage."""
from __future__ import annotations

from engine.events import StageProgressed
from engine.stages.model import StageKind

from console.panels.ask import AskPanel

from . import answers
from .fakes import FakeEngine, fake_service
from .recorded import T0


def progressed(trace_id: str, index: int, kind: StageKind | None, attempt: int = 0, total: int = 3,
               elapsed_ms: float = 0.0, confidence: float | None = None) -> StageProgressed:
    return StageProgressed(trace_id, index, total, attempt, kind, elapsed_ms, confidence, T0)


def test_the_strip_shows_each_stage_of_the_operators_question_and_ignores_others(qtbot, qasync_loop):
    session = fake_service(qtbot, FakeEngine(answers=[answers.make_answer()]))
    panel = AskPanel(session.service)
    qtbot.addWidget(panel)
    panel.show()
    asked = []
    session.service.questions.sig_asked.connect(lambda trace, question: asked.append(trace))
    panel.question.setText("What are the moons of Mars?")
    panel.submit()
    trace = asked[0]
    strip = panel.progress
    assert strip.running and strip.bar.isVisible() and strip.trace_id == trace and strip.bar.maximum() == 0

    engine = session.engine
    engine.emit(progressed(trace, 0, None), progressed(trace, 0, StageKind.FORMULATE, elapsed_ms=2, confidence=1.0),
                progressed("someone-elses-trace", 0, StageKind.FORMULATE, total=9),
                progressed(trace, 1, None))
    assert strip.text() == "stage 2 of 3 · formulate ✓ 2 ms (100%) → stage 2 … running"
    assert (strip.bar.value(), strip.bar.maximum()) == (1, 3)

    # A rollback re-runs stage 2: the strip drops what came after it and marks the re-run.
    engine.emit(progressed(trace, 1, StageKind.RETRIEVE, elapsed_ms=212, confidence=0.72),
                progressed(trace, 2, None), progressed(trace, 1, None, attempt=1))
    assert [s.index for s in strip.steps()] == [0, 1] and strip.steps()[1].attempt == 1
    assert strip.text().endswith("stage 2 ↻ … running")
    qtbot.waitUntil(lambda: not panel.progress.running, timeout=2_000)    # the answer came: the bar goes,
    assert not strip.bar.isVisible() and strip.isVisible()                # the line says where the time went
    assert strip.label.text() == "Last question, 2 ms in its stages: formulate ✓ 2 ms (100%)"   # the re-run never ended
    assert engine.called("ask")[0][2] == trace        # the engine was given the trace id the strip follows
    assert session.errors == []
