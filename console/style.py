"""Colours and fonts in one place, so a state always looks the same wherever it is shown.

Colours are roles, not values: `tones()` gives the current scheme's Tones (good, warn, bad, info,
muted text, row tints, chips, badges, plot lines), each chosen to be readable on that scheme's base
colour. Light and dark follow the system's colour scheme (Qt's style hints) unless the operator
picks one (View → Theme, or QUORUM_THEME=light|dark); `apply_app_style` builds the Fusion palette
for the scheme and rebinds the tones, and `theme_signals().sig_changed` tells panels to redraw
their HTML. Panel code never writes a colour value: HTML takes `css(tones().muted)`.
"""
from __future__ import annotations

import enum
import functools
import logging
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QFontInfo, QFontMetricsF, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QTableView

from engine import AgentState, CallStatus, FaultKind, PassageFlag, Verdict

log = logging.getLogger(__name__)


class Scheme(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


class ThemeChoice(enum.Enum):
    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"


def _c(value: str) -> QColor:
    return QColor(value)


@dataclass(frozen=True)
class Tones:
    """Every colour the console uses, for one scheme. Foregrounds read on `base`; tints sit behind text."""
    scheme: Scheme
    base: QColor                # table and text-view background
    window: QColor
    text: QColor
    good: QColor                # ok, approved, answered
    warn: QColor                # probation, pending, slow
    bad: QColor                 # down, quarantined, blocked, rejected
    info: QColor                # starting, links of the console's own
    muted: QColor               # secondary text
    bad_tint: QColor            # row of a faulty agent, a kept-out passage, a fired stage
    warn_tint: QColor           # row waiting for an operator, probation
    neutral_tint: QColor        # rolled back, inactive
    highlight_tint: QColor      # edited words in a diff
    grid: QColor                # table header borders
    header: QColor              # table header background
    chips: Mapping[PassageFlag, tuple[QColor, QColor]]   # secure retrieval's flags: (background, text)
    other_chip: tuple[QColor, QColor]
    badges: Mapping[Verdict, tuple[QColor, QColor]]
    lines: tuple[QColor, ...]   # one per agent on the Trust plot: none of them red (quarantine owns red)
    series: tuple[QColor, ...]  # the cascade monitor's SFV, CSCT, CPM and p
    plot_axis: QColor
    plot_text: QColor
    toast: tuple[QColor, QColor] = field(default=(QColor("#b71c1c"), QColor("#ffffff")))


_FLAGS = (PassageFlag.ECHO, PassageFlag.TAMPERED, PassageFlag.DISPUTED, PassageFlag.INCONSISTENT, PassageFlag.OUTLIER)

LIGHT = Tones(
    scheme=Scheme.LIGHT, base=_c("#ffffff"), window=_c("#efefef"), text=_c("#1a1a1a"),
    good=_c("#1b7f3b"), warn=_c("#a86200"), bad=_c("#c62828"), info=_c("#1f5fa8"), muted=_c("#5f5f5f"),
    bad_tint=_c("#fde7e7"), warn_tint=_c("#fff8e1"), neutral_tint=_c("#f0f0f0"), highlight_tint=_c("#ffcdd2"),
    grid=_c("#c8c8c8"), header=_c("#ececec"),
    chips=MappingProxyType(dict(zip(_FLAGS, ((_c("#7b1fa2"), _c("#ffffff")), (_c("#c62828"), _c("#ffffff")),
                                              (_c("#e65100"), _c("#ffffff")), (_c("#f9a825"), _c("#1a1a1a")),
                                              (_c("#546e7a"), _c("#ffffff")))))),
    other_chip=(_c("#757575"), _c("#ffffff")),
    badges=MappingProxyType({Verdict.ANSWERED: (_c("#1b7f3b"), _c("#ffffff")),
                             Verdict.ABSTAINED: (_c("#f2a900"), _c("#1a1a1a")),
                             Verdict.NO_ANSWER: (_c("#757575"), _c("#ffffff"))}),
    lines=tuple(_c(v) for v in ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#7b4173", "#3182bd",
                                "#31a354", "#756bb1")),
    series=tuple(_c(v) for v in ("#1f77b4", "#ff7f0e", "#2ca02c", "#5e3c99")),
    plot_axis=_c("#8a8a8a"), plot_text=_c("#333333"),
)

