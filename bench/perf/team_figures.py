"""`bench team`'s figures, from the desks' JSON lines and what the store holds afterwards (no I/O here but
reading the lines' files).

Each desk (bench.perf.team_desk) writes one JSON line per thing it did or saw, {"kind", "desk", "at", ...}:
  ready     its engine started (operator: the name its scripted operator decides under)
  answered  a question came back answered, so its record is in the store (trace_id, tier, ms)
  failed    a question raised (error)
  decided   its operator's decision returned (item, approve, at: when it returned, decided_at: the store's stamp)
  refused   a claim or decision another desk got to first (item, step, why)
  seen      another desk's decision, read after a StoreChanged (item, decided_by, at, told_at)
  write     one write transaction of its store, BEGIN to COMMIT (what, ms)
  done      its run is over (asked, answered, failed, skipped, pending)
Every process runs on one machine, so their time.time() readings compare.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from engine.stats import quantile

TARGET_EVENTS_LOST = 0
TARGET_PROPAGATION_P99_S = 1.0


class RecordTail:
    """A desk's lines file read as it grows: each read returns the whole lines written since the last."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def read_new(self) -> list[dict]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        complete = chunk[:chunk.rfind(b"\n") + 1]     # a line still being written waits for the next read
        self._offset += len(complete)
        return [json.loads(line) for line in complete.splitlines() if line.strip()]


def read_records(paths: Iterable[Path]) -> list[dict]:
    return [record for path in paths for record in RecordTail(path).read_new()]


def of_kind(records: Iterable[Mapping], kind: str) -> list[Mapping]:
    return [r for r in records if r.get("kind") == kind]


def spread(values: Sequence[float], digits: int = 3) -> dict:
    """n, p50, p99 and max of some measurements (nearest rank, engine.stats.quantile)."""
    return {"n": len(values), "p50": round(quantile(values, 0.5), digits), "p99": round(quantile(values, 0.99), digits),
            "max": round(max(values), digits) if values else 0.0}


# --- a decision's way to the other desks ------------------------------------------------------------
@dataclass(frozen=True)
class Propagation:
    lags_s: tuple[float, ...]                 # seen at desk B - decided at desk A, for each decision and each B
    never_seen: tuple[tuple[int, int], ...]   # (item, desk) pairs: a desk that never read that decision

    def summary(self) -> dict:
        figures = spread(self.lags_s)
        return {**figures, "never_seen": len(self.never_seen), "never_seen_pairs": [list(p) for p in self.never_seen],
                "target_p99": TARGET_PROPAGATION_P99_S,
                "met": bool(self.lags_s) and not self.never_seen and figures["p99"] <= TARGET_PROPAGATION_P99_S}


def decision_moment(decided: Mapping) -> float:
    """When a decision was made: the store's stamp inside its transaction, or when the call returned if that is
    earlier (it is not, unless the clocks differ): the earlier of the two makes the lag no shorter than it was."""
    return min(float(decided["at"]), float(decided.get("decided_at") or decided["at"]))


def propagation(records: Sequence[Mapping]) -> Propagation:
    """For every decision and every other desk that ran: how long until that desk read it."""
    desks = sorted({int(r["desk"]) for r in of_kind(records, "ready")})
    seen = {(int(r["item"]), int(r["desk"])): float(r["at"]) for r in of_kind(records, "seen")}
    lags, missing = [], []
    for decided in of_kind(records, "decided"):
        item, made_at = int(decided["item"]), decision_moment(decided)
        for desk in desks:
            if desk == int(decided["desk"]):
                continue
            at = seen.get((item, desk))
            if at is None:
                missing.append((item, desk))
            else:
                lags.append(at - made_at)
    return Propagation(tuple(lags), tuple(sorted(missing)))


