"""The alert book on a real SQLite file with an injected clock: acknowledgements with comments, silences
by kind and by agent that mute notification but never detection, expiry, early end, bad input."""
from __future__ import annotations

import json
import math

import pytest

from engine.alerts import AlertRow, NewAlert, Severity, Silence, format_duration, matches, parse_duration
from engine.alerts.book import AlertBook
from engine.errors import InputError
from engine.alerts.kinds import AlertKind
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.reputation.store import ReputationTables

T0 = 1_000_000.0
HOUR = 3600.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def book(db_path, clock):
    store = Store(db_path, MIGRATIONS, clock=clock)
    store.open_sync()
    yield AlertBook(store, clock)
    store.close_sync()


def raise_(book: AlertBook, kind: AlertKind, agent: str, trace: str = "q1") -> AlertRow:
    return book.record_sync([NewAlert(kind, agent, f"{kind.value} about {agent or 'the engine'}", trace,
                                      book.clock())])[0]


def audit(book: AlertBook, type_: str) -> list[tuple[str, str, dict]]:
    rows = book.store.execute("SELECT trace_id, actor, payload FROM audit WHERE type = ? ORDER BY seq",
                                      [type_]).fetchall()
    return [(t, a, json.loads(p)) for t, a, p in rows]


def muted_ids(book: AlertBook, now: float | None = None) -> set[int]:
    return {a.id for a in book.alerts_sync(now=now) if a.muted}


# --- detection and acknowledgement --------------------------------------------------------------
def test_raised_alerts_are_stored_with_their_severity_and_audited(book):
    first = raise_(book, AlertKind.INJECTION_BLOCKED, "ret-web")
    book.clock.now += 1
    second = raise_(book, AlertKind.CASCADE_TRIGGERED, "", trace="q2")
    assert (first.severity, second.severity) == (Severity.CRITICAL, Severity.WARNING)
    assert first.open and first.loud and first.at == T0
    assert [a.id for a in book.alerts_sync()] == [second.id, first.id]             # newest first
    assert [a.id for a in book.alerts_sync(limit=1)] == [second.id]
    stored = book.store.execute("SELECT severity FROM alerts WHERE id = ?", [first.id]).fetchone()[0]
    assert stored == "critical"
    raised = audit(book, "alert.raised")
    assert [(t, p["kind"], p["agent"], p["alert"]) for t, _, p in raised] == [
        ("q1", "injection_blocked", "ret-web", first.id), ("q2", "cascade_triggered", "", second.id)]
    with pytest.raises(InputError, match="limit"):
        book.alerts_sync(limit=0)


def test_acknowledge_with_a_comment_is_stored_and_audited(book, clock):
    alert = raise_(book, AlertKind.AGENT_DOWN, "gen-b")
    clock.now += 90
    acked = book.acknowledge_sync(f"#{alert.id}", "alice", "  restarted the agent  ")
    assert (acked.acknowledged_by, acked.acknowledged_at, acked.ack_comment) == ("alice", T0 + 90, "restarted the agent")
    assert not acked.open and book.alerts_sync(open_only=True) == ()
    [(trace, actor, payload)] = audit(book, "alert.acknowledged")
    assert (trace, actor) == ("q1", "alice")
    assert payload == {"alert": alert.id, "kind": "agent_down", "agent": "gen-b", "comment": "restarted the agent"}
    # The first acknowledgement stands: a second changes nothing and is not audited again.
    clock.now += 10
    again = book.acknowledge_sync(alert.id, "bob", "me too")
    assert (again.acknowledged_by, again.ack_comment, again.acknowledged_at) == ("alice", "restarted the agent", T0 + 90)
    assert len(audit(book, "alert.acknowledged")) == 1
    assert book.store.verify_audit_sync() > 0


def test_a_comment_is_optional_when_acknowledging(book):
    alert = raise_(book, AlertKind.SCORE_DROP, "gen-a")
    assert book.acknowledge_sync(alert.id, "alice").ack_comment == ""
    assert audit(book, "alert.acknowledged")[0][2]["comment"] == ""


