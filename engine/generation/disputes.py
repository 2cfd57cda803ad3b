"""The judge on a dispute: where the cheap checks (words, embeddings, the cross-encoder) disagree about a
question's answers, judge agents read whether each answer answers it, and the question is adjudicated again
with their reading. Elsewhere the judge is not asked: it costs about a second an answer.

The cheap checks disagree when two answers that their claims support say different things (one of them may
be a true sentence that does not answer, given by one generator or by two that agree), or when the
cross-encoder sets aside an answer whose every claim its evidence supports. A lone supported answer that the
cheap checks all pass is not a dispute: nothing here asks the judge about it.

A dispute the judge does not settle stands: where it reads two supported answers that say different things
both as answering, agreement between generators does not pick one (it is the one thing two colluders
control), and the question is abstained with both positions, for a person to decide."""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from ..config import GenerationSettings
from ..types import Candidate, ContextChunk, Generation, Verdict
from ..verify.verifier import Verifier
from .adjudicate import Decision, JudgedOnce, adjudicate
from .relevance import AnswerReader


def dispute(decision: Decision, settings: GenerationSettings) -> str:
    """Why the cheap checks disagree about this decision's answers, for people; "" when they do not."""
    supported = [c for c in decision.candidates if c.support_rate >= settings.min_support]
    set_aside = [c.agent_id for c in supported if c.off_topic]
    if set_aside:
        return f"the meaning verifier sets aside {', '.join(set_aside)}, whose claims the evidence supports"
    for n, one in enumerate(supported):
        for other in supported[n + 1:]:
            if other.agent_id not in one.agreeing and one.generation.answer.strip() != other.generation.answer.strip():
                return f"{one.agent_id} and {other.agent_id} give different supported answers"
    return ""


def standing_rivals(decision: Decision, settings: GenerationSettings) -> list[Candidate]:
    """The supported answers, read as answering by a judge, that say something else than the chosen one."""
    chosen = decision.chosen
    if decision.verdict is not Verdict.ANSWERED or chosen is None:
        return []
    return [c for c in decision.candidates
            if c.agent_id != chosen.agent_id and c.agent_id not in chosen.agreeing and not c.off_topic
            and c.relevance_by.startswith("read by") and c.support_rate >= settings.min_support
            and c.generation.answer.strip() != chosen.generation.answer.strip()]


async def adjudicate_disputes(question: str, generations: Mapping[str, Generation],
                              context: tuple[ContextChunk, ...], settings: GenerationSettings, verifier: Verifier,
                              judges: Sequence[AnswerReader], **options) -> Decision:
    """adjudicate, then, on a dispute and with judges, adjudicate again with their reading of the answers. The
    claims are checked once: the second pass reads the first pass's judgements (one JudgedOnce)."""
    once = verifier if isinstance(verifier, JudgedOnce) else JudgedOnce(verifier)
    first = await adjudicate(question, generations, context, settings, once, **options)
    why = dispute(first, settings) if judges else ""
    if not why:
        return first
    judged = await adjudicate(question, generations, context, settings, once, judges=judges, **options)
    if not any(c.relevance_by.startswith("read by") for c in judged.candidates):
        return dataclasses.replace(first, reason=f"{first.reason}; {why}, and no judge could read the answers")
    rivals = standing_rivals(judged, settings)
    if rivals:
        names = ", ".join(c.agent_id for c in [judged.chosen, *rivals])
        return Decision(Verdict.ABSTAINED, None, judged.candidates,
                        f"no consistent conclusion: the judge reads the different supported answers of {names} "
                        f"all as answering, and agreement between generators does not settle it; "
                        f"the judge was asked because {why}")
    return dataclasses.replace(judged, reason=f"{judged.reason}; the judge was asked because {why}")
