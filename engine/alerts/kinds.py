"""Every alert kind in one table: its label for people, its severity and what it means.

Severity says how soon an operator should look, not how sure the engine is:
- CRITICAL: an agent is off work (auto_quarantine, agent_down, judge_misreads: a judge failing its canaries) or
  one carried an attack the gateway stopped (injection_blocked). The fleet is weaker or under attack now, even though nothing got through.
- WARNING: the engine coped but something deserves a look: the cascade monitor fired and mitigated
  (cascade_triggered), the engine abstained because its agents disagreed (consensus_failed), a question
  went ahead with fewer agents than its tier's quorum (quorum_lost: the answer or abstention rests on too
  few independent sources; the agents behind it raise their own agent_down), a score fell fast
  (score_drop), an agent behaves unlike itself (behaviour_shift).
- INFO: for the record only. No kind is INFO today; the level exists so one can be added without
  pretending it is a warning.
An unknown kind (a newer Quorum wrote it) is a WARNING: never hidden as info, never promoted to critical.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from ..errors import InputError


class AlertKind(str, enum.Enum):
    """Every alert the engine raises. The reputation book raises the first four; the engine's alert rules
    (engine.alerts.rules) raise the others from a decided answer. Labels and severities: KINDS below."""
    AUTO_QUARANTINE = "auto_quarantine"
    SCORE_DROP = "score_drop"              # more than score_drop_alert lost within one question
    AGENT_DOWN = "agent_down"              # down_after_errors failed calls in a row
    BEHAVIOUR_SHIFT = "behaviour_shift"
    INJECTION_BLOCKED = "injection_blocked"    # the gateway blocked a message an agent carried
    CASCADE_TRIGGERED = "cascade_triggered"    # the cascade monitor fired on a stage of a question
    CONSENSUS_FAILED = "consensus_failed"      # no answer because the generators or retrievers did not agree
    QUORUM_LOST = "quorum_lost"                # too few retrievers or generators answered (engine.participation)
    JUDGE_MISREADS = "judge_misreads"          # a judge misread its canaries or could not answer them
    REVIEW_OVERDUE = "review_overdue"          # an answer waited in the approval queue past its tier's SLA


class Severity(str, enum.Enum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe: sort by it to put critical alerts first."""
        return _RANK[self]


_RANK = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass(frozen=True)
class KindInfo:
    label: str          # short, for a column or a line of the CLI
    severity: Severity
    meaning: str        # one line: what happened and what the engine did about it


KINDS: Mapping[AlertKind, KindInfo] = MappingProxyType({
    AlertKind.AUTO_QUARANTINE: KindInfo(
        "quarantined", Severity.CRITICAL,
        "The agent's score fell below the quarantine floor: it gets no work until an operator releases it."),
    AlertKind.AGENT_DOWN: KindInfo(
        "agent down", Severity.CRITICAL, "The agent failed several calls in a row."),
    AlertKind.INJECTION_BLOCKED: KindInfo(
        "injection blocked", Severity.CRITICAL,
        "The gateway blocked messages this agent carried because they held instructions; they reached no one."),
    AlertKind.JUDGE_MISREADS: KindInfo(
        "judge misreads", Severity.CRITICAL,
        "A judge misread the known pairs it is checked with, or could not answer them: it is not asked until it "
        "reads them right, and answers it should have read are marked \"meaning not read\"."),
    AlertKind.CASCADE_TRIGGERED: KindInfo(
        "cascade", Severity.WARNING,
        "The cascade monitor caught a stage passing on a fault and mitigated it (or held the answer for review)."),
    AlertKind.CONSENSUS_FAILED: KindInfo(
        "no consensus", Severity.WARNING,
        "The engine gave no answer because its generators or retrievers did not agree."),
    AlertKind.QUORUM_LOST: KindInfo(
        "quorum lost", Severity.WARNING,
        "Too few retrievers or generators answered for the tier's quorum; the engine went on with those it had "
        "and said so in the answer's reason."),
    AlertKind.REVIEW_OVERDUE: KindInfo(
        "review overdue", Severity.WARNING,
        "An answer has waited in the approval queue longer than its tier's service-level time; it sorts first."),
    AlertKind.SCORE_DROP: KindInfo(
        "score drop", Severity.WARNING, "The agent lost much of its score on one question."),
    AlertKind.BEHAVIOUR_SHIFT: KindInfo(
        "behaviour shift", Severity.WARNING,
        "The agent's latency, reply size, error or agreement rate changed against its own history."),
})

UNKNOWN_SEVERITY = Severity.WARNING


def kind_of(kind: str | AlertKind) -> AlertKind | None:
    """The AlertKind of a stored kind, or None for one this version does not know."""
    try:
        return AlertKind(kind)
    except ValueError:
        return None


def severity_of(kind: str | AlertKind) -> Severity:
    known = kind_of(kind)
    return KINDS[known].severity if known is not None else UNKNOWN_SEVERITY


def label_of(kind: str | AlertKind) -> str:
    known = kind_of(kind)
    return KINDS[known].label if known is not None else str(kind).replace("_", " ")


def parse_kind(text: str | AlertKind, where: str = "alert kind") -> AlertKind:
    """A kind as an operator typed it ("injection_blocked", "injection-blocked"); InputError names the known ones."""
    if isinstance(text, AlertKind):
        return text
    known = kind_of(str(text).strip().lower().replace("-", "_"))
    if known is None:
        raise InputError(f"{where}: unknown alert kind {text!r} (kinds: {', '.join(k.value for k in AlertKind)})")
    return known
