"""The reputation book in the engine: evidence read from decided answers, kept in SQLite across restarts
and across processes, moved by operators, and used: a quarantined liar gets no more work."""
from __future__ import annotations

import json

import pytest

from engine import Engine, load_fleet, load_settings
from engine.errors import InputError
from engine.events import TrustUpdated
from engine.reputation import EvidenceReason, ReputationChanged, ReputationSettings, StandingState
from engine.reputation.answer_evidence import DecidedAnswer, agreement, observations, operator_observations
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.reputation.keeper import ReputationKeeper
from engine.types import (AgentOutcome, CallStatus, Candidate, Chunk, Citation, Claim, ClaimCheck, ClaimLabel,
                          ContextChunk, Generation, RiskTier, Role, Suspect, SuspectReason, Verdict, Vote)
from engine.answer import Answer

TRUE = "Phobos and Deimos are the moons of Mars."
LIE = "Phobos and Titan are the moons of Mars."


def _candidate(agent, text, label, votes):
    check = ClaimCheck(Claim(text, ("c1",)), label is ClaimLabel.SUPPORTED, 1.0, "", label, 0.9, "declared", votes)
    return Candidate(agent, Generation(text, (), (Claim(text, ("c1",)),), 1.0), (check,),
                     1.0 if label is ClaimLabel.SUPPORTED else 0.0, (), 0.5)


ROGUE = Suspect("ret-rogue", "2 of its 8 passages kept out (tampered)", (SuspectReason.TAMPERED,), ("ret-a", "ret-b"))


def answer(trace="t1", suspects=(ROGUE,)) -> Answer:
    chunk = Chunk("c1", "Mars has two moons, Phobos and Deimos.")
    context = (ContextChunk(chunk, 1.0, ("ret-a", "ret-b")),)
    agents = tuple(AgentOutcome(a, role, CallStatus.OK, 10.0, n_items=3) for a, role in (
        ("ret-a", Role.RETRIEVER), ("ret-b", Role.RETRIEVER), ("ret-rogue", Role.RETRIEVER),
        ("gen-a", Role.GENERATOR), ("gen-liar", Role.GENERATOR), ("ver-x", Role.VERIFIER), ("ver-liar", Role.VERIFIER)))
    honest_votes = (Vote("evidence-check", ClaimLabel.SUPPORTED), Vote("ver-x", ClaimLabel.SUPPORTED),
                    Vote("ver-liar", ClaimLabel.REFUTED))
    lie_votes = (Vote("evidence-check", ClaimLabel.REFUTED), Vote("ver-x", ClaimLabel.REFUTED),
                 Vote("ver-liar", ClaimLabel.SUPPORTED))
    return Answer(trace, "What are the moons of Mars?", RiskTier.MEDIUM, Verdict.ANSWERED, TRUE, "",
                  (Citation("c1", "", "", chunk.text),), agents, context,
                  (_candidate("gen-a", TRUE, ClaimLabel.SUPPORTED, honest_votes),
                   _candidate("gen-liar", LIE, ClaimLabel.REFUTED, lie_votes)),
                  {}, 0.0, suspects=suspects)


def by_agent(obs):
    return {o.agent_id: o for o in obs}


def test_evidence_read_from_an_answer():
    obs = by_agent(observations(answer()))
    assert obs["gen-liar"].reasons == (EvidenceReason.CLAIM_REFUTED,) and obs["gen-liar"].engine_checked
    assert set(obs["gen-a"].reasons) == {EvidenceReason.CLAIMS_SUPPORTED, EvidenceReason.ANSWER_CHOSEN}
    # The lying verifier was outvoted on both claims, and the engine's own check was with the majority.
    assert obs["ver-liar"].reasons == (EvidenceReason.VOTE_OUTVOTED,) * 2 and obs["ver-liar"].engine_checked
    assert obs["ver-x"].reasons == (EvidenceReason.VOTE_AGREED,) * 2
    # Retrieval evidence rests on the other retrievers: they are its witnesses.
    assert obs["ret-rogue"].reasons == (EvidenceReason.REPORTED_SUSPECT,) and not obs["ret-rogue"].engine_checked
    assert obs["ret-rogue"].witnesses == {"ret-a", "ret-b"}
    assert obs["ret-a"].reasons == (EvidenceReason.ADOPTED,) and obs["ret-a"].witnesses == {"ret-b"}
    # For the behaviour baseline: who went along with the outcome.
    assert agreement(answer()) == {"ret-a": True, "ret-b": True, "ret-rogue": False, "gen-a": True,
                                   "gen-liar": False}


def test_a_refutation_only_peers_voted_for_rests_on_them():
    a = answer()
    liar = a.candidates[1]
    votes = (Vote("evidence-check", ClaimLabel.NOT_ENOUGH), Vote("ver-x", ClaimLabel.REFUTED),
             Vote("ver-liar", ClaimLabel.REFUTED))
    check = liar.checks[0].__class__(**{**liar.checks[0].__dict__, "votes": votes})
    a = a.__class__(**{**a.__dict__, "candidates": (a.candidates[0], liar.__class__(**{**liar.__dict__,
                                                                                        "checks": (check,)}))})
    obs = by_agent(observations(a))["gen-liar"]
    assert not obs.engine_checked and obs.witnesses == {"ver-x", "ver-liar"}


