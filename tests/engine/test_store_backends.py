"""The store on both backends: where it lives (a file or a postgresql:// URL), one audit chain from many
writers, and schema steps that run once however many desks open a new team store together."""
from __future__ import annotations

import threading
import time

import pytest

from engine import InputError, StoreError
from engine.alerts.row import NewAlert
from engine.alerts import table as alert_table
from engine.schema import MIGRATIONS
from engine.store.audit_log import AuditLog
from engine.store.db import Store
from engine.store.target import Backend, store_target


# --- where the store lives ----------------------------------------------------------------------
def test_a_plain_path_is_a_sqlite_file(tmp_path):
    target = store_target(tmp_path / "q.db")
    assert target.backend is Backend.SQLITE and target.path == tmp_path / "q.db" and not target.shared
    assert not target.exists()


def test_a_loopback_url_needs_no_tls_and_names_no_password():
    target = store_target("postgresql://alice@127.0.0.1:5432/quorum")
    assert target.backend is Backend.POSTGRESQL and target.shared and target.exists()
    assert "sslmode" not in target.url and str(target) == "postgresql://alice@127.0.0.1:5432/quorum"


def test_a_remote_server_gets_tls_and_refuses_it_off():
    assert "sslmode=require" in store_target("postgresql://alice@db.example.org/quorum").url
    assert "sslmode=verify-full" in store_target("postgresql://alice@db.example.org/quorum?sslmode=verify-full").url
    with pytest.raises(InputError, match="sslmode=disable would send the team's records in the clear"):
        store_target("postgresql://alice@db.example.org/quorum?sslmode=disable")


@pytest.mark.parametrize("url", ["postgresql://alice:s3cret@127.0.0.1/quorum",
                                 "postgresql://alice@127.0.0.1/quorum?password=s3cret"])
def test_a_password_in_the_url_is_refused_without_repeating_it(url):
    with pytest.raises(InputError, match="pgpass") as refused:
        store_target(url)
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize("url, why", [("mysql://alice@127.0.0.1/quorum", "not a store Quorum knows"),
                                      ("postgresql://alice@127.0.0.1/", "name one database"),
                                      ("postgresql://alice@127.0.0.1:port/quorum", "port is not a number")])
def test_a_bad_store_url_says_what_is_wrong(url, why):
    with pytest.raises(InputError, match=why):
        store_target(url)


def test_a_server_that_does_not_answer_is_a_clear_store_error():
    store = Store("postgresql://quorum@127.0.0.1:1/quorum", MIGRATIONS)
    with pytest.raises(StoreError, match="postgresql://quorum@127.0.0.1:1/quorum"):
        store.open_sync()


# --- both backends ------------------------------------------------------------------------------
def test_questions_alerts_and_the_chain_round_trip(store_target):
    store = Store(store_target, MIGRATIONS, clock=lambda: 1700000000.123456)
    store.open_sync()
    first = store.transaction(lambda: alert_table.insert_alert(store, NewAlert("agent_down", "ret-a", "down", "t1",
                                                                               1700000000.25)))
    second = store.transaction(lambda: alert_table.insert_alert(store, NewAlert("agent_down", "ret-b", "down", "t2",
                                                                                1700000001.5)))
    assert second == first + 1
    assert [a.agent_id for a in alert_table.list_alerts(store, False, 10)] == ["ret-b", "ret-a"]
    store.audit_sync("t1", "alice", "note", {"text": "a colon: and a ? mark", "n": 1})
    row = AuditLog(store).query_sync()[0]
    assert row.at == 1700000000.123456 and row.payload == {"text": "a colon: and a ? mark", "n": 1}
    assert AuditLog(store).verify_sync().intact
    store.close_sync()


def test_many_writers_make_one_chain(store_target):
    """Four stores (four desks) on one database append at once: every event lands, in one unbroken chain."""
    stores = [Store(store_target, MIGRATIONS) for _ in range(4)]
    for store in stores:
        store.open_sync()
    failures: list[BaseException] = []

    def write(store: Store, desk: int) -> None:
        try:
            for i in range(15):
                store.audit_sync(f"t{desk}-{i}", f"desk{desk}", "note", {"i": i})
        except BaseException as exc:        # noqa: BLE001 - reported below
            failures.append(exc)
    threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures
    status = AuditLog(stores[0]).verify_sync()
    assert status.intact and status.checked == 60
    for store in stores:
        store.close_sync()


