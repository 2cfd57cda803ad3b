"""The one rule about versions, applied after every change to a key:

    the active version of a key is its newest version still in play (active or superseded);
    every other version in play is superseded; quarantined and rolled-back versions stay out.

A write, rollback, quarantine and release each change some statuses and then call settle(), so the
rule lives in one place. The partial unique index memory_entries_one_active backs it in the database.
"""
from __future__ import annotations

from ..store.db import Store



def settle(store: Store, namespace: str, key: str, why: str) -> int | None:
    """Re-applies the rule to one key, inside the caller's transaction. Returns the id of a version
    that became active by this call (None if the active version did not change or there is none).
    `why` is recorded on a version that becomes active."""
    rows = store.execute("SELECT id, status FROM memory_entries WHERE namespace = ? AND key = ? "
                        "AND status IN ('active', 'superseded') ORDER BY version DESC",
                        (namespace, key)).fetchall()
    if not rows:
        return None
    newest, newest_status = rows[0]
    # Demote first: the unique index allows one active row at any moment, not only at commit.
    for entry_id, status in rows[1:]:
        if status == "active":
            store.execute("UPDATE memory_entries SET status = 'superseded', status_why = ? WHERE id = ?",
                         (f"superseded by #{newest}", entry_id))
    if newest_status == "active":
        return None
    store.execute("UPDATE memory_entries SET status = 'active', status_why = ? WHERE id = ?", (why, newest))
    return newest
