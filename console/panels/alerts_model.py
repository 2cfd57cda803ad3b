"""What the Alerts panel shows: the alerts (one row each, newest first), the filter over them, and the
active silences.

An alert's message quotes what agents carried and an agent may be hostile, so every text cell is made
plain (engine.alerts.plain: one printable line, cut) and tooltips are escaped; nothing is rich text or a
link. A muted alert (an active silence matches it) is listed like any other, greyed, its status naming
the silence: a silence mutes notification, never detection. Colours are read when a cell is drawn, so
they follow the light and dark schemes.
"""
from __future__ import annotations

import bisect
import datetime
from dataclasses import replace
from typing import Iterable, Sequence

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSortFilterProxyModel
from PySide6.QtGui import QColor, QIcon
from PySide6.QtWidgets import QApplication, QStyle

from engine import AlertRow, KINDS, Severity, Silence, alert_plain, format_duration, kind_of, label_of, muting

from .. import style
from ..table_model import RIGHT, Column, RecordTableModel
from .approvals import when_text

CELL_CHARS = 160            # a message cell is cut here; the detail pane has it whole
NAME_CHARS = 40             # an agent's or an operator's name in a cell
MAX_ROWS = 5000             # acknowledged alerts beyond this drop off the bottom; open ones are always kept
ENGINE_AGENT = "engine"     # what the agent cell says for an alert of the engine's own work (agent_id "")

SEVERITY_TONES = {Severity.CRITICAL: "bad", Severity.WARNING: "warn", Severity.INFO: "info"}
SEVERITY_TINTS = {Severity.CRITICAL: "bad_tint"}      # only what needs a person now stands out of the list
SEVERITY_MEANINGS = {
    Severity.CRITICAL: "Critical: an agent is off work or carried an attack the gateway stopped. Look now.",
    Severity.WARNING: "Warning: the engine coped, but something deserves a look.",
    Severity.INFO: "Info: for the record only.",
}
SEVERITY_ICONS = {Severity.CRITICAL: QStyle.StandardPixmap.SP_MessageBoxCritical,
                  Severity.WARNING: QStyle.StandardPixmap.SP_MessageBoxWarning,
                  Severity.INFO: QStyle.StandardPixmap.SP_MessageBoxInformation}


# --- texts -------------------------------------------------------------------------------------
def full_time(at: float | None) -> str:
    return datetime.datetime.fromtimestamp(at).isoformat(sep=" ", timespec="seconds") if at is not None else "—"


def short_trace(trace_id: str, keep: int = 8) -> str:
    trace_id = alert_plain(trace_id)
    return trace_id if len(trace_id) <= keep + 2 else f"{trace_id[:keep]}…"


def agent_text(alert: AlertRow) -> str:
    return alert_plain(alert.agent_id, NAME_CHARS) or ENGINE_AGENT


def kind_meaning(kind: str) -> str:
    known = kind_of(kind)
    return KINDS[known].meaning if known is not None else "An alert kind this version of Quorum does not know."


def status_text(alert: AlertRow) -> str:
    """open · muted by silence #n · acknowledged by X at 14:03: comment (an acknowledgement wins)."""
    if not alert.open:
        comment = alert_plain(alert.ack_comment, CELL_CHARS)
        by = alert_plain(alert.acknowledged_by or "?", NAME_CHARS)
        return f"acknowledged by {by} at {when_text(alert.acknowledged_at)}" + (f": {comment}" if comment else "")
    if alert.muted:
        return f"muted by silence #{alert.silenced_by}"
    return "open"


def detail_text(alert: AlertRow) -> str:
    """The whole alert, for a plain-text pane."""
    trace = f"Trace: {alert_plain(alert.trace_id)}" if alert.trace_id else "No trace: no question raised it."
    muted = " (still listed; it only does not notify)" if alert.open and alert.muted else ""
    return "\n".join((
        f"#{alert.id} · {alert.severity.value.upper()} · {label_of(alert.kind)} · agent {agent_text(alert)} · "
        f"raised {full_time(alert.at)}",
        alert_plain(alert.message),
        kind_meaning(alert.kind),
        f"Status: {status_text(alert)}{muted}",
        trace,
    ))


