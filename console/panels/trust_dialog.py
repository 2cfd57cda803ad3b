"""The reason dialog behind "Quarantine…" and "Release…": says what will happen, asks why, saves it.

Opened by the operator's click with `open()` (window-modal, no nested event loop). Confirming calls
the service and keeps the dialog open, saying so, until the engine answers: the dialog closes when
the engine reports the quarantine or release (sig_trust_updated), or shows why it refused
(sig_trust_failed) and lets the operator try again. Nothing here is ever opened from async code.
"""
from __future__ import annotations

import enum

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLayout, QLineEdit, QVBoxLayout, QWidget

from engine import AgentQuarantined, AgentReleased, AgentView

from .. import style
from ..service import EngineService
from ..untrusted import PlainLabel


class TrustAction(enum.Enum):
    QUARANTINE = "quarantine"
    RELEASE = "release"

    @property
    def verb(self) -> str:
        return "Quarantine" if self is TrustAction.QUARANTINE else "Release"

    @property
    def done(self) -> str:
        return "quarantined" if self is TrustAction.QUARANTINE else "released on probation"


# What the operator is told before confirming, in the engine's own terms.
CONSEQUENCES = {
    TrustAction.QUARANTINE: ("{agent} will get no work at all (no retrieval, generation or verification, at any "
                             "risk tier) until an operator releases it. A question already under way may still use "
                             "its reply; the next ones will not. The quarantine and your reason go into the audit "
                             "trail under your name."),
    TrustAction.RELEASE: ("{agent} goes on probation: low-risk work only, and its vote counts at most "
                          "{s.probation_weight:.2f}, until it earns its way back with {s.probation_questions} good "
                          "questions in a row. A score below {s.probation_start:.2f} restarts there. The release and "
                          "your reason go into the audit trail under your name."),
}
PLACEHOLDERS = {
    TrustAction.QUARANTINE: "why, e.g. “swapped names in three answers today”",
    TrustAction.RELEASE: "why, e.g. “fault fixed and redeployed”",
}
SAVED_EVENTS = {TrustAction.QUARANTINE: AgentQuarantined, TrustAction.RELEASE: AgentReleased}
TEXT_WIDTH = 480


def standing_text(view: AgentView) -> str:
    score = "not scored yet" if view.trust_score is None else f"score {view.trust_score:.2f}"
    process = "stopped" if view.stopped else view.state.value     # the standing is said just before
    return f"Now: {score} · {view.trust_state} · {view.spec.role.value}, {process}"


def plain_label(text: str = "") -> QLabel:
    """A label that shows text as text: agent ids and engine messages are never markup."""
    label = PlainLabel(text)
    label.setWordWrap(True)
    return label


class TrustActionDialog(QDialog):
    sig_saved = Signal(str, str)     # agent id, TrustAction value: the engine saved it

    def __init__(self, service: EngineService, view: AgentView, action: TrustAction,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._service = service
        self.agent_id = view.spec.id
        self.action = action
        self.saving = False
        self._error = ""
        self.setWindowTitle(f"{action.verb} {self.agent_id}")
        self.setWindowModality(Qt.WindowModality.WindowModal)

        self.heading = plain_label(f"{action.verb} {self.agent_id}?")
        self.heading.setFont(style.scaled_font(self.font(), 1.15, bold=True))
        self.standing = plain_label(standing_text(view))
        self.standing.setStyleSheet(f"color: {style.tones().muted.name()}")
        self.consequence = plain_label(CONSEQUENCES[action].format(agent=self.agent_id,
                                                                    s=service.trust.settings))
        self.reason_label = QLabel("&Reason (required):")
        self.reason = QLineEdit()
        self.reason.setPlaceholderText(PLACEHOLDERS[action])
        self.reason.setClearButtonEnabled(True)
        self.reason_label.setBuddy(self.reason)
        self.hint = plain_label()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText(action.verb)
        self.cancel_button = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)

        self.consequence.setMinimumWidth(TEXT_WIDTH)     # the dialog's width; its height follows the wrapped text
        frame_colour = style.tones().bad if action is TrustAction.QUARANTINE else style.tones().warn
        self.consequence.setStyleSheet(f"QLabel {{ border-left: 4px solid {frame_colour.name()}; "
                                       f"padding: 4px 8px; {style.bg('neutral_tint')}; }}")
        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        layout.addWidget(self.heading)
        layout.addWidget(self.standing)
        layout.addWidget(self.consequence)
        layout.addSpacing(4)
        layout.addWidget(self.reason_label)
        layout.addWidget(self.reason)
        layout.addWidget(self.hint)
        layout.addWidget(self.buttons)
        layout.setSizeConstraint(QLayout.SizeConstraint.SetFixedSize)     # wrapped text gets exactly its height

        self.reason.textChanged.connect(self._refresh)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        service.trust.sig_updated.connect(self._on_trust_updated)
        service.trust.sig_failed.connect(self._on_trust_failed)
        self.finished.connect(self._disconnect)
        self._refresh()
        self.reason.setFocus()

    def reason_text(self) -> str:
        return " ".join(self.reason.text().split())

    def ready_to_confirm(self) -> bool:
        return not self.saving and bool(self.reason_text())

    def accept(self) -> None:
        """OK (or Return in the reason): asks the engine, and waits for its answer with the dialog open."""
        if not self.ready_to_confirm():
            return
        self.saving, self._error = True, ""
        self._refresh()
        request = self._service.trust.quarantine if self.action is TrustAction.QUARANTINE else self._service.trust.release
        request(self.agent_id, self.reason_text())     # a refusal comes back as sig_trust_failed, even at once

    def _on_trust_updated(self, update) -> None:
        saved = SAVED_EVENTS[self.action]
        if self.saving and any(isinstance(e, saved) and e.agent_id == self.agent_id for e in update.events):
            self.saving = False
            self.sig_saved.emit(self.agent_id, self.action.value)
            super().accept()

    def _on_trust_failed(self, agent_id: str, why: str) -> None:
        if agent_id == self.agent_id and self.saving:
            self.saving, self._error = False, why
            self._refresh()

    def _refresh(self, *_args) -> None:
        self.reason.setEnabled(not self.saving)
        self.ok_button.setEnabled(self.ready_to_confirm())
        if self._error:
            self.hint.setText(f"Not saved: {self._error}")
            self.hint.setStyleSheet(f"color: {style.tones().bad.name()}")
        elif self.saving:
            self.hint.setText(f"Saving: {self.agent_id} is being {self.action.done}…")
            self.hint.setStyleSheet(f"color: {style.tones().muted.name()}")
        elif not self.reason_text():
            self.hint.setText("A reason is required: it is recorded with your name.")
            self.hint.setStyleSheet(f"color: {style.tones().muted.name()}")
        else:
            self.hint.setText(f"Recorded as {self._service.operator}.")
            self.hint.setStyleSheet(f"color: {style.tones().muted.name()}")

    def _disconnect(self, *_args) -> None:
        for signal, slot in ((self._service.trust.sig_updated, self._on_trust_updated),
                             (self._service.trust.sig_failed, self._on_trust_failed)):
            try:
                signal.disconnect(slot)
            except (RuntimeError, TypeError):      # already disconnected
                pass