@pytest.mark.parametrize("alert_id, by, comment, words", [
    (99, "alice", "", "no alert #99"),
    ("x1", "alice", "", "alert id 'x1' is not a number"),
    (1, "  ", "", "who does it is missing"),
    (1, "alice", "x" * 1001, "1001 characters long"),
])
def test_bad_acknowledgements_are_refused_by_name(book, alert_id, by, comment, words):
    raise_(book, AlertKind.SCORE_DROP, "gen-a")
    with pytest.raises(InputError, match=words):
        book.acknowledge_sync(alert_id, by, comment)
    assert book.alerts_sync(open_only=True) != () and audit(book, "alert.acknowledged") == []


def test_the_trust_tables_acknowledge_through_the_book(book):
    tables = ReputationTables(book.store)
    alert = raise_(book, AlertKind.AUTO_QUARANTINE, "gen-liar")
    row = tables.acknowledge_sync(alert.id, "alice", "released after the fix")
    assert (row.acknowledged_by, row.ack_comment) == ("alice", "released after the fix")
    assert audit(book, "alert.acknowledged")[0][2]["comment"] == "released after the fix"
    # The reputation book's alerts, saved by the trust tables, get their kind's severity too.
    [new_id] = tables.save_sync([], alerts=[NewAlert("agent_down", "gen-b", "down", "", T0)])
    assert next(a for a in tables.alerts_sync() if a.id == new_id).severity is Severity.CRITICAL


# --- silences ----------------------------------------------------------------------------------
def test_a_silence_by_kind_mutes_that_kind_only(book):
    injected = raise_(book, AlertKind.INJECTION_BLOCKED, "ret-web")
    other = raise_(book, AlertKind.AGENT_DOWN, "ret-web")
    silence = book.silence_sync(AlertKind.INJECTION_BLOCKED, duration_s=2 * HOUR, by="alice",
                                comment="red-team exercise until noon")
    assert (silence.kind, silence.agent_id, silence.created_at, silence.expires_at) == (
        AlertKind.INJECTION_BLOCKED, None, T0, T0 + 2 * HOUR)
    rows = {a.id: a for a in book.alerts_sync()}
    assert rows[injected.id].silenced_by == silence.id and rows[injected.id].muted and not rows[injected.id].loud
    assert rows[other.id].silenced_by is None and rows[other.id].loud
    assert book.is_muted_sync(injected) and not book.is_muted_sync(other)
    assert book.unacknowledged_counts_sync() == (1, 1)
    [(_, actor, payload)] = audit(book, "alert.silenced")
    assert actor == "alice" and payload["kind"] == "injection_blocked" and payload["agent"] is None
    assert payload["comment"] == "red-team exercise until noon" and payload["expires_at"] == T0 + 2 * HOUR


def test_a_silence_by_agent_mutes_that_agents_alerts_only(book):
    web = [raise_(book, kind, "ret-web") for kind in (AlertKind.INJECTION_BLOCKED, AlertKind.SCORE_DROP)]
    gen = raise_(book, AlertKind.INJECTION_BLOCKED, "gen-a")
    engine_own = raise_(book, AlertKind.CONSENSUS_FAILED, "")
    silence = book.silence_sync(agent_id="ret-web", duration_s=HOUR, by="alice", comment="being replaced")
    assert muted_ids(book) == {a.id for a in web}
    assert not book.is_muted_sync(gen) and not book.is_muted_sync(engine_own)
    assert book.unacknowledged_counts_sync() == (2, 2)
    assert book.silences_sync() == (silence,)


def test_a_silence_of_a_kind_and_an_agent_needs_both_to_match(book):
    both = raise_(book, AlertKind.SCORE_DROP, "gen-a")
    kind_only = raise_(book, AlertKind.SCORE_DROP, "gen-b")
    agent_only = raise_(book, AlertKind.BEHAVIOUR_SHIFT, "gen-a")
    book.silence_sync("score_drop", "gen-a", duration_s=HOUR, by="alice", comment="tuning its prompt")
    assert muted_ids(book) == {both.id} and {kind_only.id, agent_only.id}.isdisjoint(muted_ids(book))


