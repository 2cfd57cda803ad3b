"""Desks on one PostgreSQL store, in processes of their own: this desk's console (the real engine on the small
fleet, signed in as the store's owner) asks a high-risk question; two other operators, each signed in as a role of
their own, approve it with `main.py review approve`. A team's high tier asks two approvals: this desk's Approvals
panel shows the first counted, then the decision, with no one refreshing (NOTIFY -> the engine's change feed ->
StoreChanged -> the panel reads the queue again)."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import psycopg

from console.service import EngineService, Phase
from engine import Engine, load_fleet, load_settings
from engine.review import ReviewStatus
from engine.store.roles import OPERATOR
from tests.conftest import TEST_PG

from .helpers import agent_processes_alive, serve_window

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 30_000
SEEN_TIMEOUT_MS = 20_000


def test_a_decision_at_another_desk_reaches_this_desks_panel(qtbot, qasync_loop, small_fleet_file, cache_dir,
                                                             postgres_schema):
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=postgres_schema, cache_dir=cache_dir)
    service = EngineService(engine)
    window, run, errors = serve_window(qtbot, qasync_loop, service, START_TIMEOUT_MS)
    panel = window.approvals_panel
    assert service.operator == "quorum"          # the role this desk signed in as, not $USER

    window.ask_panel.question.setText("What are the moons of Mars?")
    window.ask_panel.tier.setCurrentText("high")
    with qtbot.waitSignal(service.questions.sig_answer, timeout=ANSWER_TIMEOUT_MS):
        window.ask_panel.submit()
    item = panel.model.record(0)
    assert item.status is ReviewStatus.PENDING

    assert (item.quorum, item.asked_by) == (2, "quorum")
    password = secrets.token_hex(12)
    names = [f"t_alice_{secrets.token_hex(3)}", f"t_bob_{secrets.token_hex(3)}"]
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        for name in names:
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {OPERATOR}")
    try:
        def approve_at_another_desk(role: str) -> None:
            other_desk = subprocess.run(
                [sys.executable, "main.py", "review", "approve", str(item.id), "--reason",
                 "verified against the cited sources", "--db", postgres_schema.replace("//quorum@", f"//{role}@", 1)],
                cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PGPASSWORD": password})
            assert other_desk.returncode == 0, other_desk.stderr

        def shown():
            return panel.model.record(panel.model.row_of(item.id))
        approve_at_another_desk(names[0])
        qtbot.waitUntil(lambda: shown().approvals == (names[0],), timeout=SEEN_TIMEOUT_MS)
        assert shown().pending and panel.proxy.index(panel.proxy.row_of(item.id), 1).data() == "pending · 1/2"
        approve_at_another_desk(names[1])
        qtbot.waitUntil(lambda: shown().status is ReviewStatus.APPROVED, timeout=SEEN_TIMEOUT_MS)
        assert shown().decided_by == names[1] and shown().note == f"approved by {names[0]}, {names[1]}"
    finally:
        with psycopg.connect(TEST_PG, autocommit=True) as conn:
            for name in names:
                conn.execute(f"DROP ROLE {name}")

    window.close()
    qtbot.waitUntil(run.done, timeout=START_TIMEOUT_MS)
    assert run.result() == 0 and service.phase is Phase.STOPPED
    assert agent_processes_alive(engine) == [] and errors == []