# --- what the store holds against what the desks were told was written ---------------------------------
@dataclass(frozen=True)
class StoredFacts:
    """What the store holds after a run, read by the parent once every desk has closed."""
    question_traces: frozenset[str]                       # rows of `questions`
    decided_traces: frozenset[str]                        # audit question.decided events
    decisions: Mapping[int, tuple[str, str]]              # item -> (status, decided_by), decided items only
    decision_events: frozenset[tuple[int, str, str]]      # audit review.approved/rejected: (item, actor, status)
    pending: int
    audit_events: int
    chain_intact: bool
    chain_message: str
    anchors: str = ""
    extra: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LostWrites:
    questions: tuple[str, ...]    # answered at a desk, not in the store (row or audit event missing)
    decisions: tuple[int, ...]    # decided at a desk, not in the store as decided (row or audit event missing)

    @property
    def count(self) -> int:
        return len(self.questions) + len(self.decisions)


def lost_writes(records: Sequence[Mapping], facts: StoredFacts) -> LostWrites:
    """Every write a desk was told had succeeded, looked for in the store: the row and its audit event."""
    questions = tuple(r["trace_id"] for r in of_kind(records, "answered")
                      if r["trace_id"] not in facts.question_traces or r["trace_id"] not in facts.decided_traces)
    decisions = []
    for r in of_kind(records, "decided"):
        status = "approved" if r["approve"] else "rejected"
        row = facts.decisions.get(int(r["item"]))
        if row != (status, r["operator"]) or (int(r["item"]), r["operator"], status) not in facts.decision_events:
            decisions.append(int(r["item"]))
    return LostWrites(questions, tuple(decisions))


# --- write transactions ---------------------------------------------------------------------------
def write_latency(records: Sequence[Mapping], desk: int | None = None) -> dict:
    """p50/p99/max ms of the store's write transactions (one desk's, or every desk's), and per kind of write."""
    writes = [r for r in of_kind(records, "write") if desk is None or int(r["desk"]) == desk]
    by_kind: dict[str, list[float]] = {}
    for r in writes:
        by_kind.setdefault(str(r["what"]), []).append(float(r["ms"]))
    return {**spread([float(r["ms"]) for r in writes], 1),
            "by_kind": {k: spread(v, 1) for k, v in sorted(by_kind.items(), key=lambda kv: -len(kv[1]))}}


# --- the run as a whole -------------------------------------------------------------------------------
def counts(records: Sequence[Mapping]) -> dict:
    decided = of_kind(records, "decided")
    refused = of_kind(records, "refused")
    done = of_kind(records, "done")
    return {
        "desks": len(of_kind(records, "ready")),
        "asked": sum(int(r.get("asked", 0)) for r in done),
        "answered": len(of_kind(records, "answered")),
        "failed": len(of_kind(records, "failed")),
        "skipped": sum(int(r.get("skipped", 0)) for r in done),
        "high_tier_answered": sum(1 for r in of_kind(records, "answered") if r.get("tier") == "high"),
        "decisions": len(decided),
        "approved": sum(1 for r in decided if r["approve"]),
        "rejected": sum(1 for r in decided if not r["approve"]),
        "refused_claims": sum(1 for r in refused if r.get("step") == "claim"),
        "refused_decisions": sum(1 for r in refused if r.get("step") == "decide"),
        "answer_ms": spread([float(r["ms"]) for r in of_kind(records, "answered")], 1),
    }


def progress_line(records: Sequence[Mapping], elapsed_s: float) -> str:
    """One line every few seconds while a phase runs: what the desks have done so far."""
    c = counts(records)
    lag = propagation(records)
    lags = f"lag p50 {quantile(lag.lags_s, 0.5):.2f} p99 {quantile(lag.lags_s, 0.99):.2f} s" if lag.lags_s else "lag -"
    writes = [float(r["ms"]) for r in of_kind(records, "write")]
    return (f"[{elapsed_s:6.0f} s] questions {c['answered']} (failed {c['failed']}) · decisions {c['decisions']} "
            f"(refused {c['refused_claims'] + c['refused_decisions']}) · seen {len(of_kind(records, 'seen'))} · "
            f"{lags} · writes p99 {quantile(writes, 0.99):.0f} ms")