def alert_order(alert: AlertRow) -> tuple:
    """Newest first (as the store lists them)."""
    return (-alert.at, -alert.id)


def severity_order(alert: AlertRow) -> tuple:
    """Critical first, then newest first."""
    return (alert.severity.rank, -alert.at, -alert.id)


# --- the alerts table --------------------------------------------------------------------------
def _tone_unless_quiet(tone: str | None):
    """The tone while the alert is loud (open, not muted); greyed once acknowledged or muted."""
    def colour(alert: AlertRow) -> QColor | None:
        if not alert.loud:
            return style.tones().muted
        return style.tone(tone) if tone else None
    return colour


def _severity_colour(alert: AlertRow) -> QColor:
    return style.tone(SEVERITY_TONES[alert.severity]) if alert.loud else style.tones().muted


def _status_colour(alert: AlertRow) -> QColor:
    return style.tones().bad if alert.loud else style.tones().muted


def _row_tint(alert: AlertRow) -> QColor | None:
    tint = SEVERITY_TINTS.get(alert.severity) if alert.loud else None
    return style.tone(tint) if tint else None


def _loud(alert: AlertRow) -> bool:
    return alert.loud


def alert_columns(severity_icon) -> tuple[Column[AlertRow], ...]:
    return (
        Column("Severity", lambda a: a.severity.value, icon=severity_icon, foreground=_severity_colour, bold=_loud,
               tooltip=lambda a: SEVERITY_MEANINGS[a.severity]),
        Column("Time", lambda a: when_text(a.at), align=RIGHT, foreground=_tone_unless_quiet(None),
               tooltip=lambda a: full_time(a.at)),
        Column("Kind", lambda a: label_of(a.kind), foreground=_tone_unless_quiet(None), bold=_loud,
               tooltip=lambda a: kind_meaning(a.kind)),
        Column("Agent", agent_text, foreground=_tone_unless_quiet(None), bold=_loud,
               tooltip=lambda a: a.agent_id),
        Column("Message", lambda a: alert_plain(a.message, CELL_CHARS), foreground=_tone_unless_quiet(None),
               tooltip=lambda a: a.message),
        Column("Trace", lambda a: short_trace(a.trace_id), foreground=_tone_unless_quiet(None),
               tooltip=lambda a: a.trace_id,
               header_tooltip="The question that raised the alert (Open trace shows it whole)"),
        Column("Status", status_text, foreground=_status_colour, bold=_loud,
               tooltip=lambda a: status_text(a)),
    )


(SEVERITY_COLUMN, TIME_COLUMN, KIND_COLUMN, AGENT_COLUMN, MESSAGE_COLUMN, TRACE_COLUMN,
 STATUS_COLUMN) = range(7)


def _standard_icon(pixmap: QStyle.StandardPixmap, greyed: bool = False) -> QIcon | None:
    app = QApplication.instance()
    if app is None:
        return None
    icon = app.style().standardIcon(pixmap)
    if not greyed:
        return icon
    size = app.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
    return QIcon(icon.pixmap(size, QIcon.Mode.Disabled))


