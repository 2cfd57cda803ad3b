"""`main.py audit verify | list | export` as an operator runs them: real processes on a temp SQLite file."""
import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.schema import MIGRATIONS
from engine.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_ACTOR = "=cmd|' /C calc'!A0"


def run(*args, cwd=ROOT, home_db=None):
    # QUORUM_DB points elsewhere: only --db may decide which file is read.
    env = {**os.environ, "QUORUM_DB": str(home_db or "/nonexistent/quorum.db"), "USER": "dana"}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def db(db_path):
    """Five events: two hours and more ago, then recent ones, one by an agent whose id is a formula
    and whose payload carries a terminal escape sequence."""
    now = time.time()
    times = iter([now - 3 * 3600, now - 3 * 3600 + 1, now - 600, now - 300, now - 60])
    store = Store(db_path, MIGRATIONS, clock=lambda: next(times, time.time()))
    store.open_sync()
    store.audit_sync("", "engine", "engine.started", {"agents": 3})
    store.audit_sync("a" * 32, "ret-a", "agent.retriever", {"status": "ok"})
    store.audit_sync("b" * 32, HOSTILE_ACTOR, "agent.generator", {"answer": "\x1b[2J\x1b[31mpwned\rOK"})
    store.audit_sync("b" * 32, "alice", "review.approved", {"reason": "checked"})
    store.audit_sync("c" * 32, "bob", "review.rejected", {"reason": "wrong"})
    store.close_sync()
    return db_path


def table_seqs(stdout: str) -> list[int]:
    return [int(line.split()[0]) for line in stdout.splitlines()[1:] if line.split() and line.split()[0].isdigit()]


def test_verify_intact_then_tampered(db):
    ok = run("audit", "verify", "--db", str(db))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"{db}: audit chain intact (5 events); ")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE audit SET payload = '{\"reason\":\"fine\"}' WHERE seq = 4")
    conn.commit()
    conn.close()
    broken = run("audit", "verify", "--db", str(db))
    assert broken.returncode == 1
    assert f"{db}: audit chain broken at event 4: content does not match its hash (edited)" in broken.stderr


def test_db_may_come_before_the_command(db):
    out = run("--db", str(db), "audit", "verify")
    assert out.returncode == 0 and "intact (5 events)" in out.stdout


def test_verify_without_a_database_exits_2(tmp_path):
    out = run("audit", "verify", "--db", str(tmp_path / "none.db"))
    assert out.returncode == 2 and out.stderr.strip() == f"{tmp_path / 'none.db'}: no database here yet"
    assert not (tmp_path / "none.db").exists()


def test_list_is_newest_first_and_plain_text(db):
    out = run("audit", "list", "--db", str(db))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].split() == ["SEQ", "TIME", "ACTOR", "TYPE", "TRACE", "PAYLOAD"]
    assert table_seqs(out.stdout) == [5, 4, 3, 2, 1]
    assert "\x1b" not in out.stdout and "\r" not in out.stdout       # no escape sequence reaches the terminal
    assert "pwned" in out.stdout and "b" * 32 in out.stdout


@pytest.mark.parametrize("flags, expected", [
    (["--actor", "alice"], [4]),
    (["--trace", "b" * 32], [4, 3]),
    (["--kind", "review."], [5, 4]),
    (["--kind", "agent.generator"], [3]),
    (["--since", "2h"], [5, 4, 3]),
    (["--since", "7m", "--until", "2m"], [4]),
    (["--until", "2h"], [2, 1]),
    (["--kind", "agent.", "--since", "1h"], [3]),
    (["--limit", "2"], [5, 4]),
])
def test_list_filters(db, flags, expected):
    out = run("audit", "list", "--db", str(db), *flags)
    assert out.returncode == 0, out.stderr
    assert table_seqs(out.stdout) == expected


