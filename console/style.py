"""Colours and fonts in one place, so a state always looks the same wherever it is shown."""
from __future__ import annotations

import html

from PySide6.QtGui import QColor, QFont, QFontDatabase
from PySide6.QtWidgets import QApplication, QTableView

from engine import AgentState, CallStatus, FaultKind, Verdict

# Dark enough to read on the default light table background.
GREEN = QColor("#1b7f3b")
AMBER = QColor("#a86200")
RED = QColor("#c62828")
GREY = QColor("#6b6b6b")
BLUE = QColor("#1f5fa8")
FAULT_BACKGROUND = QColor("#fde7e7")
KEPT_OUT_BACKGROUND = FAULT_BACKGROUND        # a passage secure retrieval kept out of the context
FAILING_BACKGROUND = FAULT_BACKGROUND         # a generator whose claims its evidence does not back
FIRED_BACKGROUND = FAULT_BACKGROUND           # a stage where the cascade trigger fired

# Flags secure retrieval puts on a passage: chip colours (background, text) and what each means.
FLAG_CHIPS = {
    "echo": ("#7b1fa2", "#ffffff"),
    "tampered": ("#c62828", "#ffffff"),
    "disputed": ("#e65100", "#ffffff"),
    "inconsistent": ("#f9a825", "#1a1a1a"),
    "outlier": ("#546e7a", "#ffffff"),
}
OTHER_FLAG_CHIP = ("#757575", "#ffffff")
FLAG_MEANINGS = {
    "echo": "one of several near-duplicate passages pushing a claim nothing independent corroborates "
            "(the PoisonedRAG signature)",
    "tampered": "a near-copy of a better-supported passage with different numbers, names or polarity",
    "disputed": "another text under the same chunk id had more support",
    "inconsistent": "two of its own sentences say nearly the same thing with different numbers or polarity",
    "outlier": "in no cluster, off the question's topic, and returned by too few retrievers",
}
# The warning line naming suspected agents, and the marker in the fleet table.
SUSPECT_CSS = ("QLabel { color: #7a1f00; background: #fff3e0; border-left: 4px solid #e65100;"
               " padding: 3px 8px; }")

AGENT_STATE_COLOURS = {
    AgentState.UP: GREEN,
    AgentState.STARTING: BLUE,
    AgentState.DOWN: RED,
    AgentState.DISABLED: GREY,
}

# An agent's standing in the reputation book (AgentView.trust_state): active reads as plain text.
TRUST_STATE_COLOURS = {
    "probation": AMBER,
    "quarantined": RED,
}
TRUST_STATE_MEANINGS = {
    "active": "takes work at every risk tier its score allows",
    "probation": "released from quarantine: low-risk work only and a capped vote, until it earns its way back",
    "quarantined": "gets no work at all until an operator releases it",
}
QUARANTINED_BACKGROUND = QColor("#fde7e7")
PROBATION_BACKGROUND = QColor("#fff3e0")

# One colour per agent on the Trust plot: distinct on white, and none of them red, which the
# quarantine floor and quarantine markers keep for themselves.
AGENT_LINE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                      "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#31a354", "#756bb1")

CALL_STATUS_COLOURS = {
    CallStatus.OK: GREEN,
    CallStatus.TIMEOUT: AMBER,
}

# Badge colours: (background, text).
VERDICT_BADGES = {
    Verdict.ANSWERED: ("#1b7f3b", "#ffffff"),
    Verdict.ABSTAINED: ("#f2a900", "#1a1a1a"),
    Verdict.NO_ANSWER: ("#757575", "#ffffff"),
}

VERDICT_LABELS = {
    Verdict.ANSWERED: "ANSWERED",
    Verdict.ABSTAINED: "ABSTAINED",
    Verdict.NO_ANSWER: "NO ANSWER",
}


def agent_state_colour(state: AgentState) -> QColor:
    return AGENT_STATE_COLOURS.get(state, GREY)


def trust_state_colour(state: str) -> QColor | None:
    return TRUST_STATE_COLOURS.get(state)


def trust_state_background(state: str) -> QColor | None:
    return {"quarantined": QUARANTINED_BACKGROUND, "probation": PROBATION_BACKGROUND}.get(state)


def agent_line_colour(position: int) -> QColor:
    return QColor(AGENT_LINE_COLOURS[position % len(AGENT_LINE_COLOURS)])


def call_status_colour(status: CallStatus) -> QColor:
    return CALL_STATUS_COLOURS.get(status, RED)


def fault_colour(fault: FaultKind) -> QColor:
    return GREY if fault is FaultKind.NONE else RED


def flag_chip_colours(flag: str) -> tuple[QColor, QColor]:
    background, text = FLAG_CHIPS.get(flag, OTHER_FLAG_CHIP)
    return QColor(background), QColor(text)


def flag_meaning(flag: str) -> str:
    return FLAG_MEANINGS.get(flag, "flagged by secure retrieval")


def verdict_badge_css(verdict: Verdict) -> str:
    background, text = VERDICT_BADGES[verdict]
    return (f"QLabel {{ background: {background}; color: {text}; font-weight: bold; "
            f"border-radius: 6px; padding: 4px 12px; }}")


def literal_tooltip(text: str) -> str:
    """A tooltip that shows `text` literally: Qt renders tooltips that look like HTML as rich text, so
    untrusted text (questions, reasons) is escaped inside a paragraph of its own."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>"


def scaled_font(base: QFont, factor: float, bold: bool = False) -> QFont:
    font = QFont(base)
    font.setPointSizeF(base.pointSizeF() * factor)
    font.setBold(bold)
    return font


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def compact_rows(table: QTableView) -> None:
    """Rows just tall enough for one line of text, so a whole fleet fits without scrolling."""
    height = table.fontMetrics().height() + 10
    table.verticalHeader().setMinimumSectionSize(height)
    table.verticalHeader().setDefaultSectionSize(height)
    # Air between right- and left-aligned neighbours; headers padded alike so titles line up with cells.
    table.setStyleSheet("QTableView::item { padding: 0px 6px; }"
                        "QHeaderView::section { padding: 3px 6px; border: none;"
                        " border-right: 1px solid #c8c8c8; border-bottom: 1px solid #c8c8c8; background: #ececec; }")


def apply_app_style(app: QApplication) -> None:
    """Fusion looks the same on every platform (and offscreen); 10 pt keeps tables readable."""
    app.setStyle("Fusion")
    font = app.font()
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
        app.setFont(font)
