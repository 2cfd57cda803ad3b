"""Decisions on several review items at once, and what a stored payload says, on the real SQLite store:
each decision its own transaction with its audit event and its reputation update, an item decided
meanwhile failing alone; decisions and their audit rows are there after a restart; the payload reader
finds positions, cascade scores per stage, agents and evidence sentences."""
from __future__ import annotations

import dataclasses
import json

import pytest

from engine import Engine, InputError, RiskTier, Verdict, load_fleet, load_settings, to_jsonable
from engine.cascade.types import CascadeOutcome, Mitigation, StageScore
from engine.types import CascadeType
from engine.events import TrustUpdated
from engine.review import ReviewQueue, ReviewStatus
from engine.review.payload import (agents_from_payload, candidates_from_payload, cascade_from_payload,
                                   evidence_sentence, positions_of)
from engine.stages.model import StageKind
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.types import AgentOutcome, CallStatus, Citation, ContextChunk, Chunk, Role, Suspect

from .test_review import MOONS, make_answer

WHY = "high-risk question"


def audit_rows(store: Store) -> list[dict]:
    return [dict(row, payload=json.loads(row["payload"])) for row in store.query("SELECT * FROM audit ORDER BY seq")]


def with_context(trace_id: str):
    """make_answer with the safe context the generators saw, so a decision has retrievers to count."""
    context = (ContextChunk(Chunk("mars-moons#0", MOONS, "Encyclopedia"), 0.05, ("ret-e5", "ret-bm25")),)
    return dataclasses.replace(make_answer(trace_id, question=f"What are the moons of Mars? ({trace_id})"),
                               context=context)


@pytest.fixture
async def engine(small_fleet_file, db_path, cache_dir):
    """The engine without its fleet: decisions need only the store and the reputation book."""
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir, launch=False)
    await engine.parts.store.open()
    await engine.parts.reputation.load((a.id, a.role) for a in engine.fleet.config.agents)
    yield engine
    await engine.parts.store.aclose()


async def test_decide_many_decides_each_item_alone_and_reports_each_outcome(engine):
    ids = [await engine.parts.review.enqueue(with_context(f"t{n}"), WHY) for n in (1, 2, 3)]
    await engine.parts.review.decide(ids[1], True, "alice", "matches operator knowledge")     # decided meanwhile
    events = []
    engine.subscribe(events.append)
    before = len(audit_rows(engine.parts.store))

    outcomes = await engine.reviews.decide_many([ids[0], ids[1], ids[2], 99, ids[0], "seven"], False, " bob ",
                                        "Factually wrong", "  two moons, not three ")
    assert [(o.item_id, o.decided) for o in outcomes] == [(ids[0], True), (ids[1], False), (ids[2], True),
                                                          (99, False), ("seven", False)]     # one per distinct id
    first, alice, third, unknown, not_a_number = outcomes
    assert (first.item.status, first.item.decided_by, first.item.reason, first.item.note) == (
        ReviewStatus.REJECTED, "bob", "factually wrong", "two moons, not three")
    assert alice.item.status is ReviewStatus.APPROVED and alice.item.decided_by == "alice"     # as the store has it
    assert "was already approved by alice" in alice.refusal
    assert third.item.status is ReviewStatus.REJECTED
    assert unknown.item is None and unknown.refusal == "review item #99 does not exist"
    assert not_a_number.item is None and "not a number" in not_a_number.refusal

    written = audit_rows(engine.parts.store)[before:]
    decisions = [(r["type"], r["actor"], r["payload"]["id"]) for r in written if r["type"].startswith("review.")]
    assert decisions == [("review.rejected", "bob", ids[0]), ("review.rejected", "bob", ids[2])]
    assert engine.parts.store.verify_audit_sync() == len(audit_rows(engine.parts.store))
    # Each decision moved the reputation of the agents behind its answer, as a single decision does.
    updates = [e for e in events if isinstance(e, TrustUpdated)]
    assert len(updates) == 2
    assert {p.agent_id for p in updates[0].update.points} == {"gen-a", "ret-e5", "ret-bm25"}