def test_an_alert_raised_while_silenced_is_still_recorded_listed_and_audited(book, clock):
    silence = book.silence_sync(AlertKind.CASCADE_TRIGGERED, duration_s=HOUR, by="alice", comment="known issue")
    clock.now += 60
    row = raise_(book, AlertKind.CASCADE_TRIGGERED, "gen-a", trace="q5")
    assert row.id > 0 and row.silenced_by == silence.id             # marked when recorded ...
    assert [a.id for a in book.alerts_sync(open_only=True)] == [row.id]   # ... and listed, open
    assert audit(book, "alert.raised")[0][0] == "q5"
    assert book.unacknowledged_counts_sync() == (0, 1)


def test_an_expired_silence_stops_muting_and_open_alerts_notify_again(book, clock):
    open_alert = raise_(book, AlertKind.INJECTION_BLOCKED, "ret-web")
    acked = raise_(book, AlertKind.INJECTION_BLOCKED, "ret-web")
    book.acknowledge_sync(acked.id, "alice", "seen")
    silence = book.silence_sync(AlertKind.INJECTION_BLOCKED, duration_s=30 * 60, by="alice", comment="drill")
    assert book.unacknowledged_counts_sync() == (0, 1)
    assert book.next_expiry_sync() == T0 + 30 * 60
    clock.now = silence.expires_at - 0.001
    assert book.is_muted_sync(open_alert)
    clock.now = silence.expires_at                                   # active up to, not including, expires_at
    assert not book.is_muted_sync(open_alert) and muted_ids(book) == set()
    assert book.unacknowledged_counts_sync() == (1, 0)               # the acknowledged one stays quiet
    assert book.silences_sync() == () and book.silences_sync(active_only=False) == (silence,)
    assert book.next_expiry_sync() is None
    # Looking back in time still says what was muted then.
    assert muted_ids(book, now=T0 + 1) == {open_alert.id, acked.id}


def test_ending_a_silence_early_unmutes_and_is_audited(book, clock):
    alert = raise_(book, AlertKind.AGENT_DOWN, "gen-b")
    silence = book.silence_sync(agent_id="gen-b", duration_s=HOUR, by="alice", comment="restarting it")
    clock.now += 600
    ended = book.end_silence_sync(f"#{silence.id}", "bob")
    assert (ended.ended_at, ended.ended_by, ended.ends_at) == (T0 + 600, "bob", T0 + 600)
    assert not book.is_muted_sync(alert) and book.silences_sync() == ()
    assert book.unacknowledged_counts_sync() == (1, 0)
    [(_, actor, payload)] = audit(book, "alert.silence_ended")
    assert actor == "bob" and payload["silence"] == silence.id and payload["agent"] == "gen-b"
    with pytest.raises(InputError, match=f"silence #{silence.id} was already ended by bob"):
        book.end_silence_sync(silence.id, "carol")
    with pytest.raises(InputError, match="no silence #42"):
        book.end_silence_sync(42, "carol")
    expired = book.silence_sync(agent_id="gen-b", duration_s=60, by="alice", comment="short")
    clock.now += 61
    with pytest.raises(InputError, match=f"silence #{expired.id} has already expired"):
        book.end_silence_sync(expired.id, "carol")
    assert len(audit(book, "alert.silence_ended")) == 1


def test_several_silences_the_oldest_active_one_is_named(book, clock):
    alert = raise_(book, AlertKind.SCORE_DROP, "gen-a")
    first = book.silence_sync(AlertKind.SCORE_DROP, duration_s=HOUR, by="alice", comment="one")
    second = book.silence_sync(agent_id="gen-a", duration_s=2 * HOUR, by="bob", comment="two")
    assert book.alerts_sync()[0].silenced_by == first.id
    clock.now += HOUR                                                  # the first expired, the second holds
    assert book.alerts_sync()[0].silenced_by == second.id and book.is_muted_sync(alert)
    assert book.silences_sync() == (second,)


