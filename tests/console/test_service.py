"""EngineService on a real engine and fleet: signals out, orderly shutdown, errors as sig_error."""
from __future__ import annotations

from engine import AgentState, Answer, Verdict

from console.service import EngineService, Phase

from .helpers import agent_processes_alive

START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
STOP_TIMEOUT_MS = 20_000


def test_requests_before_start_are_refused_with_a_message(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    errors = []
    service.sig_error.connect(errors.append)
    assert service.questions.ask("What are the moons of Mars?", "medium") is None
    assert errors == ["questions are not accepted while the engine is idle"]
    with qtbot.waitSignal(service.sig_stopped, timeout=STOP_TIMEOUT_MS):
        task = service.shutdown()
    assert service.shutdown() is task          # idempotent
    assert service.phase is Phase.STOPPED
    assert engine.parts.launcher._children == {}     # never started, so nothing was launched


def test_start_ask_and_shutdown_emit_signals_and_stop_every_agent(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    progress, changed, errors, started = [], [], [], []
    service.sig_starting.connect(lambda up, total: progress.append((up, total)))
    service.fleet.sig_agent_changed.connect(changed.append)
    service.sig_error.connect(errors.append)
    service.questions.sig_started.connect(lambda trace_id, question: started.append((trace_id, question)))

    with qtbot.waitSignal(service.sig_ready, timeout=START_TIMEOUT_MS) as ready:
        service.start()
    assert ready.args == [6]
    assert service.ready
    assert progress[0] == (0, 6) and progress[-1] == (6, 6)
    assert [up for up, _ in progress] == sorted(up for up, _ in progress)     # progress only goes forward
    assert {v.spec.id for v in changed if v.state is AgentState.UP} == {v.spec.id for v in engine.fleet.agents()}
    assert service.start() is None and errors == ["the engine cannot start while ready"]
    errors.clear()

    # A bad tier and an empty question are refused with a readable message, and nothing crashes.
    assert service.questions.ask("What are the moons of Mars?", "extreme") is None
    with qtbot.waitSignal(service.questions.sig_finished, timeout=ANSWER_TIMEOUT_MS) as finished:
        service.questions.ask("   ", "low")
    assert finished.args == [False]
    assert errors == ["unknown risk tier 'extreme' (expected auto, low, medium or high)",
                      "The question failed: the question is empty"]

    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS) as got:
        service.questions.ask("What are the moons of Mars?", "medium")
    answer = got.args[0]
    assert isinstance(answer, Answer)
    assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
    assert started == [(answer.trace_id, "What are the moons of Mars?")]
    assert not service.questions.busy

    with qtbot.waitSignal(service.sig_stopped, timeout=STOP_TIMEOUT_MS):
        service.shutdown()
    assert agent_processes_alive(engine) == []
    assert len(engine.parts.launcher._children) == 6
    assert service.questions.ask("What are the moons of Mars?", "medium") is None
    assert errors[-1] == "questions are not accepted while the engine is stopped"


def test_shutdown_during_start_cancels_it_and_leaves_no_agent_running(qtbot, qasync_loop, engine):
    service = EngineService(engine)
    errors = []
    service.sig_error.connect(errors.append)
    service.start()
    # Wait until the processes exist but the fleet is not up yet.
    qtbot.waitUntil(lambda: len(engine.parts.launcher._children) == 6, timeout=START_TIMEOUT_MS)
    assert not service.ready
    with qtbot.waitSignal(service.sig_stopped, timeout=STOP_TIMEOUT_MS):
        service.shutdown()
    assert agent_processes_alive(engine) == []
    assert service.phase is Phase.STOPPED
    assert errors == []
