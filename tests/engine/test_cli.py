"""main.py as a user runs it: real processes, a real SQLite file, exit codes 0 / 1 / 2."""
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from ..conftest import FAST_SETTINGS

ROOT = Path(__file__).resolve().parents[2]


def run(*args, db, cache, timeout=120):
    env = {**os.environ, "QUORUM_DB": str(db), "QUORUM_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_ask_json_then_audit_verify_then_tamper(small_fleet_file, db_path, cache_dir):
    out = run("ask", "Which spacecraft was the first to enter interstellar space?", "--json",
              "--fleet", str(small_fleet_file), "--settings", str(FAST_SETTINGS), db=db_path, cache=cache_dir)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert "Voyager 1" in data["answer"] and data["verdict"] == "answered"
    assert len(data["trace_id"]) == 32
    assert data["citations"] and set(data["citations"][0]) >= {"chunk_id", "source", "text"}
    assert {a["id"] for a in data["agents"]} == {"ret-e5", "ret-bm25", "ret-rogue", "gen-a", "gen-b", "gen-liar"}
    assert all(set(a) >= {"id", "role", "status", "latency_ms"} for a in data["agents"])
    assert data["meaning"]["status"] in ("not needed", "read", "not read")

    verified = run("audit", "verify", db=db_path, cache=cache_dir)
    assert verified.returncode == 0 and "audit chain intact" in verified.stdout

    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 3")
    conn.commit()
    conn.close()
    broken = run("audit", "verify", db=db_path, cache=cache_dir)
    assert broken.returncode == 1 and "audit chain broken at event 3" in broken.stderr


def test_human_readable_ask_says_how_many_agents_took_part(small_fleet_file, db_path, cache_dir):
    out = run("ask", "What is the tallest volcano in the Solar System?", "--settings", str(FAST_SETTINGS),
              "--fleet", str(small_fleet_file),
              db=db_path, cache=cache_dir)
    assert out.returncode == 0, out.stderr
    assert "Olympus Mons" in out.stdout
    assert "3 retrievers and 3 generators answered" in out.stdout


def test_ask_says_plainly_when_meaning_was_not_read_and_how_to_turn_the_judge_on():
    from engine.cli.ask import meaning_line
    from engine.types import JudgeNote, MeaningStatus
    absent = meaning_line(JudgeNote(MeaningStatus.NOT_READ, "a lone answer", "no judge is in the fleet (...)"))
    assert absent.startswith("NOT READ") and "enabled = true on ver-judge" in absent
    late = meaning_line(JudgeNote(MeaningStatus.NOT_READ, "a dispute", "ver-judge: no reply in time"))
    assert "no reply in time" in late and "enabled = true" not in late
    assert meaning_line(JudgeNote(MeaningStatus.READ, "a lone answer", "read by ver-judge")).startswith("read by")
    assert meaning_line(JudgeNote()) == ""


def test_broken_fleet_file_exits_2_naming_file_and_key(tmp_path, db_path, cache_dir):
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[[agents]]\nid = "r"\nrole = "retriever"\nbackend = "bm25"\ntimeout_s = "soon"\n')
    out = run("ask", "q?", "--fleet", str(bad), db=db_path, cache=cache_dir)
    assert out.returncode == 2
    assert str(bad) in out.stderr and "agents[0] (r).timeout_s" in out.stderr and "expected float" in out.stderr


def test_empty_question_exits_2(small_fleet_file, db_path, cache_dir):
    out = run("ask", "   ", "--fleet", str(small_fleet_file), db=db_path, cache=cache_dir)
    assert out.returncode == 2 and "question is empty" in out.stderr


def test_audit_verify_without_database_exits_2(tmp_path):
    out = run("audit", "verify", "--db", str(tmp_path / "none.db"), db=tmp_path / "x.db", cache=tmp_path)
    assert out.returncode == 2 and "no database here yet" in out.stderr


def test_fleet_up_serves_health_on_every_agent_until_interrupted(small_fleet_file, db_path, cache_dir):
    import signal
    import time

    import httpx
    env = {**os.environ, "QUORUM_DB": str(db_path), "QUORUM_CACHE_DIR": str(cache_dir)}
    proc = subprocess.Popen([sys.executable, "main.py", "fleet", "up", "--fleet", str(small_fleet_file),
                             "--settings", str(FAST_SETTINGS)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    urls = {}
    try:
        deadline = time.monotonic() + 90
        while len(urls) < 6 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            parts = line.split()
            if len(parts) == 3 and parts[1] == "up":
                urls[parts[0]] = parts[2]
        assert len(urls) == 6, proc.stderr.read() if proc.poll() is not None else urls
        for agent_id, url in urls.items():
            assert httpx.get(f"{url}/health", timeout=5).json()["id"] == agent_id
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0
    for url in urls.values():
        try:
            httpx.get(f"{url}/health", timeout=1)
            alive = True
        except httpx.HTTPError:
            alive = False
        assert not alive, f"{url} still answers after the fleet stopped"


def test_agents_list_quarantine_and_release_from_the_command_line(small_fleet_file, db_path, cache_dir):
    fleet = ("--fleet", str(small_fleet_file))
    listing = run("agents", "--json", *fleet, db=db_path, cache=cache_dir)
    assert listing.returncode == 0, listing.stderr
    rows = {r["id"]: r for r in json.loads(listing.stdout)}
    assert rows["gen-liar"]["score"] == 0.75 and rows["gen-liar"]["state"] == "active"

    done = run("agents", "quarantine", "gen-liar", "--reason", "fabricates sources", "--operator", "alice", *fleet,
               db=db_path, cache=cache_dir)
    assert done.returncode == 0 and "gen-liar is quarantined" in done.stdout
    again = run("agents", "quarantine", "gen-liar", "--reason", "twice", *fleet, db=db_path, cache=cache_dir)
    assert again.returncode == 2 and "already quarantined" in again.stderr
    unknown = run("agents", "quarantine", "gen-nobody", "--reason", "x", *fleet, db=db_path, cache=cache_dir)
    assert unknown.returncode == 2 and "no agent 'gen-nobody'" in unknown.stderr
    empty = run("agents", "release", "gen-liar", "--reason", "  ", *fleet, db=db_path, cache=cache_dir)
    assert empty.returncode == 2 and "empty reason" in empty.stderr

    # The quarantined agent takes no part in a question asked meanwhile.
    asked = run("ask", "What are the moons of Mars?", "--json", "--settings", str(FAST_SETTINGS), *fleet,
                db=db_path, cache=cache_dir)
    assert asked.returncode == 0, asked.stderr
    assert "gen-liar" not in {a["id"] for a in json.loads(asked.stdout)["agents"]}

    released = run("agents", "release", "gen-liar", "--reason", "fixed", *fleet, db=db_path, cache=cache_dir)
    assert released.returncode == 0 and "probation" in released.stdout
    table = run("agents", *fleet, db=db_path, cache=cache_dir)
    assert "gen-liar" in table.stdout and "probation" in table.stdout
    conn = sqlite3.connect(db_path)
    audited = [r[0] for r in conn.execute("SELECT actor FROM audit WHERE type = 'reputation.quarantined'")]
    conn.close()
    assert audited == ["alice"]
