"""A decided question's record in the store: the question, its agent calls and their audit events, what
the cascade monitor did and the gateway's trace, in one transaction. It sits above the store, which
keeps these tables (engine.store.db) and knows nothing of the Answer."""
from __future__ import annotations

import json
from typing import Callable, TypeVar

from .answer import Answer
from .gateway.traces import write_report
from .store.db import Store
from .types import MeaningStatus, to_jsonable

T = TypeVar("T")


def record_answer_sync(store: Store, answer: Answer, also: Callable[[], T] | None = None) -> T | None:
    """Writes the answer, its agent calls and their audit events in one transaction; `also`, if
    given, runs inside that same transaction (the review queue's insert), so a crash can never
    leave a recorded answer without the queue item it needed."""
    data = to_jsonable(answer)

    def write() -> T | None:
        store.execute("INSERT INTO questions (trace_id, question, tier, verdict, answer, asked_at, answer_json) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (answer.trace_id, answer.question, answer.tier.value, answer.verdict.value, answer.answer,
                      answer.asked_at, json.dumps(data, ensure_ascii=False)))
        now = store.clock()
        for call in answer.agents:
            store.execute("INSERT INTO agent_calls (trace_id, agent_id, role, status, latency_ms, error, at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (answer.trace_id, call.agent_id, call.role.value, call.status.value, call.latency_ms,
                          call.error, now))
            store.append_audit(answer.trace_id, call.agent_id, f"agent.{call.role.value}",
                               {"status": call.status.value, "latency_ms": call.latency_ms, "error": call.error,
                                "items": call.n_items})
        store.append_audit(answer.trace_id, "engine", "question.decided",
                           {"question": answer.question, "tier": answer.tier.value, "tier_reason": answer.tier_reason,
                            "verdict": answer.verdict.value,
                            "answer": answer.answer, "reason": answer.reason,
                            "citations": [c.chunk_id for c in answer.citations],
                            "kept_out": [c.chunk.id for c in answer.excluded
                                         if c.explanation and c.explanation.flags],
                            "suspects": [s.agent_id for s in answer.suspects],
                            "challenges": {c.agent_id: c.challenge for c in answer.candidates if c.challenge},
                            "stages": [s.kind.value for s in answer.stages]})
        note = answer.judge
        if note.status is not MeaningStatus.NOT_NEEDED:
            # The judges' reading, or the mark that meaning should have been read and was not.
            store.append_audit(answer.trace_id, "engine", f"judge.{note.status.name.lower()}",
                               {"why": note.why, "detail": note.detail, "readers": list(note.readers),
                                "own_answer": note.own_answer, "verdict": answer.verdict.value})
        cascade = answer.cascade
        if cascade is not None and cascade.fired:
            store.append_audit(answer.trace_id, "charm", "cascade.fired",
                               {"stage": cascade.stage, "type": cascade.cascade_type.value if cascade.cascade_type
                                else None, "mitigation": cascade.mitigation.value, "resolved": cascade.resolved,
                                "reason": cascade.reason,
                                "scores": [{"index": x.index, "stage": x.stage.value, "attempt": x.attempt,
                                            "sfv": x.a_sfv, "csct": x.a_csct, "cpm": x.a_cpm, "p": x.p,
                                            "fired": x.fired, "suspect_passages": list(x.suspect_passages),
                                            "suspect_agents": list(x.suspect_agents)} for x in cascade.scores]})
        if answer.gateway is not None:      # the gateway's trace and decisions, same transaction
            write_report(store, answer.gateway)
        return also() if also else None
    return store.transaction(write)


async def record_answer(store: Store, answer: Answer, also: Callable[[], T] | None = None) -> T | None:
    return await store.call(record_answer_sync, store, answer, also)
