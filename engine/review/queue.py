"""The approval queue: answers that wait for an operator, kept as rows of the store's `approvals` table.

Every change is one transaction on the store's thread together with its audit event (`review.enqueued`
by the engine, `review.claimed` / `review.unclaimed` / `review.approved` / `review.rejected` by the operator),
so the queue and the audit chain never disagree. On a team store several desks decide on one queue: an
operator claims an item for a lease (CLAIM_LEASE_S, on the store's clock, which is the server's), nobody else
decides it meanwhile, and a claim whose lease ran out is anyone's to take. Two desks deciding one item at
once: the second finds it decided and is refused. The row keeps the whole Answer as JSON, so a decision can be made, and later
checked, on exactly what the fleet said, after any number of restarts.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import getpass
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..alerts.book import AlertBook
from ..alerts.kinds import AlertKind
from ..alerts.row import AlertRow, NewAlert
from ..errors import InputError
from ..settings.review import LONGEST_SHIFT_H, ReviewSettings
from ..store.db import NO_LIMIT, Store
from ..types import RiskTier, Verdict, to_jsonable
from ..answer import Answer
from .payload import (AgentSummary, CandidateSummary, CascadeSummary, ClaimSummary, Position, agents_from_payload,
                      candidates_from_payload, cascade_from_payload, decided_agents, positions_of)
from .policy import check_decision, check_operator
from .shift import ShiftTally, shift_tally

__all__ = ["ReviewStatus", "ReviewItem", "DecisionOutcome", "ReviewQueue", "STATUS_FILTERS", "CandidateSummary",
           "ClaimSummary"]


class ReviewStatus(str, enum.Enum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True)
class ReviewItem:
    id: int
    trace_id: str
    question: str
    tier: RiskTier
    verdict: Verdict
    status: ReviewStatus
    why: str                                   # why it waits for an operator (needs_review)
    created_at: float
    answer_text: str                           # the answer the fleet gave ("" if it abstained or found nothing)
    candidates_summary: tuple[CandidateSummary, ...]
    decided_by: str = ""
    reason: str = ""                           # the operator's reason (one of APPROVE_REASONS / REJECT_REASONS)
    note: str = ""
    decided_at: float | None = None
    payload: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)   # the whole Answer as JSON
    claimed_by: str = ""                       # who holds the item (a pending one), until claimed_until
    claimed_until: float | None = None
    due_at: float | None = None                # overdue after this, by its tier's service-level time ([review])
    asked_times: int = 1                       # the same question asked again while this waited joined it
    asked_by: str = ""                         # who asked (the desk's signed-in role, or its user)
    approvals: tuple[str, ...] = ()            # operators who approved a pending item so far (toward its quorum)
    quorum: int = 1                            # approvals by different operators it needs ([review] quorum_high)

    def overdue(self, now: float) -> bool:
        return self.pending and self.due_at is not None and now > self.due_at

    @property
    def pending(self) -> bool:
        return self.status is ReviewStatus.PENDING

    def holder(self, now: float) -> str:
        """Who holds this pending item at `now` ("" when nobody does, or the lease ran out)."""
        if not self.pending or not self.claimed_by or self.claimed_until is None or self.claimed_until <= now:
            return ""
        return self.claimed_by

    @property
    def answer_reason(self) -> str:
        """Why the fleet reached its verdict (the Answer's own reason)."""
        return str(self.payload.get("reason", ""))

    @property
    def citations(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(c for c in self.payload.get("citations", ()) or () if isinstance(c, Mapping))

    @property
    def positions(self) -> tuple[Position, ...]:
        """The competing positions: candidates grouped by agreement, most credible first."""
        return positions_of(self.candidates_summary)

    @property
    def cascade_summary(self) -> CascadeSummary | None:
        return cascade_from_payload(self.payload)

    @property
    def agents_summary(self) -> tuple[AgentSummary, ...]:
        return agents_from_payload(self.payload)

    @property
    def decision_counts_for(self) -> tuple[str, ...]:
        """The agents a decision credits (approve) or debits (reject)."""
        return decided_agents(self.payload)


@dataclass(frozen=True)
class DecisionOutcome:
    """One item of a bulk decision: decided, or refused (and why), with the item as the store now has it
    (None when no such item exists)."""
    item_id: int | str
    item: ReviewItem | None
    refusal: str = ""

    @property
    def decided(self) -> bool:
        return not self.refusal


_COLUMNS = ("id", "trace_id", "question", "tier", "verdict", "status", "why", "created_at", "payload",
            "decided_by", "reason", "note", "decided_at", "claimed_by", "claimed_until", "due_at", "asked_times",
            "asked_by")
CLAIM_LEASE_S = 900.0       # how long a claim holds an item unless its operator decides, lets go or claims again
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM approvals"
# Pending first, oldest first (a queue); then decisions, newest first.
_ORDER = ("ORDER BY status != 'pending', CASE WHEN status = 'pending' THEN created_at END, "
          "decided_at DESC, id DESC")
STATUS_FILTERS = ("pending", "approved", "rejected", "all")


def _item(row: Sequence[Any]) -> ReviewItem:
    values = dict(zip(_COLUMNS, row))
    payload = json.loads(values["payload"])
    return ReviewItem(id=values["id"], trace_id=values["trace_id"], question=values["question"],
                      tier=RiskTier(values["tier"]), verdict=Verdict(values["verdict"]),
                      status=ReviewStatus(values["status"]), why=values["why"], created_at=values["created_at"],
                      answer_text=str(payload.get("answer", "")), candidates_summary=candidates_from_payload(payload),
                      decided_by=values["decided_by"] or "", reason=values["reason"] or "", note=values["note"] or "",
                      decided_at=values["decided_at"], payload=payload, claimed_by=values["claimed_by"] or "",
                      claimed_until=values["claimed_until"], due_at=values["due_at"],
                      asked_times=values["asked_times"], asked_by=values["asked_by"] or "")


def _decided(item: ReviewItem) -> InputError:
    return InputError(f"review item #{item.id} was already {item.status.value} by {item.decided_by} "
                      f"({item.reason}); a decision is final")


def question_key(question: str, tier: RiskTier) -> str:
    """The same question on the same tier, however it was cased and spaced ("What are the moons of Mars?" and
    "what are the moons of  mars")."""
    words = " ".join(question.casefold().split()).rstrip(" ?!.")
    return f"{tier.value}:{words}"


def _duration(seconds: float) -> str:
    minutes = int(max(0.0, seconds) // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60:02d} min"


def clock_time(at: float | None) -> str:
    """HH:MM:SS of an epoch time, local (a claim's end, a due time); "?" for none."""
    return "?" if at is None else datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S")


def _item_id(item_id: Any) -> int:
    if isinstance(item_id, bool):
        raise InputError(f"review item id {item_id!r} is not a number")
    try:
        return int(str(item_id).strip().lstrip("#"))
    except ValueError:
        raise InputError(f"review item id {item_id!r} is not a number") from None


class ReviewQueue:
    """The queue on an open Store; every method runs on the store's thread."""

    def __init__(self, store: Store, settings: ReviewSettings = ReviewSettings()) -> None:
        self._store = store
        self.settings = settings

    # --- writes ----------------------------------------------------------------------------
    async def enqueue(self, answer: Answer, why: str) -> int:
        """Puts `answer` in front of an operator; returns the item's id. Idempotent per trace_id: asking
        again for the same answer returns the existing id and writes nothing."""
        return await self._store.call(self._store.transaction, self.insert_in_transaction(answer, why))

    def insert_in_transaction(self, answer: Answer, why: str) -> Callable[[], int]:
        """The enqueue write, to run inside a transaction the caller already holds (see
        engine.record.record_answer): the answer and its queue item commit together."""
        if not why.strip():
            raise InputError(f"answer {answer.trace_id} cannot be queued without saying why it needs review")
        payload = json.dumps(to_jsonable(answer), ensure_ascii=False)
        return lambda: self._insert(answer, why.strip(), payload)

    def _insert(self, answer: Answer, why: str, payload: str) -> int:
        store = self._store
        existing = store.execute("SELECT id FROM approvals WHERE trace_id = ? UNION "
                                 "SELECT item_id FROM review_joins WHERE trace_id = ?",
                                 (answer.trace_id, answer.trace_id)).fetchone()
        if existing:
            return existing[0]
        now = store.clock()
        key = question_key(answer.question, answer.tier)
        waiting = store.execute("SELECT id FROM approvals WHERE question_key = ? AND status = 'pending' "
                                "ORDER BY id LIMIT 1", (key,)).fetchone()
        asker = store.signed_in or getpass.getuser()
        if waiting:                 # asked again while its item waits: one item, one decision, for both answers
            store.execute("UPDATE approvals SET asked_times = asked_times + 1 WHERE id = ?", (waiting[0],))
            store.execute("INSERT INTO review_joins (trace_id, item_id, at, asked_by) VALUES (?, ?, ?, ?)",
                          (answer.trace_id, waiting[0], now, asker))
            store.append_audit(answer.trace_id, "engine", "review.joined",
                               {"id": waiting[0], "why": why, "verdict": answer.verdict.value})
            return int(waiting[0])
        item_id = store.insert(
            "INSERT INTO approvals (trace_id, question, tier, verdict, status, why, created_at, payload, due_at, "
            "question_key, asked_by) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
            (answer.trace_id, answer.question, answer.tier.value, answer.verdict.value, why, now, payload,
             now + self.settings.sla_s(answer.tier), key, asker))
        store.append_audit(answer.trace_id, "engine", "review.enqueued",
                           {"id": item_id, "why": why, "tier": answer.tier.value, "verdict": answer.verdict.value})
        return item_id

    async def decide(self, item_id: int, approve: bool, operator: str, reason: str, note: str = "") -> ReviewItem:
        """Approves or rejects a pending item; returns it as it now is. A decision is final.

        Raises InputError for a reason not in APPROVE_REASONS / REJECT_REASONS, "other" without a note,
        an empty operator name, an unknown id or an item that was already decided."""
        reason, note = check_decision(approve, reason, note)
        operator = check_operator(operator)
        return await self._store.call(self._decide_sync, _item_id(item_id), bool(approve), operator, reason, note)

    def _decide_sync(self, item_id: int, approve: bool, operator: str, reason: str, note: str) -> ReviewItem:
        store = self._store
        status = ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED

        def write() -> ReviewItem:
            # The item's row is this transaction's before its votes are read: two operators approving at once
            # count one after the other (PostgreSQL holds the row; SQLite's BEGIN IMMEDIATE holds the file).
            store.execute("UPDATE approvals SET status = status WHERE id = ?", (item_id,))
            item = self._pending_sync(item_id)
            now = store.clock()
            holder = item.holder(now)
            if holder and holder != operator:
                raise InputError(f"review item #{item_id} is claimed by {holder} until {clock_time(item.claimed_until)}; "
                                 "it is theirs to decide until then")
            if approve and store.target.shared and operator in self._askers(item):
                raise InputError(f"review item #{item_id} answers a question {operator} asked; another operator "
                                 "approves it")
            if approve and item.quorum > 1:
                if operator in item.approvals:
                    raise InputError(f"{operator} already approved review item #{item_id}; it needs "
                                     f"{item.quorum - len(item.approvals)} more approval(s) by other operators")
                store.execute("INSERT INTO review_votes (item_id, operator, reason, note, at) VALUES (?, ?, ?, ?, ?)",
                              (item_id, operator, reason, note, now))
                approvers = (*item.approvals, operator)
                if len(approvers) < item.quorum:        # one more step toward the quorum; the item still waits
                    store.append_audit(item.trace_id, operator, "review.approval_counted",
                                       {"id": item_id, "reason": reason, "note": note, "approvals": list(approvers),
                                        "quorum": item.quorum})
                    return self._counted(_item(store.execute(f"{_SELECT} WHERE id = ?", (item_id,)).fetchone()))
                final_note = (f"{note} — " if note else "") + f"approved by {', '.join(approvers)}"
            else:
                final_note = note
            changed = store.execute("UPDATE approvals SET status = ?, decided_by = ?, reason = ?, note = ?, "
                                    "decided_at = ?, claimed_by = NULL, claimed_until = NULL "
                                    "WHERE id = ? AND status = 'pending'",
                                    (status.value, operator, reason, final_note, now, item_id)).rowcount
            if changed != 1:        # another desk decided it between our read and our write
                raise _decided(_item(store.execute(f"{_SELECT} WHERE id = ?", (item_id,)).fetchone()))
            store.append_audit(item.trace_id, operator, f"review.{status.value}",
                               {"id": item_id, "reason": reason, "note": final_note})
            return self._counted(_item(store.execute(f"{_SELECT} WHERE id = ?", (item_id,)).fetchone()))
        return store.transaction(write)

    async def claim(self, item_id: int, operator: str, lease_s: float = CLAIM_LEASE_S) -> ReviewItem:
        """Holds a pending item for `operator` for lease_s (claiming one's own claim again renews it). Refused
        while another operator's lease runs; a lapsed claim is taken over, and the audit says from whom."""
        operator = check_operator(operator)
        if not lease_s > 0:
            raise InputError(f"a claim's lease must be positive, got {lease_s!r}")
        return await self._store.call(self._claim_sync, _item_id(item_id), operator, float(lease_s))

    def _claim_sync(self, item_id: int, operator: str, lease_s: float) -> ReviewItem:
        store = self._store

        def write() -> ReviewItem:
            item = self._pending_sync(item_id)
            now = store.clock()
            holder = item.holder(now)
            if holder and holder != operator:
                raise InputError(f"review item #{item_id} is claimed by {holder} until {clock_time(item.claimed_until)}")
            until = now + lease_s
            changed = store.execute("UPDATE approvals SET claimed_by = ?, claimed_until = ? WHERE id = ? "
                                    "AND status = 'pending' AND (claimed_by IS NULL OR claimed_by = ? "
                                    "OR claimed_until <= ?)", (operator, until, item_id, operator, now)).rowcount
            if changed != 1:        # another desk claimed or decided it between our read and our write
                raise InputError(f"review item #{item_id} was just claimed or decided at another desk; read the "
                                 "queue again")
            payload: dict[str, Any] = {"id": item_id, "until": until}
            if item.claimed_by and item.claimed_by != operator:
                payload["lapsed_claim_of"] = item.claimed_by
            store.append_audit(item.trace_id, operator, "review.claimed", payload)
            return self._pending_sync(item_id)
        return store.transaction(write)

    async def unclaim(self, item_id: int, operator: str) -> ReviewItem:
        """Lets go of one's own claim on a pending item."""
        operator = check_operator(operator)
        return await self._store.call(self._unclaim_sync, _item_id(item_id), operator)

    def _unclaim_sync(self, item_id: int, operator: str) -> ReviewItem:
        store = self._store

        def write() -> ReviewItem:
            item = self._pending_sync(item_id)
            if item.holder(store.clock()) != operator:
                raise InputError(f"review item #{item_id} is not claimed by {operator}")
            store.execute("UPDATE approvals SET claimed_by = NULL, claimed_until = NULL WHERE id = ?", (item_id,))
            store.append_audit(item.trace_id, operator, "review.unclaimed", {"id": item_id})
            return self._pending_sync(item_id)
        return store.transaction(write)

    def _askers(self, item: ReviewItem) -> set[str]:
        """Who asked the question of this item: its first asker and everyone whose asking joined it."""
        joined = {r[0] for r in self._store.execute("SELECT asked_by FROM review_joins WHERE item_id = ?", (item.id,))}
        return {a for a in (item.asked_by, *joined) if a}

    def _counted(self, item: ReviewItem) -> ReviewItem:
        """The item with its quorum and, while it waits, the approvals counted toward it."""
        return self._counted_all([item])[0]

    def _counted_all(self, items: list[ReviewItem]) -> list[ReviewItem]:
        team = self._store.target.shared
        waiting = [i.id for i in items if i.pending]
        votes: dict[int, list[str]] = {}
        if waiting:
            marks = ", ".join("?" for _ in waiting)
            for item_id, operator in self._store.execute(
                    f"SELECT item_id, operator FROM review_votes WHERE item_id IN ({marks}) ORDER BY at", waiting):
                votes.setdefault(item_id, []).append(operator)
        return [dataclasses.replace(i, quorum=self.settings.quorum(i.tier, team),
                                    approvals=tuple(votes.get(i.id, ()))) for i in items]

    def _pending_sync(self, item_id: int) -> ReviewItem:
        row = self._store.execute(f"{_SELECT} WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            raise InputError(f"review item #{item_id} does not exist")
        item = self._counted(_item(row))
        if not item.pending:
            raise _decided(item)
        return item

    def raise_overdue_sync(self, book: AlertBook) -> list[AlertRow]:
        """On the store's thread: one `review_overdue` alert for each pending item that waited past its tier's
        service-level time and has none yet. The item is marked in the alert's own transaction, so of many
        desks looking at once only one raises it."""
        store = self._store
        now = store.clock()
        found = [_item(r) for r in store.execute(
            f"{_SELECT} WHERE status = 'pending' AND due_at < ? AND overdue_at IS NULL ORDER BY due_at", [now])]
        raised: list[AlertRow] = []
        for item in found:
            def mark(item: ReviewItem = item) -> list[AlertRow]:
                taken = store.execute("UPDATE approvals SET overdue_at = ? WHERE id = ? AND overdue_at IS NULL "
                                      "AND status = 'pending'", (now, item.id)).rowcount
                if taken != 1:          # decided, or another desk said it first
                    return []
                late = _duration(now - (item.due_at or now) + self.settings.sla_s(item.tier))
                return book.insert_sync([NewAlert(
                    AlertKind.REVIEW_OVERDUE.value, "", f"review item #{item.id} ({item.tier.value} risk) has "
                    f"waited {late} for an operator, past its tier's {_duration(self.settings.sla_s(item.tier))}",
                    item.trace_id, now)])
            raised += store.transaction(mark)
        return raised

    # --- reads -----------------------------------------------------------------------------
    async def get(self, item_id: int) -> ReviewItem | None:
        return await self._store.call(self._one_sync, "id", _item_id(item_id))

    async def item_for(self, trace_id: str) -> ReviewItem | None:
        """The item of the answer with this trace id, or None if that answer did not need review."""
        return await self._store.call(self._one_sync, "trace_id", trace_id)

    def _one_sync(self, column: str, value: Any) -> ReviewItem | None:
        row = self._store.execute(f"{_SELECT} WHERE {column} = ?", (value,)).fetchone()
        if row is None and column == "trace_id":     # an answer that joined the item of the same question
            row = self._store.execute(f"{_SELECT} WHERE id = (SELECT item_id FROM review_joins WHERE trace_id = ?)",
                                      (value,)).fetchone()
        return self._counted(_item(row)) if row else None

    async def pending(self) -> list[ReviewItem]:
        """Every pending item, oldest first."""
        return await self._store.call(self._items_sync, ReviewStatus.PENDING.value, None)

    async def items(self, status: str | None = None, limit: int | None = 100) -> list[ReviewItem]:
        """Items with `status` (None or "all": every status), pending first (oldest first), then decisions
        (newest first); at most `limit` (None: no limit)."""
        status = None if status in (None, "all") else str(getattr(status, "value", status))
        if status is not None and status not in STATUS_FILTERS:
            raise InputError(f"unknown review status {status!r}; expected one of {', '.join(STATUS_FILTERS)}")
        return await self._store.call(self._items_sync, status, limit)

    def _items_sync(self, status: str | None, limit: int | None) -> list[ReviewItem]:
        where, args = ("WHERE status = ?", [status]) if status else ("", [])
        sql = f"{_SELECT} {where} {_ORDER} LIMIT ?"
        rows = self._store.execute(sql, [*args, NO_LIMIT if limit is None else int(limit)]).fetchall()
        return self._counted_all([_item(row) for row in rows])

    async def shift(self, hours: float | None = None) -> ShiftTally:
        """Each reviewer's decisions, approvals toward a quorum and holds over the last `hours` (default [review]
        shift_h; engine.review.shift)."""
        hours = self.settings.shift_h if hours is None else float(hours)
        if not 0 < hours <= LONGEST_SHIFT_H:
            raise InputError(f"a shift of {hours:g} hours: give between a minute and a month")
        return await self._store.call(lambda: shift_tally(self._store, hours, self._store.clock()))

    async def counts(self) -> dict[str, int]:
        """{"pending": n, "approved": n, "rejected": n}."""
        return await self._store.call(self._counts_sync)

    def _counts_sync(self) -> dict[str, int]:
        rows = self._store.execute("SELECT status, COUNT(*) FROM approvals GROUP BY status").fetchall()
        return {s.value: 0 for s in ReviewStatus} | dict(rows)
