"""The meaning verifier's knobs ([meaning] in config/engine.toml); engine/generation/meaning_check.py says what
each does. The thresholds default to the operating points its training chose on its dev pairs (the manifest)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MeaningSettings:
    enabled: bool = False              # read claims and answers for meaning (the cross-encoder of resources/models)
    entails_threshold: float = 0.0     # P(entailed) a claim the words supported still needs; 0: the manifest's
    answers_threshold: float = 0.0     # P(answers the question) an answer needs to be given; 0: the manifest's
    relative: float = 0.0              # also set aside an answer whose P(answers) is below this share of the best's
    lift: float = 0.0                  # P(entailed) at which a claim the words could not place is supported; 0: never
    competing_positions: bool = False  # abstain, naming both, when another passage answers with another value
