"""Anchors: the chain's head, signed, outside the database. A history rewritten with every hash recomputed
still verifies as a chain; its anchors say otherwise."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import InputError
from engine.schema import MIGRATIONS
from engine.store.anchors import anchor_head, check_anchors
from engine.store.audit import GENESIS, event_hash
from engine.store.audit_log import AuditLog
from engine.store.db import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path):
    return tmp_path / "anchors.jsonl", tmp_path / "anchor.key"


@pytest.fixture
def store(store_target):
    store = Store(store_target, MIGRATIONS)
    store.open_sync()
    for i in range(4):
        store.audit_sync(f"t{i}", "alice", "review.approved", {"id": i})
    yield store
    store.close_sync()


def rewrite_history(store: Store, seq: int, actor: str) -> None:
    """What someone with write access to the database can do: change an event and recompute every hash after it."""
    store.execute("UPDATE audit SET actor = ? WHERE seq = ?", [actor, seq])
    prev = GENESIS
    for row in store.query("SELECT * FROM audit ORDER BY seq"):
        digest = event_hash(prev, row["seq"], row["trace_id"], row["actor"], row["type"], row["payload"], row["at"])
        store.execute("UPDATE audit SET prev_hash = ?, hash = ? WHERE seq = ?", [prev, digest, row["seq"]])
        prev = digest


def test_anchors_hold_on_an_untouched_chain(store, files):
    first = anchor_head(store, *files)
    store.audit_sync("t9", "bob", "note", {})
    second = anchor_head(store, *files)
    assert (first.seq, second.seq) == (4, 5)
    assert check_anchors(store, *files).message == "2 anchors hold"
    assert oct(files[1].stat().st_mode & 0o777) == "0o600"


def test_a_rewritten_history_verifies_as_a_chain_but_not_against_its_anchors(store, files):
    anchor_head(store, *files)
    rewrite_history(store, 2, "mallory")
    assert AuditLog(store).verify_sync().intact
    check = check_anchors(store, *files)
    assert not check.intact and "event 4 no longer hashes as anchored on line 1" in check.message


def test_removed_events_and_an_edited_anchor_are_named(store, files):
    anchor_head(store, *files)
    line = json.loads(files[0].read_text())
    files[0].write_text(files[0].read_text() + json.dumps({**line, "hash": "0" * 64}) + "\n")
    store.execute("DELETE FROM audit WHERE seq = 4")
    check = check_anchors(store, *files)
    assert "event 4 is gone, though anchored on line 1" in check.message
    assert "line 2: the signature does not match" in check.message


def test_an_anchor_key_others_can_read_is_refused(store, files):
    files[1].write_text("ab" * 32 + "\n")
    os.chmod(files[1], 0o644)
    with pytest.raises(InputError, match="readable by other users"):
        anchor_head(store, *files)


def test_audit_verify_fails_on_a_rewritten_history(tmp_path, files):
    db = tmp_path / "desk.db"
    store = Store(db, MIGRATIONS)
    store.open_sync()
    for i in range(3):
        store.audit_sync(f"t{i}", "alice", "note", {"i": i})
    store.close_sync()

    def main(*args):
        return subprocess.run([sys.executable, "main.py", *args, "--db", str(db), "--anchors", str(files[0])],
                              cwd=ROOT, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "QUORUM_ANCHOR_KEY": str(files[1])})
    anchored = main("audit", "anchor")
    assert anchored.returncode == 0 and "anchored event 3" in anchored.stdout
    assert main("audit", "verify").stdout.strip().endswith(f"1 anchor holds ({files[0]})")
    store = Store(db, MIGRATIONS)
    store.open_sync()
    rewrite_history(store, 1, "mallory")
    store.close_sync()
    refused = main("audit", "verify")
    assert refused.returncode == 1 and "the anchors in" in refused.stderr and "rewritten" in refused.stderr
