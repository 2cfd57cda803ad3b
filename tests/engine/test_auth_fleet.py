"""On the real small fleet: the built-in agents are keyed per run, and an agent whose signature does not match
is that agent's outcome (audited, counted by the reputation book) while the question is still answered."""
import httpx

from engine import CallStatus, Engine, RiskTier, Verdict, load_fleet, load_settings
from engine.store.audit_log import AuditFilter

from ..conftest import FAST_SETTINGS


async def test_an_agent_that_cannot_sign_as_itself_is_a_bad_reply_not_a_failed_question(small_fleet_file, db_path,
                                                                                          cache_dir):
    engine = Engine(load_fleet(small_fleet_file), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir)
    async with engine:
        first_run = {a.id: engine.parts.keyring.get(a.id) for a in engine.fleet.config.agents}
        assert all(first_run.values())
        # Nobody without this run's key gets an answer out of an agent (and /health tells only that it is up).
        async with httpx.AsyncClient() as stranger:
            url = engine.parts.registry.get("ret-bm25").url
            refused = await stranger.post(f"{url}/retrieve", json={"query": "moons of Mars", "k": 3})
            health = await stranger.get(f"{url}/health")
        assert refused.status_code == 401 and "not signed" in refused.json()["error"]
        assert health.status_code == 200 and first_run["ret-bm25"].hex() not in health.text
        # The engine now holds another key for ret-bm25: as if another process answered on its port.
        engine.parts.keyring._keys["ret-bm25"] = bytes(32)
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        errors_in_row = engine.parts.reputation.book._get("ret-bm25").errors_in_row
        events = await engine.audit.query(AuditFilter(trace_id=answer.trace_id, actor="ret-bm25"))
        # A new run, new keys.
        await engine.fleet.stop("op")
        await engine.fleet.start("op")
        second_run = {a.id: engine.parts.keyring.get(a.id) for a in engine.fleet.config.agents}
    bad = next(o for o in answer.agents if o.agent_id == "ret-bm25")
    assert bad.status is CallStatus.MALFORMED and "signature does not match" in bad.error
    assert all(o.status is CallStatus.OK for o in answer.agents if o.agent_id != "ret-bm25")
    assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
    assert any("signature does not match" in e.payload.get("error", "") for e in events)
    assert errors_in_row == 1
    assert all(second_run[a] != first_run[a] for a in first_run)


async def test_fleet_up_unsigned_serves_built_in_agents_any_local_client_can_call(small_fleet_file, db_path,
                                                                                 cache_dir):
    """`main.py fleet up --unsigned`: no per-run keys, so curl or `agents check` get answers; the engine too."""
    engine = Engine(load_fleet(small_fleet_file), load_settings(FAST_SETTINGS), db_path=db_path, cache_dir=cache_dir,
                    per_run_keys=False)
    async with engine:
        assert not any(a.id in engine.parts.keyring for a in engine.fleet.config.agents)
        async with httpx.AsyncClient() as local:
            reply = await local.post(f"{engine.parts.registry.get('ret-bm25').url}/retrieve",
                                     json={"query": "moons of Mars", "k": 3})
        answer = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
    assert reply.status_code == 200 and reply.json()["chunks"]
    assert answer.verdict is Verdict.ANSWERED and "Phobos" in answer.answer
