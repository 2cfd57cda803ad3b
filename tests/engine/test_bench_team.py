"""main.py bench team (bench/perf/team.py, team_desk.py, team_figures.py): the figures it derives from the desks'
lines and the store, the desk's timing of its store's transactions and its operator's share of the queue, and
bad input. No timing is asserted: the benchmark reports figures, these tests check how they are made."""
from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest

from bench.perf.team import PhaseRun, Phase, plan_for, summarise, team_database, with_search_path, write_team_report
from bench.perf.team_desk import Lines, ScriptedOperator, time_transactions, write_kind
from bench.perf.team_figures import (RecordTail, StoredFacts, counts, lost_writes, progress_line, propagation,
                                     write_latency)
from engine import InputError, StoreError


def ready(desk):
    return {"kind": "ready", "desk": desk, "at": 0.0, "operator": f"bench-desk-{desk}"}


def decided(desk, item, at, decided_at=None, approve=True):
    return {"kind": "decided", "desk": desk, "item": item, "at": at, "decided_at": decided_at, "approve": approve,
            "operator": f"bench-desk-{desk}"}


def seen(desk, item, at):
    return {"kind": "seen", "desk": desk, "item": item, "at": at, "decided_by": "x", "told_at": at}


def answered(desk, trace_id, ms=100.0, tier="low"):
    return {"kind": "answered", "desk": desk, "trace_id": trace_id, "tier": tier, "ms": ms, "at": 1.0}


def write(desk, ms, what="record_answer_sync"):
    return {"kind": "write", "desk": desk, "what": what, "ms": ms, "at": 1.0, "ok": True}


def facts(**changes) -> StoredFacts:
    base = dict(question_traces=frozenset({"t1", "t2"}), decided_traces=frozenset({"t1", "t2"}),
                decisions={7: ("approved", "bench-desk-1")},
                decision_events=frozenset({(7, "bench-desk-1", "approved")}), pending=0, audit_events=40,
                chain_intact=True, chain_message="audit chain intact (40 events)", anchors="2 anchors hold",
                extra={"questions_rows": 2, "review_joins": 0})
    return StoredFacts(**(base | changes))


# --- propagation ------------------------------------------------------------------------------------
def test_each_decision_is_followed_to_every_other_desk():
    records = [ready(1), ready(2), ready(3),
               decided(1, 7, at=10.0), seen(2, 7, 10.3), seen(3, 7, 10.5),
               decided(2, 8, at=20.0), seen(1, 8, 20.2)]          # desk 3 never read item 8
    lag = propagation(records)
    assert sorted(round(x, 3) for x in lag.lags_s) == [0.2, 0.3, 0.5]
    assert lag.never_seen == ((8, 3),)
    summary = lag.summary()
    assert summary["n"] == 3 and summary["p99"] == 0.5 and summary["never_seen"] == 1
    assert summary["met"] is False          # a decision never seen fails the target, however short the rest


def test_the_lag_counts_from_the_earlier_of_the_store_stamp_and_the_return():
    records = [ready(1), ready(2), decided(1, 7, at=10.4, decided_at=10.1), seen(2, 7, 10.6)]
    assert [round(x, 3) for x in propagation(records).lags_s] == [0.5]
    summary = propagation(records).summary()
    assert summary["met"] is True and summary["target_p99"] == 1.0


def test_no_decision_means_no_propagation_figure_and_no_target_met():
    summary = propagation([ready(1), ready(2)]).summary()
    assert summary["n"] == 0 and summary["p99"] == 0.0 and summary["met"] is False


# --- events lost ---------------------------------------------------------------------------------------
def test_acknowledged_writes_all_found_lose_nothing():
    records = [answered(1, "t1"), answered(2, "t2"), decided(1, 7, at=1.0)]
    assert lost_writes(records, facts()).count == 0


def test_an_answer_missing_its_row_or_its_audit_event_is_lost():
    records = [answered(1, "t1"), answered(2, "t2"), answered(3, "t3")]
    lost = lost_writes(records, facts(decided_traces=frozenset({"t1"})))
    assert lost.questions == ("t2", "t3") and lost.count == 2


@pytest.mark.parametrize("stored, events", [
    ({}, frozenset({(7, "bench-desk-1", "approved")})),                          # no decided row
    ({7: ("rejected", "bench-desk-1")}, frozenset({(7, "bench-desk-1", "approved")})),   # another outcome
    ({7: ("approved", "bench-desk-2")}, frozenset({(7, "bench-desk-1", "approved")})),   # another operator
    ({7: ("approved", "bench-desk-1")}, frozenset()),                            # no audit event
])
def test_a_decision_the_store_does_not_hold_as_made_is_lost(stored, events):
    lost = lost_writes([decided(1, 7, at=1.0)], facts(decisions=stored, decision_events=events))
    assert lost.decisions == (7,) and lost.count == 1


