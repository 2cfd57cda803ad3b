"""What the Cascade panel knows of each question, and how its tables read.

A question's record grows with its events (scores, outcome, answer); the strip of questions and the
stage table are declared as columns over these records. Every text is plain: reasons and questions come
from agents and documents.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from PySide6.QtGui import QColor

from engine import CascadeOutcome, CascadeType, StageResult, StageScore

from .. import style
from ..stage_text import outcome_status, rerun_mark, stage_label, stage_name, type_text
from ..table_model import CENTER, RIGHT, Column
from .trust import time_text


@dataclass(frozen=True)
class Series:
    name: str
    position: int                   # its colour is the theme's series[position]
    value: Callable[[StageScore], float]
    meaning: str

    @property
    def colour(self) -> QColor:
        return QColor(style.tones().series[self.position])


# None of them red: red is kept for θ and for fired stages.
SERIES = (
    Series("SFV", 0, lambda s: s.a_sfv, "stage-level fact verification against the consensus pool"),
    Series("CSCT", 1, lambda s: s.a_csct, "drift from the question and the trajectory so far"),
    Series("CPM", 2, lambda s: s.a_cpm, "confidence above what the stage's evidence supports"),
    Series("CRT p", 3, lambda s: s.p, "the monitors' weighted sum, compared with θ"),
)


@dataclass
class QuestionCascade:
    """One question as the panel knows it. It grows as events arrive, so it is mutable: whoever changes it
    refreshes its strip row."""
    trace_id: str
    question: str = ""
    at: float = 0.0
    scores: list[StageScore] = field(default_factory=list)    # in the order the boundaries were scored
    outcome: CascadeOutcome | None = None
    stages: tuple[StageResult, ...] = ()
    answered: bool = False                                    # its Answer came (without a cascade: not watched)

    def add_score(self, score: StageScore) -> None:
        """A boundary scored twice (live, then again in the outcome or the answer) counts once."""
        key = (score.index, score.attempt)
        for position, known in enumerate(self.scores):
            if (known.index, known.attempt) == key:
                self.scores[position] = score
                return
        self.scores.append(score)

    @property
    def max_p(self) -> float | None:
        return max((s.p for s in self.scores), default=None)

    @property
    def fired(self) -> bool:
        return self.outcome.fired if self.outcome is not None else any(s.fired for s in self.scores)

    @property
    def halted(self) -> bool:
        return self.outcome is not None and self.outcome.halted

    @property
    def cascade_type(self) -> CascadeType | None:
        if self.outcome is not None and self.outcome.cascade_type is not None:
            return self.outcome.cascade_type
        return next((s.cascade_type for s in self.scores if s.fired and s.cascade_type), None)

    def confidence(self, score: StageScore) -> float | None:
        """The stage's own confidence, once the answer brought the stage results."""
        stage = next((r for r in self.stages if (r.index, r.attempt) == (score.index, score.attempt)), None)
        return stage.confidence if stage is not None else None


def question_text(record: QuestionCascade) -> str:
    return record.question or f"(question {record.trace_id[:8]})"


def status_text(record: QuestionCascade) -> str:
    if record.outcome is None and record.answered:
        return "not watched"
    return outcome_status(record.outcome)


def status_colour(record: QuestionCascade) -> QColor | None:
    if record.halted:
        return style.tones().bad
    if record.fired:
        return style.tones().warn
    return style.tones().good if record.outcome is not None else style.tones().muted


STRIP_COLUMNS: tuple[Column[QuestionCascade], ...] = (
    Column("Time", lambda r: time_text(r.at) if r.at else ""),
    Column("Question", question_text),
    Column("Max p", lambda r: "—" if r.max_p is None else f"{r.max_p:.2f}", align=RIGHT,
           foreground=lambda r: style.tones().bad if r.fired else None, bold=lambda r: r.fired,
           header_tooltip="The highest CRT p over the question's stages"),
    Column("Fired", lambda r: "yes" if r.fired else ("no" if r.outcome is not None else ""), align=CENTER,
           foreground=lambda r: style.tones().bad if r.fired else None, bold=lambda r: r.fired),
    Column("Type", lambda r: type_text(r.cascade_type) if r.fired else "—"),
    Column("Mitigation", lambda r: r.outcome.mitigation.value if r.outcome is not None and r.fired else "—"),
    Column("Outcome", status_text, foreground=status_colour, bold=lambda r: r.halted),
)
STRIP_QUESTION_COLUMN = 1


@dataclass(frozen=True)
class StageRow:
    score: StageScore
    confidence: float | None

    @property
    def key(self) -> tuple[int, int]:      # a stage boundary: its index and which run of it
        return self.score.index, self.score.attempt


def tick_forms(score: StageScore) -> tuple[str, str, str]:
    """A stage's x label, widest first: '4 retrieve·h2 ↻'; '4 ↻' above 'retrieve·h2'; '4 ↻' alone (the stage
    table names it). Never more than two lines: the axis does not grow for a third."""
    head = f"{score.index + 1} {rerun_mark(score.attempt)}".rstrip()
    return (stage_label(score.index, score.stage, score.hop, score.attempt),
            f"{head}\n{stage_name(score.stage, score.hop)}", head)


def _score_column(title: str, value: Callable[[StageScore], float], tip: str) -> Column[StageRow]:
    return Column(title, lambda r: f"{value(r.score):.2f}", align=RIGHT, header_tooltip=tip)


STAGE_COLUMNS: tuple[Column[StageRow], ...] = (
    Column("Stage", lambda r: stage_label(r.score.index, r.score.stage, r.score.hop, r.score.attempt),
           foreground=lambda r: style.tones().bad if r.score.fired else None, bold=lambda r: r.score.fired),
    *(_score_column(s.name, s.value, s.meaning) for s in SERIES),
    Column("Conf.", lambda r: "—" if r.confidence is None else f"{r.confidence:.0%}", align=RIGHT,
           header_tooltip="The stage's own confidence (from the answer's stage results)"),
    Column("Reasons", lambda r: "; ".join(r.score.reasons)),
)
STAGE_REASONS_COLUMN = len(STAGE_COLUMNS) - 1


def stage_detail(row: StageRow, theta: float) -> str:
    """The selected stage spelled out, as plain text."""
    score = row.score
    name = stage_label(score.index, score.stage, score.hop, score.attempt)
    verdict = f"fired: {type_text(score.cascade_type)}" if score.fired else "did not fire"
    compare = "≥" if score.p >= theta else "<"
    lines = [f"{name} — {verdict}",
             f"SFV {score.a_sfv:.2f} · CSCT {score.a_csct:.2f} · CPM {score.a_cpm:.2f} → CRT p {score.p:.2f} "
             f"{compare} θ {theta:.2f}"]
    if row.confidence is not None:
        lines.append(f"Stage confidence {row.confidence:.0%}")
    if score.attempt:
        lines.append(f"Re-run {score.attempt} after a mitigation")
    lines += [f"• {reason}" for reason in score.reasons]
    if score.suspect_passages:
        lines.append("Suspect passages: " + ", ".join(score.suspect_passages))
    if score.suspect_agents:
        lines.append("Suspect agents: " + ", ".join(score.suspect_agents))
    return "\n".join(lines)