def test_an_operator_decision_names_the_generator_and_the_cited_retrievers_from_the_stored_payload():
    from engine.types import to_jsonable
    live = DecidedAnswer.from_answer(answer())
    stored = DecidedAnswer.from_payload(json.loads(json.dumps(to_jsonable(answer()))))
    assert live == stored
    assert stored.generators == ("gen-a",) and stored.cited_retrievers == ("ret-a", "ret-b")
    rejected = operator_observations(stored, approved=False)
    assert {o.agent_id for o in rejected} == {"gen-a", "ret-a", "ret-b"}
    assert all(o.engine_checked and o.reasons == (EvidenceReason.OPERATOR_REJECTED,) for o in rejected)


def test_an_operator_decision_reaches_the_judges_that_read_the_given_answer_as_answering():
    import dataclasses
    from engine.types import to_jsonable
    a = answer()
    read = dataclasses.replace(a.candidates[0], relevance=0.9, relevance_by="read by ver-judge, ver-judge-2")
    set_aside = dataclasses.replace(a.candidates[1], relevance=0.1, off_topic=True, relevance_by="read by ver-x")
    a = dataclasses.replace(a, candidates=(read, set_aside))
    live = DecidedAnswer.from_answer(a)
    assert live == DecidedAnswer.from_payload(json.loads(json.dumps(to_jsonable(a))))
    assert live.answer_readers == ("ver-judge", "ver-judge-2")     # not ver-x: it read another answer
    approved = by_agent(operator_observations(live, approved=True))
    assert approved["ver-judge"].role is Role.VERIFIER and approved["ver-judge"].engine_checked
    assert approved["ver-judge"].reasons == (EvidenceReason.OPERATOR_APPROVED,) and "ver-x" not in approved
    # An older record's reading by the engine's own meaning verifier (since removed) names no agent.
    older = dataclasses.replace(a, candidates=(dataclasses.replace(read, relevance_by="the meaning verifier"),))
    assert DecidedAnswer.from_answer(older).answer_readers == ()


AGENTS = (("ret-a", Role.RETRIEVER), ("ret-b", Role.RETRIEVER), ("ret-rogue", Role.RETRIEVER),
          ("gen-a", Role.GENERATOR), ("gen-liar", Role.GENERATOR), ("ver-x", Role.VERIFIER),
          ("ver-liar", Role.VERIFIER))


async def _keeper(path, clock) -> ReputationKeeper:
    store = Store(path, MIGRATIONS, clock=clock)
    await store.open()
    keeper = ReputationKeeper(store, ReputationSettings(), clock=clock)
    await keeper.load(AGENTS)
    return keeper


async def test_scores_history_and_alerts_survive_a_restart(tmp_path):
    now = [1000.0]
    clock = lambda: now[0]   # noqa: E731
    keeper = await _keeper(tmp_path / "q.db", clock)
    for i in range(8):
        now[0] += 1
        update = await keeper.after_answer(answer(f"t{i}"))
    assert keeper.book.record("gen-liar").state is StandingState.QUARANTINED
    assert any(a.kind == "auto_quarantine" and a.agent_id == "gen-liar" for a in update.alerts + tuple(
        await keeper.tables.alerts()))
    before = {r.agent_id: (round(r.score, 9), r.state) for r in keeper.book.all()}
    history = await keeper.tables.history()
    await keeper.tables.store.aclose()

    restarted = await _keeper(tmp_path / "q.db", clock)
    assert {r.agent_id: (round(r.score, 9), r.state) for r in restarted.book.all()} == before
    assert await restarted.tables.history() == history
    liar_points = [p for p in history if p.agent_id == "gen-liar"]
    assert liar_points[0].why == "registered" and liar_points[-1].state == "quarantined"
    assert [p.score for p in liar_points] == sorted((p.score for p in liar_points), reverse=True)
    # Every change is in the audit chain with its evidence.
    rows = restarted.tables.store.execute(
        "SELECT type, payload FROM audit WHERE type LIKE 'reputation.%'").fetchall()
    assert {"reputation.changed", "reputation.quarantined", "reputation.alert"} <= {t for t, _ in rows}
    assert restarted.tables.store.verify_audit_sync() > 0
    alert = next(a for a in await restarted.tables.alerts(open_only=True) if a.agent_id == "gen-liar")
    acknowledged = await restarted.tables.acknowledge(alert.id, "alice")
    assert acknowledged.acknowledged_by == "alice" and alert.id not in {
        a.id for a in await restarted.tables.alerts(open_only=True)}
    await restarted.tables.store.aclose()


