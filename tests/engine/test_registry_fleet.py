"""Stopping and starting the built-in fleet on real agent processes (the small, torch-free test fleet):
processes gone, questions still answered plainly with no agent, fresh processes on fresh ports after a
start, external agents untouched, every stop and start audited with the operator."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from engine import AgentState, CallStatus, Engine, InputError, RiskTier, Verdict, load_fleet, load_settings
from engine.events import AgentChanged, QuestionReceived
from engine.registry import FleetState
from engine.store.audit_log import AuditFilter

from ..conftest import write_fleet

# Not the launcher's: it must come through a stop and a start as it was (nothing listens on port 9).
EXTERNAL = """
    [[agents]]
    id = "ret-far"
    role = "retriever"
    url = "http://127.0.0.1:9"
    """
SLOW = """
    [[agents]]
    id = "ret-slow"
    role = "retriever"
    backend = "bm25"
    fault = { kind = "slow", delay_s = 3.0 }
    """


def alive(engine: Engine) -> list[str]:
    return sorted(a for a, c in engine.parts.launcher._children.items() if c.process.poll() is None)


def builtin_ids(engine: Engine) -> list[str]:
    return sorted(v.spec.id for v in engine.fleet.agents() if v.spec.builtin)


async def health(url: str) -> bool:
    async with httpx.AsyncClient(timeout=2.0) as http:
        try:
            return (await http.get(f"{url}/health")).json()["status"] == "ok"
        except httpx.HTTPError:
            return False


async def fleet_audit(engine: Engine) -> list[tuple[str, str, dict]]:
    rows = await engine.audit.query(AuditFilter(kind="fleet."))
    return [(r.type, r.actor, dict(r.payload)) for r in sorted(rows, key=lambda r: r.seq)]


async def test_stop_leaves_no_agent_then_start_brings_fresh_ones_back(tmp_path, db_path, cache_dir):
    engine = Engine(load_fleet(write_fleet(tmp_path, extra=EXTERNAL)), load_settings(), db_path=db_path,
                    cache_dir=cache_dir)
    changes: list[AgentChanged] = []
    engine.subscribe(lambda e: changes.append(e) if isinstance(e, AgentChanged) else None)
    async with engine:
        builtins = builtin_ids(engine)
        assert len(builtins) == 6 and alive(engine) == builtins
        before = {v.spec.id: (v.url, engine.parts.launcher.pid(v.spec.id)) for v in engine.fleet.agents() if v.spec.builtin}
        far = engine.parts.registry.get("ret-far")
        assert far.state is AgentState.DOWN and far.url == "http://127.0.0.1:9"
        assert not engine.fleet.stopped
        with pytest.raises(InputError, match="already running"):
            await engine.fleet.start("tester")

        changes.clear()
        stopped = await engine.fleet.stop("tester")
        assert engine.fleet.stopped
        assert alive(engine) == []                                      # every built-in process is gone
        assert sorted(v.spec.id for v in stopped) == builtins
        assert all(v.status is FleetState.STOPPED and v.state is AgentState.DOWN and v.url == "" for v in stopped)
        assert all(v.detail == "stopped by tester" for v in stopped)
        assert sorted(e.view.spec.id for e in changes) == builtins       # each one told, as it went
        for url, _pid in before.values():
            assert not await health(url)
        assert engine.parts.registry.get("ret-far") == far                     # the external agent: as it was
        with pytest.raises(InputError, match="already stopped"):
            await engine.fleet.stop("tester")

        # A question still runs, quickly, and says it had no agent to ask.
        answer = await asyncio.wait_for(engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM), 30)
        assert answer.verdict is Verdict.NO_ANSWER and answer.answer == ""
        assert answer.agents == ()                                       # nobody was asked
        assert "no retriever" in answer.reason
        assert all(v.state is AgentState.DOWN for v in engine.fleet.agents() if v.spec.enabled)

        changes.clear()
        started = await engine.fleet.start("tester")
        assert not engine.fleet.stopped
        assert alive(engine) == builtins
        assert all(v.state is AgentState.UP and v.status is FleetState.UP for v in started)
        for view in started:
            old_url, old_pid = before[view.spec.id]
            assert engine.parts.launcher.pid(view.spec.id) != old_pid           # a new process
            assert view.url == engine.parts.launcher.urls()[view.spec.id]      # at the address it announced now
            assert await health(view.url)
        states = [(e.view.spec.id, e.view.state) for e in changes]
        assert {a for a, s in states if s is AgentState.STARTING} == set(builtins)
        assert {a for a, s in states if s is AgentState.UP} == set(builtins)
        assert engine.parts.registry.get("ret-far") == far

        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
        assert {a.agent_id for a in answer.agents if a.status is CallStatus.OK} == set(builtins)

        audit = await fleet_audit(engine)
        assert [(kind, actor) for kind, actor, _ in audit] == [("fleet.stopped", "tester"), ("fleet.started", "tester")]
        assert audit[0][2] == {"agents": [s.id for s in engine.fleet.config.agents if s.builtin]}
        assert sorted(audit[1][2]["up"]) == builtins
        assert (await engine.audit.verify()).intact
    assert alive(engine) == []


async def test_a_stop_while_a_question_runs_ends_the_question_and_leaves_no_task(tmp_path, db_path, cache_dir):
    engine = Engine(load_fleet(write_fleet(tmp_path, extra=SLOW)), load_settings(), db_path=db_path,
                    cache_dir=cache_dir)
    asked = asyncio.Event()
    engine.subscribe(lambda e: asked.set() if isinstance(e, QuestionReceived) else None)
    async with engine:
        question = asyncio.create_task(engine.questions.ask("Who discovered the moons of Mars?", RiskTier.MEDIUM))
        await asyncio.wait_for(asked.wait(), 30)
        await asyncio.sleep(0.5)                       # the retrievers are being asked; ret-slow takes 3 s
        await engine.fleet.stop("tester")
        answer = await asyncio.wait_for(question, 30)  # ends: the stopped agents' calls are their outcomes
        assert alive(engine) == []
        slow = next(a for a in answer.agents if a.agent_id == "ret-slow")
        assert slow.status is not CallStatus.OK
        assert engine.parts.registry.get("ret-slow").status is FleetState.STOPPED
        await asyncio.sleep(0.1)
        assert not engine._tasks                       # the engine's own background writes are done
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        assert others == []

        await engine.fleet.start("tester")
        assert alive(engine) == builtin_ids(engine)
    assert alive(engine) == []


async def test_a_stop_needs_the_operator_s_name(small_fleet_file, db_path, cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir)
    with pytest.raises(InputError, match="without the operator's name"):
        await engine.fleet.stop("  ")
    assert not engine.fleet.stopped


async def test_an_engine_without_a_launcher_refuses_to_stop_or_start(small_fleet_file, db_path, cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir, launch=False)
    with pytest.raises(InputError, match="runs no built-in fleet, so it cannot be stopped"):
        await engine.fleet.stop("tester")
    with pytest.raises(InputError, match="cannot be started"):
        await engine.fleet.start("tester")