# --- counts and write latency -----------------------------------------------------------------------
def test_counts_add_up_the_desks_lines():
    records = [ready(1), ready(2), answered(1, "a", 100.0), answered(2, "b", 300.0, tier="high"),
               {"kind": "failed", "desk": 1, "at": 1.0, "error": "x"},
               decided(1, 7, at=1.0), decided(2, 8, at=2.0, approve=False),
               {"kind": "refused", "desk": 2, "item": 7, "step": "claim", "at": 1.0, "why": "claimed"},
               {"kind": "done", "desk": 1, "at": 9.0, "asked": 2, "skipped": 1},
               {"kind": "done", "desk": 2, "at": 9.0, "asked": 1, "skipped": 0}]
    c = counts(records)
    assert (c["desks"], c["asked"], c["answered"], c["failed"], c["skipped"]) == (2, 3, 2, 1, 1)
    assert (c["decisions"], c["approved"], c["rejected"], c["refused_claims"], c["refused_decisions"]) == (2, 1, 1, 1, 0)
    assert c["high_tier_answered"] == 1 and c["answer_ms"]["p50"] == 100.0 and c["answer_ms"]["max"] == 300.0
    line = progress_line(records, 10.0)
    assert "questions 2 (failed 1)" in line and "decisions 2 (refused 1)" in line


def test_write_latency_is_one_desks_or_all_and_per_kind():
    records = [write(1, float(ms)) for ms in range(1, 101)] + [write(1, 500.0, "ReviewQueue._decide_sync"),
                                                              write(2, 900.0)]
    one = write_latency(records, desk=1)
    assert one["n"] == 101 and one["p50"] == 51.0 and one["p99"] == 100.0 and one["max"] == 500.0
    assert one["by_kind"]["record_answer_sync"]["n"] == 100 and one["by_kind"]["ReviewQueue._decide_sync"]["n"] == 1
    assert list(one["by_kind"]) == ["record_answer_sync", "ReviewQueue._decide_sync"]     # most written first
    assert write_latency(records)["n"] == 102 and write_latency(records)["max"] == 900.0


def test_a_lines_file_is_read_as_it_grows_whole_lines_only(tmp_path):
    path = tmp_path / "desk.jsonl"
    tail = RecordTail(path)
    assert tail.read_new() == []                     # not written yet
    path.write_text(json.dumps(ready(1)) + "\n" + '{"kind": "answ')
    assert tail.read_new() == [ready(1)]
    with path.open("a") as out:
        out.write('ered", "desk": 1}\n')
    assert tail.read_new() == [{"kind": "answered", "desk": 1}] and tail.read_new() == []


# --- the desk -------------------------------------------------------------------------------------
class Queue:
    def decide_sync(self):
        def write():
            return 41
        return write


class FakeStore:
    def __init__(self):
        self.ran = []

    def _transaction(self, fn):
        self.ran.append(fn)
        return fn()


def test_the_desk_times_each_transaction_while_recording(tmp_path):
    store, recording = FakeStore(), threading.Event()
    lines = Lines(tmp_path / "desk.jsonl", desk=2)
    time_transactions(store, lines, recording)

    assert store._transaction(Queue().decide_sync()) == 41          # before the run: not timed
    recording.set()
    assert store._transaction(Queue().decide_sync()) == 41

    def broken():
        raise StoreError("refused")
    with pytest.raises(StoreError):
        store._transaction(broken)
    lines.close()
    written = RecordTail(tmp_path / "desk.jsonl").read_new()
    assert [(r["kind"], r["desk"], r["what"], r["ok"]) for r in written] == [
        ("write", 2, "Queue.decide_sync", True),
        ("write", 2, "test_the_desk_times_each_transaction_while_recording", False)]
    assert all(r["ms"] >= 0 for r in written) and len(store.ran) == 3


def test_a_transaction_is_named_by_the_function_it_runs():
    assert write_kind(Queue().decide_sync()) == "Queue.decide_sync"      # as ReviewQueue._decide_sync's write
    assert write_kind(Queue.decide_sync) == "Queue.decide_sync"
    assert write_kind(lambda: None) == "test_a_transaction_is_named_by_the_function_it_runs"


def item(id_, created_at=100.0, holder=""):
    return SimpleNamespace(id=id_, created_at=created_at, holder=lambda now: holder)


def test_each_operator_takes_its_share_of_the_queue_and_any_item_left_waiting():
    operator = ScriptedOperator(engine=None, lines=None, name="bench-desk-2", desk=2, desks=3)
    assert operator.mine(item(4), now=100.5)            # 4 mod 3 = 1: desk 2's
    assert not operator.mine(item(3), now=100.5)        # desk 1's, not waited long
    assert operator.mine(item(3), now=103.5)            # waited 3 s: anyone's
    assert not operator.mine(item(4, holder="bench-desk-1"), now=100.5)      # another desk holds it
    assert operator.mine(item(4, holder="bench-desk-2"), now=100.5)


