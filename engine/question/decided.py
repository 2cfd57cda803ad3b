"""Who acts on a decided question, after the pipeline: observers told in order when the Engine is built
(engine/decided.py has the engine's own: record, reputation, alerts, memory snapshot, announce). Each
hands the next the event with what it made of it."""
from __future__ import annotations

from typing import Protocol, Sequence

from ..events import QuestionDecided


class DecidedObserver(Protocol):
    async def on_decided(self, decided: QuestionDecided) -> QuestionDecided: ...


async def tell(observers: Sequence[DecidedObserver], decided: QuestionDecided) -> QuestionDecided:
    """Each observer in turn, awaited before the next."""
    for observer in observers:
        decided = await observer.on_decided(decided)
    return decided
