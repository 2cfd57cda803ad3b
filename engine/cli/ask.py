"""`main.py ask QUESTION [--json] [--tier auto|low|medium|high]`: one question on the fleet, headless.

The text form quotes every text an agent or a document wrote; --json prints one object (answer_json, with the
review item the answer went to, or null).
"""
from __future__ import annotations

import asyncio
import json
import sys

from .common import add_common_options, load_fleet_and_settings
from .exit_codes import ExitCode


def add_parser(sub) -> None:
    ask = sub.add_parser("ask", help="answer one question on the fleet, headless")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print one JSON object")
    ask.add_argument("--tier", choices=["auto", "low", "medium", "high"], default="auto",
                     help="risk tier; auto (default): the [risk] rules of the engine settings decide")
    add_common_options(ask)


def run(args) -> int:
    return asyncio.run(_ask(args))


async def _ask(args) -> int:
    from engine import Engine, RiskTier
    from engine.pipeline import screen_question
    from engine.untrusted import quoted
    fleet, settings = load_fleet_and_settings(args)
    screen_question(args.question, settings.limits.max_question_chars)   # fail before starting any agent
    engine = Engine(fleet, settings, db_path=args.db)
    if not args.json:
        print("Starting the fleet...", file=sys.stderr)
    async with engine:
        answer = await engine.questions.ask(args.question, None if args.tier == "auto" else RiskTier(args.tier))
        item = await engine.reviews.item_for(answer.trace_id)
    if args.json:
        print(json.dumps({**answer_json(answer), "review": review_json(item)}, ensure_ascii=False, indent=2))
    else:
        print_answer(answer)
        if item is not None:
            print(f"Escalated: review item #{item.id} ({quoted(item.why)})")
    return ExitCode.OK


def print_answer(answer) -> None:
    """Every text an agent or a document wrote is quoted(): one line each, no escape sequence, no forged line."""
    from engine import Role
    from engine.untrusted import quoted
    print(f"Question : {quoted(answer.question)}")
    print(f"Verdict  : {answer.verdict.value} ({quoted(answer.reason)})")
    print(f"Tier     : {quoted(answer.tier_reason or answer.tier.value)}")
    print(f"Answer   : {quoted(answer.answer) or '-'}")
    meaning = meaning_line(answer.judge)
    if meaning:
        print(f"Meaning  : {meaning}")
    for citation in answer.citations:
        print(f"  cites [{quoted(citation.chunk_id)}] {quoted(citation.source)}: {quoted(citation.text[:100])}...")
    if not answer.answer and answer.candidates:
        print("Positions:")
        for cand in answer.candidates:
            by = f", {quoted(cand.relevance_by)}" if cand.relevance_by else ""
            meaning = ("" if cand.relevance is None else
                       f", does not answer the question (P {cand.relevance:.2f}{by})" if cand.off_topic else
                       f", answers the question (P {cand.relevance:.2f}{by})")
            print(f"  {quoted(cand.agent_id)} (support {cand.support_rate:.0%}{meaning}): "
                  f"{quoted(cand.generation.answer[:120])}")
    print(f"Agents   : {answer.agents_ok(Role.RETRIEVER)} retrievers and {answer.agents_ok(Role.GENERATOR)} "
          f"generators answered")
    for agent in answer.agents:
        note = (f"  [{quoted(agent.mode)}]" if agent.mode else "") + (f"  {quoted(agent.error)}" if agent.error else "")
        print(f"  {quoted(agent.agent_id):<16} {agent.role.value:<9} {agent.status.value:<9} {agent.latency_ms:8.1f} ms"
              f"{note}")
    print(f"Trace id : {answer.trace_id}")


def review_json(item) -> dict | None:
    """The `review` key of `ask --json`: null when the answer did not need an operator."""
    if item is None:
        return None
    return {"id": item.id, "status": item.status.value, "why": item.why}


TURN_ON = ("turn the judge on: enabled = true on ver-judge in config/fleet.toml, or a verifier of kind openai-chat "
           "(docs/agents.md, \"The LLM judge\")")


