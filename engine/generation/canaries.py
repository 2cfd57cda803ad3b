"""Known pairs a judge must read right before it is asked about real answers, and now and then after.

Each canary is a question, the passages it is read against, the candidate that is their answer and a true
sentence of the same passages that does not answer; and a claim with its evidence beside the same claim with
two names exchanged. A judge passes when it reads every right candidate above every wrong one and each at
its side of the settings' threshold, and votes the claims right. Written for this project, about nothing in
the demo corpus, so a canary says nothing of how the judge reads the corpus.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from ..settings.judge import JudgeSettings
from ..types import Chunk, ClaimLabel

_LIGHTHOUSE = Chunk("canary#lighthouse", "The Pharos of Alexandria was a lighthouse built by the Ptolemaic Kingdom "
                                         "around 280 BC. It stood on the island of Pharos and was about 100 metres "
                                         "tall.", "canary", 1.0, {"title": "Lighthouse of Alexandria"})
_BRIDGE = Chunk("canary#bridge", "The Forth Bridge is a railway bridge in Scotland. It was designed by John Fowler "
                                 "and Benjamin Baker and opened in 1890.", "canary", 1.0, {"title": "Forth Bridge"})


@dataclass(frozen=True)
class Canary:
    question: str
    passages: tuple[Chunk, ...]
    answer: str          # the passages' answer
    off_topic: str       # a true sentence of the passages that does not answer


@dataclass(frozen=True)
class ClaimCanary:
    claim: str
    evidence: tuple[Chunk, ...]
    supported: bool


CANARIES = (
    Canary("How tall was the Pharos of Alexandria?", (_LIGHTHOUSE,), "It was about 100 metres tall.",
           "It stood on the island of Pharos."),
    Canary("When did the Forth Bridge open?", (_BRIDGE,), "The Forth Bridge opened in 1890.",
           "The Forth Bridge is a railway bridge in Scotland."),
)
CLAIM_CANARIES = (
    ClaimCanary("The Forth Bridge was designed by John Fowler and Benjamin Baker.", (_BRIDGE,), True),
    ClaimCanary("The Forth Bridge was designed by the Ptolemaic Kingdom.", (_BRIDGE, _LIGHTHOUSE), False),
)


@dataclass(frozen=True)
class CanaryResult:
    judge: str
    passed: bool
    detail: str          # what it read, or what it got wrong, for people
    seconds: float
    at: float            # wall time


def check_readings(canary: Canary, scores: Sequence[float], settings: JudgeSettings) -> str:
    """"" when the reading of (answer, off_topic) is right, else what is wrong."""
    right, wrong = scores
    if right < settings.answers_at:
        return f"read the answer to {canary.question!r} at P = {right:.2f}, under {settings.answers_at:.2f}"
    if wrong >= right:
        return f"read a sentence that does not answer {canary.question!r} at P = {wrong:.2f}, above the answer's {right:.2f}"
    return ""


async def run_canaries(judge, verifier, settings: JudgeSettings, clock=time.time) -> CanaryResult:
    """judge: a Judge (POST /read); verifier: the same agent as a Verifier (POST /validate). Any failure to
    answer counts as failing."""
    from ..errors import AgentError
    started = time.perf_counter()
    read = []
    try:
        for canary in CANARIES:
            reply = await judge.read(canary.question, canary.passages, (canary.answer, canary.off_topic),
                                     "canary")
            if (wrong := check_readings(canary, reply.scores, settings)):
                return CanaryResult(judge.name, False, wrong, time.perf_counter() - started, clock())
            read.append(f"{reply.scores[0]:.2f}/{reply.scores[1]:.2f}")
        for item in CLAIM_CANARIES:
            judgement = await verifier.judge(item.claim, item.evidence, "canary")
            if (judgement.label is ClaimLabel.SUPPORTED) is not item.supported:
                return CanaryResult(judge.name, False, f"voted {judgement.label.value} on {item.claim!r}",
                                    time.perf_counter() - started, clock())
    except AgentError as exc:
        return CanaryResult(judge.name, False, f"did not answer its canaries: {exc.reason}",
                            time.perf_counter() - started, clock())
    return CanaryResult(judge.name, True, "read its known pairs right (answer/other P: " + ", ".join(read) + ")",
                        time.perf_counter() - started, clock())
