"""The gateway's knobs ([gateway] in config/engine.toml). Thresholds were picked on the dev split of
the labelled injection data with a margin (README "Gateway"); `main.py eval injection` reports them
on the test split."""
from __future__ import annotations

from dataclasses import dataclass

KNOWN_SCANNERS = ("invisible", "patterns", "seeds", "classifier")


@dataclass(frozen=True)
class GatewaySettings:
    enabled: bool = True
    # Run in this order; a message stops at the first scanner that alone reaches the block level.
    scanners: tuple[str, ...] = ("invisible", "patterns", "seeds", "classifier")
    # DATA channel: passages, agent replies, tool results, memory entries.
    data_block: float = 0.5       # combined score at which data is blocked
    data_escalate: float = 1.01   # at or above (and below data_block) data waits for a person; > 1 = never
    # USER channel: the operator's question. An operator may phrase orders; an override of the
    # engine's rules in a question is still held for a second person rather than run.
    user_escalate: float = 0.6
    user_block: float = 0.95
    sanitise: bool = True         # hidden and format characters are removed from data that passes
    max_data_chars: int = 20000   # longer data is cut before scanning, and the cut recorded
    # An agent whose message is blocked loses reputation like a caught liar (engine/reputation).
    blame_carrier: bool = True
    # Every agent's memory namespace is snapshotted this often (checked after each question); 0 = never.
    snapshot_every_s: float = 3600.0