DARK = Tones(
    scheme=Scheme.DARK, base=_c("#1e1f22"), window=_c("#2b2d30"), text=_c("#e8e8e8"),
    good=_c("#5fd38a"), warn=_c("#ffb74d"), bad=_c("#ff6b6b"), info=_c("#7fb2ff"), muted=_c("#a8a8a8"),
    bad_tint=_c("#4a2326"), warn_tint=_c("#45391c"), neutral_tint=_c("#34363a"), highlight_tint=_c("#6b2a2f"),
    grid=_c("#4a4c50"), header=_c("#33353a"),
    chips=MappingProxyType(dict(zip(_FLAGS, ((_c("#b55dd1"), _c("#111111")), (_c("#ff6b6b"), _c("#111111")),
                                              (_c("#ff9e40"), _c("#111111")), (_c("#ffd54f"), _c("#111111")),
                                              (_c("#90a4ae"), _c("#111111")))))),
    other_chip=(_c("#9e9e9e"), _c("#111111")),
    badges=MappingProxyType({Verdict.ANSWERED: (_c("#2e9d55"), _c("#ffffff")),
                             Verdict.ABSTAINED: (_c("#f2a900"), _c("#1a1a1a")),
                             Verdict.NO_ANSWER: (_c("#8a8a8a"), _c("#111111"))}),
    lines=tuple(_c(v) for v in ("#5fa8ff", "#ffa552", "#6fd36f", "#c39bff", "#d29a86", "#ff9ad8", "#4fe0f0",
                                "#e0e060", "#c0c0c0", "#8f93ff", "#b4d36f", "#e0b46f", "#e08fd8", "#7fc4ff",
                                "#7fe0a0", "#b8a8ff")),
    series=tuple(_c(v) for v in ("#5fa8ff", "#ffa552", "#6fd36f", "#c39bff")),
    plot_axis=_c("#8a8a8a"), plot_text=_c("#d0d0d0"),
)

_SCHEMES = {Scheme.LIGHT: LIGHT, Scheme.DARK: DARK}
_current: Tones = LIGHT


def tones() -> Tones:
    """The current scheme's colours. Call it when drawing, not at import: the scheme can change."""
    return _current


def scheme() -> Scheme:
    return _current.scheme


def tone(name: str) -> QColor:
    """A tone by its field name ("good", "bad_tint", ...), for tables that name a state's tone once."""
    return getattr(_current, name)


def css(colour: QColor) -> str:
    """`color:…` for an inline HTML style, from a tone (never a literal)."""
    return f"color:{colour.name()}"


def css_background(colour: QColor) -> str:
    return f"background:{colour.name()}"


def fg(name: str) -> str:
    """`color:…` of a tone by name, for HTML: f"<span style='{style.fg('muted')}'>"."""
    return css(tone(name))


def bg(name: str) -> str:
    return css_background(tone(name))


class ThemeSignals(QObject):
    sig_changed = Signal(object)        # Scheme: redraw anything that baked colours into HTML or a stylesheet


_signals: ThemeSignals | None = None


def theme_signals() -> ThemeSignals:
    global _signals
    if _signals is None:
        _signals = ThemeSignals()
    return _signals


# --- what a state means and how it looks -----------------------------------------------------
FLAG_MEANINGS = {
    PassageFlag.ECHO: "one of several near-duplicate passages pushing a claim nothing independent corroborates "
                      "(the PoisonedRAG signature)",
    PassageFlag.TAMPERED: "a near-copy of a better-supported passage with different numbers, names or polarity",
    PassageFlag.DISPUTED: "another text under the same chunk id had more support",
    PassageFlag.INCONSISTENT: "two of its own sentences say nearly the same thing with different numbers or polarity",
    PassageFlag.OUTLIER: "in no cluster, off the question's topic, and returned by too few retrievers",
}
TRUST_STATE_MEANINGS = {
    "active": "takes work at every risk tier its score allows",
    "probation": "released from quarantine: low-risk work only and a capped vote, until it earns its way back",
    "quarantined": "gets no work at all until an operator releases it",
}
VERDICT_LABELS = {
    Verdict.ANSWERED: "ANSWERED",
    Verdict.ABSTAINED: "ABSTAINED",
    Verdict.NO_ANSWER: "NO ANSWER",
}


def agent_state_colour(state: AgentState) -> QColor:
    t = _current
    return {AgentState.UP: t.good, AgentState.STARTING: t.info, AgentState.DOWN: t.bad}.get(state, t.muted)


