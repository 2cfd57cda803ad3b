"""Approvals panel: the answers that wait for an operator, and the operator's decision on each.

A table of review items (pending first, oldest first; then decisions, newest first) beside the
selected item's detail: its answer, why it waits, every generator's candidate answer with its claim
checks, and the citations, all read from the item's payload (the whole Answer). Approve and Reject
open an inline form under the detail (a reason from the engine's fixed lists and a note, which
"other" requires); nothing here opens a modal dialog. A decision comes back from the engine as the
updated item and replaces its row in place.
"""
from __future__ import annotations

import datetime
import html
from typing import Iterable

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFrame, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPushButton, QSplitter, QTableView, QTextBrowser, QVBoxLayout, QWidget)

from engine import RiskTier
from engine.review import APPROVE_REASONS, OTHER, REJECT_REASONS, ClaimSummary, ReviewItem, ReviewStatus

from .. import style
from ..layout import column
from ..service import EngineService
from ..table_model import RIGHT, Column, RecordTableModel

esc = html.escape

STATUS_TONES = {ReviewStatus.PENDING: "warn", ReviewStatus.APPROVED: "good",
                  ReviewStatus.REJECTED: "bad"}


def when_text(at: float | None, today: datetime.date | None = None) -> str:
    """'14:03' today, '2025-03-02 14:03' otherwise; '—' when unknown."""
    if at is None:
        return "—"
    moment = datetime.datetime.fromtimestamp(at)
    if moment.date() == (today or datetime.date.today()):
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M")


def answer_cell(item: ReviewItem) -> str:
    """The answer the fleet gave, or its verdict in brackets when it gave none."""
    return item.answer_text or f"({style.VERDICT_LABELS[item.verdict].lower()})"


def decision_text(item: ReviewItem) -> str:
    if item.pending:
        return "waiting for an operator"
    note = f" — {item.note}" if item.note else ""
    return f"{item.status.value} by {item.decided_by}: {item.reason}{note}"


REVIEW_COLUMNS: tuple[Column[ReviewItem], ...] = (
    Column("#", lambda i: str(i.id), align=RIGHT, bold=lambda i: i.pending),
    Column("Status", lambda i: i.status.value, foreground=lambda i: style.tone(STATUS_TONES[i.status]), bold=lambda i: True,
           tooltip=decision_text),
    Column("Tier", lambda i: i.tier.value, foreground=lambda i: style.tones().bad if i.tier is RiskTier.HIGH else None),
    Column("Question", lambda i: i.question, tooltip=lambda i: i.question),
    Column("Answer / verdict", answer_cell,
           tooltip=lambda i: f"{answer_cell(i)}\n{style.VERDICT_LABELS[i.verdict]}: {i.answer_reason}".strip()),
    Column("Why", lambda i: i.why, tooltip=lambda i: i.why),
    Column("Created", lambda i: when_text(i.created_at), align=RIGHT,
           tooltip=lambda i: datetime.datetime.fromtimestamp(i.created_at).isoformat(sep=" ", timespec="seconds")),
)
QUESTION_COLUMN, ANSWER_COLUMN, WHY_COLUMN = 3, 4, 5
# Widest a fitted column may start (pixels); the question takes the rest, and every cell is whole in its tooltip.
MAX_COLUMN_WIDTH = {ANSWER_COLUMN: 200, WHY_COLUMN: 170}


def queue_order(item: ReviewItem) -> tuple:
    """Pending first, oldest first (a queue); then decisions, newest first (as the engine orders them)."""
    if item.pending:
        return (0, item.created_at, item.id)
    return (1, -(item.decided_at or 0.0), -item.id)


