"""How one answer is shown: verdict badge, answer, reason and trace id; the citations with their
full text; what each agent did for this question; and, when the fleet abstained, each position."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QGroupBox, QHBoxLayout, QHeaderView, QLabel, QListWidget,
                               QListWidgetItem, QSplitter, QTableView, QTextBrowser, QVBoxLayout, QWidget)

from engine import AgentOutcome, Answer, Candidate, Citation, Verdict

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel

OUTCOME_COLUMNS: tuple[Column[AgentOutcome], ...] = (
    Column("Agent", lambda o: o.agent_id, bold=lambda o: True),
    Column("Role", lambda o: o.role.value),
    Column("Status", lambda o: o.status.value, foreground=lambda o: style.call_status_colour(o.status),
           bold=lambda o: True),
    Column("Latency (ms)", lambda o: f"{o.latency_ms:,.0f}", align=RIGHT),
    Column("Items", lambda o: str(o.n_items), align=RIGHT),
    Column("Error", lambda o: o.error or "", foreground=lambda o: style.RED, tooltip=lambda o: o.error),
)

POSITION_COLUMNS: tuple[Column[Candidate], ...] = (
    Column("Agent", lambda c: c.agent_id, bold=lambda c: True,
           tooltip=lambda c: f"agrees with: {', '.join(c.agreeing)}" if c.agreeing else "agrees with no one"),
    Column("Support", lambda c: f"{c.support_rate:.0%}", align=RIGHT,
           foreground=lambda c: style.GREEN if c.support_rate >= 0.8 else style.RED),
    Column("Answer", lambda c: c.generation.answer or "(no answer)", tooltip=lambda c: c.generation.answer),
)


def _table(model: RecordTableModel, stretch_column: int) -> QTableView:
    table = QTableView()
    table.setModel(model)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    table.verticalHeader().setVisible(False)
    style.compact_rows(table)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(stretch_column, QHeaderView.ResizeMode.Stretch)
    return table


def _boxed(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(widget)
    return box


def citation_label(citation: Citation) -> str:
    title = citation.title or citation.chunk_id
    return f"{title} — {citation.source}" if citation.source else title


def citation_html(citation: Citation) -> str:
    esc = html.escape
    return (f"<h3 style='margin:0'>{esc(citation.title or citation.chunk_id)}</h3>"
            f"<p style='color:#555; margin-top:4px'>Source: {esc(citation.source or 'unknown')}"
            f" · chunk <code>{esc(citation.chunk_id)}</code></p>"
            f"<p style='white-space:pre-wrap'>{esc(citation.text)}</p>")


class VerdictHeader(QWidget):
    """The badge, the answer in large type, why, and the trace id to quote in the audit log."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.badge = QLabel()
        self.badge.setFont(style.scaled_font(self.font(), 1.1, bold=True))
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.answer = QLabel("Ask the fleet a question to see its verdict here.")
        self.answer.setWordWrap(True)
        self.answer.setFont(style.scaled_font(self.font(), 1.3))
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.reason = QLabel()
        self.reason.setWordWrap(True)
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trace = QLabel()
        self.trace.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.trace.setFont(style.monospace_font())
        self.badge.hide()

        top = QHBoxLayout()
        top.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.answer, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addLayout(top)
        layout.addWidget(self.reason)
        layout.addWidget(self.trace)

    def show_answer(self, answer: Answer) -> None:
        self.badge.setText(style.VERDICT_LABELS[answer.verdict])
        self.badge.setStyleSheet(style.verdict_badge_css(answer.verdict))
        self.badge.show()
        if answer.answer:
            self.answer.setText(answer.answer)
        elif answer.verdict is Verdict.ABSTAINED:
            self.answer.setText("No answer given: the fleet did not agree. Each position is listed under Positions.")
        else:
            self.answer.setText("No answer: the fleet found no usable evidence.")
        total_ms = sum(answer.timings_ms.values())
        self.reason.setText(f"<b>Why:</b> {html.escape(answer.reason)}"
                            f" <span style='color:#666'>· {answer.tier.value} risk · {total_ms:,.0f} ms</span>")
        self.trace.setText(f"trace_id {answer.trace_id}")


class CitationsView(QSplitter):
    """Citations above; the selected one's title, source and full text below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.detail = QTextBrowser()
        self.detail.setPlaceholderText("Select a citation to read the passage it points to.")
        self.addWidget(_boxed("Citations", self.list))
        self.addWidget(_boxed("Cited passage", self.detail))
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 2)
        self.list.currentItemChanged.connect(self._show_current)

    def set_citations(self, citations: tuple[Citation, ...]) -> None:
        self.list.clear()
        self.detail.clear()
        self.detail.setPlaceholderText("Select a citation to read the passage it points to." if citations
                                       else "This answer cites no passage.")
        for citation in citations:
            item = QListWidgetItem(citation_label(citation))
            item.setData(Qt.ItemDataRole.UserRole, citation)
            item.setToolTip(citation.text[:400])
            self.list.addItem(item)
        if citations:
            self.list.setCurrentRow(0)    # the evidence is the point: show it without a click

    def _show_current(self, item: QListWidgetItem | None, _previous=None) -> None:
        citation = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        self.detail.setHtml(citation_html(citation) if citation else "")


class AnswerView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.header = VerdictHeader()
        self.citations = CitationsView()
        self.outcomes_model: RecordTableModel[AgentOutcome] = RecordTableModel(OUTCOME_COLUMNS, self)
        self.positions_model: RecordTableModel[Candidate] = RecordTableModel(POSITION_COLUMNS, self)
        self.outcomes_table = _table(self.outcomes_model, stretch_column=5)
        self.positions_table = _table(self.positions_model, stretch_column=2)
        self.positions_box = _boxed("Positions (the fleet abstained)", self.positions_table)
        self.positions_box.hide()

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(_boxed("Agents on this question", self.outcomes_table))
        right.addWidget(self.positions_box)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.citations)
        body.addWidget(right)
        body.setStretchFactor(0, 1)
        body.setStretchFactor(1, 1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(body, 1)

    def show_answer(self, answer: Answer) -> None:
        self.header.show_answer(answer)
        self.citations.set_citations(answer.citations)
        self.outcomes_model.set_records(answer.agents)
        self.positions_model.set_records(answer.candidates)
        self.positions_box.setVisible(answer.verdict is Verdict.ABSTAINED and bool(answer.candidates))
