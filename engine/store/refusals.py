"""Refused writes, kept: what a role tried and was not granted reaches the audit chain.

A role that may not write (a viewer) may not append to the audit chain either, so its refused write is kept in
a table of its own, `refusals`, through one function, `quorum_refused(action, reason)`. The function runs with
its owner's rights (SECURITY DEFINER) and writes the server's own word for who and when (session_user,
clock_timestamp()), so a refusal can be neither forged for someone else nor left out by the desk's code once it
was refused. Desks that may write the chain (an operator's) fold the refusals into it now and then, each as a
`store.refused` event with the refused role as its actor (fold_refusals), in one transaction with marking them
folded. SQLite has no roles: nothing is refused there, and the table stays empty.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .db import Store

REFUSED_EVENT = "store.refused"
RECORD = "SELECT quorum_refused(?, ?)"
_LONGEST = 500      # characters of a refused statement's description kept


def refusal_function(schema: str) -> tuple[str, ...]:
    """The function, made by the schema's owner each time it opens the store (who may call it: engine.store.roles).
    Its search_path is fixed, as a SECURITY DEFINER function's must be, so no caller's schema can stand in for
    these tables."""
    quoted = '"' + schema.replace('"', '""') + '"'
    return (
        f"CREATE OR REPLACE FUNCTION {quoted}.quorum_refused(action TEXT, reason TEXT) RETURNS VOID "
        f"LANGUAGE sql SECURITY DEFINER SET search_path = {quoted}, pg_temp AS $fn$ "
        f"INSERT INTO refusals (at, role, action, reason, folded) VALUES (extract(epoch FROM clock_timestamp()), "
        f"session_user, left(action, {_LONGEST}), left(reason, {_LONGEST}), 0) $fn$",
        f"REVOKE ALL ON FUNCTION {quoted}.quorum_refused(TEXT, TEXT) FROM PUBLIC",
    )


def fold_refusals(store: "Store") -> int:
    """On the store's thread: appends each refusal not yet in the audit chain to it, oldest first, and marks
    them folded, in one transaction (two desks folding at once: the audit's lock takes them in turn, and the
    second finds none left). Returns how many were folded."""
    if store.sqlite or not store.execute("SELECT 1 FROM refusals WHERE folded = 0 LIMIT 1").first():
        return 0

    def fold() -> int:
        store.take_audit_turn()
        rows = store.query("SELECT id, at, role, action, reason FROM refusals WHERE folded = 0 ORDER BY id")
        for row in rows:
            store.append_audit("", row["role"], REFUSED_EVENT, {
                "action": row["action"], "reason": row["reason"], "refused_at": row["at"], "refusal": row["id"]})
        if rows:
            store.execute("UPDATE refusals SET folded = 1 WHERE folded = 0 AND id <= ?", [rows[-1]["id"]])
        return len(rows)
    return store.transaction(fold)