async def test_a_reason_that_is_not_listed_refuses_the_whole_batch(engine):
    ids = [await engine.parts.review.enqueue(with_context(f"t{n}"), WHY) for n in (1, 2)]
    before = audit_rows(engine.parts.store)
    with pytest.raises(InputError, match="not a reason to approve"):
        await engine.reviews.decide_many(ids, True, "bob", "factually wrong")
    with pytest.raises(InputError, match='"other" needs a note'):
        await engine.reviews.decide_many(ids, False, "bob", "other")
    with pytest.raises(InputError, match="operator's name"):
        await engine.reviews.decide_many(ids, False, "  ", "policy")
    assert audit_rows(engine.parts.store) == before
    assert [i.id for i in await engine.parts.review.pending()] == ids


async def test_decisions_and_their_audit_rows_survive_a_restart(small_fleet_file, db_path, cache_dir):
    fleet, settings = load_fleet(small_fleet_file), load_settings()
    engine = Engine(fleet, settings, db_path=db_path, cache_dir=cache_dir, launch=False)
    await engine.parts.store.open()
    await engine.parts.reputation.load((a.id, a.role) for a in fleet.agents)
    ids = [await engine.parts.review.enqueue(with_context(f"t{n}"), WHY) for n in (1, 2, 3)]
    await engine.reviews.decide(ids[0], True, "alice", "verified against the cited sources")
    await engine.reviews.decide_many(ids[1:], False, "bob", "other", "the survey does not exist")
    await engine.parts.store.aclose()

    store = Store(db_path, MIGRATIONS)          # a new process: only the file is shared
    await store.open()
    try:
        queue = ReviewQueue(store)
        assert await queue.pending() == []
        decided = {i.id: (i.status, i.decided_by, i.reason, i.note) for i in await queue.items("all")}
        assert decided == {ids[0]: (ReviewStatus.APPROVED, "alice", "verified against the cited sources", ""),
                           ids[1]: (ReviewStatus.REJECTED, "bob", "other", "the survey does not exist"),
                           ids[2]: (ReviewStatus.REJECTED, "bob", "other", "the survey does not exist")}
        rows = [(r["type"], r["actor"], r["trace_id"], r["payload"]) for r in audit_rows(store)
                if r["type"] in ("review.approved", "review.rejected")]
        assert rows == [("review.approved", "alice", "t1", {"id": ids[0], "reason": "verified against the cited sources",
                                                            "note": ""}),
                        ("review.rejected", "bob", "t2", {"id": ids[1], "reason": "other",
                                                          "note": "the survey does not exist"}),
                        ("review.rejected", "bob", "t3", {"id": ids[2], "reason": "other",
                                                          "note": "the survey does not exist"})]
        assert store.verify_audit_sync() == len(audit_rows(store))
        with pytest.raises(InputError, match="a decision is final"):     # still final after the restart
            await queue.decide(ids[1], True, "carol", "matches operator knowledge")
    finally:
        await store.aclose()


# --- what the payload says -------------------------------------------------------------------------
def payload_of(answer) -> dict:
    return json.loads(json.dumps(to_jsonable(answer)))


def test_candidates_carry_labels_citations_and_the_evidence_sentence():
    answer = dataclasses.replace(make_answer(), context=(ContextChunk(
        Chunk("mars-moons#0", f"Mars is the fourth planet. {MOONS} Both were found in 1877.", "Encyclopedia"),
        0.05, ("ret-e5",)),))
    honest, liar = candidates_from_payload(payload_of(answer))
    assert (honest.claims[0].label, honest.claims[0].citations, honest.claims[0].evidence) == (
        "supported", ("mars-moons#0",), MOONS)
    assert liar.claims[0].evidence == "" and "not in the context" in liar.claims[0].reason   # its citation is not there
    assert evidence_sentence("Nyx orbits Jupiter.", [MOONS]) == ""


def test_positions_group_candidates_that_agree():
    abstained = make_answer(verdict=Verdict.ABSTAINED)
    positions = positions_of(candidates_from_payload(payload_of(abstained)))
    assert [(p.agents, p.support_rate) for p in positions] == [(("gen-a",), 1.0), (("gen-liar",), 0.0)]
    # gen-a names gen-b as agreeing, but gen-b gave no candidate: it is no position of its own.
    assert positions[0].answer == MOONS


