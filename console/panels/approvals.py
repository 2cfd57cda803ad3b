"""Approvals panel: the answers that wait for an operator, and the operator's decision on each, by keyboard.

A filtered table of review items (pending first, oldest first; then decisions, newest first) beside the
current item's detail (approvals_detail.py: question, answer, positions, claims with their evidence,
cascade scores, agents). The flow is keyboard-first (the keys are declared in console/actions.py and
bound by MainWindow): J/K move, N jumps to the next pending item, A/R open an inline form with the
reason list focused (arrows pick a reason, typing writes the note, Enter confirms, Escape cancels and
gives the focus back to the table); after a decision the next pending item is selected, so a queue is
cleared with A, Enter, A, Enter ... Several items can be selected (Shift/Ctrl+click, Shift+J/K,
Shift+arrows, Ctrl+A): one form decides every pending one of them, one by one in the engine, and the
result line names each item that failed (those stay selected). "/" puts the cursor in the text filter,
beside the status, tier and age filters. Nothing here opens a modal dialog.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Sequence

from PySide6.QtCore import QEvent, QItemSelection, QItemSelectionModel, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFrame, QHBoxLayout, QHeaderView,
                               QLineEdit, QPushButton, QSplitter, QTableView, QVBoxLayout, QWidget)

from engine import (APPROVE_REASONS, DecisionOutcome, OTHER, REJECT_REASONS, ReviewItem, ReviewStatus, RiskTier,
                    ShiftTally)

from .. import style, untrusted
from ..batch import Coalescer
from ..layout import column, hbox, inline_form_layout
from ..service import EngineService
from ..untrusted import PlainLabel, RichLabel, SafeBrowser, html_text
from .approvals_detail import claim_mark, item_html
from .approvals_model import (MAX_COLUMN_WIDTH, QUESTION_COLUMN, REVIEW_COLUMNS, STATUS_TONES, AgeFilter,
                              ReviewFilter, ReviewFilterProxy, ReviewModel, StatusFilter, answer_cell, claim_text,
                              decision_text, queue_order, when_text)
from .base import EnginePanel
from .shown import ShownMixin

__all__ = ["ApprovalsPanel", "DecisionForm", "ReviewModel", "ReviewFilterProxy", "REVIEW_COLUMNS", "item_html",
           "claim_mark", "when_text", "answer_cell", "decision_text", "queue_order", "outcomes_text"]

AGE_REFRESH_MS = 60_000      # how often ages (the column and the filter) read the clock again
TIER_CHOICES: tuple[tuple[str, RiskTier | None], ...] = (("any tier", None), *((f"{t.value} risk", t) for t in RiskTier))


def ids_text(ids: Sequence[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def refusal_text(outcome: DecisionOutcome) -> str:
    """Why one item of a bulk decision failed, short: 'already approved by alice', or the engine's words."""
    item = outcome.item
    if item is not None and not item.pending:
        return f"already {item.status.value} by {item.decided_by}"
    return outcome.refusal


def outcomes_text(outcomes: Sequence[DecisionOutcome], approve: bool, skipped: Sequence[ReviewItem] = ()) -> str:
    """'3 rejected; #12 failed: already approved by alice; #4 skipped: already rejected', plain text."""
    decided = sum(o.decided for o in outcomes)
    verb = "approved" if approve else "rejected"
    parts = [f"{decided} {verb}"]
    parts += [f"#{o.item_id} failed: {refusal_text(o)}" for o in outcomes if not o.decided]
    parts += [f"#{i.id} skipped: already {i.status.value}" for i in skipped]
    return "; ".join(parts)


class QueueTable(QTableView):
    """The queue's table: Escape closes an open decision form; extend_selection is what the Shift+J / Shift+K
    actions (console/actions.py) do, the same as Shift+Down / Shift+Up."""

    sig_escape = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if event.key() == Qt.Key.Key_Escape and modifiers == Qt.KeyboardModifier.NoModifier:
            self.sig_escape.emit()
        super().keyPressEvent(event)

    def extend_selection(self, delta: int) -> None:
        """Exactly what Shift+Down / Shift+Up do (the anchor stays, a reversal shrinks the range)."""
        key = Qt.Key.Key_Down if delta > 0 else Qt.Key.Key_Up
        super().keyPressEvent(QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.ShiftModifier))