def test_every_desk_gets_one_plan_asking_then_deciding_then_watching():
    plan = plan_for(0.5, now=1000.0)
    assert plan["start"] == 1001.0 and plan["ask_until"] == 1031.0
    assert plan["start"] < plan["ask_until"] < plan["decide_until"] < plan["watch_until"]


# --- the store, the report, bad input ---------------------------------------------------------------------
def test_the_runs_schema_goes_first_on_the_search_path_whatever_the_url_had():
    url = with_search_path("postgresql+psycopg://quorum@db.example.org/quorum?sslmode=require&options=-cx%3Dy",
                           "bench_team_1_1")
    assert url.startswith("postgresql+psycopg://quorum@db.example.org/quorum?")
    assert "sslmode=require" in url and "options=-csearch_path%3Dbench_team_1_1" in url and "cx" not in url


def test_the_team_store_must_be_postgresql_and_reachable(tmp_path):
    with pytest.raises(InputError, match="postgresql://"):
        team_database(str(tmp_path / "desk.db"))
    with pytest.raises(StoreError, match="make db"):
        team_database("postgresql://quorum@127.0.0.1:1/quorum")     # nothing listens on port 1


def test_the_report_says_each_figure_and_its_target(tmp_path):
    team_records = (ready(1), ready(2), answered(1, "t1"), answered(2, "t2"), decided(1, 7, at=5.0),
                    seen(2, 7, 5.4), write(1, 12.0), {"kind": "done", "desk": 1, "at": 9.0, "asked": 1},
                    {"kind": "done", "desk": 2, "at": 9.0, "asked": 1})
    alone = (ready(1), answered(1, "t1"), write(1, 3.0))
    runs = [PhaseRun(Phase("team", "url", "the store", 2, 0.5), team_records, facts(), 40.0),
            PhaseRun(Phase("sqlite_alone", "file", "a file", 1, 0.25), alone, facts(), 20.0)]
    args = SimpleNamespace(desks=2, rate=1.0, minutes=0.5, high_every=5, agents=5, write_minutes=0.25)
    result = summarise(runs, args, "python main.py bench team --minutes 0.5")
    team = result["phases"]["team"]
    assert team["events_lost"] == 0 and team["questions_recorded"] == 2 and team["chain"]["intact"]
    assert team["propagation_s"]["n"] == 1 and team["propagation_s"]["met"] is True
    assert team["achieved_rate"] == round(2 / 30, 2)
    assert set(result["write_latency_ms"]) == {"postgresql_team_desk1", "sqlite_alone"}
    assert result["write_latency_ms"]["sqlite_alone"]["p99"] == 3.0
    md = write_team_report(tmp_path / "team.json", result).read_text()
    assert "events lost: 0 (target 0)" in md and "(target p99 ≤ 1 s: met)" in md
    assert "| SQLite file, one desk alone | 1 | 3.0 | 3.0 | 3.0 |" in md


@pytest.mark.parametrize("argv, fragment", [
    (["bench", "team", "--desks", "1"], "--desks must be at least 2"),
    (["bench", "team", "--minutes", "0"], "--minutes must be positive"),
    (["bench", "team", "--high-every", "-1"], "--high-every"),
    (["bench", "team", "--rate", "500"], "rate"),
    (["bench", "team", "--db", "/tmp/desk.db"], "postgresql://"),
])
def test_bad_bench_team_input_exits_2_naming_it(argv, fragment, capsys):
    import main
    assert main.main(argv) == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_short_team_run_loses_nothing_and_every_desk_sees_every_decision(tmp_path):
    """Two desks for 12 s on the test server's database, in a schema of the run's own that is gone afterwards."""
    import psycopg

    import main

    from ..conftest import TEST_PG, _postgres_missing
    if _postgres_missing():
        pytest.skip(_postgres_missing())
    out = tmp_path / "team.json"
    assert main.main(["bench", "team", "--minutes", "0.2", "--desks", "2", "--write-minutes", "0", "--db", TEST_PG,
                      "--json", str(out)]) == 0
    team = json.loads(out.read_text())["phases"]["team"]
    assert team["answered"] > 0 and team["failed"] == 0 and team["questions_recorded"] == team["answered"]
    assert team["decisions"] > 0 and team["events_lost"] == 0 and team["chain"]["intact"]
    assert team["propagation_s"]["n"] == team["decisions"] and team["propagation_s"]["never_seen"] == 0
    assert (tmp_path / "team.md").exists() and (tmp_path / "team.lines.jsonl").exists()
    with psycopg.connect(TEST_PG) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench_team_%'").fetchone()[0] == 0
