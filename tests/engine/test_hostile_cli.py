"""The untrusted-text boundary end to end (issue #15): a hostile corpus and a hostile generator (tests/hostile.py)
push markup, links, images, bidi overrides, ANSI escapes, formula cells and forged log lines through the real
`main.py`, in its own processes. Each test asserts what the operator gets: the text shown as text, the escaped
line, the defused cell, the JSON that reads back to the same value.

The fleet starts twice, in one module fixture (an `ask` in text and one in JSON fill the database); every other
command then reads that database, most of them side by side. Besides what the hostile generator gets through
(its e-mails and memory writes that pass the gateway carry markup), a pending tool call and a memory entry with
every piece, line breaks included, are written straight into the file, and an operator whose name is a formula
approves the review item with a note full of escapes.
"""
from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from engine.store.audit import canonical
from engine.gateway.traces import TraceLine
from engine.untrusted import FORMULA_START, quoted

from ..conftest import FAST_SETTINGS
from ..hostile import (ACTING, ANSI, ANSWER, BIDI, C1_CSI, FORGED_LINE, FORMULA, MARKUP, QUESTION, hostile_text,
                       shown_literally, start_hostile_generator, write_hostile_corpus, write_hostile_fleet)
from ..serving import free_port

ROOT = Path(__file__).resolve().parents[2]
FORGED_START = FORGED_LINE.strip()[:24]          # "2026-12-02 10:00:00 INFO": how a line of a real log begins
FORGED_ESCAPED = "\\n" + FORGED_LINE.strip()     # the same text, quoted: on the line of the field that carried it
# A file name no corpus can read, that would forge a line and repaint the terminal if printed raw.
BAD_FILE = f"evil{FORGED_LINE}{ANSI}{BIDI}.pdf"
NOTE = hostile_text("checked by hand ")          # an operator's note carries what it was pasted from
TOOL_PARAMS = {"to": FORMULA, "subject": hostile_text(), "body": hostile_text("Dear operator, "),
               hostile_text("x-"): "a parameter name is the agent's text too"}
TOOL_WHY = hostile_text("outward: ")
MEMORY_KEY = hostile_text("units ")


def start(*args, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "main.py", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen, timeout: float = 120) -> subprocess.CompletedProcess:
    """Bytes decoded as they came: text mode would turn a carriage return into a line break."""
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out.decode("utf-8"), err.decode("utf-8"))


def run(*args, env: dict) -> subprocess.CompletedProcess:
    return finish(start(*args, env=env))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> types.SimpleNamespace:
    tmp = tmp_path_factory.mktemp("hostile")
    corpus = write_hostile_corpus(tmp / "corpus")
    (corpus / BAD_FILE).write_text("not a PDF")
    db = tmp / "quorum.db"
    env = {**os.environ, "QUORUM_DB": str(tmp / "elsewhere.db"), "QUORUM_CACHE_DIR": str(tmp / "cache"),
           "USER": "dana", "PYTHONIOENCODING": "utf-8"}
    port = free_port()
    fleet = write_hostile_fleet(tmp, port, corpus)
    ask = ("ask", QUESTION, "--fleet", fleet, "--settings", FAST_SETTINGS, "--db", db)
    generator = start_hostile_generator(port)
    try:
        out = {"ask": run(*ask, "--tier", "high", env=env), "ask --json": run(*ask, "--json", env=env)}
    finally:
        generator.kill()
        generator.wait()
        generator.stdout.close()
    assert out["ask --json"].returncode == 0, out["ask --json"].stderr
    trace_id = json.loads(out["ask --json"].stdout)["trace_id"]
    _seed(db, trace_id)
    dbo = ("--db", db)
    out["review approve"] = run("review", "approve", "1", "--reason", "verified against the cited sources",
                                "--operator", FORMULA, "--note", NOTE, *dbo, env=env)
    for fmt in ("csv", "jsonl"):
        out[f"audit export {fmt}"] = run("audit", "export", "--format", fmt, "--out", tmp / f"audit.{fmt}", *dbo,
                                         env=env)
    readers = {"review list": ("review", "list", "--status", "all", *dbo),
               "review list --json": ("review", "list", "--status", "all", "--json", *dbo),
               "audit list": ("audit", "list", *dbo),
               "trace": ("trace", trace_id, *dbo), "trace --json": ("trace", trace_id, "--json", *dbo),
               "alerts list": ("alerts", "list", *dbo), "alerts list --json": ("alerts", "list", "--json", *dbo),
               "tools": ("tools", "list-pending", *dbo), "tools --json": ("tools", "list-pending", "--json", *dbo),
               "memory": ("memory", "list", *dbo), "memory --json": ("memory", "list", "--json", *dbo),
               "index": ("index", corpus, "--fleet", fleet, "--settings", FAST_SETTINGS)}
    running = {name: start(*args, env=env) for name, args in readers.items()}
    out |= {name: finish(proc) for name, proc in running.items()}
    return types.SimpleNamespace(out=out, db=db, tmp=tmp, trace_id=trace_id)


