"""Who may do what on a team store is granted in PostgreSQL itself (engine.store.roles): a viewer's login cannot
write through the desk's store nor through a raw connection; an operator decides but cannot silence for all."""
from __future__ import annotations

import secrets

import psycopg
import pytest

from engine import StoreError
from engine.alerts import table as alert_table
from engine.alerts.row import NewAlert
from engine.alerts.silences import SilenceRequest
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.store.roles import ADMIN, OPERATOR, VIEWER
from tests.conftest import TEST_PG


@pytest.fixture
def team(postgres_schema, monkeypatch):
    """The schema migrated by its owner, and a login role in each team role (password in the environment, as
    libpq reads it: never in a URL)."""
    owner = Store(postgres_schema, MIGRATIONS)
    owner.open_sync()
    owner.close_sync()
    password = secrets.token_hex(12)
    names = {group: f"t_{group.split('_')[1]}_{secrets.token_hex(4)}" for group in (VIEWER, OPERATOR, ADMIN)}
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        for group, name in names.items():
            conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {group}")
    monkeypatch.setenv("PGPASSWORD", password)
    urls = {group: postgres_schema.replace("//quorum@", f"//{name}@", 1) for group, name in names.items()}
    yield urls, names
    monkeypatch.delenv("PGPASSWORD")        # the owner signs in from ~/.pgpass again
    with psycopg.connect(TEST_PG, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f"DROP ROLE {name}")


def alert() -> NewAlert:
    return NewAlert("agent_down", "ret-a", "down", "t1", 1.0)


def test_a_viewer_reads_but_cannot_write_through_the_desk(team):
    urls, names = team
    viewer = Store(urls[VIEWER], MIGRATIONS)
    viewer.open_sync()
    assert viewer.signed_in == names[VIEWER]
    assert alert_table.list_alerts(viewer, False, 10) == []
    with pytest.raises(StoreError, match="this role may not do that"):
        viewer.transaction(lambda: alert_table.insert_alert(viewer, alert()))
    with pytest.raises(StoreError, match="this role may not do that"):
        viewer.audit_sync("", names[VIEWER], "note", {})
    viewer.close_sync()


def test_a_viewer_cannot_write_through_a_raw_connection(team):
    urls, _ = team
    address, schema = urls[VIEWER].split("?options=-csearch_path%3D")
    with psycopg.connect(address, options=f"-csearch_path={schema}", autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)
        for statement in ("INSERT INTO alerts (kind, agent_id, message, trace_id, at) VALUES ('x', 'a', 'm', 't', 1)",
                          "UPDATE approvals SET status = 'approved'", "DELETE FROM audit",
                          "CREATE TABLE mine (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_an_operator_decides_but_only_an_admin_silences_for_all(team):
    urls, names = team
    operator = Store(urls[OPERATOR], MIGRATIONS)
    operator.open_sync()
    first = operator.transaction(lambda: alert_table.insert_alert(operator, alert()))
    operator.transaction(lambda: alert_table.acknowledge(operator, first, names[OPERATOR], "seen", 2.0))
    request = SilenceRequest(kind=None, agent_id="ret-a", created_by=names[OPERATOR], comment="noisy",
                             duration_s=600.0)
    with pytest.raises(StoreError, match="this role may not do that"):
        operator.transaction(lambda: alert_table.insert_silence(operator, request, 1.0))
    with pytest.raises(StoreError, match="this role may not do that"):
        operator.execute("DELETE FROM audit")
    operator.close_sync()
    admin = Store(urls[ADMIN], MIGRATIONS)
    admin.open_sync()
    silence = admin.transaction(lambda: alert_table.insert_silence(admin, request, 1.0))
    assert silence.agent_id == "ret-a"
    admin.close_sync()