class DecisionForm(QFrame):
    """Inline, in place of the Approve / Reject buttons: 'Reject #3 because [reason ▾]' (or 'Reject 4 items
because'), then '[note…] [Reject] [Cancel]', a line naming the selected items that are skipped (decided
already), and a hint line (what is missing, or why the engine refused). The reason list has the focus:
arrows pick a reason, typing goes to the note, Enter confirms, Escape cancels. "other" needs a note."""

    sig_confirmed = Signal(object, bool, str, str)     # tuple of item ids, approve, reason, note
    sig_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.item_ids: tuple[int, ...] = ()
        self.approve = True
        self.saving = False
        self._error = ""
        self.title = PlainLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.0, bold=True))
        self.reason = QComboBox()
        self.reason.installEventFilter(self)
        self.note = QLineEdit()
        self.note.setClearButtonEnabled(True)
        self.confirm = QPushButton()
        self.cancel = QPushButton("Cancel")
        self.skipped = PlainLabel()
        self.skipped.setWordWrap(True)
        self.hint = RichLabel()             # the error line is toned HTML, the error escaped
        self.hint.setWordWrap(True)

        inline_form_layout(self, hbox(self.title, (self.reason, 1)), hbox((self.note, 1), self.confirm, self.cancel),
                           self.skipped, self.hint)

        self.reason.currentTextChanged.connect(self._refresh)
        self.note.textChanged.connect(self._refresh)
        self.note.returnPressed.connect(self.submit)
        self.confirm.clicked.connect(self.submit)
        self.cancel.clicked.connect(self.close_form)
        style.theme_signals().sig_changed.connect(self._restyle)
        self.hide()

    @property
    def item_id(self) -> int:
        """The item of a one-item form (the first of several; -1 when closed)."""
        return self.item_ids[0] if self.item_ids else -1

    def open_for(self, items: ReviewItem | Sequence[ReviewItem], approve: bool,
                 skipped: Sequence[ReviewItem] = ()) -> None:
        items = (items,) if isinstance(items, ReviewItem) else tuple(items)
        self.item_ids, self.approve, self.saving = tuple(i.id for i in items), approve, False
        verb = "Approve" if approve else "Reject"
        what = f"#{items[0].id}" if len(items) == 1 else f"{len(items)} items"
        self.title.setText(f"{verb} {what} because")
        self.title.setToolTip(ids_text(self.item_ids))
        self.reason.clear()
        self.reason.addItems(APPROVE_REASONS if approve else REJECT_REASONS)
        self.note.clear()
        self.note.setPlaceholderText("note (required for “other”)")
        self.confirm.setText(verb if len(items) == 1 else f"{verb} {len(items)}")
        self.skipped.setText(f"Skipped, decided already: {ids_text([i.id for i in skipped])}" if skipped else "")
        self.skipped.setVisible(bool(skipped))
        self._restyle()
        self.show_error("")
        self.show()
        self.reason.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def _restyle(self, *_args) -> None:
        colour = style.tones().good if self.approve else style.tones().bad
        self.setStyleSheet(f"DecisionForm {{ border: 1px solid {colour.name()}; border-radius: 4px; }}")
        self.skipped.setStyleSheet(f"QLabel {{ {style.fg('muted')} }}")
        self._refresh()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the reason list, printable keys are the note's: they neither search the list nor fire the
        panel's one-letter actions (A, R, J, ...)."""
        if watched is self.reason and event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            typed = event.text()
            plain = not (event.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                                              | Qt.KeyboardModifier.MetaModifier))
            if plain and typed and typed.isprintable() and not self.saving:
                if event.type() == QEvent.Type.ShortcutOverride:
                    event.accept()          # the key is ours: no shortcut fires
                    return True
                self.note.setFocus(Qt.FocusReason.OtherFocusReason)
                self.note.insert(typed)
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if self.saving:          # nothing to change while it saves (the focus may have fallen on Cancel)
            return
        if key == Qt.Key.Key_Escape:    # Escape in the note or the list cancels
            self.close_form()
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):   # the list and the buttons pass Enter on to the form
            if self.focusWidget() is self.cancel:
                self.close_form()
            else:
                self.submit()
            return
        super().keyPressEvent(event)

    def close_form(self) -> None:
        self.item_ids, self.saving = (), False
        self.hide()
        self.sig_cancelled.emit()

    def finish(self) -> None:
        """Hides the form after its decision went through (not a cancellation)."""
        self.item_ids, self.saving = (), False
        self.hide()

    def ready_to_confirm(self) -> bool:
        return (not self.saving and bool(self.item_ids)
                and (self.reason.currentText() != OTHER or bool(self.note.text().strip())))

    def submit(self) -> None:
        if not self.isVisible() or not self.ready_to_confirm():
            return
        self.saving = True
        self.show_error("")
        self._refresh()
        self.sig_confirmed.emit(self.item_ids, self.approve, self.reason.currentText(), self.note.text().strip())

    def failed(self, message: str) -> None:
        self.saving = False
        self.show_error(message)
        self._refresh()
        self.reason.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_error(self, message: str) -> None:
        self._error = message
        self._refresh()

    def _refresh(self, *_args) -> None:
        editable = not self.saving
        self.reason.setEnabled(editable)
        self.note.setEnabled(editable)
        self.cancel.setEnabled(editable)        # a decision on its way cannot be called back
        self.confirm.setEnabled(self.ready_to_confirm())
        needs_note = self.reason.currentText() == OTHER and not self.note.text().strip()
        if self._error:
            self.hint.setText(f"<span style='{style.fg('bad')}'>{html_text(self._error)}</span>")
        elif self.saving:
            self.hint.setText("Saving the decision…" if len(self.item_ids) == 1
                              else f"Saving {len(self.item_ids)} decisions, one by one…")
        elif needs_note:
            self.hint.setText("“other” needs a note that says why.")
        else:
            self.hint.setText("↑↓ pick a reason, type a note, Enter confirms, Esc cancels. The decision is final "
                              "and goes into the audit trail under your name.")


