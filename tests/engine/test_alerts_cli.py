"""`main.py alerts` end to end on a temporary SQLite file: list, ack with a comment, silence, silences,
unsilence, and the errors an operator can make."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import main
from engine.alerts import NewAlert
from engine.alerts.book import AlertBook
from engine.alerts.kinds import AlertKind
from engine.schema import MIGRATIONS
from engine.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "blocked \x1b[2J\x1b[31mred\x1b[0m \u202egnp.exe text\x07"


@pytest.fixture
def seeded(db_path) -> Path:
    store = Store(db_path, MIGRATIONS)
    store.open_sync()
    now = time.time()
    AlertBook(store).record_sync([
        NewAlert(AlertKind.INJECTION_BLOCKED, "ret-web", HOSTILE, "q1", now - 60),
        NewAlert(AlertKind.SCORE_DROP, "gen-a", "gen-a lost 0.30", "q2", now - 30),
    ])
    store.close_sync()
    return db_path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main.main(["alerts", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list_ack_silence_and_unsilence(seeded, capsys):
    db = ("--db", str(seeded))
    code, out, _ = cli(capsys, "list", *db)
    assert code == 0 and out.index("#2 ") < out.index("#1 ")          # newest first
    assert "CRITICAL" in out and "injection blocked" in out and "2 unacknowledged: 2 notify, 0 muted" in out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out and "blocked red gnp.exe text" in out

    code, out, _ = cli(capsys, "silence", "--agent", "ret-web", "--for", "2h", "--comment", "red-team drill",
                       "--operator", "alice", *db)
    assert code == 0 and "silence #1" in out and "agent ret-web" in out and "by alice" in out
    assert "1 unacknowledged alert(s) muted now" in out

    code, out, _ = cli(capsys, "list", *db)
    first = next(line for line in out.splitlines() if line.startswith("#1 "))
    assert "muted by silence #1" in first and "1 notify, 1 muted" in out

    code, out, _ = cli(capsys, "ack", "2", "--comment", "tuning its prompt", "--operator", "bob", *db)
    assert code == 0 and "acknowledged by bob" in out and "comment: tuning its prompt" in out
    code, out, _ = cli(capsys, "list", "--open", *db)
    assert "#2 " not in out and "#1 " in out and "1 unacknowledged: 0 notify, 1 muted" in out

    code, out, _ = cli(capsys, "silences", *db)
    assert code == 0 and "silence #1" in out and "red-team drill" in out and "left)" in out
    code, out, _ = cli(capsys, "unsilence", "1", "--operator", "carol", *db)
    assert code == 0 and "ended by carol" in out
    code, out, _ = cli(capsys, "silences", *db)
    assert out.strip() == "No active silences"
    code, out, _ = cli(capsys, "silences", "--all", *db)
    assert "silence #1" in out and "ended by carol" in out
    code, out, _ = cli(capsys, "list", *db)
    assert "muted" not in out.split("\n")[0] and "1 unacknowledged: 1 notify, 0 muted" in out

    # Every change is in the audit chain, with its comment.
    store = Store(seeded, MIGRATIONS)
    store.open_sync()
    try:
        types = [r[0] for r in store.execute("SELECT type FROM audit ORDER BY seq")]
        ack = json.loads(store.execute("SELECT payload FROM audit WHERE type = 'alert.acknowledged'")
                         .fetchone()[0])
        assert store.verify_audit_sync() == len(types)
    finally:
        store.close_sync()
    assert {"alert.silenced", "alert.acknowledged", "alert.silence_ended"} <= set(types)
    assert ack["comment"] == "tuning its prompt"


def test_json_output(seeded, capsys):
    code, out, _ = cli(capsys, "list", "--json", "--limit", "1", "--db", str(seeded))
    [row] = json.loads(out)
    assert code == 0 and row["id"] == 2 and row["severity"] == "warning" and row["silenced_by"] is None
    code, out, _ = cli(capsys, "silence", "--kind", "score_drop", "--for", "30m", "--comment", "x", "--json",
                       "--db", str(seeded))
    silence = json.loads(out)
    assert silence["kind"] == "score_drop" and silence["expires_at"] - silence["created_at"] == 1800
    code, out, _ = cli(capsys, "list", "--json", "--db", str(seeded))
    assert "\u202e" not in out and [r["silenced_by"] for r in json.loads(out)] == [1, None]


@pytest.mark.parametrize("argv, words", [
    (("silence", "--for", "2h", "--comment", "x"), "give --kind, --agent or both"),
    (("silence", "--kind", "score_drop", "--for", "2", "--comment", "x"), "a number and a unit"),
    (("silence", "--kind", "score_drop", "--for", "31d", "--comment", "x"), "longer than the limit of 30d"),
    (("silence", "--kind", "score_drop", "--for", "1h", "--comment", "  "), "--comment is empty"),
    (("silence", "--agent", "gen a", "--for", "1h", "--comment", "x"), "control characters or spaces"),
    (("ack", "99"), "no alert #99"),
    (("ack", "abc"), "alert id 'abc' is not a number"),
    (("unsilence", "7"), "no silence #7"),
    (("list", "--limit", "0"), "--limit must be at least 1"),
])
def test_bad_input_exits_2_and_says_why(seeded, capsys, argv, words):
    code, out, err = cli(capsys, *argv, "--db", str(seeded))
    assert code == 2 and words in err and out == ""


def test_an_unknown_kind_is_refused_by_argparse(seeded, capsys):
    with pytest.raises(SystemExit) as exit_:
        main.main(["alerts", "silence", "--kind", "nope", "--for", "1h", "--comment", "x", "--db", str(seeded)])
    assert exit_.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_without_a_database_listings_are_empty_and_changes_refused(tmp_path, capsys):
    missing = str(tmp_path / "none.db")
    assert cli(capsys, "list", "--db", missing)[:2] == (0, "No alerts\n")
    assert cli(capsys, "silences", "--db", missing)[:2] == (0, "No active silences\n")
    code, _, err = cli(capsys, "ack", "1", "--db", missing)
    assert code == 2 and "no alert #1" in err and "no database here yet" in err
    code, _, err = cli(capsys, "silence", "--kind", "score_drop", "--for", "1h", "--comment", "x", "--db", missing)
    assert code == 2 and "no database here yet" in err
    assert not Path(missing).exists()


def test_main_py_runs_the_command_in_a_subprocess(seeded):
    done = subprocess.run([sys.executable, "main.py", "alerts", "list", "--open", "--db", str(seeded)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "score drop" in done.stdout and "2 unacknowledged" in done.stdout
