"""The gateway's knobs ([gateway] in config/engine.toml). Thresholds were picked on the dev split of
the labelled injection data with a margin (docs/security.md "The thought-virus gateway"); `main.py eval injection` reports them
on the test split. The learned scanners are calibrated to these two numbers (bench/train/gateway.py): a
classifier or seed score of 0.5 in DATA, and of 0.6 in USER, is that scanner's operating point, so
moving data_block or user_escalate trades catches for false alarms from every scanner at once."""
from __future__ import annotations

from dataclasses import dataclass

KNOWN_SCANNERS = ("invisible", "patterns", "seeds", "classifier", "encoder")


@dataclass(frozen=True)
class GatewaySettings:
    enabled: bool = True
    # Run in this order; a message stops at the first scanner that alone reaches the block level. The
    # cheap ones first: the seed scanner embeds text (tens of ms per KB) and runs only when the others
    # have not already blocked.
    scanners: tuple[str, ...] = ("invisible", "patterns", "classifier", "seeds")
    # The seed scanner (embeddings: tens of ms per KB, the others about one) runs only on messages the
    # scanners before it score at least this high; 0 = on every message.
    seeds_floor: float = 0.2
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
    # The judges' second opinion (engine/gateway/judged.py): a passage in a question's context that the scanners
    # scored at judge_flag or more (below data_block, or it would not be there) is read by the judges; one they
    # read at judge_line or more as holding an instruction aimed at the assistant is taken out of the context and
    # retrieval is run again without it. Off: measured held out by family, it does not pay (docs/evaluation.md).
    judge_confirms: bool = False
    judge_flag: float = 0.2
    judge_line: float = 0.5
