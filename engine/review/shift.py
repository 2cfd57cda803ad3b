"""Each reviewer's progress over a shift: what they decided, what they approved toward a quorum, what they hold.

Read from the queue's own tables, so every desk on a team store counts the same: a decision is the item's
`decided_by`; an approval toward a reviewer quorum is a row of review_votes (the one that closed the item is
its decision, not counted twice); a hold is a pending item's unexpired claim. The wait is from the item's arrival
to its decision, the median over the reviewer's decisions in the shift.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store.db import Store


@dataclass(frozen=True)
class ReviewerTally:
    operator: str
    approved: int = 0
    rejected: int = 0
    toward_quorum: int = 0               # approvals of high-risk items that someone else closed, or that still wait
    holding: int = 0                     # pending items claimed now
    median_wait_s: float | None = None   # arrival to this reviewer's decision

    @property
    def decided(self) -> int:
        return self.approved + self.rejected

    def text(self) -> str:
        parts = [f"{self.approved} approved", f"{self.rejected} rejected"]
        if self.toward_quorum:
            parts.append(f"{self.toward_quorum} toward a quorum")
        if self.holding:
            parts.append(f"holds {self.holding}")
        if self.median_wait_s is not None:
            parts.append(f"median wait {_minutes(self.median_wait_s)}")
        return f"{self.operator}: " + ", ".join(parts)


@dataclass(frozen=True)
class ShiftTally:
    since: float                         # the shift's start (the store's clock)
    hours: float
    reviewers: tuple[ReviewerTally, ...]     # most decisions first

    def text(self) -> str:
        if not self.reviewers:
            return f"Last {self.hours:g} h: no decisions yet"
        return f"Last {self.hours:g} h — " + " · ".join(r.text() for r in self.reviewers)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def shift_tally(store: "Store", hours: float, now: float) -> ShiftTally:
    """On the store's thread: every reviewer who decided, approved toward a quorum, or holds an item, since
    `hours` before `now`."""
    since = now - hours * 3600.0
    decided = store.query("SELECT decided_by, status, created_at, decided_at FROM approvals "
                          "WHERE status != 'pending' AND decided_at >= ?", [since])
    votes = store.query("SELECT v.operator, a.decided_by FROM review_votes v JOIN approvals a ON a.id = v.item_id "
                        "WHERE v.at >= ?", [since])
    holds = store.query("SELECT claimed_by, COUNT(*) AS n FROM approvals WHERE status = 'pending' "
                        "AND claimed_by IS NOT NULL AND claimed_until > ? GROUP BY claimed_by", [now])
    counts: dict[str, dict[str, int]] = {}
    waits: dict[str, list[float]] = {}

    def of(operator: str) -> dict[str, int]:
        return counts.setdefault(operator, {"approved": 0, "rejected": 0, "toward_quorum": 0, "holding": 0})
    for row in decided:
        of(row["decided_by"])[row["status"]] += 1
        waits.setdefault(row["decided_by"], []).append(row["decided_at"] - row["created_at"])
    for row in votes:
        if row["operator"] != row["decided_by"]:
            of(row["operator"])["toward_quorum"] += 1
    for row in holds:
        of(row["claimed_by"])["holding"] += int(row["n"])
    tallies = [ReviewerTally(operator, **n, median_wait_s=statistics.median(waits[operator]) if operator in waits
                             else None) for operator, n in counts.items()]
    tallies.sort(key=lambda t: (-t.decided, -t.toward_quorum, t.operator))
    return ShiftTally(since, hours, tuple(tallies))