class AlertsModel(RecordTableModel[AlertRow]):
    """Alerts keyed by id, newest first. An acknowledgement replaces its row in place and is never undone
    by a stale read; `remark` applies the silences active at a moment."""

    def __init__(self, parent=None) -> None:
        self._icons: dict[tuple[Severity, bool], QIcon | None] = {}
        self._by_id: dict[int, AlertRow] = {}
        super().__init__(alert_columns(self._severity_icon), parent, row_background=_row_tint)

    def _severity_icon(self, alert: AlertRow) -> QIcon | None:
        """The severity's icon; greyed (the disabled look) once acknowledged or muted."""
        key = (alert.severity, alert.loud)
        if key not in self._icons:
            self._icons[key] = _standard_icon(SEVERITY_ICONS[alert.severity], greyed=not alert.loud)
        return self._icons[key]

    # --- records, with the id index kept in step ---------------------------------------------
    def set_records(self, records: Sequence[AlertRow]) -> None:
        self._by_id = {a.id: a for a in records}
        super().set_records(records)

    def insert_record(self, row: int, record: AlertRow) -> None:
        self._by_id[record.id] = record
        super().insert_record(row, record)

    def append_record(self, record: AlertRow) -> int:
        self._by_id[record.id] = record
        return super().append_record(record)

    def remove_record(self, row: int) -> AlertRow:
        record = super().remove_record(row)
        self._by_id.pop(record.id, None)
        return record

    def replace_record(self, row: int, record: AlertRow) -> None:
        self._by_id[record.id] = record
        super().replace_record(row, record)

    # --- merging ---------------------------------------------------------------------------
    def set_alerts(self, alerts: Iterable[AlertRow]) -> None:
        """The alerts as stored (a load); one this model already knows acknowledged stays acknowledged."""
        merged = dict(self._by_id)
        for alert in alerts:
            merged[alert.id] = _newer(merged.get(alert.id), alert)
        self.set_records(_capped(sorted(merged.values(), key=alert_order)))

    def upsert(self, alert: AlertRow) -> int:
        """A new alert takes its place (newest first); a known one is replaced in place. Returns its row."""
        row = self.row_of(alert.id)
        if row >= 0:
            merged = _newer(self.record(row), alert)
            if merged != self.record(row):
                self.replace_record(row, merged)
            return row
        row = bisect.bisect_left(self._records, alert_order(alert), key=alert_order)
        self.insert_record(row, alert)
        self._drop_overflow()
        return self.row_of(alert.id)

    def add_alerts(self, alerts: Sequence[AlertRow]) -> None:
        for alert in alerts:
            self.upsert(alert)

    def remark(self, silences: Sequence[Silence], now: float) -> bool:
        """Marks every open alert with the silence that mutes it at `now` (or none); True if any changed."""
        changed = False
        for row, alert in enumerate(self._records):
            if not alert.open:
                continue
            silence = muting(alert, silences, now)
            silenced_by = silence.id if silence is not None else None
            if alert.silenced_by != silenced_by:
                self._records[row] = self._by_id[alert.id] = _with_silence(alert, silenced_by)
                changed = True
        if changed and self._records:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._records) - 1, self.columnCount() - 1))
        return changed

    def _drop_overflow(self) -> None:
        row = len(self._records) - 1
        while len(self._records) > MAX_ROWS and row >= 0:
            if not self._records[row].open:
                self.remove_record(row)
            row -= 1

    # --- lookups and counts ----------------------------------------------------------------
    def row_of(self, alert_id: int) -> int:
        alert = self._by_id.get(alert_id)
        if alert is None:
            return -1
        row = bisect.bisect_left(self._records, alert_order(alert), key=alert_order)
        return row if row < len(self._records) and self._records[row].id == alert_id else -1

    def alert(self, alert_id: int) -> AlertRow | None:
        return self._by_id.get(alert_id)

    def open_count(self) -> int:
        return sum(alert.open for alert in self._records)

    def loud_count(self) -> int:
        return sum(alert.loud for alert in self._records)

    def muted_count(self) -> int:
        return sum(alert.open and alert.muted for alert in self._records)

    def open_ids(self) -> list[int]:
        return [alert.id for alert in self._records if alert.open]

    def silence_ids(self) -> set[int]:
        return {alert.silenced_by for alert in self._records if alert.silenced_by is not None}


def _newer(known: AlertRow | None, incoming: AlertRow) -> AlertRow:
    """The incoming row, unless it would un-acknowledge a known acknowledgement (a stale read)."""
    if known is not None and not known.open and incoming.open:
        return known
    return incoming


