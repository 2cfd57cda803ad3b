"""Trust panel: every agent's reputation score over time, the quarantine floor, who stands where now.

The plot (pyqtgraph) has one line per agent (x: time of day, y: score 0 to 1) through the points of
the score history the engine stores; each line runs on flat to the latest point in the plot, so the
right edge reads as today's standings. The quarantine floor is a dashed red line, labelled. A
quarantined agent's line is dashed and a red ✕ marks the moment it was quarantined; a line on
probation is dotted. Hovering near a point says whose it is, the score, the time and why it moved;
clicking a line (or its row in the legend beside the plot) selects the agent, which the main window
mirrors in the fleet table.

It fills from the stored history when the engine is ready (sig_trust_loaded) and grows live with
every question and operator action (sig_trust_updated); states follow sig_agent_changed.

Under demo traffic those arrive dozens of times a second, so the points and standings are taken at once but
the plot and the legend are redrawn at most every REDRAW_MS (console/batch.py Coalescer), and only the lines
that changed get new dots. What the operator does (select, theme) draws at once, and every read of what is
drawn (curve, quarantine_marks, the pointer's hit tests) draws what is pending first.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QSizePolicy,
                               QTableView, QVBoxLayout, QWidget)

from engine import AgentView, ScorePoint

from .. import style, untrusted
from ..batch import Coalescer
from ..layout import column, splitter
from ..service import EngineService
from ..table_model import RIGHT, Column, RecordTableModel
from ..untrusted import PlainLabel

HOVER_PIXELS = 14.0          # a point this close to the pointer (in screen pixels) is the one hovered or clicked
LINE_HIT_PIXELS = 10         # a click this wide around a line is on the line
COINCIDE_PIXELS = 3.0        # points this close to the hovered one are named with it (their lines run together)
LINE_WIDTH, SELECTED_WIDTH = 2.0, 4.0
DIMMED_ALPHA = 90            # other agents' lines while one is selected
PEN_STYLES = {"quarantined": Qt.PenStyle.DashLine, "probation": Qt.PenStyle.DotLine}
HINT = "Hover a point for its agent, score, time and reason; click a line to select the agent."
REDRAW_MS = 200              # the plot and legend are redrawn at most this often while points stream in


def time_text(at: float, today: datetime.date | None = None) -> str:
    moment = datetime.datetime.fromtimestamp(at)
    if moment.date() == (today or datetime.date.today()):
        return moment.strftime("%H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def point_text(point: ScorePoint) -> str:
    """'gen-gamma · 0.42 (quarantined) at 14:03:12 — why': what hovering a point says, as plain text."""
    why = f" — {point.why}" if point.why else ""
    state = "" if point.state == "active" else f" ({point.state})"
    return f"{point.agent_id} · {point.score:.2f}{state} at {time_text(point.at)}{why}"


def quarantine_moments(points: Iterable[ScorePoint]) -> list[ScorePoint]:
    """The points at which an agent entered quarantine (its first quarantined point after any other state)."""
    moments, previous = [], None
    for point in points:
        if point.state == "quarantined" and previous != "quarantined":
            moments.append(point)
        previous = point.state
    return moments


def group_text(points: list[ScorePoint]) -> str:
    """point_text for the hovered point, naming every agent whose point is drawn on the same spot."""
    first = points[0]
    if len(points) == 1:
        return point_text(first)
    return point_text(first).replace(first.agent_id, ", ".join(p.agent_id for p in points), 1)


class ElidedLabel(PlainLabel):
    """One line of plain text that ends in '…' when it does not fit (the whole text is its tooltip), and never
    asks for more width than it is given."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent=parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._full = ""
        self.set_full_text(text)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        self._full = text
        self._elide()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.width() - 2, 40)
        shown = untrusted.visible(self._full)
        self.setText(self.fontMetrics().elidedText(shown, Qt.TextElideMode.ElideRight, width))
        self.setToolTip(untrusted.tooltip(self._full) if self.text() != shown else "")


@dataclass(frozen=True)
class LegendRow:
    agent_id: str
    colour: QColor
    score: float | None
    state: str
    points: int


def swatch(colour: QColor, state: str) -> QIcon:
    """The legend's sample of a line: the agent's colour in its state's pen style."""
    pixmap = QPixmap(30, 12)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(colour, 3)
    pen.setStyle(PEN_STYLES.get(state, Qt.PenStyle.SolidLine))
    painter.setPen(pen)
    painter.drawLine(1, 6, 29, 6)
    painter.end()
    return QIcon(pixmap)