def test_desks_opening_a_new_team_store_together_run_each_step_once(postgres_schema):
    stores = [Store(postgres_schema, MIGRATIONS) for _ in range(3)]
    failures: list[BaseException] = []

    def open_(store: Store) -> None:
        try:
            store.open_sync()
        except BaseException as exc:        # noqa: BLE001 - reported below
            failures.append(exc)
    threads = [threading.Thread(target=open_, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures
    versions = stores[0].execute("SELECT version FROM schema_version ORDER BY version").scalars().all()
    assert versions == sorted({m.version for m in MIGRATIONS})
    for store in stores:
        store.close_sync()


def test_a_newer_team_schema_is_refused(postgres_schema):
    store = Store(postgres_schema, MIGRATIONS)
    store.open_sync()
    store.execute("INSERT INTO schema_version (version) VALUES (99)")
    store.close_sync()
    with pytest.raises(StoreError, match="newer than this Quorum"):
        Store(postgres_schema, MIGRATIONS).open_sync()


def test_postgresql_columns_keep_sqlites_meaning(postgres_schema):
    """REAL is four bytes in PostgreSQL: the schema says DOUBLE PRECISION there, so a hashed time reads back whole;
    text compares by bytes as in SQLite (collation "C"), whatever the server's locale."""
    store = Store(postgres_schema, MIGRATIONS)
    store.open_sync()
    columns = {name: (kind, collation) for name, kind, collation in store.execute(
        "SELECT column_name, data_type, collation_name FROM information_schema.columns "
        "WHERE table_name = 'audit' AND table_schema = current_schema()")}
    assert columns["at"] == ("double precision", None) and columns["seq"] == ("bigint", None)
    assert columns["type"] == ("text", "C")
    store.close_sync()


# --- [store] url --------------------------------------------------------------------------------
def test_a_store_url_in_the_settings_is_checked_as_the_store_reads_it(tmp_path):
    from engine import ConfigError, load_settings
    good = tmp_path / "team.toml"
    good.write_text('version = 1\n[store]\nurl = "postgresql://alice@127.0.0.1/quorum"\n')
    assert load_settings(good).store.url == "postgresql://alice@127.0.0.1/quorum"
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\n[store]\nurl = "postgresql://alice:pw@db.example.org/quorum"\n')
    with pytest.raises(ConfigError, match="store.url: .*pgpass"):
        load_settings(bad)


def test_db_comes_before_the_environment_and_the_environment_before_the_settings(tmp_path, monkeypatch):
    import argparse
    from engine.cli.common import store_of
    settings = tmp_path / "team.toml"
    settings.write_text('version = 1\n[store]\nurl = "postgresql://alice@127.0.0.1/quorum"\n')
    args = argparse.Namespace(db=None, settings=settings)
    monkeypatch.delenv("QUORUM_DB", raising=False)
    assert str(store_of(args)) == "postgresql://alice@127.0.0.1/quorum"
    monkeypatch.setenv("QUORUM_DB", str(tmp_path / "env.db"))
    assert store_of(args).path == tmp_path / "env.db"
    assert store_of(argparse.Namespace(db=str(tmp_path / "flag.db"), settings=settings)).path == tmp_path / "flag.db"


def test_a_team_store_writes_the_servers_time(postgres_schema, monkeypatch):
    """A desk whose clock is an hour slow still writes the team's timeline: on PostgreSQL the store's default clock
    is set to the server's."""
    store = Store(postgres_schema, MIGRATIONS)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600.0)
    store.open_sync()
    store.audit_sync("", "alice", "note", {})
    written, server = store.execute("SELECT at, extract(epoch FROM clock_timestamp()) FROM audit").one()
    assert abs(float(server) - written) < 60.0
    store.close_sync()


def test_two_stores_in_one_database_never_wait_on_each_others_chain(postgres_schema):
    """Advisory locks are the whole database's: each store's carry its schema, so a chain held in one schema does
    not hold back the other's appends."""
    import uuid

    import psycopg
    from engine.store.db import AUDIT_LOCK
    from tests.conftest import TEST_PG
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
        here, other = Store(postgres_schema, MIGRATIONS), Store(f"{TEST_PG}?options=-csearch_path%3D{name}", MIGRATIONS)
        here.open_sync()
        other.open_sync()
        try:
            assert here.lock_keys(AUDIT_LOCK) != other.lock_keys(AUDIT_LOCK)
            conn.execute("SELECT pg_advisory_lock(%s, %s)", here.lock_keys(AUDIT_LOCK))    # here's chain is held
            other.execute("SET lock_timeout = '5s'")
            assert other.audit_sync("", "bob", "note", {}) == 1                              # the other's is not
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", here.lock_keys(AUDIT_LOCK))
        finally:
            here.close_sync()
            other.close_sync()
            conn.execute(f"DROP SCHEMA {name} CASCADE")
