"""The answer header says how many agents took part, and marks an answer whose quorum did not hold."""
from __future__ import annotations

import dataclasses

from console import style
from console.panels.answer import AnswerView
from engine import Verdict
from engine.participation import participation
from engine.types import AgentOutcome, CallStatus, Role

from .answers import make_answer


def outcomes(role: Role, *statuses: CallStatus) -> list[AgentOutcome]:
    return [AgentOutcome(f"{role.value}-{i}", role, s, 10.0) for i, s in enumerate(statuses)]


def shown(qtbot, part) -> str:
    view = AnswerView()
    qtbot.addWidget(view)
    view.show_answer(dataclasses.replace(make_answer(Verdict.ANSWERED), participation=part))
    return view.header.reason.text()


def test_the_header_counts_who_answered_and_warns_when_no_quorum_held(qtbot):
    ok, down = CallStatus.OK, CallStatus.DOWN
    held = participation([outcomes(Role.RETRIEVER, ok, ok, ok, down, down)], outcomes(Role.GENERATOR, ok, ok, down),
                         retrieval_mode="full", policy_generators=0)
    text = shown(qtbot, held)
    assert "3 of 5 retrievers, 2 of 3 generators answered" in text and "no quorum" not in text
    lost = participation([outcomes(Role.RETRIEVER, ok, ok, down)], outcomes(Role.GENERATOR, ok, ok),
                         retrieval_mode="full", policy_generators=0)
    text = shown(qtbot, lost)
    assert "⚠ 2 of 3 retrievers, 2 of 2 generators answered: no quorum" in text and style.fg("warn") in text
    assert "retrievers" not in shown(qtbot, None)          # an answer built without the count shows none
