"""Cascade panel: what the cascade-hallucination monitor (CHARM) saw at every stage boundary of a question.

The plot (pyqtgraph) shows the selected question's stages left to right ("1 formulate", "2 retrieve",
"4 retrieve·h2" for a second hop, "↻" for a re-run after a mitigation) with four bars each: the three
monitors' anomaly scores (SFV fact verification, CSCT drift, CPM confidence inflation) and their weighted
sum, the CRT p. θ, the p at which the trigger fires, is a dashed red line; a stage where it fired is
tinted red with a red ▲ above it. Beside the plot: the outcome (cascade type, mitigation, resolved or
halted for review) and its reason, and every stage's scores and reasons, the selected one spelled out.

Below, a strip of recent questions, newest on top. A new question is shown live, its bars growing as
its CascadeScored events arrive, unless the operator picked an older row; picking the newest row again
follows new questions once more.

Under demo traffic a dozen events a second arrive (a question's start, a score per stage boundary, its
outcome, its answer): the records take them at once, but the strip's rows and the plot are redrawn at most
every REDRAW_MS (console/batch.py Coalescer). A question's outcome, what the operator picks and every read of
what is drawn (bar_heights, stage_labels, fired_positions) draw what is pending at once.

Reasons, questions, passage ids and agent names come from agents and documents: they are shown as plain
text only (PlainText labels, plain table data), never as rich text or links.
"""
from __future__ import annotations

import time
from typing import Callable

import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, QPointF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QSplitter,
                               QStackedWidget, QTableView, QVBoxLayout, QWidget)

from engine import Answer, CascadeOutcome, CascadeResolved, CascadeScored, StageScore

from .. import style
from ..batch import Coalescer
from ..layout import column, read_only_table, splitter
from ..stage_text import outcome_text
from ..table_model import RecordTableModel
from ..untrusted import PlainLabel, PlainPane
from .cascade_model import (SERIES, STAGE_COLUMNS, STAGE_REASONS_COLUMN, STRIP_COLUMNS, STRIP_QUESTION_COLUMN,
                            QuestionCascade, StageRow, question_text, stage_detail, tick_forms)
from .trust import ElidedLabel

THETA_DEFAULT = 0.55          # the engine's CRT threshold until its settings carry one (see set_threshold)
MAX_QUESTIONS = 50            # rows the strip keeps; older questions drop off the bottom
EMPTY_HINT = "Ask a question: each stage's SFV, CSCT, CPM and CRT scores appear here."
WAITING_HINT = "Waiting for the cascade monitor to score this question's first stage…"
UNWATCHED_HINT = "The cascade monitor did not watch this answer: there are no stage scores to show."
Y_BOTTOM = -0.06              # a little below 0, or the 0.0 tick label is dropped on a short plot
Y_TOP = 1.12                  # the view's top: room above 1.0 for the fired markers
MARK_Y = 1.055                # where a fired stage's ▲ sits
MIN_SLOTS = 5                 # a short trajectory keeps slim bars; stages fill in from the left
LABEL_ROOM_PX = 60            # empty room right of the last stage, for the θ label
BAR_WIDTH = 0.8 / len(SERIES)  # a stage's bars fill 80% of its slot
REDRAW_MS = 200               # the strip and the plot are redrawn at most this often while events stream in
PLOT = "plot"                 # the batch's key for "redraw the selected question"


def _swatch(draw: Callable[[QPainter], None], width: int = 18) -> QPixmap:
    """A small legend sample: `draw` paints it on a transparent 18×12 pixmap."""
    pixmap = QPixmap(width, 12)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    draw(painter)
    painter.end()
    return pixmap


def bar_swatch(colour: QColor) -> QPixmap:
    def draw(painter: QPainter) -> None:
        painter.setPen(QPen(colour.darker(130)))
        painter.setBrush(colour)
        painter.drawRect(3, 1, 12, 10)
    return _swatch(draw)


def theta_swatch() -> QPixmap:
    def draw(painter: QPainter) -> None:
        pen = QPen(style.tones().bad, 2)
        pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.drawLine(0, 6, 18, 6)
    return _swatch(draw)


def fired_swatch() -> QPixmap:
    def draw(painter: QPainter) -> None:
        painter.setPen(QPen(style.tones().bad))
        painter.setBrush(style.tones().bad)
        painter.drawPolygon(QPolygonF([QPointF(9, 1), QPointF(15, 11), QPointF(3, 11)]))
    return _swatch(draw)