class ReviewModel(RecordTableModel[ReviewItem]):
    """Review items keyed by id: an update replaces its row in place, a new item goes to the end of the
    pending ones."""

    def __init__(self, parent=None) -> None:
        super().__init__(REVIEW_COLUMNS, parent, row_background=lambda i: style.tones().warn_tint if i.pending else None)

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
        """Replaces the item's row in place, or inserts a new item after the last pending one; returns its row."""
        row = self.row_of(item.id)
        if row >= 0:
            self.replace_record(row, item)
            return row
        row = next((r for r, known in enumerate(self.records()) if queue_order(item) < queue_order(known)),
                   self.rowCount())
        self.beginInsertRows(QModelIndex(), row, row)
        self._records.insert(row, item)
        self.endInsertRows()
        return row

    def row_of(self, item_id: int) -> int:
        return next((row for row, item in enumerate(self.records()) if item.id == item_id), -1)

    def count(self, status: ReviewStatus) -> int:
        return sum(item.status is status for item in self.records())


def claim_mark(claim: ClaimSummary) -> tuple[str, str]:
    """✓ supported, ✗ refuted by its evidence, ? not backed by it (or unsupported, for answers without a label)."""
    if claim.supported:
        return "✓", style.tones().good.name()
    if claim.label in ("", "refuted"):
        return "✗", style.tones().bad.name()
    return "?", style.tones().warn.name()


def item_html(item: ReviewItem) -> str:
    """Everything an operator needs to decide, escaped: the agents' text is data, never markup."""
    colour = style.tone(STATUS_TONES[item.status]).name()
    parts = [f"<h3 style='margin:0'>#{item.id} · <span style='color:{colour}'>{esc(item.status.value)}</span>"
             f" · {esc(item.tier.value)} risk</h3>",
             f"<p style='margin-top:4px'><b>Question:</b> {esc(item.question)}</p>",
             f"<p><b>Answer:</b> {esc(answer_cell(item))}<br><span style='{style.fg('muted')}'>"
             f"{esc(style.VERDICT_LABELS[item.verdict])}: {esc(item.answer_reason or '—')}</span></p>",
             f"<p><b>Waits because:</b> {esc(item.why)}<br><span style='{style.fg('muted')}'>queued "
             f"{esc(when_text(item.created_at))} · trace_id <code>{esc(item.trace_id)}</code></span></p>"]
    if not item.pending:
        parts.append(f"<p style='color:{colour}'><b>Decision:</b> {esc(decision_text(item))}"
                     f" <span style='{style.fg('muted')}'>({esc(when_text(item.decided_at))})</span></p>")
    candidates = item.candidates_summary
    parts.append(f"<h4 style='margin-bottom:2px'>Candidate answers ({len(candidates)})</h4>")
    if not candidates:
        parts.append(f"<p style='{style.fg('muted')}'>No generator answered.</p>")
    for cand in candidates:
        agree = f" · agrees with {esc(', '.join(cand.agreeing))}" if cand.agreeing else ""
        parts.append(f"<p style='margin-bottom:0'><b>{esc(cand.agent_id)}</b> <span style='{style.fg('muted')}'>"
                     f"support {cand.support_rate:.0%} · credibility {cand.credibility:.2f}{agree}</span><br>"
                     f"{esc(cand.answer or '(empty answer)')}</p>")
        if cand.claims:
            rows = []
            for claim in cand.claims:
                mark, mark_colour = claim_mark(claim)
                cites = f" <code>[{esc(', '.join(claim.citations))}]</code>" if claim.citations else ""
                label = "" if claim.supported else claim.label.replace("_", " ")
                why = " — ".join(part for part in (label, claim.reason) if part)
                why = f" <span style='{style.fg('muted')}'>— {esc(why)}</span>" if why else ""
                rows.append(f"<li><span style='color:{mark_colour}'><b>{mark}</b></span> {esc(claim.text)}{cites}{why}</li>")
            parts.append(f"<ul style='margin-top:0'>{''.join(rows)}</ul>")
    citations = item.citations
    if citations:
        parts.append(f"<h4 style='margin-bottom:2px'>Citations ({len(citations)})</h4>")
        for citation in citations:
            title = citation.get("title") or citation.get("chunk_id", "")
            parts.append(f"<p style='margin-bottom:0'><b>{esc(str(title))}</b> <span style='{style.fg('muted')}'>"
                         f"{esc(str(citation.get('source', '')))} · <code>{esc(str(citation.get('chunk_id', '')))}"
                         f"</code></span><br>{esc(str(citation.get('text', ''))[:600])}</p>")
    return "".join(parts)