def _seed(db: Path, trace_id: str) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO tool_calls (trace_id, agent_id, tool, params, status, why, at) "
                     "VALUES (?, 'gen-hostile', 'send_email', ?, 'pending', ?, ?)",
                     (trace_id, json.dumps(TOOL_PARAMS, ensure_ascii=False), TOOL_WHY, time.time()))
        conn.execute("INSERT INTO memory_entries (namespace, key, content, version, author, trace_id, written_at, "
                     "screen_score, status, status_why) VALUES ('gen-hostile', ?, ?, 1, 'gen-hostile', ?, ?, 0.5, "
                     "'active', '')", (MEMORY_KEY, hostile_text(), trace_id, time.time()))
    conn.close()


def operator_gets_no_acting_text(result: subprocess.CompletedProcess) -> None:
    """Whatever the command printed: it ran, no character that acts on a terminal came out raw, and no line
    begins the way a line of our log does (a line break in an agent's text drew none)."""
    assert result.returncode == 0, result.stderr
    for stream in (result.stdout, result.stderr):
        assert [ch for ch in ACTING if ch in stream] == []
        assert [line for line in stream.splitlines() if line.startswith(FORGED_START)] == []


ALL_COMMANDS = ("ask", "ask --json", "review approve", "audit export csv", "audit export jsonl", "review list",
                "review list --json", "audit list", "trace", "trace --json", "alerts list", "alerts list --json",
                "tools", "tools --json", "memory", "memory --json", "index")


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_no_command_writes_acting_text_or_a_forged_line(hostile, command):
    operator_gets_no_acting_text(hostile.out[command])


# --- text outputs -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["ask", "review list", "trace", "alerts list", "tools", "memory"])
def test_markup_shows_as_its_own_text(hostile, command):
    stdout = hostile.out[command].stdout
    assert shown_literally(stdout) == []
    assert command == "alerts list" or f"{MARKUP[0][0]}QZSTYLED" in stdout   # what an alert quotes varies


def test_ask_prints_the_answer_and_its_formula_source_as_text(hostile):
    stdout = hostile.out["ask"].stdout
    assert f"Answer   : {ANSWER}\n" in stdout
    assert f"  cites [uranus-flyby#0] {FORMULA}: " in stdout
    assert "Escalated: review item #1 (high-risk question)" in stdout


def test_review_list_quotes_the_operator_s_note(hostile):
    stdout = hostile.out["review list"].stdout
    note = quoted(" ".join(NOTE.split()))          # a decision's note is kept with its spaces collapsed
    assert f"      approved by {FORMULA}: verified against the cited sources — {note}\n" in stdout
    assert "\\x1b[2J\\x1b[31mQZANSI" in stdout and "\\u202eQZBIDI" in stdout
    assert f"Review item #1 approved by {FORMULA}" in hostile.out["review approve"].stdout


def test_tools_list_prints_every_call_in_its_own_lines(hostile):
    """A call is its header, one line a parameter and its why: nothing in a name or a value broke a line."""
    calls = {c["id"]: c for c in json.loads(hostile.out["tools --json"].stdout)}
    blocks = _blocks(hostile.out["tools"].stdout)
    assert sorted(blocks) == sorted(calls) and len(calls) >= 2          # the generator's own e-mail, and ours
    for call_id, lines in blocks.items():
        assert len(lines) == 1 + len(calls[call_id]["params"]) + 1
        assert lines[-1] == f"      why     : {quoted(calls[call_id]['why'])}"
    (ours,) = [lines for call_id, lines in blocks.items() if calls[call_id]["why"] == TOOL_WHY]
    assert ours[0].startswith(f"#{ours[0][1:].split()[0]:<4} send_email   gen-hostile ")
    assert ours[1] == f"      to      : {FORMULA}" and FORGED_ESCAPED in ours[-1]