def trust_state_colour(state: str) -> QColor | None:
    return {"probation": _current.warn, "quarantined": _current.bad}.get(state)


def trust_state_background(state: str) -> QColor | None:
    return {"quarantined": _current.bad_tint, "probation": _current.warn_tint}.get(state)


def agent_line_colour(position: int) -> QColor:
    lines = _current.lines
    return QColor(lines[position % len(lines)])


def call_status_colour(status: CallStatus) -> QColor:
    return {CallStatus.OK: _current.good, CallStatus.TIMEOUT: _current.warn,
            CallStatus.LATE: _current.warn}.get(status, _current.bad)


def fault_colour(fault: FaultKind) -> QColor:
    return _current.muted if fault is FaultKind.NONE else _current.bad


def flag_chip_colours(flag: PassageFlag) -> tuple[QColor, QColor]:
    return _current.chips.get(flag, _current.other_chip)


def flag_meaning(flag: PassageFlag) -> str:
    return FLAG_MEANINGS.get(flag, "flagged by secure retrieval")


def verdict_badge_css(verdict: Verdict) -> str:
    background, text = _current.badges[verdict]
    return (f"QLabel {{ background: {background.name()}; color: {text.name()}; font-weight: bold; "
            f"border-radius: 6px; padding: 4px 12px; }}")


def suspect_css() -> str:
    """The warning line naming suspected agents."""
    t = _current
    return (f"QLabel {{ color: {t.text.name()}; background: {t.warn_tint.name()}; border-left: 4px solid "
            f"{t.warn.name()}; padding: 3px 8px; }}")


def boxed_css(selector: str) -> str:
    """A read-only box for quoted text (reasons, excerpts) that stands apart from the form around it."""
    t = _current
    return f"{selector} {{ border: 1px solid {t.grid.name()}; padding: 4px 8px; background: {t.neutral_tint.name()}; }}"


def scaled_font(base: QFont, factor: float, bold: bool = False) -> QFont:
    font = QFont(base)
    font.setPointSizeF(base.pointSizeF() * factor)
    font.setBold(bold)
    return font


# The font code is set in ships with the console: the system's "monospace" may be a family Qt does not call fixed
# pitch although its glyphs share one advance (Noto Sans Mono), and CI's machine has no fonts at all.
CODE_FONT_FILE = Path(__file__).resolve().parents[1] / "resources" / "fonts" / "DejaVuSansMono.ttf"
_MONOSPACE_SAMPLE = string.ascii_letters + string.digits + string.punctuation + " "


