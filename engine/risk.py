"""Which risk tier a question takes, and why: operator-editable rules in config/engine.toml ([risk]).

Rules are read in order of severity (high before medium before low) and the first one whose words or
patterns match the question decides; no match takes the default tier. An operator's choice (`--tier`,
the console's tier box) overrides the rules, and the answer records which of the three applied.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from .types import RiskTier

SEVERITY = (RiskTier.HIGH, RiskTier.MEDIUM, RiskTier.LOW)


class TierSource(str, enum.Enum):
    RULE = "rule"            # a [[risk.rules]] entry matched the question
    DEFAULT = "default"      # no rule matched
    OPERATOR = "operator"    # chosen by hand (--tier, the console)


@dataclass(frozen=True)
class RiskRule:
    tier: RiskTier
    name: str
    words: tuple[str, ...] = ()       # whole words or phrases, any case
    patterns: tuple[str, ...] = ()    # regular expressions, any case

    def __post_init__(self) -> None:
        words = [re.compile(r"\b" + re.escape(w) + r"\b", re.IGNORECASE) for w in self.words]
        object.__setattr__(self, "_compiled", tuple(words + [re.compile(p, re.IGNORECASE) for p in self.patterns]))

    def match(self, question: str) -> str:
        """The text that matched, or ""."""
        for regex in self._compiled:
            found = regex.search(question)
            if found:
                return found.group(0)
        return ""


@dataclass(frozen=True)
class TierDecision:
    tier: RiskTier
    source: TierSource
    reason: str


# The same rules as config/engine.toml ships: in force when a settings file has no [risk] section.
DEFAULT_RULES: tuple[RiskRule, ...] = (
    RiskRule(RiskTier.HIGH, "legal", words=("lawsuit", "liability", "contract", "legal", "court", "compliance",
                                            "regulation", "gdpr")),
    RiskRule(RiskTier.HIGH, "financial", words=("invest", "investment", "loan", "tax", "payment", "refund", "price",
                                                "wire transfer", "stock", "salary")),
    RiskRule(RiskTier.HIGH, "medical", words=("dose", "dosage", "diagnosis", "symptom", "medication", "drug",
                                              "treatment", "prescription")),
    RiskRule(RiskTier.HIGH, "irreversible action", words=("delete", "erase", "wipe", "shut down", "decommission",
                                                          "revoke", "terminate")),
)


@dataclass(frozen=True)
class RiskPolicy:
    default: RiskTier = RiskTier.MEDIUM
    rules: tuple[RiskRule, ...] = field(default=DEFAULT_RULES)

    def classify(self, question: str, override: RiskTier | None = None) -> TierDecision:
        if override is not None:
            return TierDecision(override, TierSource.OPERATOR, f"{override.value} risk chosen by the operator")
        for tier in SEVERITY:
            for rule in self.rules:
                if rule.tier is tier:
                    matched = rule.match(question)
                    if matched:
                        return TierDecision(tier, TierSource.RULE,
                                            f"{tier.value} risk: rule \"{rule.name}\" matched \"{matched}\"")
        return TierDecision(self.default, TierSource.DEFAULT,
                            f"{self.default.value} risk: no rule matched, the default tier")
