"""Two desks on one PostgreSQL store, two processes: this desk's console (the real engine on the small fleet) and
another desk's `main.py review approve`. The other desk approves; this desk's Approvals panel shows it, with no
one refreshing (NOTIFY -> the engine's change feed -> StoreChanged -> the panel reads the queue again)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from console.app import serve
from console.main_window import MainWindow
from console.service import EngineService, Phase
from engine import Engine, load_fleet, load_settings
from engine.review import ReviewStatus

from .helpers import agent_processes_alive

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
SEEN_TIMEOUT_MS = 20_000


def test_a_decision_at_another_desk_reaches_this_desks_panel(qtbot, qasync_loop, small_fleet_file, cache_dir,
                                                             postgres_schema):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=postgres_schema, cache_dir=cache_dir)
    service = EngineService(engine)
    window = MainWindow(service)
    qtbot.addWidget(window)
    errors: list[str] = []
    service.sig_error.connect(errors.append)
    panel = window.approvals_panel
    run = qasync_loop.create_task(serve(window, service))
    qtbot.waitExposed(window)
    with qtbot.waitSignal(service.reviews.sig_loaded, timeout=START_TIMEOUT_MS):
        pass
    assert service.operator == "quorum"          # the role this desk signed in as, not $USER

    window.ask_panel.question.setText("What are the moons of Mars?")
    window.ask_panel.tier.setCurrentText("high")
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS):
        window.ask_panel.submit()
    item = panel.model.record(0)
    assert item.status is ReviewStatus.PENDING

    other_desk = subprocess.run(
        [sys.executable, "main.py", "review", "approve", str(item.id), "--reason", "verified against the cited sources",
         "--db", postgres_schema], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert other_desk.returncode == 0, other_desk.stderr

    qtbot.waitUntil(lambda: panel.model.record(panel.model.row_of(item.id)).status is ReviewStatus.APPROVED,
                    timeout=SEEN_TIMEOUT_MS)
    assert panel.model.record(panel.model.row_of(item.id)).decided_by == "quorum"

    window.close()
    qtbot.waitUntil(run.done, timeout=START_TIMEOUT_MS)
    assert run.result() == 0 and service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == [] and errors == []
