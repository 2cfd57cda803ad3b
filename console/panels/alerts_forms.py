"""The Alerts panel's two inline forms (no modal dialog): acknowledge the selected alerts with an optional
comment, and silence a kind, an agent or both for a while with a required comment.

Both open under the detail pane in place of the buttons; Enter confirms, Escape cancels. What the
engine refused is said in the form's hint line, as plain text (it may quote what was typed).
"""
from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QComboBox, QFrame, QLabel, QLineEdit, QPushButton, QWidget

from engine import InputError, KINDS, MAX_COMMENT_CHARS, MAX_SILENCE_S, format_duration, label_of, parse_duration

from .. import style
from ..layout import hbox, inline_form_layout
from ..untrusted import PlainLabel
from .approvals import when_text

DURATIONS = ("15m", "1h", "4h", "1d")
CUSTOM = "custom…"
MAX_IDS_NAMED = 6          # the title names this many ids, then "…"


def ids_text(ids: Sequence[int]) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:MAX_IDS_NAMED])
    return shown + (", …" if len(ids) > MAX_IDS_NAMED else "")


class InlineForm(QFrame):
    """A framed form with a bold title, a hint line (plain text) and Escape to cancel."""

    sig_cancelled = Signal()
    TONE = "info"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.saving = False
        self._error = ""
        self.title = PlainLabel()
        self.title.setFont(style.scaled_font(self.font(), 1.0, bold=True))
        self.hint = PlainLabel()
        self.hint.setWordWrap(True)
        self.confirm = QPushButton()
        self.cancel = QPushButton("Cancel")
        self.cancel.clicked.connect(self.close_form)
        style.theme_signals().sig_changed.connect(self._restyle)
        self.hide()

    def _restyle(self, *_args) -> None:
        self.setStyleSheet(f"{type(self).__name__} {{ border: 1px solid {style.tone(self.TONE).name()};"
                           " border-radius: 4px; }")
        self._refresh()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and not self.saving:
            self.close_form()
            return
        super().keyPressEvent(event)

    def is_open(self) -> bool:
        """Shown or not, whether the window itself is (a docked panel may be on a hidden tab)."""
        return not self.isHidden()

    def close_form(self) -> None:
        self.saving = False
        self.hide()
        self.sig_cancelled.emit()

    def finish(self) -> None:
        """Closes after a success (no sig_cancelled: nothing was cancelled)."""
        self.saving = False
        self.hide()

    def failed(self, message: str) -> None:
        self.saving = False
        self._error = message
        self._refresh()

    def problem(self) -> str:
        """What keeps the form from being confirmed ("" when nothing)."""
        return ""

    def ready_to_confirm(self) -> bool:
        return not self.saving and not self.problem()

    def _say(self, text: str, tone: str | None) -> None:
        self.hint.setText(text)
        self.hint.setStyleSheet(f"QLabel {{ {style.fg(tone)}; }}" if tone else "")

    def _refresh(self, *_args) -> None:
        self.confirm.setEnabled(self.ready_to_confirm())
        problem = self.problem()
        if self._error:
            self._say(self._error, "bad")
        elif self.saving:
            self._say("Saving…", "muted")
        elif problem:
            self._say(problem, "warn")
        else:
            self._say(self.advice(), "muted")

    def advice(self) -> str:
        return ""

    def _start(self) -> None:
        self.saving, self._error = False, ""
        self._restyle()
        self.show()