def meaning_line(note) -> str:
    """What the judges did, for the terminal: "" when the cheap checks decided alone."""
    from engine import MeaningStatus
    from engine.untrusted import quoted
    if note.status is MeaningStatus.NOT_READ:
        how = f"; {TURN_ON}" if "no judge is in the fleet" in note.detail else ""
        return f"NOT READ ({quoted(note.why)}): {quoted(note.detail)}{how}"
    if note.status is MeaningStatus.READ:
        return f"read by judges ({quoted(note.why)}): {quoted(note.detail)}"
    return ""


def answer_json(answer) -> dict:
    from engine import to_jsonable
    return {
        "trace_id": answer.trace_id,
        "question": answer.question,
        "tier": answer.tier.value,
        "tier_reason": answer.tier_reason,
        "verdict": answer.verdict.value,
        "reason": answer.reason,
        "answer": answer.answer,
        "meaning": {"status": answer.judge.status.value, "why": answer.judge.why, "detail": answer.judge.detail,
                    "readers": list(answer.judge.readers)},
        "citations": [to_jsonable(c) for c in answer.citations],
        "agents": [{"id": a.agent_id, "role": a.role.value, "status": a.status.value, "latency_ms": a.latency_ms,
                    "error": a.error, "mode": a.mode} for a in answer.agents],
        "candidates": [{"agent_id": c.agent_id, "answer": c.generation.answer, "support_rate": c.support_rate,
                        "credibility": c.credibility, "consistency": c.consistency, "agreeing": list(c.agreeing),
                        "challenge": c.challenge, "relevance": c.relevance, "off_topic": c.off_topic,
                        "relevance_by": c.relevance_by,
                        "checks": [{"claim": k.claim.text, "supported": k.supported, "label": k.label.value,
                                    "origin": k.origin.value, "reason": k.reason, "entailment": k.entailment,
                                    "premise": k.premise}
                                   for k in c.checks]} for c in answer.candidates],
        "context": [{"chunk_id": c.chunk.id, "score": c.score, "supported_by": list(c.supported_by),
                     "disputed_by": list(c.disputed_by)} for c in answer.context],
        "timings_ms": dict(answer.timings_ms),
        "stages": stages_json(answer),
        "cascade": cascade_json(answer.cascade),
        "participation": participation_json(answer.participation),
    }


def participation_json(part) -> dict | None:
    """Per role: asked, answered, failed by status, needed, unavailable, held; and quorum_held (engine.participation)."""
    from engine import to_jsonable
    from engine.participation import summary
    if part is None:
        return None
    return {"retrievers": to_jsonable(part.retrievers), "generators": to_jsonable(part.generators),
            "quorum_held": part.quorum_held, "summary": summary(part)}


def stages_json(answer) -> list[dict]:
    """Each stage the question went through, with the cascade monitor's scores at its boundary."""
    scores = {}
    for score in (answer.cascade.scores if answer.cascade else ()):
        scores[(score.index, score.attempt)] = score
    out = []
    for stage in answer.stages:
        score = scores.get((stage.index, stage.attempt))
        out.append({"index": stage.index, "stage": stage.kind.value, "hop": stage.hop, "attempt": stage.attempt,
                    "output": stage.output, "confidence": stage.confidence, "agents": list(stage.agents),
                    "evidence": [c.id for c in stage.evidence], "elapsed_ms": stage.elapsed_ms, "note": stage.note,
                    "scores": None if score is None else {
                        "sfv": score.a_sfv, "csct": score.a_csct, "cpm": score.a_cpm, "p": score.p,
                        "fired": score.fired, "type": score.cascade_type.value if score.cascade_type else None,
                        "reasons": list(score.reasons)}})
    return out


def cascade_json(cascade) -> dict | None:
    if cascade is None:
        return None
    return {"fired": cascade.fired, "stage": cascade.stage,
            "type": cascade.cascade_type.value if cascade.cascade_type else None,
            "mitigation": cascade.mitigation.value, "resolved": cascade.resolved, "reason": cascade.reason}
