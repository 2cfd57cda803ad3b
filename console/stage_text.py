"""How stages and the cascade monitor's outcome read as text, the same in the Cascade panel and the answer view.

Everything here is plain text: reasons and inputs come from agents and documents and are shown
literally, never as rich text.
"""
from __future__ import annotations

from typing import Iterable

from engine import CascadeOutcome, CascadeType, StageKind, StageResult

RERUN_MARK = "↻"       # a stage run again after a mitigation (attempt > 0)


def stage_name(kind: StageKind, hop: int) -> str:
    """'retrieve', or 'retrieve·h2' for the second hop (hops are 0-based, people count from 1)."""
    return f"{kind.value}·h{hop + 1}" if hop > 0 else kind.value


def rerun_mark(attempt: int) -> str:
    """'' for a first run, '↻' for the first re-run, '↻2' for the second, ..."""
    return "" if attempt <= 0 else RERUN_MARK if attempt == 1 else f"{RERUN_MARK}{attempt}"


def stage_label(index: int, kind: StageKind, hop: int, attempt: int = 0) -> str:
    """'4 retrieve·h2', with ' ↻' when the stage is a re-run ('↻2' for a second one)."""
    rerun = f" {rerun_mark(attempt)}" if attempt > 0 else ""
    return f"{index + 1} {stage_name(kind, hop)}{rerun}"


def type_text(cascade_type: CascadeType | None) -> str:
    return cascade_type.value.replace("_", " ") if cascade_type is not None else "—"


def outcome_status(outcome: CascadeOutcome | None) -> str:
    """'running…' (no outcome yet), 'clean', 'resolved' or 'halted for review'."""
    if outcome is None:
        return "running…"
    if not outcome.fired:
        return "clean"
    return "halted for review" if outcome.halted else "resolved"


def outcome_text(outcome: CascadeOutcome) -> str:
    """'context poisoning at stage 2 (retrieve) · M4 rollback · resolved', or 'no cascade: every stage below θ'."""
    if not outcome.fired:
        return "no cascade: every stage stayed below the threshold"
    where = ""
    if outcome.stage is not None:
        kind = next((s.stage for s in outcome.scores if s.index == outcome.stage), None)
        where = f" at stage {outcome.stage + 1}" + (f" ({kind.value})" if kind is not None else "")
    return f"{type_text(outcome.cascade_type)}{where} · {outcome.mitigation.value} · {outcome_status(outcome)}"


def stage_chain(stages: Iterable[StageResult]) -> str:
    """'formulate 100% → retrieve 72% → retrieve 81% (re-run) → synthesize 85%': the trajectory, each stage
    with its own confidence."""
    parts = []
    for stage in stages:
        rerun = "" if stage.attempt <= 0 else " (re-run)" if stage.attempt == 1 else f" (re-run {stage.attempt})"
        parts.append(f"{stage_name(stage.kind, stage.hop)} {stage.confidence:.0%}{rerun}")
    return " → ".join(parts)
