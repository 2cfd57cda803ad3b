"""Live progress of the operator's question through its stages, while the fleet works on it.

The engine reports every stage as it starts and finishes (StageProgressed); this strip shows the
stages done with their time and confidence, the one running, and how many are planned:

    ■■■□  stage 3 of 4 · formulate ✓ 2 ms → retrieve ✓ 212 ms (72%) → reason … running

Once the answer is in, the bar goes and the line stays, saying where the last question's time went. The
strip keeps its height whether a question runs or not, so the window never grows by itself.

A cascade mitigation that rolls back re-runs an earlier stage (attempt + 1): the stages after it are
dropped from the strip and the re-run is marked ↻. Plain text only: nothing here comes from agents,
but the strip stays plain like every other stage text.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QSizePolicy, QWidget

from engine import StageKind, StageProgressed

from .. import style
from ..stage_text import rerun_mark
from ..untrusted import PlainLabel

IDLE_TEXT = "Ask a question: its stages show here as the fleet works on it"


@dataclass(frozen=True)
class StageStep:
    index: int
    attempt: int
    kind: StageKind | None          # None while it runs
    elapsed_ms: float = 0.0
    confidence: float | None = None

    @property
    def done(self) -> bool:
        return self.kind is not None


def step_text(step: StageStep) -> str:
    rerun = f" {rerun_mark(step.attempt)}" if step.attempt > 0 else ""
    if not step.done:
        return f"stage {step.index + 1}{rerun} … running"
    confidence = f" ({step.confidence:.0%})" if step.confidence is not None else ""
    return f"{step.kind.value}{rerun} ✓ {step.elapsed_ms:,.0f} ms{confidence}"


class StageProgressView(QWidget):
    """Follows one trace id at a time (the latest question the operator asked)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.trace_id = ""
        self.total = 0
        self._steps: dict[int, StageStep] = {}
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(140)
        self.bar.setTextVisible(False)
        self.label = PlainLabel()
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)   # long chains elide, never widen
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.label, 1)
        self._style()
        style.theme_signals().sig_changed.connect(self._style)
        self.label.setText(IDLE_TEXT)
        self.bar.hide()
        # The bar's height whether shown or not: showing it must not change the window's minimum height.
        self.setMinimumHeight(max(self.bar.sizeHint().height(), self.label.sizeHint().height()))

    def _style(self, *_args) -> None:
        self.label.setStyleSheet(f"QLabel {{ {style.fg('muted')} }}")

    def start(self, trace_id: str, _question: str = "") -> None:
        self.trace_id, self.total = trace_id, 0
        self._steps.clear()
        self.bar.setRange(0, 0)             # busy until the engine says how many stages it planned
        self.bar.show()
        self.label.setText(f"Asking the fleet… (trace {trace_id[:8]})")

    def on_progress(self, event: StageProgressed) -> None:
        if event.trace_id != self.trace_id:
            return
        known = self._steps.get(event.index)
        if known is not None and event.attempt > known.attempt:
            # A rollback: this stage runs again, and everything after it will be derived anew.
            self._steps = {i: s for i, s in self._steps.items() if i < event.index}
        self._steps[event.index] = StageStep(event.index, event.attempt, event.kind, event.elapsed_ms, event.confidence)
        self.total = max(self.total, event.total)
        done = sum(s.done for s in self._steps.values())
        self.bar.setRange(0, max(self.total, 1))
        self.bar.setValue(done)
        self.label.setText(self.text())
        self.label.setToolTip(self.text())

    def text(self) -> str:
        steps = [self._steps[i] for i in sorted(self._steps)]
        running = next((s for s in steps if not s.done), None)
        at = (running.index + 1) if running else len([s for s in steps if s.done])
        head = f"stage {at} of {self.total}" if self.total else "starting"
        return f"{head} · " + " → ".join(step_text(s) for s in steps) if steps else head

    def steps(self) -> tuple[StageStep, ...]:
        return tuple(self._steps[i] for i in sorted(self._steps))

    @property
    def running(self) -> bool:
        return bool(self.trace_id)

    def finish(self, ok: bool = True) -> None:
        """The answer (or the failure) is in: the bar goes, the line says where the time went."""
        steps = [s for s in self.steps() if s.done]
        self.trace_id = ""
        self.bar.hide()
        if not steps:
            self.label.setText(IDLE_TEXT if ok else "The last question got no answer (see the message)")
            return
        total = sum(s.elapsed_ms for s in steps)
        self.label.setText(f"Last question, {total:,.0f} ms in its stages: "
                           + " → ".join(step_text(s) for s in steps))
        self.label.setToolTip(self.label.text())