class DecisionForm(QFrame):
    """Inline, in place of the Approve / Reject buttons: 'Reject #3 because [reason ▾]', then
'[note…] [Reject] [Cancel]' and a hint line (what is missing, or why the engine refused).
"other" needs a note; Escape cancels."""

    sig_confirmed = Signal(int, bool, str, str)     # item id, approve, reason, note
    sig_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.item_id = -1
        self.approve = True
        self.saving = False
        self._error = ""
        self.title = QLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.0, bold=True))
        self.reason = QComboBox()
        self.note = QLineEdit()
        self.note.setClearButtonEnabled(True)
        self.confirm = QPushButton()
        self.cancel = QPushButton("Cancel")
        self.hint = QLabel()
        self.hint.setWordWrap(True)

        first = QHBoxLayout()
        first.setContentsMargins(0, 0, 0, 0)
        first.addWidget(self.title)
        first.addWidget(self.reason, 1)
        second = QHBoxLayout()
        second.setContentsMargins(0, 0, 0, 0)
        second.addWidget(self.note, 1)
        second.addWidget(self.confirm)
        second.addWidget(self.cancel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(3)
        layout.addLayout(first)
        layout.addLayout(second)
        layout.addWidget(self.hint)

        self.reason.currentTextChanged.connect(self._refresh)
        self.note.textChanged.connect(self._refresh)
        self.note.returnPressed.connect(self.submit)
        self.confirm.clicked.connect(self.submit)
        self.cancel.clicked.connect(self.close_form)
        self.hide()

    def open_for(self, item: ReviewItem, approve: bool) -> None:
        self.item_id, self.approve, self.saving = item.id, approve, False
        verb = "Approve" if approve else "Reject"
        self.title.setText(f"{verb} #{item.id} because")
        self.reason.clear()
        self.reason.addItems(APPROVE_REASONS if approve else REJECT_REASONS)
        self.note.clear()
        self.note.setPlaceholderText("note (required for “other”)")
        self.confirm.setText(verb)
        colour = style.tones().good if approve else style.tones().bad
        self.setStyleSheet(f"DecisionForm {{ border: 1px solid {colour.name()}; border-radius: 4px; }}")
        self.show_error("")
        self.show()
        self.reason.setFocus()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and not self.saving:    # Escape in the note or the combo cancels
            self.close_form()
            return
        super().keyPressEvent(event)

    def close_form(self) -> None:
        self.item_id, self.saving = -1, False
        self.hide()
        self.sig_cancelled.emit()

    def ready_to_confirm(self) -> bool:
        return not self.saving and (self.reason.currentText() != OTHER or bool(self.note.text().strip()))

    def submit(self) -> None:
        if not self.isVisible() or not self.ready_to_confirm():
            return
        self.saving = True
        self.show_error("")
        self._refresh()
        self.sig_confirmed.emit(self.item_id, self.approve, self.reason.currentText(), self.note.text().strip())

    def failed(self, message: str) -> None:
        self.saving = False
        self.show_error(message)
        self._refresh()

    def show_error(self, message: str) -> None:
        self._error = message
        self._refresh()

    def _refresh(self, *_args) -> None:
        editable = not self.saving
        self.reason.setEnabled(editable)
        self.note.setEnabled(editable)
        self.confirm.setEnabled(self.ready_to_confirm())
        needs_note = self.reason.currentText() == OTHER and not self.note.text().strip()
        error = self._error
        if error:
            self.hint.setText(f"<span style='color:{style.tones().bad.name()}'>{esc(error)}</span>")
        elif self.saving:
            self.hint.setText("Saving the decision…")
        elif needs_note:
            self.hint.setText("“other” needs a note that says why.")
        else:
            self.hint.setText("The decision is final and goes into the audit trail under your name.")


class ApprovalsPanel(QWidget):
    sig_pending_changed = Signal(int)       # how many items wait for an operator

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self._accepting = service.ready
        self.model = ReviewModel(self)

        self.summary = QLabel()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the queue again (decisions made with `main.py review` show up)")
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(QUESTION_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)

        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.setPlaceholderText("Select a review item to see the answer, its candidates and their claims.")
        self.approve_button = QPushButton("Approve…")
        self.reject_button = QPushButton("Reject…")
        self.form = DecisionForm()
        self.message = QLabel()
        self.message.setWordWrap(True)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.summary, 1)
        top.addWidget(self.refresh_button)
        self.actions = QWidget()          # the buttons and the last decision's message; the form replaces them
        buttons = QHBoxLayout(self.actions)
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.approve_button)
        buttons.addWidget(self.reject_button)
        buttons.addWidget(self.message, 1)
        right = column(self.detail, self.actions, self.form, spacing=4)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.table)
        body.addWidget(right)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        body.setSizes([740, 520])
        body.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(body, 1)

        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.approve_button.clicked.connect(lambda: self.open_form(approve=True))
        self.reject_button.clicked.connect(lambda: self.open_form(approve=False))
        self.refresh_button.clicked.connect(self.reload)
        self.form.sig_confirmed.connect(self._on_confirmed)
        self.form.sig_cancelled.connect(self._form_closed)
        service.sig_ready.connect(self._on_ready)
        service.sig_stopping.connect(self._on_stopping)
        service.reviews.sig_changed.connect(self.show_item)
        service.reviews.sig_loaded.connect(self.show_items)
        service.reviews.sig_failed.connect(self._on_failed)
        for signal in (self.model.modelReset, self.model.rowsInserted, self.model.dataChanged):
            signal.connect(self._on_model_changed)
        self._on_model_changed()
        if self._accepting:
            self.reload()

    # --- items in --------------------------------------------------------------------------
    def reload(self) -> None:
        if self._accepting:
            self._service.reviews.load()

    def show_items(self, items: list[ReviewItem]) -> None:
        current = self.current_item()
        self.model.set_items(items)
        row = self.model.row_of(current.id) if current is not None else -1
        self._select(row if row >= 0 else (0 if self.model.rowCount() else -1))

    def show_item(self, item: ReviewItem) -> None:
        """A new item, or a decision: the row is replaced in place; a new one is selected if nothing is."""
        had_selection = self.current_item() is not None
        row = self.model.upsert(item)
        if self.form.isVisible() and self.form.item_id == item.id and not item.pending:
            self.form.hide()
            self.form.item_id = -1
            self._form_closed()
            verb_colour = style.tone(STATUS_TONES[item.status]).name()
            self._show_message(f"<span style='color:{verb_colour}'>#{item.id} {esc(decision_text(item))}</span>")
        if not had_selection:
            self._select(row)
        elif self.current_item() is not None and self.current_item().id == item.id:
            self._show_detail(item)
        self._refresh_buttons()

    def current_item(self) -> ReviewItem | None:
        index = self.table.currentIndex()
        return self.model.record(index.row()) if index.isValid() and index.row() < self.model.rowCount() else None

    def select_next(self) -> None:
        self._step(+1)

    def select_previous(self) -> None:
        self._step(-1)

    def select_next_pending(self) -> bool:
        """The next pending item after the selected one (wrapping round); False when none waits."""
        rows = self.model.rowCount()
        start = self.table.currentIndex().row()
        for offset in range(1, rows + 1):
            row = (start + offset) % rows
            if self.model.record(row).pending:
                self._select(row)
                return True
        return False

    def _step(self, delta: int) -> None:
        row = self.table.currentIndex().row()
        self._select(min(max(row + delta, 0), self.model.rowCount() - 1) if row >= 0 else 0)

    def focus_target(self) -> QWidget:
        return self.table

    def select_item(self, item_id: int) -> bool:
        row = self.model.row_of(item_id)
        self._select(row)
        return row >= 0

    # --- deciding --------------------------------------------------------------------------
    def open_form(self, approve: bool) -> None:
        item = self.current_item()
        if item is None or not item.pending or not self._accepting:
            return
        self._show_message("")
        self.actions.hide()
        self.form.open_for(item, approve)
        self._refresh_buttons()

    def _form_closed(self) -> None:
        self.actions.show()
        self._refresh_buttons()

    def _on_confirmed(self, item_id: int, approve: bool, reason: str, note: str) -> None:
        if self._service.reviews.decide(item_id, approve, reason, note) is None:
            return          # refused at once: sig_review_failed has told the form why
        self._refresh_buttons()

    def _on_failed(self, item_id: int, message: str) -> None:
        if self.form.item_id == item_id:
            self.form.failed(message)
        else:
            self._show_message(f"<span style='color:{style.tones().bad.name()}'>#{item_id}: {esc(message)}</span>")
        self._refresh_buttons()

    # --- state -----------------------------------------------------------------------------
    def _on_ready(self, _agents_up: int) -> None:
        self._accepting = True
        self.reload()
        self._refresh_buttons()

    def _on_stopping(self) -> None:
        self._accepting = False
        self._refresh_buttons()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        item = self.model.record(current.row()) if current.isValid() else None
        if self.form.isVisible() and (item is None or item.id != self.form.item_id) and not self.form.saving:
            self.form.close_form()
        self._show_message("")
        self._show_detail(item)
        self._refresh_buttons()

    def _show_detail(self, item: ReviewItem | None) -> None:
        if item is None:
            self.detail.clear()
        else:
            scroll = self.detail.verticalScrollBar().value()
            self.detail.setHtml(item_html(item))
            self.detail.verticalScrollBar().setValue(scroll)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)

    def _select(self, row: int) -> None:
        if 0 <= row < self.model.rowCount():
            self.table.setCurrentIndex(self.model.index(row, 0))
            self.table.scrollTo(self.model.index(row, 0))

    def _refresh_buttons(self, *_args) -> None:
        item = self.current_item()
        can = self._accepting and item is not None and item.pending and not self.form.isVisible()
        self.approve_button.setEnabled(can)
        self.reject_button.setEnabled(can)
        self.refresh_button.setEnabled(self._accepting)
        if item is not None and not item.pending:
            tip = f"Already decided: {decision_text(item)}"
        elif not self._accepting:
            tip = "Waiting for the engine"
        else:
            tip = f"Decide as {self._service.operator}"
        self.approve_button.setToolTip(tip)
        self.reject_button.setToolTip(tip)

    def _on_model_changed(self, *_args) -> None:
        pending = self.model.count(ReviewStatus.PENDING)
        decided = self.model.rowCount() - pending
        self.summary.setText(f"<b>{pending} pending</b> · {decided} decided · deciding as "
                             f"<b>{esc(self._service.operator)}</b>")
        self._fit_columns()
        self.sig_pending_changed.emit(pending)

    def _fit_columns(self) -> None:
        header = self.table.horizontalHeader()
        for column in range(self.model.columnCount()):
            if column == QUESTION_COLUMN:
                continue
            width = max(self.table.sizeHintForColumn(column), header.sectionSizeHint(column))
            header.resizeSection(column, min(width, MAX_COLUMN_WIDTH.get(column, 200)))

    def needs_attention(self) -> bool:
        return self.model.count(ReviewStatus.PENDING) > 0

    def tab_title(self) -> str:
        pending = self.model.count(ReviewStatus.PENDING)
        return f"Approvals ({pending} pending)" if pending else "Approvals"
