"""The judges' reading of flagged passages for instructions aimed at the assistant (POST /screen), for the
gateway's second opinion (engine/gateway/judged.py): every judge the question may ask reads them; each text's
score is the median of their readings, so one Byzantine judge of three can neither take an honest passage out
nor keep a planted one in. A judge that fails is left out; with none left there is no reading."""
from __future__ import annotations

import asyncio
import statistics
from typing import Sequence

from ..generation.judging import Judges


async def read_instructions(judges: Judges, texts: Sequence[str], trace_id: str = "") -> tuple[tuple[float, ...], str] | None:
    """(P(yes) per text, who read them), or None when no judge could read."""
    readers = [j for j in judges.answers if callable(getattr(j, "screen", None))]
    if not readers or not texts:
        return None
    replies = await asyncio.gather(*(j.screen(texts, trace_id) for j in readers), return_exceptions=True)
    read = [(j.name, r.scores) for j, r in zip(readers, replies)
            if not isinstance(r, BaseException) and len(r.scores) == len(texts)]
    for reply in replies:
        if isinstance(reply, BaseException) and not isinstance(reply, Exception):
            raise reply       # a cancellation, not a judge's failure
    if not read:
        return None
    scores = tuple(round(statistics.median(s[i] for _, s in read), 4) for i in range(len(texts)))
    return scores, ", ".join(name for name, _ in read)