def legend_columns(icon) -> tuple[Column[LegendRow], ...]:
    return (
        Column("Agent", lambda r: r.agent_id, bold=lambda r: True, icon=icon,
               tooltip=lambda r: f"{r.agent_id}: {r.points} point(s) in the score history"),
        Column("Score", lambda r: "—" if r.score is None else f"{r.score:.2f}", align=RIGHT,
               foreground=lambda r: style.trust_state_colour(r.state), bold=lambda r: r.state != "active"),
        Column("Standing", lambda r: r.state, foreground=lambda r: style.trust_state_colour(r.state),
               background=lambda r: style.trust_state_background(r.state), bold=lambda r: r.state != "active",
               tooltip=lambda r: style.TRUST_STATE_MEANINGS.get(r.state, "")),
    )


class LegendModel(RecordTableModel[LegendRow]):
    def __init__(self, parent=None) -> None:
        self._icons: dict[tuple[str, str], QIcon] = {}
        super().__init__(legend_columns(self._icon), parent)

    def _icon(self, row: LegendRow) -> QIcon:
        key = (row.colour.name(), row.state)
        if key not in self._icons:
            self._icons[key] = swatch(row.colour, row.state)
        return self._icons[key]

    def row_of(self, agent_id: str) -> int:
        return next((r for r, row in enumerate(self.records()) if row.agent_id == agent_id), -1)


