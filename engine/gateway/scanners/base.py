"""What every scanner is and returns. A scanner reads one text (from a channel) and says how much it
looks like an injection, with the evidence a person can check."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class Channel(str, enum.Enum):
    USER = "user"      # the operator's question
    DATA = "data"      # anything an agent, a document, a tool or a memory entry supplies


@dataclass(frozen=True)
class Finding:
    scanner: str
    score: float                  # 0 (nothing found) .. 1 (certainly an injection)
    evidence: tuple[str, ...] = ()   # plain text for people: what matched, where


class Scanner(Protocol):
    name: str

    def scan(self, text: str, channel: Channel) -> Finding: ...