def monospace_font() -> QFont:
    """The font for code, hashes and keys, at the size of the system's fixed font."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    family = _code_family()
    if family:
        font.setFamily(family)
    font.setStyleHint(QFont.StyleHint.TypeWriter)
    font.setFixedPitch(True)
    return font


@functools.cache
def _code_family() -> str:
    """The shipped font, registered the first time code is set (the app's start and tests alike); failing that, the
    first installed family whose glyphs measure one advance; "" leaves the system's fixed font."""
    loaded = QFontDatabase.addApplicationFont(str(CODE_FONT_FILE))
    if loaded >= 0 and QFontDatabase.applicationFontFamilies(loaded):
        return QFontDatabase.applicationFontFamilies(loaded)[0]
    log.warning("the console's code font %s did not load; measuring the installed fonts", CODE_FONT_FILE)
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    return next((family for family in (system, *QFontDatabase.families()) if _measures_monospaced(family)), "")


def _measures_monospaced(family: str) -> bool:
    font = QFont(family)
    if QFontInfo(font).family() != family:          # not installed: Qt answered with another family
        return False
    metrics = QFontMetricsF(font)
    return len({metrics.horizontalAdvance(ch) for ch in _MONOSPACE_SAMPLE}) == 1


MEASURED_ROWS = 60


def compact_rows(table: QTableView) -> None:
    """Rows just tall enough for one line of text, so a whole fleet fits without scrolling."""
    height = table.fontMetrics().height() + 10
    table.verticalHeader().setMinimumSectionSize(height)
    table.verticalHeader().setDefaultSectionSize(height)
    # Columns fitted to their contents measure this many rows, not the default 1,000: a table of a thousand
    # audit events or alerts is refitted without the UI thread reading every cell of it.
    table.horizontalHeader().setResizeContentsPrecision(MEASURED_ROWS)
    _style_table(table)
    _TableRestyler(table)


class _TableRestyler(QObject):
    """Restyles its table on a theme change. A child of the table: Qt drops the connection when the table goes,
    so a theme change never reaches a deleted one."""

    def __init__(self, table: QTableView) -> None:
        super().__init__(table)
        self._table = table
        theme_signals().sig_changed.connect(self.restyle)

    def restyle(self, _scheme=None) -> None:
        _style_table(self._table)


def _style_table(table: QTableView) -> None:
    # Air between right- and left-aligned neighbours; headers padded alike so titles line up with cells.
    t = _current
    table.setStyleSheet("QTableView::item { padding: 0px 6px; }"
                        "QHeaderView::section { padding: 3px 6px; border: none;"
                        f" border-right: 1px solid {t.grid.name()}; border-bottom: 1px solid {t.grid.name()};"
                        f" background: {t.header.name()}; color: {t.text.name()}; }}")


def style_plot(plot) -> None:
    """A pyqtgraph PlotWidget in the current scheme: background, axes and their labels."""
    t = _current
    plot.setBackground(t.base)
    item = plot.getPlotItem()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(t.plot_axis)
        axis.setTextPen(t.plot_text)
        label = axis.labelText
        if label:
            axis.setLabel(label, color=t.plot_text.name())


def plot_tip_fill():
    """The fill behind a label drawn on a plot: the base colour, nearly opaque."""
    colour = QColor(_current.base)
    colour.setAlpha(225)
    return colour


# --- the application's palette ---------------------------------------------------------------
def system_scheme() -> Scheme:
    app = QGuiApplication.instance()
    if app is None:
        return Scheme.LIGHT
    return Scheme.DARK if QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark else Scheme.LIGHT


def resolve(choice: ThemeChoice | str | None) -> Scheme:
    """The scheme a choice means now: QUORUM_THEME wins over "system", which follows Qt's hints."""
    if choice is None or choice == ThemeChoice.SYSTEM or choice == "system":
        forced = os.environ.get("QUORUM_THEME", "").strip().lower()
        if forced in ("light", "dark"):
            return Scheme(forced)
        return system_scheme()
    return Scheme(choice.value if isinstance(choice, ThemeChoice) else str(choice))


def palette_for(t: Tones) -> QPalette:
    palette = QPalette()
    roles = QPalette.ColorRole
    if t.scheme is Scheme.LIGHT:
        return QApplication.style().standardPalette() if QApplication.instance() else palette
    for role, colour in ((roles.Window, t.window), (roles.WindowText, t.text), (roles.Base, t.base),
                         (roles.AlternateBase, _c("#26282b")), (roles.ToolTipBase, _c("#3c3f44")),
                         (roles.ToolTipText, t.text), (roles.PlaceholderText, t.muted), (roles.Text, t.text),
                         (roles.Button, _c("#35373b")), (roles.ButtonText, t.text), (roles.BrightText, t.bad),
                         (roles.Link, t.info), (roles.Highlight, _c("#2f65ca")), (roles.HighlightedText, _c("#ffffff")),
                         (roles.Light, _c("#4a4c50")), (roles.Midlight, _c("#3d3f43")), (roles.Mid, _c("#2f3134")),
                         (roles.Dark, _c("#191a1c")), (roles.Shadow, _c("#000000"))):
        palette.setColor(role, colour)
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(disabled, role, _c("#7a7a7a"))
    return palette


def set_scheme(target: Scheme, app: QApplication | None = None) -> None:
    """Rebinds the tones (and the app's palette when there is an app) and tells panels to redraw."""
    global _current
    changed = _current.scheme is not target
    _current = _SCHEMES[target]
    app = app or QApplication.instance()
    if app is not None:
        app.setPalette(palette_for(_current))
    if changed:
        theme_signals().sig_changed.emit(target)


def apply_app_style(app: QApplication, choice: ThemeChoice | str | None = None) -> Scheme:
    """Fusion looks the same on every platform (and offscreen); 10 pt keeps tables readable. With the
    "system" choice the scheme follows the system's when it changes."""
    app.setStyle("Fusion")
    font = app.font()
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
        app.setFont(font)
    target = resolve(choice)
    set_scheme(target, app)
    return target


def follow_system(app: QApplication, choice_now) -> None:
    """Re-applies the scheme when the system's changes, while the operator's choice is "system"."""
    QGuiApplication.styleHints().colorSchemeChanged.connect(
        lambda _s: set_scheme(resolve(choice_now()), app) if choice_now() in (None, ThemeChoice.SYSTEM) else None)
