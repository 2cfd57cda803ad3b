"""The approval queue as Qt models: every loaded review item (ReviewModel) and the operator's view of it
(ReviewFilterProxy: status, risk tier, age and a text filter).

The source model keeps the queue order (pending first, oldest first; then decisions, newest first) and
replaces a decided item's row in place; the proxy only hides rows, so the order the operator works in
never jumps. Times come from an injected clock, so the age filter is testable.
"""
from __future__ import annotations

import datetime
import enum
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSortFilterProxyModel

from engine import ReviewItem, ReviewStatus, RiskTier

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel

Clock = Callable[[], float]
RECENT_DECISIONS = 100      # decisions shown beside the pending items by default (the latest ones)

STATUS_TONES = {ReviewStatus.PENDING: "warn", ReviewStatus.APPROVED: "good", ReviewStatus.REJECTED: "bad"}


def when_text(at: float | None, today: datetime.date | None = None) -> str:
    """'14:03:07' today, '2025-03-02 14:03' otherwise; '—' when unknown."""
    if at is None:
        return "—"
    moment = datetime.datetime.fromtimestamp(at)
    if moment.date() == (today or datetime.date.today()):
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M")


def age_text(seconds: float) -> str:
    """'just now', '12 min', '3 h 05 min', '2 d 4 h': how long an item has waited."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return "just now"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def answer_cell(item: ReviewItem) -> str:
    """The answer the fleet gave, or its verdict in brackets when it gave none."""
    return item.answer_text or f"({style.VERDICT_LABELS[item.verdict].lower()})"


def claim_text(item: ReviewItem, now: float) -> str:
    """Who holds a pending item, and until when ("" when nobody does)."""
    holder = item.holder(now)
    if not holder or item.claimed_until is None:
        return ""
    return f"claimed by {holder} until {datetime.datetime.fromtimestamp(item.claimed_until).strftime('%H:%M')}"


def progress_text(item: ReviewItem) -> str:
    """A pending item's approvals toward its quorum ("" when it needs one and has none)."""
    if not item.pending or item.quorum < 2:
        return ""
    who = f" ({', '.join(item.approvals)})" if item.approvals else ""
    return f"{len(item.approvals)} of {item.quorum} approvals{who}"


def asked_again_text(item: ReviewItem) -> str:
    """"asked 3 times while it waited: one decision for all" ("" for a question asked once)."""
    return f"asked {item.asked_times} times while it waited: one decision for all" if item.asked_times > 1 else ""


def decision_text(item: ReviewItem, now: float | None = None) -> str:
    if item.pending:
        parts = ["waiting for an operator", progress_text(item),
                 claim_text(item, time.time() if now is None else now)]
        return "; ".join(p for p in parts if p)
    note = f" — {item.note}" if item.note else ""
    return f"{item.status.value} by {item.decided_by}: {item.reason}{note}"


def status_cell(item: ReviewItem, now: float) -> str:
    """"pending", "pending · 1/2" (approvals toward its quorum), "pending · alice" (who holds it), or a decision."""
    parts = [item.status.value]
    if item.pending and item.quorum > 1:
        parts.append(f"{len(item.approvals)}/{item.quorum}")
    parts.append(item.holder(now))
    return " · ".join(p for p in parts if p)


def review_columns(clock: Clock) -> tuple[Column[ReviewItem], ...]:
    def queued_tooltip(item: ReviewItem) -> str:
        moment = datetime.datetime.fromtimestamp(item.created_at).isoformat(sep=" ", timespec="seconds")
        due = ""
        if item.pending and item.due_at is not None:
            late = clock() - item.due_at
            due = (f"; overdue by {age_text(late)}" if late > 0 else f"; due in {age_text(-late)}")
        return f"queued {moment} ({age_text(clock() - item.created_at)} ago){due}"

    return (
        Column("#", lambda i: str(i.id), align=RIGHT, bold=lambda i: i.pending),
        Column("Status", lambda i: status_cell(i, clock()),
               foreground=lambda i: style.tone(STATUS_TONES[i.status]), bold=lambda i: True,
               tooltip=lambda i: decision_text(i, clock())),
        Column("Tier", lambda i: i.tier.value,
               foreground=lambda i: style.tones().bad if i.tier is RiskTier.HIGH else None),
        Column("Question", lambda i: i.question if i.asked_times < 2 else f"{i.question} (×{i.asked_times})",
               tooltip=lambda i: "\n".join(t for t in (i.question, asked_again_text(i)) if t)),
        Column("Answer / verdict", answer_cell,
               tooltip=lambda i: f"{answer_cell(i)}\n{style.VERDICT_LABELS[i.verdict]}: {i.answer_reason}".strip()),
        Column("Why", lambda i: i.why, tooltip=lambda i: i.why),
        Column("Age", lambda i: age_text(clock() - i.created_at), align=RIGHT, tooltip=queued_tooltip,
               foreground=lambda i: style.tones().bad if i.overdue(clock()) else None,
               bold=lambda i: i.overdue(clock()),
               header_tooltip="Time since the item was queued (red: past its tier's service-level time)"),
    )