class TrustPanel(QWidget):
    sig_agent_selected = Signal(str)      # agent id: the operator clicked its line or its legend row

    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self.floor = service.trust.quarantine_floor
        self._order: list[str] = []                       # fleet order: an agent keeps its colour
        self._views: dict[str, AgentView] = {}
        self._points: dict[str, list[ScorePoint]] = {}    # per agent, oldest first
        self._seen: set[tuple] = set()                    # a point delivered twice (live, then loaded) counts once
        self._curves: dict[str, pg.PlotDataItem] = {}     # the line of each agent
        self._dots: dict[str, pg.ScatterPlotItem] = {}    # its points of the history (not the flat tail)
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}   # its points' times and scores
        self.selected: str | None = None
        self.hovered: ScorePoint | None = None
        self._touched: set[str] = set()                   # agents whose points or pen changed since the last draw
        self._redraw_all = True                           # every agent's dots too (selection, theme, first draw)
        self._reordered: set[str] = set()                 # agents with a point added before their last one
        self._dotted: dict[str, tuple[int, tuple]] = {}   # per agent: points already dotted, and in what style
        self._batch: Coalescer[bool] = Coalescer(lambda _items: self._draw(), REDRAW_MS, self)

        self.title = PlainLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.plot = pg.PlotWidget(background=style.tones().base, axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        self.plot.setMinimumHeight(220)
        item = self.plot.getPlotItem()
        item.setMenuEnabled(False)
        item.showGrid(x=True, y=True, alpha=0.12)
        for name, label in (("left", "Trust score"), ("bottom", "Time of day")):
            item.getAxis(name).setLabel(label)
        style.style_plot(self.plot)
        style.theme_signals().sig_changed.connect(self._apply_theme)
        self.view_box = item.getViewBox()
        self.view_box.setMouseEnabled(x=True, y=False)
        self.view_box.setYRange(0.0, 1.0, padding=0.04)      # room for the 1.0 and 0 tick labels
        self.view_box.setLimits(yMin=-0.06, yMax=1.06)
        self.view_box.enableAutoRange(axis="x")
        self.floor_line = pg.InfiniteLine(
            pos=self.floor, angle=0, movable=False,
            pen=pg.mkPen(style.tones().bad, width=1.5, style=Qt.PenStyle.DashLine),
            label=f"quarantine floor {self.floor:.2f}",
            labelOpts={"position": 0.0, "anchors": [(0, 1), (0, 1)], "color": style.tones().bad,
                       "fill": pg.mkBrush(style.plot_tip_fill())})
        self.floor_line.setZValue(-5)
        item.addItem(self.floor_line, ignoreBounds=True)
        self._marks = pg.ScatterPlotItem(symbol="x", size=15, pen=pg.mkPen(style.tones().bad, width=2.5),
                                         brush=pg.mkBrush(style.tones().bad))
        self._marks.setZValue(20)
        item.addItem(self._marks)
        self.hover_dot = pg.ScatterPlotItem(size=13, pen=pg.mkPen(style.tones().text, width=2), brush=pg.mkBrush(None))
        self.hover_dot.setZValue(30)
        item.addItem(self.hover_dot, ignoreBounds=True)
        self.hover_tip = pg.TextItem(color=style.tones().text, anchor=(0, 1),
                                     border=pg.mkPen(style.tones().plot_axis), fill=pg.mkBrush(style.plot_tip_fill()))
        self.hover_tip.setZValue(40)
        self.hover_tip.setVisible(False)
        item.addItem(self.hover_tip, ignoreBounds=True)

        self.hover_label = ElidedLabel(HINT)      # what the pointer is on, with why it moved
        self.hover_label.setStyleSheet(f"color: {style.tones().muted.name()}")

        self.legend_model = LegendModel(self)
        self.legend = QTableView()
        self.legend.setModel(self.legend_model)
        self.legend.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.legend.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.legend.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.legend.verticalHeader().setVisible(False)
        self.legend.setShowGrid(False)
        style.compact_rows(self.legend)
        header = self.legend.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.selection_label = PlainLabel()           # the selected agent's standing and its last change
        self.selection_label.setWordWrap(True)

        plot_side = column(self.plot, self.hover_label)
        legend_side = column(self.legend, self.selection_label)
        body = splitter(Qt.Orientation.Horizontal, (plot_side, 1), (legend_side, 0), sizes=[900, 330])
        self.body = body
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.title, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(body, 1)

        for view in service.fleet.agents():
            self._know(view)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        self.legend.selectionModel().currentRowChanged.connect(self._on_legend_current)
        service.fleet.sig_agent_changed.connect(self.update_agent)
        service.trust.sig_updated.connect(self._on_trust_updated)
        service.trust.sig_loaded.connect(self._on_trust_loaded)
        self._draw()

    # --- points in -------------------------------------------------------------------------
    def _apply_theme(self, _scheme=None) -> None:
        """The scheme changed: axes, the floor, the markers and every agent's line take its colours."""
        style.style_plot(self.plot)
        bad = style.tones().bad
        self.floor_line.setPen(pg.mkPen(bad, width=1.5, style=Qt.PenStyle.DashLine))
        self.floor_line.label.setColor(bad)
        self.floor_line.label.fill = pg.mkBrush(style.plot_tip_fill())
        self._marks.setPen(pg.mkPen(bad, width=2.5))
        self._marks.setBrush(pg.mkBrush(bad))
        self.hover_dot.setPen(pg.mkPen(style.tones().text, width=2))
        self.hover_tip.setColor(style.tones().text)
        self.hover_tip.fill = pg.mkBrush(style.plot_tip_fill())
        self._redraw_all = True
        self._draw_now()

    def _on_trust_updated(self, update) -> None:
        self.add_points(update.points)

    def _on_trust_loaded(self, history: list[ScorePoint], _alerts) -> None:
        self.load_history(history)

    def load_history(self, history: Iterable[ScorePoint]) -> int:
        """The score history as stored (at ready): merged with any point that arrived live meanwhile."""
        return self.add_points(history)

    def add_points(self, points: Iterable[ScorePoint]) -> int:
        """New points of the score history; returns how many were new (repeats are ignored)."""
        added = 0
        touched = set()
        for point in points:
            key = (point.agent_id, point.at, round(point.score, 6), point.state, point.why)
            if key in self._seen:
                continue
            self._seen.add(key)
            if point.agent_id not in self._points:
                self._points[point.agent_id] = []
                if point.agent_id not in self._order:
                    self._order.append(point.agent_id)
            line = self._points[point.agent_id]
            if line and point.at < line[-1].at:
                self._reordered.add(point.agent_id)        # an older point: its dots are drawn afresh
            line.append(point)
            touched.add(point.agent_id)
            added += 1
        for agent_id in touched & self._reordered:
            self._points[agent_id].sort(key=lambda p: p.at)
        if added:
            self._touched |= touched
            self._redraw()
        return added

    def update_agent(self, view: AgentView) -> None:
        """The fleet's view of an agent: its current standing decides how its line is drawn."""
        known = self._views.get(view.spec.id)
        self._know(view)
        if known is None or (known.trust_state, known.trust_score) != (view.trust_state, view.trust_score):
            self._touched.add(view.spec.id)
            self._redraw()

    def _know(self, view: AgentView) -> None:
        self._views[view.spec.id] = view
        if view.spec.id not in self._order:
            self._order.append(view.spec.id)

    # --- reads -----------------------------------------------------------------------------
    def points(self, agent_id: str) -> list[ScorePoint]:
        return list(self._points.get(agent_id, ()))

    def agents_plotted(self) -> list[str]:
        return [a for a in self._order if self._points.get(a)]

    def curve(self, agent_id: str) -> pg.PlotDataItem:
        self.flush()
        return self._curves[agent_id]

    @property
    def quarantine_marks(self) -> pg.ScatterPlotItem:
        """The red ✕s where agents were quarantined, as drawn (pending points drawn first)."""
        self.flush()
        return self._marks

    def flush(self) -> None:
        """Draws at once what is waiting for the next redraw (reads of the plot call it)."""
        self._batch.flush_now()

    def colour(self, agent_id: str) -> QColor:
        return style.agent_line_colour(self._order.index(agent_id))

    def state(self, agent_id: str) -> str:
        view = self._views.get(agent_id)
        if view is not None and view.trust_score is not None:
            return view.trust_state
        points = self._points.get(agent_id)
        return points[-1].state if points else "active"

    def score(self, agent_id: str) -> float | None:
        view = self._views.get(agent_id)
        if view is not None and view.trust_score is not None:
            return view.trust_score
        points = self._points.get(agent_id)
        return points[-1].score if points else None

    # --- drawing ---------------------------------------------------------------------------
    def _pen(self, agent_id: str) -> QPen:
        colour = QColor(self.colour(agent_id))
        if self.selected is not None and agent_id != self.selected:
            colour.setAlpha(DIMMED_ALPHA)
        pen = pg.mkPen(colour, width=SELECTED_WIDTH if agent_id == self.selected else LINE_WIDTH)
        pen.setStyle(PEN_STYLES.get(self.state(agent_id), Qt.PenStyle.SolidLine))
        return pen

    def _redraw(self) -> None:
        """Points or standings changed: the title at once, the plot and the legend with the next batch."""
        self._refresh_title()
        self._batch.put("redraw", True)

    def _draw(self) -> None:
        plotted = self.agents_plotted()
        last = max((self._points[a][-1].at for a in plotted), default=0.0)
        item = self.plot.getPlotItem()
        marks = []
        redraw_all, touched = self._redraw_all, self._touched
        self._redraw_all, self._touched = False, set()
        for agent_id in plotted:
            points = self._points[agent_id]
            fresh = redraw_all or agent_id in touched or agent_id not in self._curves
            if fresh or agent_id not in self._arrays:      # for the pointer, and the line below
                self._arrays[agent_id] = (np.fromiter((p.at for p in points), float, len(points)),
                                          np.fromiter((p.score for p in points), float, len(points)))
            xs, ys = self._arrays[agent_id]
            if xs[-1] < last:                  # flat on to the latest point: the right edge is now
                xs, ys = np.append(xs, last), np.append(ys, ys[-1])
            curve = self._curves.get(agent_id)
            if curve is None:
                curve = pg.PlotDataItem(name=agent_id)
                # Clicks are the panel's (one handler, one answer where lines cross): the width is for hit tests.
                curve.setCurveClickable(False, width=LINE_HIT_PIXELS)
                dots = pg.ScatterPlotItem(symbol="o")
                item.addItem(curve)
                item.addItem(dots)
                self._curves[agent_id], self._dots[agent_id] = curve, dots
            colour = self.colour(agent_id)
            chosen = agent_id == self.selected
            # A score holds from one change to the next: steps, not slopes.
            curve.setData(xs, ys, pen=self._pen(agent_id), stepMode="right")
            marks += [{"pos": (p.at, p.score), "data": p} for p in quarantine_moments(points)]
            if not fresh:                      # its dots and pen are as drawn: only the tail moved
                continue
            # The flat tail is not a point: dots mark the real points only.
            dot_colour = QColor(colour)
            if self.selected is not None and not chosen:
                dot_colour.setAlpha(DIMMED_ALPHA)
            self._draw_dots(agent_id, dot_colour, 8 if chosen else 5, redraw_all)
            curve.setZValue(10 if chosen else 0)
            self._dots[agent_id].setZValue(11 if chosen else 1)
        self._marks.setData(marks)
        self._refresh_legend()
        self._refresh_title()

    def _draw_dots(self, agent_id: str, colour: QColor, size: int, afresh: bool) -> None:
        """The agent's points as dots: only the new ones when its points only grew and its style is the same
        (rebuilding every spot of a long history is most of a redraw's cost)."""
        xs, ys = self._arrays[agent_id]
        style_key = (colour.rgba(), size)
        dotted, drawn_style = self._dotted.get(agent_id, (0, None))
        dots = self._dots[agent_id]
        pen, brush = pg.mkPen(colour), pg.mkBrush(colour)
        if afresh or agent_id in self._reordered or drawn_style != style_key or dotted > len(xs):
            dots.setData(xs, ys, size=size, pen=pen, brush=brush)
        elif dotted < len(xs):
            dots.addPoints(x=xs[dotted:], y=ys[dotted:], size=size, pen=pen, brush=brush)
        self._reordered.discard(agent_id)
        self._dotted[agent_id] = (len(xs), style_key)

    def _draw_now(self) -> None:
        """Draws at once, taking along whatever was waiting for the batch's timer."""
        if self._batch.pending():
            self._batch.flush_now()          # which draws
        else:
            self._draw()


    def _refresh_legend(self) -> None:
        rows = [LegendRow(a, self.colour(a), self.score(a), self.state(a), len(self._points.get(a, ())))
                for a in self._order if a in self._views or self._points.get(a)]
        known = self.legend_model.records()
        if [r.agent_id for r in known] == [r.agent_id for r in rows]:
            changed = [position for position, (old, new) in enumerate(zip(known, rows)) if old != new]
            if changed:       # in place (selection and scroll stay), and one notice: each makes the header measure
                model = self.legend_model
                model.blockSignals(True)
                try:
                    for position in changed:
                        model.replace_record(position, rows[position])
                finally:
                    model.blockSignals(False)
                model.dataChanged.emit(model.index(changed[0], 0), model.index(changed[-1], model.columnCount() - 1))
        else:
            self.legend_model.set_records(rows)
        row = self.legend_model.row_of(self.selected) if self.selected else -1
        if row >= 0:
            self.legend.selectionModel().blockSignals(True)
            self.legend.setCurrentIndex(self.legend_model.index(row, 0))
            self.legend.selectionModel().blockSignals(False)
        self._refresh_selection_label()

    def _refresh_title(self) -> None:
        quarantined = sum(self.state(a) == "quarantined" for a in self._order)
        probation = sum(self.state(a) == "probation" for a in self._order)
        parts = [f"{len(self.agents_plotted())} agents plotted"]
        if quarantined:
            parts.append(f"{quarantined} quarantined")
        if probation:
            parts.append(f"{probation} on probation")
        parts.append(f"quarantine floor {self.floor:.2f}")
        self.title.setText("Trust over time — " + " · ".join(parts))

    def _refresh_selection_label(self) -> None:
        agent_id = self.selected
        if agent_id is None:
            self.selection_label.setText("Click a line or a row to select an agent.")
            return
        score = self.score(agent_id)
        points = self._points.get(agent_id)
        last = f"\nLast change {time_text(points[-1].at)}: {points[-1].why}" if points and points[-1].why else ""
        score_text = "not scored yet" if score is None else f"{score:.2f}"
        self.selection_label.setText(f"{agent_id}: {score_text}, {self.state(agent_id)}{last}")

    # --- selection -------------------------------------------------------------------------
    def select_agent(self, agent_id: str | None, notify: bool = False) -> None:
        """Highlights the agent's line and legend row; notify: the operator did it (sig_agent_selected)."""
        if agent_id is not None and agent_id not in self._order:
            return
        changed = agent_id != self.selected
        self.selected = agent_id
        if changed:
            self._redraw_all = True
            self._draw_now()                 # the operator's click: at once
        if notify and agent_id is not None:
            self.sig_agent_selected.emit(agent_id)

    def _on_legend_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.select_agent(self.legend_model.record(current.row()).agent_id, notify=True)

    # --- pointer ---------------------------------------------------------------------------
    def nearest_point(self, scene_pos: QPointF, within: float = HOVER_PIXELS) -> ScorePoint | None:
        """The score point nearest the pointer (in screen pixels), if one is within `within` pixels."""
        self.flush()
        if not self.view_box.sceneBoundingRect().contains(scene_pos):
            return None
        at = self.view_box.mapSceneToView(scene_pos)
        px, py = self.view_box.viewPixelSize()
        if not px or not py:
            return None
        best, best_d2 = None, within * within
        for agent_id in self.agents_plotted():
            points = self._points[agent_id]
            xs, ys = self._arrays[agent_id]
            d2 = ((xs - at.x()) / px) ** 2 + ((ys - at.y()) / py) ** 2
            i = len(d2) - 1 - int(np.argmin(d2[::-1]))     # of points on one spot, the latest (a quarantine, say)
            if d2[i] < best_d2 or best is None and d2[i] <= best_d2:
                best, best_d2 = points[i], float(d2[i])
        return best

    def coinciding(self, point: ScorePoint, within: float = COINCIDE_PIXELS) -> list[ScorePoint]:
        """Every agent's point drawn on (or within a few pixels of) this one: lines that run together, such as two
        liars punished alike, are all named when one is hovered."""
        px, py = self.view_box.viewPixelSize()
        if not px or not py:
            return [point]
        near = [point]
        for agent_id in self.agents_plotted():
            if agent_id == point.agent_id:
                continue
            for other in self._points[agent_id]:
                if ((other.at - point.at) / px) ** 2 + ((other.score - point.score) / py) ** 2 <= within * within:
                    near.append(other)
                    break
        return near

    def scene_pos(self, point: ScorePoint) -> QPointF:
        """Where a point is drawn, in scene coordinates (for tests and the hover tip)."""
        self.flush()
        return self.view_box.mapViewToScene(QPointF(point.at, point.score))

    def show_hover(self, point: ScorePoint | None) -> None:
        self.hovered = point
        if point is None:
            self.hover_dot.setData([])
            self.hover_tip.setVisible(False)
            self.hover_label.set_full_text(HINT)
            self.hover_label.setStyleSheet(f"color: {style.tones().muted.name()}")
            return
        self.hover_dot.setData([{"pos": (point.at, point.score)}])
        together = self.coinciding(point)
        state = "" if point.state == "active" else f" ({point.state})"
        names = ", ".join(p.agent_id for p in together)
        self.hover_tip.setText(f"{names}\n{point.score:.2f}{state} at {time_text(point.at)}")
        # Beside the point, on the side with room: left of it in the right half, below it near the top.
        (x0, x1), (y0, y1) = self.view_box.viewRange()
        right_half = point.at > (x0 + x1) / 2
        near_top = point.score > y0 + 0.75 * (y1 - y0)
        self.hover_tip.setAnchor((1.05 if right_half else -0.05, -0.1 if near_top else 1.1))
        self.hover_tip.setPos(point.at, point.score)
        # setVisible, not show(): pyqtgraph scales the tip to the view in its setVisible override only.
        self.hover_tip.setVisible(True)
        self.hover_tip.updateTransform(force=True)
        self.hover_label.set_full_text(group_text(together))
        self.hover_label.setStyleSheet(f"QLabel {{ {style.fg('text')} }}")

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        point = self.nearest_point(scene_pos)
        if point != self.hovered:
            self.show_hover(point)

    def line_at(self, scene_pos: QPointF) -> str | None:
        """The agent whose line passes under the pointer (the selected one first, as it is drawn on top)."""
        self.flush()
        order = sorted(self._curves, key=lambda a: a != self.selected)
        for agent_id in order:
            line = self._curves[agent_id].curve
            if line.mouseShape().contains(line.mapFromScene(scene_pos)):
                return agent_id
        return None

    def _on_mouse_clicked(self, event) -> None:
        """A click on a point or on a line selects its agent."""
        if event.button() != Qt.MouseButton.LeftButton:
            return
        point = self.nearest_point(event.scenePos())
        agent_id = point.agent_id if point is not None else self.line_at(event.scenePos())
        if agent_id is not None:
            self.select_agent(agent_id, notify=True)

    def tab_title(self) -> str:
        quarantined = sum(self.state(a) == "quarantined" for a in self._order)
        return f"Trust ({quarantined} quarantined)" if quarantined else "Trust"
