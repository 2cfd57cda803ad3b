"""An alert as stored (AlertRow) and as raised before it has an id (NewAlert).

They live here, beside the kinds table, so the reputation keeper (engine.reputation.keeper) can hand
alerts to the store without importing the alert book.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .kinds import Severity, severity_of


@dataclass(frozen=True)
class AlertRow:
    id: int
    kind: str                              # an AlertKind value (a plain str: rows may come from a newer Quorum)
    agent_id: str                          # "" when the engine's own work raised it
    message: str
    trace_id: str                          # the question it belongs to; "" for none
    at: float
    acknowledged_by: str | None = None
    acknowledged_at: float | None = None
    # None on construction means "the kind's" (engine.alerts.kinds); it is always a Severity afterwards.
    severity: Severity = None              # type: ignore[assignment]
    ack_comment: str = ""
    # The active silence that mutes it when it was read (None: it notifies). Detection never depends on it.
    silenced_by: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity",
                           severity_of(self.kind) if self.severity is None else Severity(self.severity))
        object.__setattr__(self, "ack_comment", self.ack_comment or "")

    @property
    def open(self) -> bool:
        return self.acknowledged_at is None

    @property
    def muted(self) -> bool:
        return self.silenced_by is not None

    @property
    def loud(self) -> bool:
        """Open and not muted: what should notify an operator."""
        return self.open and not self.muted


@dataclass(frozen=True)
class NewAlert:
    kind: str                              # an AlertKind (a str enum) or its value
    agent_id: str
    message: str
    trace_id: str
    at: float

    def __post_init__(self) -> None:
        if isinstance(self.kind, enum.Enum):     # stored and compared as the plain value
            object.__setattr__(self, "kind", self.kind.value)