@pytest.mark.parametrize("kind, agent, duration, by, comment, words", [
    ("nope", None, HOUR, "alice", "why", "unknown alert kind 'nope'"),
    (None, None, HOUR, "alice", "why", "give a kind, an agent or both"),
    (None, "   ", HOUR, "alice", "why", "give a kind, an agent or both"),
    (None, "gen a", HOUR, "alice", "why", "control characters or spaces"),
    ("score_drop", None, 0, "alice", "why", "duration must be positive"),
    ("score_drop", None, -5, "alice", "why", "duration must be positive"),
    ("score_drop", None, math.nan, "alice", "why", "duration must be positive"),
    ("score_drop", None, "soon", "alice", "why", "not a number of seconds"),
    ("score_drop", None, 30 * 86400 + 1, "alice", "why", "longer than the limit of 30d"),
    ("score_drop", None, HOUR, "alice", "  ", "a comment is required"),
    ("score_drop", None, HOUR, "", "why", "who silences is missing"),
])
def test_bad_silences_are_refused_by_name(book, kind, agent, duration, by, comment, words):
    with pytest.raises(InputError, match=words):
        book.silence_sync(kind, agent, duration_s=duration, by=by, comment=comment)
    assert book.silences_sync(active_only=False) == () and audit(book, "alert.silenced") == []


def test_thirty_days_is_allowed(book):
    silence = book.silence_sync("score_drop", duration_s=30 * 86400, by="alice", comment="holiday")
    assert silence.expires_at - silence.created_at == 30 * 86400


async def test_the_async_methods_run_on_the_store_thread(db_path, clock):
    store = Store(db_path, MIGRATIONS, clock=clock)
    await store.open()
    book = AlertBook(store, clock)
    try:
        [alert] = await book.record([NewAlert(AlertKind.SCORE_DROP, "gen-a", "dropped", "q1", T0)])
        silence = await book.silence(agent_id="gen-a", duration_s=HOUR, by="alice", comment="tuning")
        assert await book.is_muted(alert) and await book.unacknowledged_counts() == (0, 1)
        assert (await book.marked([alert]))[0].silenced_by == silence.id
        assert await book.next_expiry() == T0 + HOUR
        await book.end_silence(silence.id, "alice")
        assert await book.silences() == () and await book.unacknowledged_counts() == (1, 0)
        acked = await book.acknowledge(alert.id, "alice", "ok")
        assert acked.ack_comment == "ok" and (await book.alerts(open_only=True)) == ()
    finally:
        await store.aclose()


# --- the pieces --------------------------------------------------------------------------------
def test_matches_is_active_from_creation_until_expiry_or_end():
    silence = Silence(1, AlertKind.SCORE_DROP, None, "alice", "why", 100.0, 200.0)
    alert = AlertRow(1, "score_drop", "gen-a", "", "", 0.0)
    assert [matches(silence, alert, t) for t in (99.9, 100.0, 199.9, 200.0)] == [False, True, True, False]
    assert not matches(silence, AlertRow(2, "agent_down", "gen-a", "", "", 0.0), 150.0)
    ended = Silence(1, AlertKind.SCORE_DROP, None, "alice", "why", 100.0, 200.0, ended_at=150.0, ended_by="bob")
    assert matches(ended, alert, 149.0) and not matches(ended, alert, 150.0)


def test_alert_rows_keep_their_old_positional_form():
    row = AlertRow(7, "auto_quarantine", "gen-liar", "quarantined", "t1", 1.0, "alice", 2.0)
    assert row.severity is Severity.CRITICAL and row.ack_comment == "" and not row.open and not row.muted
    assert AlertRow(8, "score_drop", "gen-a", "m", "", 1.0, severity="critical").severity is Severity.CRITICAL


def test_durations_as_people_type_them():
    assert [parse_duration(t) for t in ("30m", "2h", "1d", "1h30m", "45s", "1.5h", " 2H ")] == [
        1800, 7200, 86400, 5400, 45, 5400, 7200]
    for bad in ("", "10", "2x", "h", "1h-30m", "-1h"):
        with pytest.raises(InputError, match="a number and a unit"):
            parse_duration(bad)
    assert [format_duration(s) for s in (5400, 86400, 59, 0)] == ["1h30m", "1d", "59s", "0s"]