class ApprovalsPanel(ShownMixin, EnginePanel):
    sig_pending_changed = Signal(int)       # how many items wait for an operator

    def __init__(self, service: EngineService, parent: QWidget | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(service, parent)
        self._clock = clock
        self._every_decision = False        # the status filter asked for older decisions than the first read
        self._deciding: tuple[int, ...] = ()    # items of the decision under way
        self._order_before: list[int] = []      # the view's item ids when it was confirmed (to find the next one)
        self._skipped: tuple[ReviewItem, ...] = ()
        self._detail_id: int | None = None      # the item the detail shows (its scroll position is kept on a redraw)
        self.model = ReviewModel(self, clock)
        self._fitting = Coalescer(lambda _ticks: self._fit_columns(), parent=self)
        self.proxy = ReviewFilterProxy(self.model, clock, self)

        self.summary = RichLabel()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter (/): words in the question, answer, agents, #id")
        self.search.setClearButtonEnabled(True)
        self.search.installEventFilter(self)
        self.status_filter = self._filter_combo([(s.value, s) for s in StatusFilter], "Which items: status")
        self.tier_filter = self._filter_combo(list(TIER_CHOICES), "Which items: risk tier")
        self.age_filter = self._filter_combo([(a.value, a) for a in AgeFilter], "Which items: time since queued")
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the queue again (decisions made with `main.py review` show up)")
        self.table = QueueTable()
        self.table.setModel(self.proxy)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        style.compact_rows(self.table)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(QUESTION_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)

        self.shift = PlainLabel()                # each reviewer's progress over the shift (engine.review.shift)
        self.shift.setWordWrap(True)
        self.selection = PlainLabel()            # "3 selected: 2 pending, 1 decided (skipped by A and R)"
        self.detail = SafeBrowser()
        self.detail.setPlaceholderText("Select a review item to see the answer, its candidates and their claims.")
        self.approve_button = QPushButton("Approve…")
        self.reject_button = QPushButton("Reject…")
        self.claim_button = QPushButton("Claim")     # hold the item for its lease, so a team reviews it once
        self.form = DecisionForm()
        self.message = RichLabel()          # toned_html: the decision's words escaped
        self.message.setWordWrap(True)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.summary, 1)
        top.addWidget(self.search, 1)
        for widget in (self.status_filter, self.tier_filter, self.age_filter, self.refresh_button):
            top.addWidget(widget)
        self.action_row = QWidget()          # the buttons and the last decision's message; the form replaces them
        buttons = QHBoxLayout(self.action_row)
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.approve_button)
        buttons.addWidget(self.reject_button)
        buttons.addWidget(self.claim_button)
        buttons.addWidget(self.message, 1)
        right = column(self.detail, self.selection, self.action_row, self.form, spacing=4)
        body = QSplitter(Qt.Orientation.Horizontal)
        body.addWidget(self.table)
        body.addWidget(right)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        body.setSizes([780, 500])
        body.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.shift)
        layout.addWidget(body, 1)
        QWidget.setTabOrder(self.search, self.status_filter)
        QWidget.setTabOrder(self.status_filter, self.tier_filter)
        QWidget.setTabOrder(self.tier_filter, self.age_filter)
        QWidget.setTabOrder(self.age_filter, self.table)

        self._age_timer = QTimer(self)
        self._age_timer.setInterval(AGE_REFRESH_MS)
        self._age_timer.timeout.connect(self.proxy.refresh_ages)
        self._age_timer.timeout.connect(self.model.refresh_ages)    # runs while the panel is shown

        selection = self.table.selectionModel()
        selection.currentRowChanged.connect(self._on_current_changed)
        selection.selectionChanged.connect(self._on_selection_changed)
        self.table.sig_escape.connect(self._cancel_form)
        self.approve_button.clicked.connect(lambda: self.open_form(approve=True))
        self.reject_button.clicked.connect(lambda: self.open_form(approve=False))
        self.refresh_button.clicked.connect(self.reload)
        self.claim_button.clicked.connect(self._toggle_claim)
        self.search.textChanged.connect(self._apply_filter)
        for combo in (self.status_filter, self.tier_filter, self.age_filter):
            combo.currentIndexChanged.connect(self._apply_filter)
        self.form.sig_confirmed.connect(self._on_confirmed)
        self.form.sig_cancelled.connect(self._form_cancelled)
        reviews = service.reviews
        reviews.sig_changed.connect(self.show_item)
        reviews.sig_loaded.connect(self.show_items)
        reviews.sig_shift.connect(self.show_shift)
        reviews.sig_failed.connect(self._on_failed)
        reviews.sig_decided_many.connect(self._on_decided_many)
        reviews.sig_many_failed.connect(self._on_many_failed)
        style.theme_signals().sig_changed.connect(self._on_theme_changed)
        for signal in (self.model.modelReset, self.model.rowsInserted, self.model.dataChanged):
            signal.connect(self._on_model_changed)
        for signal in (self.proxy.modelReset, self.proxy.rowsInserted, self.proxy.rowsRemoved, self.proxy.layoutChanged):
            signal.connect(self._on_view_changed)
        self._on_model_changed()
        if self._accepting:
            self.reload()

    def _filter_combo(self, choices: Iterable[tuple[str, object]], tip: str) -> QComboBox:
        combo = QComboBox()
        for text, value in choices:
            combo.addItem(text, value)
        combo.setToolTip(tip)
        return combo

    # --- items in --------------------------------------------------------------------------
    def reload(self) -> None:
        if self._accepting:
            self._service.reviews.load(every_decision=self._every_decision)

    def show_items(self, items: list[ReviewItem]) -> None:
        selected = [i.id for i in self.selected_items()]
        current = self.current_item()
        self.model.set_items(items)
        self._restore_selection(selected, current.id if current is not None else None)

    def show_shift(self, tally: ShiftTally) -> None:
        self.shift.setText(tally.text())
        self.shift.setToolTip(untrusted.tooltip(
            "Each reviewer's decisions, approvals toward a high-risk quorum that another closed or that still wait, "
            "items held now, and the median wait from arrival to their decision ([review] shift_h)"))

    def show_item(self, item: ReviewItem) -> None:
        """A new item, or a decision: the row is replaced in place; a new one is selected if nothing is.
        The last item of a decision under way moves the selection on to the next pending item."""
        had_selection = self.current_item() is not None
        self.model.upsert(item)
        if self._deciding == (item.id,) and not item.pending:        # one item decided through the form
            self._deciding = ()
            self.form.finish()
            self._form_closed()
            self._show_message(toned_html(STATUS_TONES[item.status], f"#{item.id} {decision_text(item)}"))
            self.select_next_pending_after(self._order_before, {item.id})
        elif (not item.pending and item.id in self.form.item_ids and not self.form.saving
              and item.id not in self._deciding):
            self._form_target_decided_elsewhere(item)
        elif not had_selection:
            self._select(self.proxy.row_of(item.id))
        current = self.current_item()
        if current is not None and current.id == item.id:
            self._show_detail(current)
        self.refresh_buttons()

    def _form_target_decided_elsewhere(self, item: ReviewItem) -> None:
        """Someone (the CLI, another console) decided an item the open form was about: the form closes."""
        self.form.finish()
        self._form_closed()
        self._show_message(toned_html("bad", f"#{item.id} was {decision_text(item)} meanwhile; nothing was saved"))

    # --- selection -------------------------------------------------------------------------
    def current_item(self) -> ReviewItem | None:
        index = self.table.currentIndex()
        return self.proxy.record(index.row()) if index.isValid() and index.row() < self.proxy.rowCount() else None

    def selected_items(self) -> list[ReviewItem]:
        """The selected rows' items in the view's order (the current one alone when no row is selected)."""
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        items = [self.proxy.record(row) for row in rows if row < self.proxy.rowCount()]
        if not items and self.current_item() is not None:
            items = [self.current_item()]
        return items

    def select_next(self) -> None:
        self._step(+1)

    def select_previous(self) -> None:
        self._step(-1)

    def extend_next(self) -> None:
        """Shift+J: the selection grows (or shrinks back) by the next row."""
        self.table.extend_selection(+1)

    def extend_previous(self) -> None:
        self.table.extend_selection(-1)

    def select_next_pending(self) -> bool:
        """The next pending item after the selected one (wrapping round); False when none waits."""
        rows = self.proxy.rowCount()
        start = self.table.currentIndex().row()
        for offset in range(1, rows + 1):
            row = (start + offset) % rows
            if self.proxy.record(row).pending:
                self._select(row)
                return True
        return False

    def select_next_pending_after(self, order: list[int], done: set[int]) -> bool:
        """After a decision: the first pending item that followed the decided ones in `order` (the view as
        it was), wrapping round, else any pending item in view. False (selection unchanged) when none waits."""
        last = max((order.index(i) for i in done if i in order), default=-1)
        for item_id in order[last + 1:] + order[:last + 1]:
            row = self.proxy.row_of(item_id)
            if item_id not in done and row >= 0 and self.proxy.record(row).pending:
                self._select(row)
                return True
        row = next((r for r in range(self.proxy.rowCount()) if self.proxy.record(r).pending), -1)
        if row >= 0:
            self._select(row)
        return row >= 0

    def select_item(self, item_id: int) -> bool:
        """Selects the item, widening the filter to every item if it hides it."""
        if self.proxy.row_of(item_id) < 0 and self.model.row_of(item_id) >= 0:
            self.clear_filters(StatusFilter.ALL)
        row = self.proxy.row_of(item_id)
        self._select(row)
        return row >= 0

    def select_items(self, item_ids: Iterable[int]) -> None:
        """Exactly these items selected (those in view); the first of them current."""
        rows = sorted(r for r in (self.proxy.row_of(i) for i in item_ids) if r >= 0)
        if not rows:
            return
        self._select(rows[0])
        selection = QItemSelection()
        for row in rows:
            selection.select(self.proxy.index(row, 0), self.proxy.index(row, self.proxy.columnCount() - 1))
        self.table.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def _step(self, delta: int) -> None:
        row = self.table.currentIndex().row()
        self._select(min(max(row + delta, 0), self.proxy.rowCount() - 1) if row >= 0 else 0)

    def _select(self, row: int) -> None:
        if 0 <= row < self.proxy.rowCount():
            index = self.proxy.index(row, 0)
            self.table.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index)

    def _restore_selection(self, selected: list[int], current: int | None) -> None:
        if selected:
            self.select_items(selected)
        if current is not None and self.proxy.row_of(current) >= 0 and len(selected) <= 1:
            self._select(self.proxy.row_of(current))
        if self.current_item() is None and self.proxy.rowCount():
            self._select(0)

    # --- focus and filters -----------------------------------------------------------------
    def focus_target(self) -> QWidget:
        return self.table

    def focus_filter(self) -> None:
        """"/": the cursor in the text filter, its text selected (Enter, Escape or Down go back to the table)."""
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def review_filter(self) -> ReviewFilter:
        tier = self.tier_filter.currentData()       # Qt hands a str enum back as its str
        return ReviewFilter(self.status_filter.currentData(), RiskTier(tier) if tier else None,
                            self.age_filter.currentData(), self.search.text().strip())

    def set_review_filter(self, review_filter: ReviewFilter) -> None:
        """Sets the filter bar (and so the view) to `review_filter`."""
        for combo, value in ((self.status_filter, review_filter.status), (self.tier_filter, review_filter.tier),
                             (self.age_filter, review_filter.age)):
            combo.blockSignals(True)
            combo.setCurrentIndex(combo.findData(value))
            combo.blockSignals(False)
        self.search.blockSignals(True)
        self.search.setText(review_filter.text)
        self.search.blockSignals(False)
        self._apply_filter()

    def clear_filters(self, status: StatusFilter = StatusFilter.PENDING_AND_RECENT) -> None:
        self.set_review_filter(ReviewFilter(status=status))

    def _apply_filter(self, *_args) -> None:
        review_filter = self.review_filter()
        if review_filter.status.reads_every_decision and not self._every_decision:
            self._every_decision = True
            self.reload()
        selected = [i.id for i in self.selected_items()]
        current = self.current_item()
        self.proxy.set_filter(review_filter)
        self._restore_selection(selected, current.id if current is not None else None)
        self._on_model_changed()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the text filter, Enter, Escape and Down give the focus back to the table."""
        if watched is self.search and event.type() == QEvent.Type.KeyPress:
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape, Qt.Key.Key_Down):
                self.table.setFocus(Qt.FocusReason.OtherFocusReason)
                return True
        return super().eventFilter(watched, event)

    # --- deciding --------------------------------------------------------------------------
    def open_form(self, approve: bool) -> None:
        """A / R: the form for every pending item selected (decided ones are skipped and named)."""
        if not self._accepting or self.form.saving:
            return
        selected = self.selected_items()
        pending = [i for i in selected if i.pending]
        skipped = [i for i in selected if not i.pending]
        if not pending:
            if skipped:
                self._show_message(toned_html("muted", "Nothing to decide: " + "; ".join(
                    f"#{i.id} is {decision_text(i)}" for i in skipped[:3]) + ("…" if len(skipped) > 3 else "")))
            return
        self._skipped = tuple(skipped)
        self._show_message("")
        self.action_row.hide()
        self.form.open_for(pending, approve, skipped)
        self.refresh_buttons()

    def _cancel_form(self) -> None:
        if self.form.isVisible() and not self.form.saving:
            self.form.close_form()

    def _form_cancelled(self) -> None:
        self._form_closed()
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)

    def _form_closed(self) -> None:
        self.action_row.show()
        self.refresh_buttons()

    def _on_confirmed(self, item_ids: tuple[int, ...], approve: bool, reason: str, note: str) -> None:
        self._deciding = tuple(item_ids)
        self._order_before = [i.id for i in self.proxy.records()]
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)     # A / R work again once the decision is in
        reviews = self._service.reviews
        started = (reviews.decide(item_ids[0], approve, reason, note) if len(item_ids) == 1
                   else reviews.decide_many(item_ids, approve, reason, note))
        if started is None:
            self._deciding = ()      # refused at once: sig_failed / sig_many_failed told the form why
        self.refresh_buttons()

    def _on_failed(self, item_id: int, message: str) -> None:
        if self.form.isVisible() and self.form.item_ids == (item_id,):
            self._deciding = ()
            self.form.failed(message)
        else:
            self._show_message(toned_html("bad", f"#{item_id}: {message}"))
        self.refresh_buttons()

    def _on_decided_many(self, outcomes: tuple[DecisionOutcome, ...]) -> None:
        ids = {int(o.item_id) for o in outcomes}
        if not ids or ids != set(self._deciding):
            return          # another caller's bulk decision: its items were shown one by one
        approve = self.form.approve
        self._deciding = ()
        self.form.finish()
        self._form_closed()
        failed = [o for o in outcomes if not o.decided]
        text = outcomes_text(outcomes, approve, self._skipped)
        self._show_message(toned_html("bad" if failed else "good" if approve else "bad", text))
        self._skipped = ()
        if failed:
            self.select_items(int(o.item_id) for o in failed)
        else:
            self.select_next_pending_after(self._order_before, ids)
        self.refresh_buttons()

    def _on_many_failed(self, item_ids: tuple[int, ...], message: str) -> None:
        if self.form.isVisible() and set(self.form.item_ids) == set(item_ids):
            self._deciding = ()
            self.form.failed(message)
        else:
            self._show_message(toned_html("bad", f"{ids_text(item_ids)}: {message}"))
        self.refresh_buttons()

    # --- state -----------------------------------------------------------------------------
    def on_engine_ready(self) -> None:
        self._on_model_changed()        # "deciding as" the role signed in, or "reading as" on a viewer's desk
        self.reload()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        item = self.proxy.record(current.row()) if current.isValid() and current.row() < self.proxy.rowCount() else None
        self._show_detail(item)
        self.refresh_buttons()

    def _on_selection_changed(self, *_args) -> None:
        """The form is about the items selected when it opened: another choice of items closes it."""
        pending = tuple(i.id for i in self.selected_items() if i.pending)
        if self.form.isVisible() and not self.form.saving and pending != self.form.item_ids:
            self.form.close_form()
            self._show_message("")
        self._refresh_selection_line()
        self.refresh_buttons()

    def _refresh_selection_line(self) -> None:
        selected = self.selected_items()
        pending = sum(i.pending for i in selected)
        decided = len(selected) - pending
        if len(selected) > 1:
            skipped = f", {decided} decided (A and R skip them)" if decided else ""
            self.selection.setText(f"{len(selected)} selected: {pending} pending{skipped}. "
                                   f"The detail shows the current one.")
            self.selection.show()
        else:
            self.selection.hide()

    def _show_detail(self, item: ReviewItem | None) -> None:
        if item is None:
            self.detail.clear()
            return
        same = self._detail_id == item.id
        scroll = self.detail.verticalScrollBar().value() if same else 0
        self.detail.setHtml(item_html(item, self._clock()))
        self.detail.verticalScrollBar().setValue(scroll)
        self._detail_id = item.id

    def _on_theme_changed(self, _scheme) -> None:
        self._show_detail(self.current_item())
        self.form._refresh()

    def _show_message(self, text: str) -> None:
        self.message.setText(text)

    def _toggle_claim(self) -> None:
        item = self.current_item()
        if item is not None and item.pending:
            self._service.reviews.claim(item.id, hold=item.holder(self._clock()) != self._service.operator)

    def _refresh_claim_button(self, item: ReviewItem | None) -> None:
        holder = item.holder(self._clock()) if item is not None else ""
        mine = holder == self._service.operator
        self.claim_button.setText("Let go" if mine else "Claim")
        self.claim_button.setEnabled(self._accepting and not self._service.reads_only and item is not None
                                     and item.pending and (not holder or mine) and not self.form.isVisible())
        if item is None or not item.pending:
            tip = "Select a pending item to claim it"
        elif holder and not mine:
            tip = claim_text(item, self._clock())
        elif mine:
            tip = "Let go of your claim, so another operator may take the item"
        else:
            tip = "Hold this item for 15 minutes: nobody else decides it meanwhile"
        self.claim_button.setToolTip(untrusted.tooltip(tip))

    def refresh_buttons(self, *_args) -> None:
        selected = self.selected_items()
        self._refresh_claim_button(self.current_item())
        now = self._clock()
        held = [i for i in selected if i.pending and i.holder(now) not in ("", self._service.operator)]
        pending = [i for i in selected if i.pending and i not in held]
        can = self._accepting and bool(pending) and not self.form.isVisible() and not self._service.reads_only
        self.approve_button.setEnabled(can)
        self.reject_button.setEnabled(can)
        several = f" {len(pending)}" if len(pending) > 1 else ""
        self.approve_button.setText(f"Approve{several}…")
        self.reject_button.setText(f"Reject{several}…")
        self.refresh_button.setEnabled(self._accepting)
        if held and not pending:
            tip = claim_text(held[0], now)
        elif selected and not pending:
            tip = f"Already decided: {decision_text(selected[0])}"
        elif not self._accepting:
            tip = "Waiting for the engine"
        elif self._service.reads_only:
            tip = self._service.viewer_text()
        else:
            tip = f"Decide as {self._service.operator}"
        self.approve_button.setToolTip(untrusted.tooltip(tip))
        self.reject_button.setToolTip(untrusted.tooltip(tip))

    def _on_model_changed(self, *_args) -> None:
        pending = self.model.count(ReviewStatus.PENDING)
        decided = self.model.rowCount() - pending
        pending_shown = self.proxy.count(ReviewStatus.PENDING)
        decided_shown = self.proxy.rowCount() - pending_shown
        shown_p = f" ({pending_shown} shown)" if pending_shown != pending else ""
        shown_d = f" ({decided_shown} shown)" if decided_shown != decided else ""
        acting = "reading as" if self._service.reads_only else "deciding as"
        self.summary.setText(f"<b>{pending} pending</b>{shown_p} · {decided} decided{shown_d} · {acting} "
                             f"<b>{html_text(self._service.operator)}</b>")
        self._fitting.add(True)             # once per burst of new items, not per item
        self.sig_pending_changed.emit(pending)

    def _on_view_changed(self, *_args) -> None:
        """Rows came into or went out of view: the counts, and a current item if the old one went."""
        if self.current_item() is None and self.proxy.rowCount():
            QTimer.singleShot(0, self, self._select_something)    # after the view has settled
        self._on_model_changed()

    def _select_something(self) -> None:
        if self.current_item() is None and self.proxy.rowCount():
            self._select(0)

    def _fit_columns(self) -> None:
        header = self.table.horizontalHeader()
        for column_index in range(self.proxy.columnCount()):
            if column_index == QUESTION_COLUMN:
                continue
            width = max(self.table.sizeHintForColumn(column_index), header.sectionSizeHint(column_index))
            header.resizeSection(column_index, min(width, MAX_COLUMN_WIDTH.get(column_index, 200)))

    def on_shown(self) -> None:
        self.model.refresh_ages()
        self.proxy.refresh_ages()
        self._age_timer.start()

    def on_hidden(self) -> None:
        self._age_timer.stop()

    def needs_attention(self) -> bool:
        return self.model.count(ReviewStatus.PENDING) > 0

    def tab_title(self) -> str:
        pending = self.model.count(ReviewStatus.PENDING)
        return f"Approvals ({pending} pending)" if pending else "Approvals"


def toned_html(tone: str, text: str) -> str:
    """Plain `text`, escaped, in a tone: for the panel's message line."""
    return f"<span style='{style.fg(tone)}'>{html_text(text)}</span>"
