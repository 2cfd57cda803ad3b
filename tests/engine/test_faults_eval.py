"""`main.py eval faults`: a short run of the long fault evaluation (slow: it starts a fleet of 16 agents)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.evaluation.faults import FAULTY, fleet_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_fleet_draws_every_fault_at_a_rate_from_the_seed(tmp_path):
    text, profiles = fleet_text(3, tmp_path)
    assert {p["fault"] for p in profiles.values()} == {"none"} | {kind for _, _, kind, _, _ in FAULTY}
    assert all(low <= profiles[agent]["rate"] <= high for agent, _, _, (low, high), _ in FAULTY)
    assert fleet_text(3, tmp_path) == (text, profiles) and fleet_text(4, tmp_path)[1] != profiles


@pytest.mark.slow
def test_a_short_run_answers_every_question_and_leaks_nothing(tmp_path):
    out = tmp_path / "faults.json"
    done = subprocess.run([sys.executable, "main.py", "eval", "faults", "--questions", "6", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert data["crashed"] == [] and sum(data["verdicts"].values()) == 6
    assert not data["leaks"]["leaked"] and data["leaks"]["processes_left"] == []
    assert set(data["participation"]) == {"retrievers", "generators"} and data["latency_ms"]["p50"] > 0
    assert out.with_suffix(".md").read_text().startswith("# Agent faults")
