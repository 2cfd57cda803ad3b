"""Ask panel: the question form (with a risk-tier override), the question's live progress through its
stages while the fleet works, and the last answer."""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from engine import Answer, RiskTier

from .. import style, untrusted
from ..service import AUTO_TIER, EngineService
from .answer import AnswerView
from .base import EnginePanel
from .progress import StageProgressView

TIERS = (AUTO_TIER,) + tuple(t.value for t in RiskTier)


class AskPanel(EnginePanel):
    def __init__(self, service: EngineService, parent: QWidget | None = None) -> None:
        super().__init__(service, parent)
        self._busy = False

        self.question = QLineEdit()
        self.question.setPlaceholderText("Ask the fleet a question, e.g. What are the moons of Mars?")
        self.question.setFont(style.scaled_font(self.font(), 1.15))
        self.question.setClearButtonEnabled(True)
        self.tier = QComboBox()
        self.tier.addItems(TIERS)
        self.tier.setCurrentText(AUTO_TIER)
        self.tier.setToolTip("Risk tier: auto = the engine's risk rules decide (config/engine.toml [risk]); "
                             "low = fast path, medium = full redundancy, high = every agent and an operator's approval")
        self.ask_button = QPushButton("Ask")
        self.ask_button.setDefault(True)
        self.ask_button.setMinimumWidth(90)
        self.progress = StageProgressView()     # stage by stage, from the engine's StageProgressed events
        self.busy_bar = self.progress.bar
        self.answer_view = AnswerView()

        form = QHBoxLayout()
        form.addWidget(QLabel("Question"))
        form.addWidget(self.question, 1)
        form.addWidget(QLabel("Risk tier"))
        form.addWidget(self.tier)
        form.addWidget(self.ask_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.answer_view, 1)

        self.ask_button.clicked.connect(self.submit)
        self.question.returnPressed.connect(self.submit)
        service.questions.sig_asked.connect(self.progress.start)
        service.questions.sig_progress.connect(self.progress.on_progress)
        service.questions.sig_answer.connect(self.show_answer)
        service.questions.sig_finished.connect(self._on_question_finished)
        self.refresh_buttons()

    def submit(self) -> None:
        if not self.ask_button.isEnabled():    # Enter while disabled must not sneak a question in
            return
        self._set_busy(True)
        if self._service.questions.ask(self.question.text(), self.tier.currentText()) is None:
            self._set_busy(False)
            self.progress.finish(False)

    def show_answer(self, answer: Answer) -> None:
        self.answer_view.show_answer(answer)

    # --- state -----------------------------------------------------------------------------
    def on_engine_ready(self) -> None:
        self.question.setFocus()

    def _on_question_finished(self, ok: bool) -> None:
        self._set_busy(False)
        self.progress.finish(ok)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self.refresh_buttons()

    def focus_target(self) -> QWidget:
        return self.question

    def refresh_buttons(self, *_args) -> None:
        self.ask_button.setEnabled(self._accepting and not self._busy and not self._service.reads_only)
        if self._service.reads_only:
            self.ask_button.setToolTip(untrusted.tooltip(self._service.viewer_text()))
        elif not self._accepting and not self._busy:
            self.ask_button.setToolTip("Waiting for the fleet to be ready")
        else:
            self.ask_button.setToolTip("Ask (Enter)")