REVIEW_COLUMNS = review_columns(time.time)     # the titles and their order (a model builds its own, on its clock)
QUESTION_COLUMN, ANSWER_COLUMN, WHY_COLUMN, AGE_COLUMN = 3, 4, 5, 6
# Widest a fitted column may start (pixels); the question takes the rest, and every cell is whole in its tooltip.
MAX_COLUMN_WIDTH = {ANSWER_COLUMN: 140, WHY_COLUMN: 130}


def queue_order(item: ReviewItem) -> tuple:
    """Pending first, the soonest due first: an overdue item (past its tier's service-level time) before all that
    are not, then by how soon each falls due (an item older than due times, by when it was queued); then
    decisions, newest first (as the engine orders them)."""
    if item.pending:
        return (0, item.due_at if item.due_at is not None else item.created_at, item.id)
    return (1, -(item.decided_at or 0.0), -item.id)


class ReviewModel(RecordTableModel[ReviewItem]):
    """Review items keyed by id: an update replaces its row in place, a new item goes to the end of the
    pending ones."""

    def __init__(self, parent=None, clock: Clock = time.time) -> None:
        super().__init__(review_columns(clock), parent,
                         row_background=lambda i: style.tones().warn_tint if i.pending else None)
        self._recent: frozenset[int] | None = None

    def set_items(self, items: Iterable[ReviewItem]) -> None:
        """The queue as the store has it; an item this model already knows in a later state (a decision
        that arrived while the queue was read) keeps that state."""
        merged = {item.id: item for item in self.records()}
        for item in items:
            known = merged.get(item.id)
            if known is None or known.pending or not item.pending:
                merged[item.id] = item
        self.set_records(sorted(merged.values(), key=queue_order))

    def upsert(self, item: ReviewItem) -> int:
        """Replaces the item's row in place (a decided item is never made pending again), or inserts a new
        item after the last pending one; returns its row."""
        row = self.row_of(item.id)
        if row >= 0:
            if item.pending and not self.record(row).pending:
                return row
            self.replace_record(row, item)
            return row
        row = next((r for r, known in enumerate(self.records()) if queue_order(item) < queue_order(known)),
                   self.rowCount())
        self.insert_record(row, item)
        return row

    def row_of(self, item_id: int) -> int:
        return next((row for row, item in enumerate(self.records()) if item.id == item_id), -1)

    def count(self, status: ReviewStatus) -> int:
        return sum(item.status is status for item in self.records())

    def refresh_ages(self) -> None:
        """The clock moved on: views redraw the Age column."""
        if self.rowCount():
            self.dataChanged.emit(self.index(0, AGE_COLUMN), self.index(self.rowCount() - 1, AGE_COLUMN))

    def recent_decision_ids(self) -> frozenset[int]:
        """The latest RECENT_DECISIONS decisions; worked out again only after a change, which clears it
        before views hear of the change (so a filter reading it during their update sees the new state)."""
        if self._recent is None:
            decided = sorted((i for i in self.records() if not i.pending), key=queue_order)
            self._recent = frozenset(i.id for i in decided[:RECENT_DECISIONS])
        return self._recent

    # Every change of the records goes through these: each clears the cache first.
    def set_records(self, records) -> None:
        self._recent = None
        super().set_records(records)

    def insert_record(self, row: int, record: ReviewItem) -> None:
        self._recent = None
        super().insert_record(row, record)

    def append_record(self, record: ReviewItem) -> int:
        self._recent = None
        return super().append_record(record)

    def replace_record(self, row: int, record: ReviewItem) -> None:
        self._recent = None
        super().replace_record(row, record)

    def remove_record(self, row: int) -> ReviewItem:
        self._recent = None
        return super().remove_record(row)