def _blocks(stdout: str) -> dict[int, list[str]]:
    """`#ID ...` header lines and the indented lines under each, by id."""
    blocks: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        if line.startswith("#"):
            current = blocks.setdefault(int(line[1:].split()[0]), [])
        current.append(line)
    return blocks


def test_memory_list_is_one_line_an_entry_with_the_key_quoted(hostile):
    entries = json.loads(hostile.out["memory --json"].stdout)
    lines = hostile.out["memory"].stdout.splitlines()
    assert len(lines) == len(entries) >= 1 and all(line.startswith("#") for line in lines)
    (ours,) = [line for line in lines if f"gen-hostile/{quoted(MEMORY_KEY)} v1" in line]
    assert FORGED_ESCAPED in ours and ours.endswith("…") and quoted(hostile_text())[:40] in ours


def test_audit_list_is_one_line_per_event(hostile):
    lines = hostile.out["audit list"].stdout.splitlines()
    assert lines[0].split() == ["SEQ", "TIME", "ACTOR", "TYPE", "TRACE", "PAYLOAD"]
    assert all(line.split()[0].isdigit() for line in lines[1:-1])
    assert any(f"  {FORMULA[:15]}…  review.approved" in line for line in lines)


def test_trace_is_one_line_per_event(hostile):
    stdout = hostile.out["trace"].stdout
    lines = stdout.splitlines()
    assert lines[0].startswith(f"trace {hostile.trace_id}: ") and int(lines[0].split()[2]) == len(lines) - 1
    assert "BLOCK (0.94) passage uranus-rings#0" in stdout


def test_index_names_a_skipped_file_quoted_and_still_draws_its_progress_bar(hostile):
    result = hostile.out["index"]
    assert f"  skipped {quoted(BAD_FILE)}: PDF: unreadable" in result.stdout
    assert "\rembedding [" in result.stderr                  # TerminalStream keeps our own carriage returns


# --- JSON outputs -------------------------------------------------------------------------------------------------
def test_ask_json_holds_the_hostile_strings_exactly(hostile):
    data = json.loads(hostile.out["ask --json"].stdout)
    assert data["answer"] == ANSWER and data["verdict"] == "answered"
    (citation,) = data["citations"]
    assert citation["source"] == FORMULA and citation["title"] == f"Uranus flyby {MARKUP[0][0]}QZSTYLED</span>"


def test_review_list_json_holds_the_decision_exactly(hostile):
    (item,) = json.loads(hostile.out["review list --json"].stdout)
    assert (item["answer"], item["decided_by"], item["note"]) == (ANSWER, FORMULA, " ".join(NOTE.split()))


def test_trace_json_holds_what_the_gateway_blocked_exactly(hostile):
    lines = json.loads(hostile.out["trace --json"].stdout)
    shown = {line["data"]["excerpt"] for line in lines if line["kind"] == "audit" and "excerpt" in line["data"]}
    assert shown == set(_blocked_excerpts(hostile.db, hostile.trace_id))
    assert any(ANSI in e and BIDI in e and C1_CSI in e and "QZFORGED" in e for e in shown)
    assert set(lines[0]) == set(TraceLine.__dataclass_fields__)


def test_tools_and_memory_json_hold_the_agent_s_text_exactly(hostile):
    (call,) = [c for c in json.loads(hostile.out["tools --json"].stdout) if c["why"] == TOOL_WHY]
    assert call["params"] == TOOL_PARAMS
    (entry,) = [e for e in json.loads(hostile.out["memory --json"].stdout) if e["key"] == MEMORY_KEY]
    assert entry["content"] == hostile_text()


def test_alerts_json_is_ascii_json(hostile):
    stdout = hostile.out["alerts list --json"].stdout
    assert stdout.isascii() and any(alert["kind"] == "injection_blocked" for alert in json.loads(stdout))


def _blocked_excerpts(db: Path, trace_id: str) -> list[str]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT payload FROM audit WHERE trace_id = ? AND type = 'gateway.blocked'", (trace_id,))
    excerpts = [json.loads(payload)["excerpt"] for (payload,) in rows]
    conn.close()
    return excerpts


