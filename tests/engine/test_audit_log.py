"""engine.store.audit_log on a real SQLite file: filters, the chain's status, CSV / JSON Lines exports
(formula defusing, round trips, the export audited in the chain), and exports that cannot be written."""
import csv
import errno
import json
import sqlite3
from pathlib import Path

import pytest

from engine import InputError, StoreError
from engine.store import audit_log as audit_log_module
from engine.store.audit import canonical, event_hash
from engine.store.audit_log import AuditFilter, AuditLog, ChainStatus
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.untrusted import csv_cell

HOSTILE_ACTOR = "=cmd|' /C calc'!A0"

# (at, trace_id, actor, type, payload) -> seq 1..7
EVENTS = [
    (1000.0, "t1", "engine", "engine.started", {"agents": ["ret-a", "ret-b"]}),
    (1010.0, "t1", "ret-a", "agent.retriever", {"status": "ok"}),
    (1020.0, "t2", "ret-b", "agent.retriever", {"status": "down"}),
    (1030.0, "t2", "alice", "review.approved", {"reason": "checked"}),
    (1040.0, "t3", "bob", "review.rejected", {"reason": "wrong"}),
    (1050.0, "t3", "engine", "reviewer.note", {"n": 1}),       # "review." must not match "reviewer."
    (1060.0, "", "alice", "review", {"n": 2}),                  # nor the bare "review"
]


