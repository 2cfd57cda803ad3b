"""Who may do what on a team store is granted in PostgreSQL itself (engine.store.roles): a viewer's login cannot
write through the desk's store nor through a raw connection; an operator decides but cannot silence for all."""
from __future__ import annotations

import json

import psycopg
import pytest

from engine import StoreError
from engine.errors import StoreRefused
from engine.alerts import table as alert_table
from engine.alerts.row import NewAlert
from engine.alerts.silences import SilenceRequest
from engine.schema import MIGRATIONS
from engine.store.db import Store
from engine.store.refusals import REFUSED_EVENT, fold_refusals
from engine.store.roles import ADMIN, OPERATOR, VIEWER


def alert() -> NewAlert:
    return NewAlert("agent_down", "ret-a", "down", "t1", 1.0)


def test_a_viewer_reads_but_cannot_write_through_the_desk(team_logins):
    urls, names = team_logins
    viewer = Store(urls[VIEWER], MIGRATIONS)
    viewer.open_sync()
    assert viewer.signed_in == names[VIEWER]
    assert alert_table.list_alerts(viewer, False, 10) == []
    with pytest.raises(StoreError, match="this role may not do that"):
        viewer.transaction(lambda: alert_table.insert_alert(viewer, alert()))
    with pytest.raises(StoreError, match="this role may not do that"):
        viewer.audit_sync("", names[VIEWER], "note", {})
    viewer.close_sync()


def test_a_viewer_cannot_write_through_a_raw_connection(team_logins):
    urls, _ = team_logins
    address, schema = urls[VIEWER].split("?options=-csearch_path%3D")
    with psycopg.connect(address, options=f"-csearch_path={schema}", autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)
        for statement in ("INSERT INTO alerts (kind, agent_id, message, trace_id, at) VALUES ('x', 'a', 'm', 't', 1)",
                          "UPDATE approvals SET status = 'approved'", "DELETE FROM audit",
                          "CREATE TABLE mine (x int)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_an_operator_decides_but_only_an_admin_silences_for_all(team_logins):
    urls, names = team_logins
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


def test_a_refused_write_is_kept_and_an_operator_folds_it_into_the_chain_as_the_refused_role(team_logins):
    urls, names = team_logins
    viewer = Store(urls[VIEWER], MIGRATIONS)
    viewer.open_sync()
    assert not viewer.may_write
    with pytest.raises(StoreRefused) as refused:
        viewer.transaction(lambda: alert_table.insert_alert(viewer, alert()))
    assert refused.value.action == "INSERT alerts"
    with pytest.raises(StoreRefused):
        viewer.execute("UPDATE approvals SET status = 'approved'")
    with pytest.raises(StoreRefused):                   # nor fold refusals into the chain: refused too
        fold_refusals(viewer)
    viewer.close_sync()

    operator = Store(urls[OPERATOR], MIGRATIONS)
    operator.open_sync()
    assert operator.may_write
    assert fold_refusals(operator) == 3
    assert fold_refusals(operator) == 0                 # each refusal reaches the chain once
    events = operator.query("SELECT actor, type, payload FROM audit ORDER BY seq")
    assert [(e["actor"], e["type"]) for e in events] == [(names[VIEWER], REFUSED_EVENT)] * 3
    assert [json.loads(e["payload"])["action"] for e in events] == ["INSERT alerts", "UPDATE approvals",
                                                                     "INSERT audit"]
    assert "permission denied" in json.loads(events[0]["payload"])["reason"]
    assert operator.verify_audit_sync() == 3
    operator.close_sync()


def test_a_refusal_names_whoever_is_signed_in_and_nobody_writes_the_table_but_the_function(team_logins):
    urls, names = team_logins
    address, schema = urls[VIEWER].split("?options=-csearch_path%3D")
    with psycopg.connect(address, options=f"-csearch_path={schema}", autocommit=True) as conn:
        conn.execute("SELECT quorum_refused('DELETE audit', 'as someone else')")
        assert conn.execute("SELECT role, action FROM refusals").fetchall() == [(names[VIEWER], "DELETE audit")]
        for statement in ("INSERT INTO refusals (at, role, action, reason) VALUES (1, 'alice', 'x', 'y')",
                          "UPDATE refusals SET folded = 1", "DELETE FROM refusals"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_audit_list_by_an_operator_takes_in_the_refusals_first(team_logins, capsys):
    import main
    urls, names = team_logins
    viewer = Store(urls[VIEWER], MIGRATIONS)
    viewer.open_sync()
    with pytest.raises(StoreRefused):
        viewer.transaction(lambda: alert_table.insert_alert(viewer, alert()))
    viewer.close_sync()
    assert main.main(["audit", "list", "--db", urls[VIEWER]]) == 0          # a viewer lists; it cannot fold
    assert REFUSED_EVENT not in capsys.readouterr().out
    assert main.main(["audit", "list", "--db", urls[OPERATOR], "--actor", names[VIEWER]]) == 0
    [header, refused] = capsys.readouterr().out.strip().splitlines()
    assert REFUSED_EVENT in refused and "INSERT alerts" in refused