# --- exports ------------------------------------------------------------------------------------------------------
def test_the_csv_export_escapes_acting_characters_opens_formula_cells_and_keeps_the_chain_recheckable(hostile):
    with (hostile.tmp / "audit.csv").open(newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    assert rows and [cell for row in rows for cell in row if cell.startswith(FORMULA_START)] == []
    approved = [dict(zip(header, row)) for row in rows if row[header.index("type")] == "review.approved"]
    assert [row["actor"] for row in approved] == ["'" + FORMULA]
    assert [cell for row in rows for cell in row if any(ch in cell for ch in ACTING)] == []    # escaped, not raw
    conn = sqlite3.connect(hostile.db)
    stored = dict(conn.execute("SELECT seq, payload FROM audit"))
    conn.close()
    # The payload read back and written canonically is the hashed text: the chain can be rechecked from the file.
    assert all(canonical(json.loads(row[header.index("payload")])) == stored[int(row[0])] for row in rows)
    assert any("\\u202e" in row[header.index("payload")] for row in rows)


def test_the_jsonl_export_is_ascii_json_with_the_hostile_strings_exactly(hostile):
    text = (hostile.tmp / "audit.jsonl").read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    assert text.isascii() and len(records) == text.count("\n")
    assert [r["actor"] for r in records if r["type"] == "review.approved"] == [FORMULA]
    excerpts = {r["payload"]["excerpt"] for r in records if r["type"] == "gateway.blocked"}
    assert set(_blocked_excerpts(hostile.db, hostile.trace_id)) <= excerpts


# --- the text formatters, every field hostile (in process) ---------------------------------------------------------
def test_every_field_of_a_human_readable_answer_is_quoted(capsys):
    """`ask` as printed when every text an agent or document wrote carries a line break and escapes."""
    from engine import CallStatus, JudgeNote, MeaningStatus, RiskTier, Role, Verdict
    bad = hostile_text()
    agent = types.SimpleNamespace(agent_id="gen-x", role=Role.GENERATOR, status=CallStatus.MALFORMED, latency_ms=3.0,
                                  mode=bad, error=bad)
    candidate = types.SimpleNamespace(agent_id="gen-x", support_rate=0.5, generation=types.SimpleNamespace(answer=bad),
                                      relevance=0.3, off_topic=True, relevance_by=bad)
    answer = types.SimpleNamespace(
        question=bad, verdict=Verdict.ABSTAINED, reason=bad, tier_reason=bad, tier=RiskTier.LOW, answer="",
        citations=(types.SimpleNamespace(chunk_id=bad, source=bad, text=bad),), candidates=(candidate,),
        agents=(agent,), agents_ok=lambda role: 1, trace_id="t" * 32,
        judge=JudgeNote(MeaningStatus.NOT_READ, bad, bad))
    from engine.cli.ask import print_answer
    print_answer(answer)
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 11 and [ch for ch in ACTING if ch in out] == []
    assert out.count("\\x1b[2J") == 10 and not any(line.startswith(FORGED_START) for line in out.splitlines())


def test_the_trust_trace_and_audit_tables_keep_one_row_a_line(capsys):
    from engine.cli.audit import format_table
    from engine.cli.reputation import _print
    from engine.cli.trace import format_line
    from engine.store.audit_log import AuditFilter, AuditRow
    bad = hostile_text()
    _print([{"id": "gen-x", "role": "generator", "enabled": True, "score": 0.5, "state": "probation",
             "last_change_at": None, "last_change": bad}])
    trust = capsys.readouterr().out
    trace = format_line(TraceLine(1, "t" * 32, "", bad, bad, bad, bad, bad, 0.0, {}))
    payload = json.dumps({"note": bad}, ensure_ascii=False)
    audit = format_table([AuditRow(7, bad, bad, bad, {}, 0.0, "h", "", payload)], AuditFilter())
    for text, lines in ((trust, 2), (trace, 1), (audit, 2)):
        assert len(text.splitlines()) == lines and [ch for ch in ACTING if ch in text] == []
        assert not any(line.startswith(FORGED_START) for line in text.splitlines())
    assert trace.endswith(f"  {quoted(bad)[:159]}…")            # the summary, quoted and cut at 160