def _with_silence(alert: AlertRow, silenced_by: int | None) -> AlertRow:
    return replace(alert, silenced_by=silenced_by)


def _capped(alerts: list[AlertRow]) -> list[AlertRow]:
    if len(alerts) <= MAX_ROWS:
        return alerts
    spare = MAX_ROWS - sum(a.open for a in alerts)          # room left for acknowledged ones, newest first
    kept = []
    for alert in alerts:
        if alert.open:
            kept.append(alert)
        elif spare > 0:
            kept.append(alert)
            spare -= 1
    return kept


# --- the filter --------------------------------------------------------------------------------
ANY = None


class AlertsFilter(QSortFilterProxyModel):
    """Open ones only (or all), one severity, one kind, one agent ("" is the engine's own); newest first,
    or critical first (then newest) when `critical_first`."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.open_only = False
        self.severity: Severity | None = ANY
        self.kind: str | None = ANY
        self.agent: str | None = ANY
        self.critical_first = False

    def set_filter(self, **changes) -> None:
        """open_only=, severity=, kind=, agent= (None: any)."""
        self.beginFilterChange()
        for name, value in changes.items():
            if name not in ("open_only", "severity", "kind", "agent"):
                raise TypeError(f"no filter {name!r}")
            setattr(self, name, value)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_critical_first(self, on: bool) -> None:
        self.critical_first = bool(on)
        self.sort(0 if self.critical_first else -1)    # -1: the model's own order (newest first)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        model = self.sourceModel()
        if not isinstance(model, AlertsModel) or source_row >= model.rowCount():
            return True
        alert = model.record(source_row)
        return ((not self.open_only or alert.open)
                and (self.severity is None or alert.severity is self.severity)
                and (self.kind is None or alert.kind == self.kind)
                and (self.agent is None or alert.agent_id == self.agent))

    def lessThan(self, left: QModelIndex | QPersistentModelIndex, right: QModelIndex | QPersistentModelIndex) -> bool:
        model = self.sourceModel()
        return severity_order(model.record(left.row())) < severity_order(model.record(right.row()))


# --- the active silences -----------------------------------------------------------------------
def silence_target(silence: Silence) -> str:
    """What it mutes: 'injection blocked from ret-web', 'every kind from gen-a', 'agent down from any agent'."""
    kind = label_of(silence.kind) if silence.kind is not None else "every kind"
    agent = alert_plain(silence.agent_id, NAME_CHARS) if silence.agent_id is not None else "any agent"
    return f"{kind} · {agent}"


def until_text(silence: Silence) -> str:
    return when_text(silence.ends_at)


SILENCE_COLUMNS: tuple[Column[Silence], ...] = (
    Column("#", lambda s: str(s.id), align=RIGHT),
    Column("Mutes", silence_target, bold=lambda s: True,
           tooltip=lambda s: (f"{silence_target(s)}: matching alerts are still recorded and "
                              "listed, they only do not notify")),
    Column("By", lambda s: alert_plain(s.created_by, NAME_CHARS), tooltip=lambda s: s.created_by),
    Column("Until", until_text, align=RIGHT,
           tooltip=lambda s: f"from {full_time(s.created_at)} to {full_time(s.ends_at)} "
                             f"({format_duration(s.ends_at - s.created_at)})"),
    Column("Why", lambda s: alert_plain(s.comment, CELL_CHARS), tooltip=lambda s: s.comment),
)
SILENCE_WHY_COLUMN = 4


class SilencesModel(RecordTableModel[Silence]):
    """The silences active now, newest first."""

    def __init__(self, parent=None) -> None:
        super().__init__(SILENCE_COLUMNS, parent)

    def set_silences(self, silences: Iterable[Silence]) -> None:
        self.set_records(sorted(silences, key=lambda s: (-s.created_at, -s.id)))

    def row_of(self, silence_id: int) -> int:
        return next((row for row, s in enumerate(self._records) if s.id == silence_id), -1)

    def next_end(self) -> float | None:
        return min((s.ends_at for s in self._records), default=None)