class Clock:
    def __init__(self, times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


def make_store(path, events=EVENTS, after=(5000.0,) * 10) -> Store:
    """A store whose events land at the given times; later writes (the export's event) at `after`."""
    store = Store(path, MIGRATIONS, clock=Clock([e[0] for e in events] + list(after)))
    store.open_sync()
    for _, trace_id, actor, type_, payload in events:
        store.audit_sync(trace_id, actor, type_, payload)
    return store


@pytest.fixture
def store(db_path):
    store = make_store(db_path)
    yield store
    store.close_sync()


@pytest.fixture
def log(store):
    return AuditLog(store)


@pytest.fixture
def either_log(store_target):
    """The same events on a SQLite file, then on PostgreSQL: the filters read alike on both."""
    store = make_store(store_target)
    yield AuditLog(store)
    store.close_sync()


def seqs(rows):
    return [r.seq for r in rows]


def count_events(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
    finally:
        conn.close()


# --- query ---------------------------------------------------------------------------------------
def test_no_filter_gives_every_event_newest_first_with_its_fields(either_log):
    rows = either_log.query_sync(AuditFilter())
    assert seqs(rows) == [7, 6, 5, 4, 3, 2, 1]
    first = rows[-1]
    assert (first.trace_id, first.actor, first.type, first.at) == ("t1", "engine", "engine.started", 1000.0)
    assert first.payload == {"agents": ["ret-a", "ret-b"]}
    assert first.payload_json == canonical(first.payload)
    assert first.hash == rows[-2].prev_hash and len(first.hash) == 64


@pytest.mark.parametrize("filter_, expected", [
    (AuditFilter(trace_id="t2"), [4, 3]),
    (AuditFilter(trace_id=" t2 "), [4, 3]),                  # pasted with spaces
    (AuditFilter(actor="alice"), [7, 4]),
    (AuditFilter(actor="ALICE"), []),                         # actors are exact
    (AuditFilter(kind="agent.retriever"), [3, 2]),
    (AuditFilter(kind="review."), [5, 4]),                    # prefix: not reviewer.note, not "review"
    (AuditFilter(kind="review"), [7]),                        # exact
    (AuditFilter(kind="agent"), []),
    (AuditFilter(since=1030.0), [7, 6, 5, 4]),                # since is inclusive
    (AuditFilter(until=1030.0), [3, 2, 1]),                   # until is exclusive
    (AuditFilter(since=1010.0, until=1040.0), [4, 3, 2]),
    (AuditFilter(since=9999.0), []),
    (AuditFilter(until=1.0), []),
    (AuditFilter(actor="engine", kind="reviewer."), [6]),
    (AuditFilter(trace_id="t3", actor="engine"), [6]),
    (AuditFilter(trace_id="t2", kind="review.", since=1031.0), []),
    (AuditFilter(actor="", kind="", trace_id=""), [7, 6, 5, 4, 3, 2, 1]),   # a dropdown's "any"
])
def test_each_filter_narrows(either_log, filter_, expected):
    assert seqs(either_log.query_sync(filter_)) == expected


def test_limit_keeps_the_newest_matches(either_log):
    assert seqs(either_log.query_sync(AuditFilter(limit=2))) == [7, 6]
    assert seqs(either_log.query_sync(AuditFilter(kind="agent.", limit=1))) == [3]
    assert seqs(either_log.query_sync(AuditFilter(limit=None))) == [7, 6, 5, 4, 3, 2, 1]


def test_time_filters_hold_when_the_clock_went_backwards(db_path):
    # seq 3 was written after seq 2 but its clock read earlier: the seq bounds must not drop it.
    events = [(1000.0, "a", "x", "k", {}), (2000.0, "b", "x", "k", {}), (1500.0, "c", "x", "k", {}),
              (2500.0, "d", "x", "k", {})]
    store = make_store(db_path, events)
    try:
        log = AuditLog(store)
        assert seqs(log.query_sync(AuditFilter(since=1400.0))) == [4, 3, 2]
        assert seqs(log.query_sync(AuditFilter(until=1600.0))) == [3, 1]
        assert seqs(log.query_sync(AuditFilter(since=1400.0, until=1600.0))) == [3]
    finally:
        store.close_sync()


def test_filters_use_the_audit_indexes(store):
    """The actor / type / time filters and the dropdowns do not scan the whole chain."""
    def plan(filter_):
        where, params = audit_log_module._where(filter_, store.indexed_by("audit_at"))
        rows = store.execute(f"EXPLAIN QUERY PLAN SELECT seq FROM audit{where} ORDER BY seq DESC LIMIT 5",
                             params).fetchall()
        return " | ".join(r[3] for r in rows)
    assert "audit_actor" in plan(AuditFilter(actor="alice"))
    assert "audit_type" in plan(AuditFilter(kind="review."))
    assert "audit_trace" in plan(AuditFilter(trace_id="t1"))
    since = plan(AuditFilter(since=1030.0))
    assert "audit_at" in since and "PRIMARY KEY (rowid>?)" in since
    distinct = store.execute("EXPLAIN QUERY PLAN SELECT DISTINCT actor FROM audit").fetchall()
    assert "COVERING INDEX audit_actor" in distinct[0][3]


def test_actors_and_kinds_are_distinct_and_sorted(either_log):
    assert either_log.actors_sync() == ("alice", "bob", "engine", "ret-a", "ret-b")
    assert either_log.kinds_sync() == ("agent.retriever", "engine.started", "review", "review.approved",
                                "review.rejected", "reviewer.note")


@pytest.mark.parametrize("kwargs, words", [
    ({"since": 20.0, "until": 10.0}, "not before"),
    ({"since": 10.0, "until": 10.0}, "not before"),
    ({"limit": 0}, "at least 1"),
    ({"limit": True}, "at least 1"),
    ({"since": float("nan")}, "epoch seconds"),
    ({"until": "yesterday"}, "epoch seconds"),
    ({"actor": 3}, "expected text"),
])
def test_a_filter_that_makes_no_sense_is_refused(kwargs, words):
    with pytest.raises(InputError, match=words):
        AuditFilter(**kwargs)


async def test_async_methods_run_on_the_store_thread(db_path):
    seed = make_store(db_path)
    seed.close_sync()
    store = Store(db_path, MIGRATIONS)
    await store.open()
    try:
        log = AuditLog(store)
        assert seqs(await log.query(AuditFilter(actor="alice"))) == [7, 4]
        assert "bob" in await log.actors()
        assert "review.approved" in await log.kinds()
        assert (await log.verify()).intact
    finally:
        await store.aclose()


# --- verify --------------------------------------------------------------------------------------
def test_verify_an_intact_chain(either_log):
    status = either_log.verify_sync()
    assert status == ChainStatus(True, 7, None, status.reason)
    assert status.message == "audit chain intact (7 events)"


def test_verify_an_empty_database(db_path):
    store = make_store(db_path, events=[])
    try:
        assert AuditLog(store).verify_sync() == ChainStatus(True, 0, None, "no events yet")
    finally:
        store.close_sync()


@pytest.mark.parametrize("tamper, broken_at, checked, words", [
    ("UPDATE audit SET actor = 'mallory' WHERE seq = 3", 3, 2, "edited"),
    ("UPDATE audit SET payload = '{\"status\":\"ok\"}' WHERE seq = 3", 3, 2, "edited"),
    ("DELETE FROM audit WHERE seq = 5", 6, 4, "missing or reordered"),
    ("UPDATE audit SET prev_hash = hash WHERE seq = 2", 2, 1, "prev_hash"),
    ("UPDATE audit SET at = 'noon' WHERE seq = 4", 4, 3, "unreadable"),
])
def test_verify_a_tampered_database_returns_where_it_broke(store, db_path, tamper, broken_at, checked, words):
    store.close_sync()
    conn = sqlite3.connect(db_path)                 # the tamperer's own connection, as in real life
    conn.execute(tamper)
    conn.commit()
    conn.close()
    store.open_sync()
    status = AuditLog(store).verify_sync()          # no exception: a status
    assert (status.intact, status.broken_at, status.checked) == (False, broken_at, checked)
    assert words in status.reason
    assert status.message.startswith(f"audit chain broken at event {broken_at}: ")
    assert len(AuditLog(store).query_sync(AuditFilter())) >= 6    # a tampered chain can still be read


# --- export --------------------------------------------------------------------------------------
HOSTILE = [
    (1000.0, "t1", HOSTILE_ACTOR, "agent.generator", {"answer": "=HYPERLINK(\"http://evil\")"}),
    (1010.0, "+SUM(A1:A9)", "-2+3", "@type", {"note": "line\nbreak, \"quoted\""}),
    (1020.0, "t3", "\tTAB", "\rCR", {"uni": "Ünïcödé \u2028 sep"}),
    (1030.0, "t4", "plain", "ok.event", {"n": 1.25}),
]


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_csv_defuses_formulas_and_round_trips(db_path, tmp_path):
    store = make_store(db_path, HOSTILE)
    try:
        log = AuditLog(store)
        out = tmp_path / "audit.csv"
        result = log.export_sync(AuditFilter(limit=None), "csv", out, "carol")
        assert (result.path, result.rows, result.format) == (out, 4, "csv")
        rows = read_csv(out)
        stored = {r.seq: r for r in log.query_sync(AuditFilter(limit=None))}
    finally:
        store.close_sync()
    assert [int(r["seq"]) for r in rows] == [1, 2, 3, 4]          # oldest first, the chain's order
    hostile, second, third, plain = rows
    assert hostile["actor"] == "'" + HOSTILE_ACTOR
    assert (second["trace_id"], second["actor"], second["type"]) == ("'+SUM(A1:A9)", "'-2+3", "'@type")
    assert (third["actor"], third["type"]) == ("'\tTAB", "'\rCR")
    for row in rows:                                               # no cell a spreadsheet would evaluate
        assert not any(str(v).startswith(("=", "+", "-", "@", "\t", "\r")) for v in row.values())
    # Untouched cells come back exactly, and the exported chain rehashes from the file alone.
    assert json.loads(second["payload"]) == {"note": "line\nbreak, \"quoted\""}
    assert json.loads(third["payload"]) == {"uni": "Ünïcödé \u2028 sep"}
    for row in (hostile, plain):
        original = stored[int(row["seq"])]
        assert row["payload"] == original.payload_json and row["hash"] == original.hash
        assert float(row["at"]) == original.at and row["at_iso"].startswith("1970-01-01T00:")
    assert plain["hash"] == event_hash(plain["prev_hash"], 4, plain["trace_id"], plain["actor"], plain["type"],
                                       plain["payload"], float(plain["at"]))


def test_csv_cell_only_touches_dangerous_starts():
    assert csv_cell("=1+1") == "'=1+1"
    assert csv_cell("a=1") == "a=1"
    assert csv_cell("") == ""
    assert csv_cell("{\"a\":1}") == "{\"a\":1}"


def test_jsonl_round_trips_every_field(db_path, tmp_path):
    store = make_store(db_path, HOSTILE)
    try:
        log = AuditLog(store)
        out = tmp_path / "audit.jsonl"
        assert log.export_sync(AuditFilter(limit=None), "jsonl", out, "carol").rows == 4
        stored = list(reversed(log.query_sync(AuditFilter(limit=None))))[:4]
    finally:
        store.close_sync()
    text = out.read_text(encoding="utf-8")
    assert text.isascii() and text.count("\n") == 4                # U+2028 stayed escaped
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 4
    for record, row in zip(records, stored):
        assert set(record) == {"seq", "at", "at_iso", "trace_id", "actor", "type", "payload", "prev_hash", "hash"}
        assert (record["seq"], record["at"], record["trace_id"], record["actor"], record["type"], record["payload"],
                record["prev_hash"], record["hash"]) == (row.seq, row.at, row.trace_id, row.actor, row.type,
                                                         dict(row.payload), row.prev_hash, row.hash)
        assert canonical(record["payload"]) == row.payload_json   # the hash can be rechecked from the file
    assert records[0]["actor"] == HOSTILE_ACTOR                   # JSON needs no defusing: it is data


def test_the_export_is_audited_after_the_file_and_the_chain_still_verifies(log, store, tmp_path):
    out = tmp_path / "sub" / "review.csv"
    out.parent.mkdir()
    result = log.export_sync(AuditFilter(kind="review.", since=1000.0), "csv", out, "carol")
    assert result.rows == 2 and [int(r["seq"]) for r in read_csv(out)] == [4, 5]
    newest = log.query_sync(AuditFilter(limit=1))[0]
    assert result.audit_seq == newest.seq == 8
    assert (newest.type, newest.actor, newest.trace_id, newest.at) == ("audit.exported", "carol", "", 5000.0)
    assert newest.payload == {"format": "csv", "rows": 2, "file": "review.csv",   # the name, not the folders
                              "filter": {"trace_id": None, "actor": None, "kind": "review.", "since": 1000.0,
                                         "until": None, "limit": 1000}}
    assert str(tmp_path) not in newest.payload_json
    assert log.verify_sync() == ChainStatus(True, 8, None, log.verify_sync().reason)
    # The file holds what matched when it was written, not its own export event.
    assert "audit.exported" not in out.read_text()
    assert log.kinds_sync()[0] == "agent.retriever" and "audit.exported" in log.kinds_sync()


def test_export_limit_keeps_the_newest_written_oldest_first(either_log, tmp_path):
    out = tmp_path / "last.jsonl"
    either_log.export_sync(AuditFilter(limit=3), "jsonl", out, "carol")
    assert [json.loads(line)["seq"] for line in out.read_text().splitlines()] == [5, 6, 7]


def test_export_replaces_an_existing_file_whole(either_log, tmp_path):
    out = tmp_path / "audit.jsonl"
    out.write_text("old\n" * 100)
    either_log.export_sync(AuditFilter(actor="bob"), "jsonl", out, "carol")
    assert [json.loads(line)["seq"] for line in out.read_text().splitlines()] == [5]


@pytest.mark.parametrize("where, words", [
    (lambda tmp: tmp / "no-such-folder" / "a.csv", "does not exist"),
    (lambda tmp: tmp / "a-file.txt" / "a.csv", "does not exist"),     # the "folder" is a file
    (lambda tmp: tmp, "is a folder"),
    (lambda tmp: Path("/proc/audit-export.csv"), "cannot write the export here"),
])
def test_an_unwritable_path_is_a_clear_error_and_leaves_nothing(log, db_path, tmp_path, where, words):
    (tmp_path / "a-file.txt").write_text("keep")
    before = count_events(db_path)
    out = where(tmp_path)
    with pytest.raises(InputError, match=words) as err:
        log.export_sync(AuditFilter(), "csv", out, "carol")
    assert str(out) in str(err.value)
    assert count_events(db_path) == before                          # nothing audited
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file.txt", "quorum.db", "quorum.db-shm",
                                                          "quorum.db-wal"]
    assert (tmp_path / "a-file.txt").read_text() == "keep"


def test_a_full_disk_mid_export_loses_nothing(log, db_path, tmp_path, monkeypatch):
    out = tmp_path / "audit.csv"
    out.write_text("the previous export\n")

    def full_disk(stream, rows):
        stream.write("seq,at\n1,2\n")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(audit_log_module, "_write_csv", full_disk)
    before = count_events(db_path)
    with pytest.raises(StoreError, match="No space left") as err:
        log.export_sync(AuditFilter(), "csv", out, "carol")
    assert str(out) in str(err.value)
    assert out.read_text() == "the previous export\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert count_events(db_path) == before


def test_when_the_event_cannot_be_recorded_the_file_does_not_land(log, store, db_path, tmp_path, monkeypatch):
    out = tmp_path / "audit.csv"
    out.write_text("the previous export\n")

    def refuse(*args):
        raise StoreError(f"{db_path}: database is locked")
    monkeypatch.setattr(store, "append_audit", refuse)
    with pytest.raises(StoreError, match="locked"):
        log.export_sync(AuditFilter(), "csv", out, "carol")
    assert out.read_text() == "the previous export\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fmt, by, words", [
    ("xlsx", "carol", "not one of csv, jsonl"),
    ("csv", "  ", "who exports"),
])
def test_export_refuses_a_bad_format_or_no_operator(log, db_path, tmp_path, fmt, by, words):
    with pytest.raises(InputError, match=words):
        log.export_sync(AuditFilter(), fmt, tmp_path / "x.out", by)
    assert not (tmp_path / "x.out").exists() and count_events(db_path) == 7


def test_the_engine_has_an_audit_log_on_its_store(small_fleet_file, db_path, cache_dir):
    from engine import Engine, load_fleet, load_settings
    engine = Engine(load_fleet(small_fleet_file), load_settings(), db_path=db_path, cache_dir=cache_dir, launch=False)
    assert isinstance(engine.audit, AuditLog) and engine.audit.store is engine.parts.store