def test_list_takes_iso_times(db):
    now = time.time()
    import datetime
    since = datetime.datetime.fromtimestamp(now - 700).strftime("%Y-%m-%dT%H:%M:%S")
    utc = datetime.datetime.fromtimestamp(now - 120, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = run("audit", "list", "--db", str(db), "--since", since, "--until", utc)
    assert out.returncode == 0, out.stderr
    assert table_seqs(out.stdout) == [4, 3]


def test_list_says_when_nothing_matches(db, tmp_path):
    out = run("audit", "list", "--db", str(db), "--actor", "nobody")
    assert out.returncode == 0 and out.stdout.strip() == "No audit events match"
    missing = run("audit", "list", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 0 and "no database here yet" in missing.stdout
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("flags, words", [
    (["--since", "yesterday"], "--since 'yesterday'"),
    (["--until", "2 fortnights"], "--until '2 fortnights'"),
    (["--since", "1h", "--until", "2h"], "is not before --until"),
    (["--limit", "0"], "--limit 0"),
])
def test_bad_input_exits_2_naming_the_problem(db, flags, words):
    out = run("audit", "list", "--db", str(db), *flags)
    assert out.returncode == 2 and words in out.stderr, out.stderr


def test_export_csv_is_audited_and_the_chain_still_verifies(db, tmp_path):
    out_file = tmp_path / "trail.csv"
    out = run("audit", "export", "--format", "csv", "--out", str(out_file), "--db", str(db))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote 5 events to {out_file}"
    with out_file.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["seq"]) for r in rows] == [1, 2, 3, 4, 5]
    assert rows[2]["actor"] == "'" + HOSTILE_ACTOR                  # a spreadsheet reads it as text
    assert json.loads(rows[2]["payload"]) == {"answer": "\x1b[2J\x1b[31mpwned\rOK"}   # the evidence, intact

    verified = run("audit", "verify", "--db", str(db))
    assert verified.returncode == 0 and "intact (6 events)" in verified.stdout
    listed = run("audit", "list", "--db", str(db), "--kind", "audit.exported")
    assert table_seqs(listed.stdout) == [6] and " dana " in listed.stdout   # --operator defaults to $USER
    conn = sqlite3.connect(db)
    payload = json.loads(conn.execute("SELECT payload FROM audit WHERE seq = 6").fetchone()[0])
    conn.close()
    assert payload["format"] == "csv" and payload["rows"] == 5 and payload["file"] == "trail.csv"


def test_export_jsonl_with_filters_and_a_relative_path(db, tmp_path):
    out = run("audit", "export", "--format", "jsonl", "--out", "review.jsonl", "--kind", "review.",
              "--operator", "erin", "--db", str(db), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "wrote 2 events to review.jsonl"
    records = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert [(r["seq"], r["actor"], r["type"]) for r in records] == [(4, "alice", "review.approved"),
                                                                     (5, "bob", "review.rejected")]
    listed = run("audit", "list", "--db", str(db), "--actor", "erin")
    assert table_seqs(listed.stdout) == [6] and "review." in listed.stdout


def test_export_to_an_unwritable_place_exits_2_and_writes_nothing(db, tmp_path):
    target = tmp_path / "missing" / "trail.csv"
    out = run("audit", "export", "--format", "csv", "--out", str(target), "--db", str(db))
    assert out.returncode == 2 and str(target) in out.stderr and "does not exist" in out.stderr
    assert not target.parent.exists()
    assert "intact (5 events)" in run("audit", "verify", "--db", str(db)).stdout   # nothing recorded


def test_export_needs_a_database_format_and_file(tmp_path, db):
    missing = run("audit", "export", "--format", "csv", "--out", str(tmp_path / "x.csv"),
                  "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 2 and "no database here yet" in missing.stderr
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "none.db").exists()
    no_format = run("audit", "export", "--out", str(tmp_path / "x.csv"), "--db", str(db))
    assert no_format.returncode == 2 and "--format" in no_format.stderr
    bad_format = run("audit", "export", "--format", "xlsx", "--out", str(tmp_path / "x.csv"), "--db", str(db))
    assert bad_format.returncode == 2 and "xlsx" in bad_format.stderr