async def test_a_change_made_by_another_process_is_taken_in_not_written_over(tmp_path):
    clock = lambda: 5000.0   # noqa: E731
    console = await _keeper(tmp_path / "q.db", clock)
    cli = await _keeper(tmp_path / "q.db", lambda: 5001.0)
    await cli.quarantine("gen-a", "operator suspects it", "bob")
    await cli.tables.store.aclose()
    await console.after_answer(answer("t-next"))       # the console's next question
    assert console.book.record("gen-a").state is StandingState.QUARANTINED
    rows = {r["agent_id"]: r for r in await console.tables.standings()}
    assert rows["gen-a"]["state"] == "quarantined"
    await console.tables.store.aclose()


async def test_operator_approval_credits_and_rejection_debits_the_agents_behind_an_answer(tmp_path):
    keeper = await _keeper(tmp_path / "q.db", lambda: 10.0)
    start = keeper.book.record("gen-a").score
    decided = DecidedAnswer.from_answer(answer())
    up = await keeper.after_decision(decided, approved=True)
    assert keeper.book.record("gen-a").score > start
    assert {e.agent_id for e in up.events if isinstance(e, ReputationChanged)} == {"gen-a", "ret-a", "ret-b"}
    await keeper.after_decision(decided, approved=False)
    assert keeper.book.record("gen-a").score < start
    with pytest.raises(InputError):
        await keeper.quarantine("gen-a", "  ", "alice")
    await keeper.tables.store.aclose()


LOW_FLOOR = """version = 1
[reputation]
quarantine_floor = 0.7    # one refuted claim is enough: the test need not ask seven questions
probation_start = 0.72
"""


async def test_a_lying_generator_is_quarantined_and_takes_no_part_in_the_next_question(small_fleet_file, db_path,
                                                                                    cache_dir, tmp_path):
    settings_file = tmp_path / "engine.toml"
    settings_file.write_text(LOW_FLOOR, encoding="utf-8")
    settings = load_settings(settings_file)
    assert settings.reputation.quarantine_floor == 0.7
    events = []
    async with Engine(load_fleet(small_fleet_file), settings, db_path=db_path, cache_dir=cache_dir) as engine:
        engine.subscribe(events.append)
        first = await engine.questions.ask("What are the moons of Mars?")
        assert "gen-liar" in {c.agent_id for c in first.candidates}
        assert engine.parts.registry.get("gen-liar").trust_state == "quarantined"
        second = await engine.questions.ask("What are the moons of Mars?")
        assert "gen-liar" not in {o.agent_id for o in second.agents}
        assert "gen-liar" not in {c.agent_id for c in second.candidates}
        # The operator releases it: probation, low-risk work only.
        await engine.reputation.release("gen-liar", "fault fixed", "alice")
        assert engine.parts.registry.get("gen-liar").trust_state == "probation"
        medium = await engine.questions.ask("What are the moons of Mars?", RiskTier.MEDIUM)
        assert "gen-liar" not in {o.agent_id for o in medium.agents}
        # The low tier takes one generator, the most trusted; the one on probation gets a seat beside it.
        low = await engine.questions.ask("What are the moons of Mars?", RiskTier.LOW)
        generators = [o.agent_id for o in low.agents if o.role is Role.GENERATOR]
        assert len(generators) == 2 and "gen-liar" in generators
        with pytest.raises(InputError, match="no agent 'gen-nobody'"):
            await engine.reputation.quarantine("gen-nobody", "typo", "alice")
    updates = [e.update for e in events if isinstance(e, TrustUpdated)]
    assert any(a.kind == "auto_quarantine" and a.agent_id == "gen-liar" for u in updates for a in u.alerts)


async def test_colluding_retrievers_cannot_slander_an_honest_one_through_a_dispute(tmp_path):
    # Secure retrieval reports the honest retriever (it lost a dispute 2 to 1), naming the colluders as the
    # only witnesses; the committee of the three longest-standing retrievers did not see it, so it never lands.
    keeper = await _keeper(tmp_path / "q.db", lambda: 10.0)
    for agent in ("ret-c", "slander-1", "slander-2"):
        keeper.book.register(agent, Role.RETRIEVER, first_seen=20.0)
    slandered = Suspect("ret-a", "1 of its 8 passages kept out (disputed)", (SuspectReason.DISPUTED,),
                        ("slander-1", "slander-2"))
    agents = answer().agents + tuple(AgentOutcome(a, Role.RETRIEVER, CallStatus.OK, 10.0, n_items=3)
                                     for a in ("ret-c", "slander-1", "slander-2"))
    for i in range(20):
        update = await keeper.after_answer(answer(f"s{i}", suspects=(slandered,)).__class__(
            **{**answer(f"s{i}").__dict__, "suspects": (slandered,), "agents": agents}))
        assert not any(isinstance(e, ReputationChanged) and e.agent_id == "ret-a" and e.new_score < e.old_score
                       for e in update.events)
    assert keeper.book.record("ret-a").state is StandingState.ACTIVE and keeper.book.record("ret-a").score >= 0.75
    await keeper.tables.store.aclose()
