"""What the gateway decides about one message, with the evidence for it."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .envelope import Envelope
from .scanners.base import Finding


class Action(str, enum.Enum):
    ALLOW = "allow"          # passes unchanged
    SANITISE = "sanitise"    # passes with hidden characters and markup removed
    BLOCK = "block"          # stops here; audited and counted against the agent that carried it
    ESCALATE = "escalate"    # passes only after a person approves (the approval queue)


@dataclass(frozen=True)
class Screening:
    envelope: Envelope
    action: Action
    score: float                         # the combined injection score, 0..1
    findings: tuple[Finding, ...] = ()   # every scanner's reading, in the order they ran
    text: str = ""                       # what goes on: the content, sanitised when action is SANITISE
    elapsed_ms: float = 0.0

    @property
    def passes(self) -> bool:
        return self.action in (Action.ALLOW, Action.SANITISE)

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(f"{f.scanner}: {e}" for f in self.findings for e in f.evidence)

    @property
    def flagged(self) -> bool:
        return self.action is not Action.ALLOW