class AcknowledgeForm(InlineForm):
    """'Acknowledge #4, #7' · [comment (optional)] [Acknowledge] [Cancel]."""

    sig_confirmed = Signal(object, str)        # tuple[int] alert ids, comment

    def __init__(self, operator: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.operator = operator
        self.ids: tuple[int, ...] = ()
        self.comment = QLineEdit()
        self.comment.setClearButtonEnabled(True)
        self.comment.setMaxLength(MAX_COMMENT_CHARS)
        self.comment.setPlaceholderText("comment (optional): what you did about it")
        self.confirm.setText("Acknowledge")
        inline_form_layout(self, self.title, hbox((self.comment, 1), self.confirm, self.cancel), self.hint)
        self.comment.returnPressed.connect(self.submit)
        self.confirm.clicked.connect(self.submit)

    def open_for(self, ids: Sequence[int]) -> None:
        self.ids = tuple(ids)
        self.comment.clear()
        self.comment.setEnabled(True)
        self._retitle()
        self._start()
        self.comment.setFocus()

    def _retitle(self) -> None:
        count = len(self.ids)
        self.title.setText(f"Acknowledge {ids_text(self.ids)}" if count == 1 else
                           f"Acknowledge {count} alerts ({ids_text(self.ids)})")

    def advice(self) -> str:
        return f"Enter acknowledges as {self.operator}, Escape cancels. The comment goes into the audit trail."

    def problem(self) -> str:
        return "" if self.ids else "No open alert is selected."

    def submit(self) -> None:
        if not self.is_open() or not self.ready_to_confirm():
            return
        self.saving, self._error = True, ""
        self.comment.setEnabled(False)
        self._refresh()
        self.sig_confirmed.emit(self.ids, self.comment.text().strip())

    def failed_some(self, failed: dict[int, str], done: int) -> None:
        """Some were refused: the form stays open for those, saying why."""
        self.ids = tuple(i for i in self.ids if i in failed)
        self._retitle()
        self.comment.setEnabled(True)
        reasons = "; ".join(f"#{i}: {why}" for i, why in failed.items())
        self.failed((f"{done} acknowledged. " if done else "") + f"Not acknowledged: {reasons}")

    def failed(self, message: str) -> None:
        self.comment.setEnabled(True)
        super().failed(message)


class SilenceForm(InlineForm):
    """'Silence notification of' [kind ▾] [agent ▾] for [1h ▾] [custom] · [why (required)] [Silence] [Cancel]."""

    sig_confirmed = Signal(object, object, float, str)     # kind value or None, agent id or None, seconds, comment
    TONE = "warn"

    def __init__(self, clock: Callable[[], float], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._clock = clock
        self.title.setText("Silence notification of")
        self.kind = QComboBox()
        self.kind.addItem("any kind", None)
        for kind, info in KINDS.items():
            self.kind.addItem(info.label, kind.value)
        self.agent = QComboBox()
        self.duration = QComboBox()
        self.duration.addItems([*DURATIONS, CUSTOM])
        self.duration.setCurrentText("1h")
        self.custom = QLineEdit()
        self.custom.setPlaceholderText("e.g. 2h30m")
        self.custom.setMaximumWidth(110)
        self.custom.hide()
        self.comment = QLineEdit()
        self.comment.setClearButtonEnabled(True)
        self.comment.setMaxLength(MAX_COMMENT_CHARS)
        self.comment.setPlaceholderText("why (required), so the next operator knows")
        self.confirm.setText("Silence")

        inline_form_layout(
            self, hbox(self.title, (self.kind, 1), (self.agent, 1), QLabel("for"), self.duration, self.custom),
            hbox((self.comment, 1), self.confirm, self.cancel), self.hint)

        for combo in (self.kind, self.agent, self.duration):
            combo.currentIndexChanged.connect(self._refresh)
        self.duration.currentTextChanged.connect(self._on_duration)
        for edit in (self.custom, self.comment):
            edit.textChanged.connect(self._refresh)
            edit.returnPressed.connect(self.submit)
        self.confirm.clicked.connect(self.submit)

    def open_for(self, kind: str | None, agent_id: str | None, agents: Sequence[str]) -> None:
        """Preselects the kind and the agent (None: any); `agents` are those it may name."""
        self.agent.blockSignals(True)
        self.agent.clear()
        self.agent.addItem("any agent", None)
        for name in agents:
            self.agent.addItem(name, name)
        self.agent.blockSignals(False)
        self.agent.setCurrentIndex(max(self.agent.findData(agent_id), 0) if agent_id else 0)
        self.kind.setCurrentIndex(max(self.kind.findData(kind), 0) if kind else 0)
        self.comment.clear()
        self.comment.setEnabled(True)
        self._start()
        self.comment.setFocus()

    def _on_duration(self, text: str) -> None:
        self.custom.setVisible(text == CUSTOM)
        if text == CUSTOM:
            self.custom.setFocus()

    # --- what is asked ---------------------------------------------------------------------
    def chosen_kind(self) -> str | None:
        return self.kind.currentData()

    def chosen_agent(self) -> str | None:
        return self.agent.currentData()

    def duration_s(self) -> float:
        """InputError when the custom duration cannot be read."""
        text = self.duration.currentText()
        return parse_duration(self.custom.text() if text == CUSTOM else text)

    def problem(self) -> str:
        if self.chosen_kind() is None and self.chosen_agent() is None:
            return "Choose a kind, an agent or both: silencing every alert is not allowed."
        try:
            seconds = self.duration_s()
        except InputError as exc:
            return str(exc) if self.custom.text().strip() else "Type a duration, like 30m, 2h or 1d."
        if not seconds > 0:
            return "The duration must be positive."
        if seconds > MAX_SILENCE_S:
            return f"At most {format_duration(MAX_SILENCE_S)}: a forgotten silence must not hide an attack for ever."
        if not self.comment.text().strip():
            return "Say why (required): it is kept with the silence and audited."
        return ""

    def advice(self) -> str:
        kind = label_of(self.chosen_kind()) if self.chosen_kind() else "every kind"
        agent = self.chosen_agent() or "any agent"
        until = when_text(self._clock() + self.duration_s())
        return (f"Mutes {kind} from {agent} until {until}. Matching alerts are still recorded and listed; "
                "they only stop notifying. Enter confirms, Escape cancels.")

    def submit(self) -> None:
        if not self.is_open() or not self.ready_to_confirm():
            return
        self.saving, self._error = True, ""
        self._refresh()
        self.sig_confirmed.emit(self.chosen_kind(), self.chosen_agent(), self.duration_s(),
                                self.comment.text().strip())