def test_cascade_scores_per_stage_and_the_outcome():
    scores = (StageScore(0, StageKind.FORMULATE, 0, 0.0, 0.1, 0.0, 0.04, False),
              StageScore(1, StageKind.RETRIEVE, 0, 0.9, 0.5, 0.6, 0.68, True, CascadeType.CONTEXT_POISONING,
                         ("a tampered passage",)))
    answer = dataclasses.replace(make_answer(), cascade=CascadeOutcome(
        True, 1, CascadeType.CONTEXT_POISONING, Mitigation.ROLLBACK, False, "re-run failed", scores))
    cascade = cascade_from_payload(payload_of(answer))
    assert (cascade.fired, cascade.stage, cascade.cascade_type, cascade.mitigation, cascade.halted) == (
        True, 1, "context_poisoning", "M4 rollback", True)
    fired = cascade.scores[1]
    assert (fired.stage, fired.sfv, fired.csct, fired.cpm, fired.p, fired.fired, fired.reasons) == (
        "retrieve", 0.9, 0.5, 0.6, 0.68, True, ("a tampered passage",))
    assert cascade_from_payload(payload_of(make_answer())) is None         # not watched
    assert cascade_from_payload({"cascade": {"scores": [{"p": "odd"}, "junk"]}}).scores[0].p == 0.0   # read defensively


def test_agents_with_role_call_outcome_and_whom_a_decision_counts_for():
    answer = dataclasses.replace(
        make_answer(),
        agents=(AgentOutcome("ret-e5", Role.RETRIEVER, CallStatus.OK, 12.0, n_items=5),
                AgentOutcome("ret-rogue", Role.RETRIEVER, CallStatus.OK, 9.0, n_items=3),
                AgentOutcome("ret-dead", Role.RETRIEVER, CallStatus.DOWN, 1.0, error="connection refused"),
                AgentOutcome("gen-a", Role.GENERATOR, CallStatus.OK, 20.0, n_items=1),
                AgentOutcome("gen-liar", Role.GENERATOR, CallStatus.OK, 22.0, n_items=1)),
        context=(ContextChunk(Chunk("mars-moons#0", MOONS, "Encyclopedia"), 0.05, ("ret-e5",)),),
        suspects=(Suspect("ret-rogue", "3 of its 3 passages kept out (tampered)"),),
        citations=(Citation("mars-moons#0", "Encyclopedia", "Moons of Mars", MOONS),))
    agents = {a.agent_id: a for a in agents_from_payload(payload_of(answer))}
    assert list(agents) == ["ret-e5", "ret-rogue", "ret-dead", "gen-a", "gen-liar"]
    assert (agents["ret-e5"].passages_kept, agents["ret-e5"].decision_counts) == (1, True)
    assert agents["ret-rogue"].suspect.startswith("3 of its 3") and not agents["ret-rogue"].decision_counts
    assert (agents["ret-dead"].status, agents["ret-dead"].error) == ("down", "connection refused")
    assert agents["gen-a"].gave_answer and agents["gen-a"].decision_counts and agents["gen-a"].support_rate == 1.0
    assert not agents["gen-liar"].gave_answer and agents["gen-liar"].support_rate == 0.0
    assert agents_from_payload({}) == () and agents_from_payload({"agents": ["junk", {"role": "x"}]}) == ()


def test_the_review_item_reads_its_payload(db_path):
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    queue = ReviewQueue(store)
    item_id = store.transaction(queue.insert_in_transaction(make_answer(tier=RiskTier.HIGH), WHY))
    item = queue._one_sync("id", item_id)
    store.close_sync()
    assert [p.agents for p in item.positions] == [("gen-a",), ("gen-liar",)]
    assert item.cascade_summary is None and [a.agent_id for a in item.agents_summary] == ["gen-a"]
    assert item.decision_counts_for == ("gen-a",)
    assert item.candidates_summary[0].claims[0].evidence == MOONS    # no context: the citation's text is quoted