# --- filters ---------------------------------------------------------------------------------------
class StatusFilter(enum.Enum):
    PENDING_AND_RECENT = "pending + recent decisions"
    PENDING = "pending"
    DECIDED = "decided"
    ALL = "all"

    @property
    def reads_every_decision(self) -> bool:
        """Shows older decisions than the queue's first read brings (the panel reads them all once)."""
        return self in (StatusFilter.DECIDED, StatusFilter.ALL)


class AgeFilter(enum.Enum):
    ANY = "any age"
    UNDER_HOUR = "< 1 h"
    UNDER_DAY = "< 24 h"
    OVER_DAY = "older than 24 h"

    def accepts(self, age_s: float) -> bool:
        if self is AgeFilter.UNDER_HOUR:
            return age_s < 3600
        if self is AgeFilter.UNDER_DAY:
            return age_s < 86_400
        if self is AgeFilter.OVER_DAY:
            return age_s >= 86_400
        return True


def item_text(item: ReviewItem) -> str:
    """What the text filter searches: id, question, answer, why, the operator's decision, agents, trace id."""
    agents = " ".join(c.agent_id for c in item.candidates_summary)
    return " ".join((f"#{item.id}", item.question, item.answer_text, item.why, item.decided_by, item.reason,
                     item.note, agents, item.trace_id)).casefold()


@dataclass(frozen=True)
class ReviewFilter:
    status: StatusFilter = StatusFilter.PENDING_AND_RECENT
    tier: RiskTier | None = None           # None: any tier
    age: AgeFilter = AgeFilter.ANY          # since the item was queued
    text: str = ""

    def accepts(self, item: ReviewItem, now: float, recent: frozenset[int] = frozenset()) -> bool:
        status = self.status
        if status is StatusFilter.PENDING and not item.pending:
            return False
        if status is StatusFilter.DECIDED and item.pending:
            return False
        if status is StatusFilter.PENDING_AND_RECENT and not item.pending and item.id not in recent:
            return False
        if self.tier is not None and item.tier is not self.tier:
            return False
        if not self.age.accepts(now - item.created_at):
            return False
        words = self.text.casefold().split()
        return not words or all(word in item_text(item) for word in words)


class ReviewFilterProxy(QSortFilterProxyModel):
    """The rows of a ReviewModel that pass a ReviewFilter, in the source's order."""

    def __init__(self, source: ReviewModel, clock: Clock = time.time, parent=None) -> None:
        super().__init__(parent)
        self._filter = ReviewFilter()
        self._clock = clock
        self._now = clock()
        self._source = source
        self._recent_seen = source.recent_decision_ids()
        self.setDynamicSortFilter(True)
        self.setSourceModel(source)
        for signal in (source.rowsInserted, source.dataChanged):
            signal.connect(self._on_source_changed)

    @property
    def filter(self) -> ReviewFilter:
        return self._filter

    def set_filter(self, review_filter: ReviewFilter) -> None:
        if review_filter != self._filter:
            self.beginFilterChange()
            self._filter = review_filter
            self._now = self._clock()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def refresh_ages(self) -> None:
        """Reads the clock again: items that aged out of (or into) the age filter move."""
        if self._filter.age is not AgeFilter.ANY:
            self.beginFilterChange()
            self._now = self._clock()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        if source_parent.isValid() or source_row >= self._source.rowCount():
            return False
        return self._filter.accepts(self._source.record(source_row), self._now, self._source.recent_decision_ids())

    def _on_source_changed(self, *_args) -> None:
        """The proxy re-filters the changed rows itself; a new decision may also push the oldest recent
        one, in another row, out of the default view."""
        recent = self._source.recent_decision_ids()
        if recent != self._recent_seen:
            self._recent_seen = recent
            if self._filter.status is StatusFilter.PENDING_AND_RECENT and len(recent) >= RECENT_DECISIONS:
                self.beginFilterChange()
                self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    # --- records ---------------------------------------------------------------------------
    def record(self, row: int) -> ReviewItem:
        return self._source.record(self.mapToSource(self.index(row, 0)).row())

    def records(self) -> tuple[ReviewItem, ...]:
        return tuple(self.record(row) for row in range(self.rowCount()))

    def row_of(self, item_id: int) -> int:
        source_row = self._source.row_of(item_id)
        if source_row < 0:
            return -1
        return self.mapFromSource(self._source.index(source_row, 0)).row()

    def count(self, status: ReviewStatus) -> int:
        return sum(item.status is status for item in self.records())