def _legend_entry(layout: QHBoxLayout, pixmap: QPixmap, text: str, tip: str) -> QLabel:
    """Adds a sample and its text to `layout`; returns the text's label."""
    icon, label = QLabel(), PlainLabel(text)
    icon.setPixmap(pixmap)
    for widget in (icon, label):
        widget.setToolTip(tip)
    layout.addWidget(icon)
    layout.addWidget(label)
    layout.addSpacing(12)
    return label


def _plain_label() -> QLabel:
    label = PlainLabel()
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _table(model: RecordTableModel) -> QTableView:
    table = read_only_table(model)
    table.setShowGrid(False)
    style.compact_rows(table)
    return table


class CascadePanel(QWidget):
    """Fed by the main window: start_question (sig_question_started), add_score (sig_cascade_scored), resolve
    (sig_cascade_resolved), add_answer (sig_answer); show_answer shows the cascade of an answer the operator
    picked; set_threshold takes θ from the engine's settings."""

    def __init__(self, theta: float = THETA_DEFAULT, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theta = theta
        self._records: dict[str, QuestionCascade] = {}
        self.selected: str | None = None        # trace id of the question the plot shows
        self._follow_latest = True               # False while the operator looks at an older question
        self._quiet = 0                          # > 0 while the panel itself moves the strip's selection
        self._stage_pinned: tuple[int, int] | None = None   # the stage row the operator picked
        self._tick_scores: list[StageScore] = []           # the stages the x axis labels
        # Keys: PLOT, or a trace id whose strip row changed.
        self._batch: Coalescer[str] = Coalescer(self._draw_batch, REDRAW_MS, self)

        self.title = ElidedLabel("Cascade monitor")
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))

        self._build_plot()
        self.hint = PlainLabel(EMPTY_HINT)
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setFont(style.scaled_font(self.font(), 1.1))
        self.hint.setStyleSheet(f"QLabel {{ {style.fg('muted')}; {style.bg('base')}; border: 1px solid {style.tones().grid.name()}; }}")
        self.plot_stack = QStackedWidget()
        self.plot_stack.addWidget(self.hint)
        self.plot_stack.addWidget(self.plot)
        plot_side = column(self.plot_stack, self._build_legend(), spacing=4)

        info = self._build_info()
        self._build_strip()

        top = splitter(Qt.Orientation.Horizontal, (plot_side, 1), (info, 1), sizes=[660, 540])
        body = QSplitter(Qt.Orientation.Vertical)
        body.addWidget(top)
        body.addWidget(self.strip)
        body.setStretchFactor(0, 1)
        body.setStretchFactor(1, 0)
        body.setSizes([500, 140])
        body.setChildrenCollapsible(False)
        self.body = body
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addWidget(body, 1)

        self.strip.selectionModel().currentRowChanged.connect(self._on_strip_current)
        self.stages_table.selectionModel().currentRowChanged.connect(self._on_stage_current)
        self._redraw()

    def _build_info(self) -> QWidget:
        """Beside the plot: the outcome and its reason, every stage's scores, the selected stage spelled out."""
        self.outcome_label = _plain_label()
        self.outcome_label.setFont(style.scaled_font(self.font(), 1.05, bold=True))
        self.reason_label = _plain_label()
        self.stages_model: RecordTableModel[StageRow] = RecordTableModel(
            STAGE_COLUMNS, self, row_background=lambda r: style.tones().bad_tint if r.score.fired else None)
        self.stages_table = _table(self.stages_model)
        stage_header = self.stages_table.horizontalHeader()
        stage_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # Reasons take what is left, elided: the selected stage's are spelled out below the table.
        stage_header.setSectionResizeMode(STAGE_REASONS_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.stage_pane = PlainPane()          # the selected stage spelled out: plain text, scrolls
        self.stage_pane.setPlaceholderText("Select a stage to read its scores and reasons.")
        stages = QSplitter(Qt.Orientation.Vertical)
        stages.addWidget(self.stages_table)
        stages.addWidget(self.stage_pane)
        stages.setSizes([220, 130])
        stages.setChildrenCollapsible(False)
        info = QWidget()
        info_layout = QVBoxLayout(info)
        info_layout.setContentsMargins(0, 0, 0, 0)
        info_layout.setSpacing(4)
        info_layout.addWidget(self.outcome_label)
        info_layout.addWidget(self.reason_label)
        info_layout.addWidget(stages, 1)
        return info

    def _build_strip(self) -> None:
        """The recent questions, newest on top; the question column takes the slack and elides."""
        self.strip_model: RecordTableModel[QuestionCascade] = RecordTableModel(STRIP_COLUMNS, self)
        self.strip = _table(self.strip_model)
        strip_header = self.strip.horizontalHeader()
        strip_header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        strip_header.setSectionResizeMode(STRIP_QUESTION_COLUMN, QHeaderView.ResizeMode.Stretch)
        # Columns fit the rows in sight, not all MAX_QUESTIONS: each change re-measures them.
        strip_header.setResizeContentsPrecision(0)
        self.strip.setTextElideMode(Qt.TextElideMode.ElideRight)

    def _build_plot(self) -> None:
        self.plot = pg.PlotWidget(background=style.tones().base)
        self.plot.setMinimumHeight(140)      # the window must fit a 1280×800 screen with every dock docked
        item = self.plot.getPlotItem()
        item.setMenuEnabled(False)
        item.hideButtons()
        item.showGrid(x=False, y=True, alpha=0.15)
        self.tick_font = style.scaled_font(self.plot.font(), 0.9)      # stage names fit under slimmer groups
        for name in ("left", "bottom"):
            axis = item.getAxis(name)
            axis.setStyle(tickFont=self.tick_font)
        item.getAxis("left").setLabel("Score")
        style.style_plot(self.plot)
        # Room for two-line stage labels from the start: grown on demand, the axis clips them until a repaint.
        bottom = item.getAxis("bottom")
        bottom.setHeight(2 * QFontMetrics(self.tick_font).lineSpacing() + bottom.style["tickTextOffset"][1]
                         + max(0, bottom.style["tickLength"]) + 4)
        # 0 to 1 only: the band above 1 holds the fired markers and must not read as a score.
        item.getAxis("left").setTicks([[(v / 5, f"{v / 5:.1f}") for v in range(6)]])
        self.view_box = item.getViewBox()
        self.view_box.setMouseEnabled(x=False, y=False)
        self.view_box.setYRange(Y_BOTTOM, Y_TOP, padding=0)
        self.view_box.sigResized.connect(self._fit_x)
        self.fired_tint = pg.BarGraphItem(x=[], height=[], width=0.96, brush=pg.mkBrush(style.tones().bad_tint),
                                          pen=pg.mkPen(None))
        self.fired_tint.setZValue(-10)
        item.addItem(self.fired_tint)
        self.bars: dict[str, pg.BarGraphItem] = {}
        for series in SERIES:
            bar = pg.BarGraphItem(x=[], height=[], width=BAR_WIDTH * 0.92, brush=pg.mkBrush(series.colour),
                                  pen=pg.mkPen(QColor(series.colour).darker(130)), name=series.name)
            item.addItem(bar)
            self.bars[series.name] = bar
        self.fired_marks = pg.ScatterPlotItem(symbol="t1", size=14, pen=pg.mkPen(style.tones().bad),
                                              brush=pg.mkBrush(style.tones().bad))
        item.addItem(self.fired_marks)
        self.theta_line = pg.InfiniteLine(
            pos=self.theta, angle=0, movable=False, pen=pg.mkPen(style.tones().bad, width=1.5, style=Qt.PenStyle.DashLine),
            label=self._theta_text(),
            labelOpts={"position": 1.0, "anchors": [(1, 1), (1, 1)], "color": style.tones().bad,
                       "fill": pg.mkBrush(style.plot_tip_fill())})
        self.theta_line.setZValue(5)
        item.addItem(self.theta_line, ignoreBounds=True)
        style.theme_signals().sig_changed.connect(self._apply_theme)

    def _apply_theme(self, _scheme=None) -> None:
        """The scheme changed: axes, bars, markers and θ take its colours."""
        t = style.tones()
        style.style_plot(self.plot)
        self.fired_tint.setOpts(brush=pg.mkBrush(t.bad_tint))
        for series in SERIES:
            self.bars[series.name].setOpts(brush=pg.mkBrush(series.colour), pen=pg.mkPen(series.colour.darker(130)))
        self.fired_marks.setPen(pg.mkPen(t.bad))
        self.fired_marks.setBrush(pg.mkBrush(t.bad))
        self.theta_line.setPen(pg.mkPen(t.bad, width=1.5, style=Qt.PenStyle.DashLine))
        self.theta_line.label.setColor(t.bad)
        self.theta_line.label.fill = pg.mkBrush(style.plot_tip_fill())
        self.hint.setStyleSheet(f"QLabel {{ {style.fg('muted')}; {style.bg('base')}; border: 1px solid {t.grid.name()}; }}")

    def _build_legend(self) -> QWidget:
        """Under the plot, not on it: a legend inside the view would cover bars near 1."""
        legend = QWidget()
        layout = QHBoxLayout(legend)
        layout.setContentsMargins(4, 0, 0, 0)
        layout.setSpacing(4)
        for series in SERIES:
            _legend_entry(layout, bar_swatch(QColor(series.colour)), series.name, f"{series.name}: {series.meaning}")
        self.theta_legend = _legend_entry(layout, theta_swatch(), self._theta_text(),
                                          "The CRT threshold: a stage fires when its p reaches θ")
        _legend_entry(layout, fired_swatch(), "fired", "The trigger fired at this stage (its group is tinted red)")
        layout.addStretch(1)
        return legend

    def _theta_text(self) -> str:
        return f"θ {self.theta:.2f}"

    # --- events in -------------------------------------------------------------------------
    def start_question(self, trace_id: str, question: str) -> None:
        """A question the engine took (sig_question_started): its row appears before its first stage is scored."""
        record = self._record(trace_id, time.time())
        record.question = question
        self._changed(record)

    def add_score(self, event: CascadeScored) -> None:
        """One stage boundary scored (sig_cascade_scored): the question's bars grow by one group."""
        record = self._record(event.trace_id, event.at)
        record.add_score(event.score)
        self._changed(record)

    def resolve(self, event: CascadeResolved) -> None:
        """The question's outcome (sig_cascade_resolved): type, mitigation, resolved or halted."""
        record = self._record(event.trace_id, event.at)
        if event.question:
            record.question = event.question
        self._merge_outcome(record, event.outcome)
        self._changed(record)
        if record.trace_id == self.selected:
            self.flush()                   # the outcome is what the operator waits for: at once

    def add_answer(self, answer: Answer) -> None:
        """An answer (sig_answer): its stage results (their confidences) and its cascade join its row."""
        record = self._record(answer.trace_id, answer.asked_at or time.time())
        record.question = answer.question or record.question
        record.stages = tuple(answer.stages)
        record.answered = True
        if answer.cascade is not None:
            self._merge_outcome(record, answer.cascade)
        self._changed(record)

    def show_answer(self, answer: Answer) -> None:
        """The cascade of the answer the operator picked: added if new, and shown at once."""
        self.add_answer(answer)
        self.select_question(answer.trace_id)
        self.flush()

    def set_threshold(self, theta: float) -> None:
        """θ as the engine's settings have it (the line and its labels; the engine decides what fired)."""
        self.theta = float(theta)
        self.theta_line.setValue(self.theta)
        self.theta_line.label.setFormat(self._theta_text())
        self.theta_legend.setText(self._theta_text())
        self._redraw_now()                 # the outcome line and the stage pane quote θ

    @staticmethod
    def _merge_outcome(record: QuestionCascade, outcome: CascadeOutcome) -> None:
        record.outcome = outcome
        for score in outcome.scores:       # fills in any boundary whose live event was missed
            record.add_score(score)

    # --- records and the strip -------------------------------------------------------------
    def _record(self, trace_id: str, at: float) -> QuestionCascade:
        """The question's record; a new one goes on top of the strip (and is shown, when following live)."""
        record = self._records.get(trace_id)
        if record is not None:
            return record
        record = QuestionCascade(trace_id, at=at)
        self._records[trace_id] = record
        self._quiet += 1                   # rows moving under the selection are not the operator's doing
        try:
            self.strip_model.insert_record(0, record)
            dropped_selected = False
            while self.strip_model.rowCount() > MAX_QUESTIONS:
                old = self.strip_model.remove_record(self.strip_model.rowCount() - 1)
                del self._records[old.trace_id]
                dropped_selected |= old.trace_id == self.selected
        finally:
            self._quiet -= 1
        if self._follow_latest or dropped_selected:
            self._follow_latest = True
            self._select_row(0, at_once=False)     # a live question: drawn with the next batch
        return record

    def _changed(self, record: QuestionCascade) -> None:
        """The record changed: its strip row and, when it is the one shown, the plot, with the next batch."""
        self._batch.put(record.trace_id, record.trace_id)
        if record.trace_id == self.selected:
            self._batch.put(PLOT, PLOT)

    def flush(self) -> None:
        """Draws at once what waits for the next batch (reads of what is drawn call it)."""
        self._batch.flush_now()

    def _draw_batch(self, keys: list[str]) -> None:
        rows = sorted(r for r in (self.row_of(k) for k in keys if k != PLOT) if r >= 0)
        if rows:       # one notice for the rows in between: each one makes the header measure its columns
            last = len(STRIP_COLUMNS) - 1
            self.strip_model.dataChanged.emit(self.strip_model.index(rows[0], 0), self.strip_model.index(rows[-1], last))
        if PLOT in keys:
            self._redraw()

    def _redraw_now(self) -> None:
        """The plot at once, with whatever else waited for the batch."""
        self._batch.put(PLOT, PLOT)
        self._batch.flush_now()

    def row_of(self, trace_id: str) -> int:
        return next((r for r, rec in enumerate(self.strip_model.records()) if rec.trace_id == trace_id), -1)

    def select_question(self, trace_id: str) -> bool:
        """Shows a question of the strip, as if the operator picked its row; False if it is not there."""
        row = self.row_of(trace_id)
        if row < 0:
            return False
        self._follow_latest = row == 0
        self._select_row(row)
        return True

    def _select_row(self, row: int, at_once: bool = True) -> None:
        self._quiet += 1
        try:
            self.strip.setCurrentIndex(self.strip_model.index(row, 0))
        finally:
            self._quiet -= 1
        self._show(self.strip_model.record(row).trace_id, at_once)

    def _on_strip_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._quiet or not current.isValid():
            return
        self._follow_latest = current.row() == 0       # the newest row: keep following new questions
        self._show(self.strip_model.record(current.row()).trace_id)

    def _show(self, trace_id: str, at_once: bool = True) -> None:
        if trace_id != self.selected:
            self._stage_pinned = None
        self.selected = trace_id
        if at_once:
            self._redraw_now()
        else:
            self._batch.put(PLOT, PLOT)

    # --- reads (tests and the main window) -------------------------------------------------
    def questions(self) -> tuple[QuestionCascade, ...]:
        """The strip's questions, newest first."""
        return self.strip_model.records()

    def record(self, trace_id: str) -> QuestionCascade | None:
        return self._records.get(trace_id)

    def following_latest(self) -> bool:
        return self._follow_latest

    def bar_heights(self) -> dict[str, list[float]]:
        """What each series' bars show for the selected question, stage by stage."""
        self.flush()
        return {name: [float(h) for h in bar.opts["height"]] for name, bar in self.bars.items()}

    def stage_labels(self) -> list[str]:
        """The x axis's labels, stage by stage, in their one-line form ('4 retrieve·h2 ↻')."""
        self.flush()
        return [tick_forms(s)[0] for s in self._tick_scores]

    def fired_positions(self) -> list[int]:
        """The groups (0-based, as plotted) marked as fired."""
        self.flush()
        return [int(round(x)) for x in self.fired_marks.getData()[0]]

    def halted_count(self) -> int:
        """Questions in the strip whose mitigation failed: their answers wait for review."""
        return sum(r.halted for r in self._records.values())

    def needs_attention(self) -> bool:
        return self.halted_count() > 0

    def tab_title(self) -> str:
        halted = self.halted_count()
        return f"Cascade ({halted} halted)" if halted else "Cascade"

    # --- drawing ---------------------------------------------------------------------------
    def _redraw(self) -> None:
        record = self._records.get(self.selected) if self.selected else None
        scores = list(record.scores) if record is not None else []
        self._draw_bars(scores)
        if record is None:
            self.title.set_full_text("Cascade monitor")
            self.hint.setText(EMPTY_HINT)
        else:
            self.title.set_full_text(f"Cascade — {question_text(record)}")
            unwatched = record.answered and record.outcome is None
            self.hint.setText(UNWATCHED_HINT if unwatched else WAITING_HINT)
        self.plot_stack.setCurrentWidget(self.plot if scores else self.hint)
        self._refresh_outcome(record)
        self._refresh_stages(record)

    def _draw_bars(self, scores: list[StageScore]) -> None:
        positions = list(range(len(scores)))
        for number, series in enumerate(SERIES):
            offset = (number - (len(SERIES) - 1) / 2) * BAR_WIDTH
            self.bars[series.name].setOpts(x=[x + offset for x in positions],
                                           height=[series.value(s) for s in scores])
        fired = [x for x, s in zip(positions, scores) if s.fired]
        self.fired_tint.setOpts(x=fired, y0=Y_BOTTOM, height=[Y_TOP - Y_BOTTOM] * len(fired))
        self.fired_marks.setData(x=fired, y=[MARK_Y] * len(fired))
        self._tick_scores = scores
        self._fit_x()

    def _fit_x(self) -> None:
        """The x range (every stage, then LABEL_ROOM_PX for the θ label) and the x labels in the widest form of
        tick_forms that fits under every stage. Again on every resize: both depend on the plot's width."""
        slots = max(len(self._tick_scores), MIN_SLOTS)
        width = self.view_box.width()
        slot_px = (width - LABEL_ROOM_PX) / slots if width > 2 * LABEL_ROOM_PX else 80.0
        self.view_box.setXRange(-0.5, slots - 0.5 + LABEL_ROOM_PX / slot_px, padding=0)
        axis = self.plot.getPlotItem().getAxis("bottom")
        room = slot_px - 8                                   # a gap between neighbouring labels
        metrics = QFontMetrics(self.tick_font)
        forms = [tick_forms(s) for s in self._tick_scores]
        chosen = next((level for level in range(2)
                       if all(max(metrics.horizontalAdvance(line) for line in f[level].split("\n")) <= room
                              for f in forms)), 2)
        axis.setTicks([[(x, f[chosen]) for x, f in enumerate(forms)]])

    def _refresh_outcome(self, record: QuestionCascade | None) -> None:
        outcome = record.outcome if record is not None else None
        if record is None:
            text, colour = "", style.tones().muted
        elif outcome is None:
            text = ("Not watched by the cascade monitor" if record.answered
                    else f"Running: {len(record.scores)} stage(s) scored so far")
            colour = style.tones().muted
        elif not outcome.fired:
            text, colour = f"✓ No cascade: every stage stayed below {self._theta_text()}", style.tones().good
        else:
            text, colour = f"⚠ {outcome_text(outcome)}", style.tones().bad if outcome.halted else style.tones().warn
        self.outcome_label.setText(text)
        self.outcome_label.setStyleSheet(f"color: {colour.name()}")
        self.outcome_label.setVisible(bool(text))
        reason = outcome.reason if outcome is not None else ""
        self.reason_label.setText(reason)
        self.reason_label.setVisible(bool(reason))

    def _refresh_stages(self, record: QuestionCascade | None) -> None:
        rows = [StageRow(s, record.confidence(s)) for s in record.scores] if record is not None else []
        self._quiet += 1
        try:
            self.stages_model.set_records(rows)
            keys = [r.key for r in rows]
            if self._stage_pinned in keys:
                chosen = keys.index(self._stage_pinned)
            else:      # the first stage that fired, else the one closest to firing
                chosen = next((i for i, r in enumerate(rows) if r.score.fired),
                              max(range(len(rows)), key=lambda i: rows[i].score.p, default=-1))
            if chosen >= 0:
                self.stages_table.setCurrentIndex(self.stages_model.index(chosen, 0))
        finally:
            self._quiet -= 1
        self._refresh_stage_detail()

    def _on_stage_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._quiet or not current.isValid():
            return
        self._stage_pinned = self.stages_model.record(current.row()).key
        self._refresh_stage_detail()

    def _refresh_stage_detail(self) -> None:
        index = self.stages_table.currentIndex()
        if index.isValid() and index.row() < self.stages_model.rowCount():
            self.stage_pane.setPlainText(stage_detail(self.stages_model.record(index.row()), self.theta))
        else:
            self.stage_pane.clear()
